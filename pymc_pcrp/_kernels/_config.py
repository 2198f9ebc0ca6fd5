"""One numba configuration shared by every kernel.

``fastmath`` is a set of flags, never ``True``: the kernels use ``-inf`` as a log
weight, and ``nnan``/``ninf`` would let LLVM assume such values never occur.
``parallel`` is never used: the sweep is sequential by nature, and ``pm.sample``
already runs chains on separate cores.
"""

__all__ = ["NJIT_KWARGS"]

NJIT_KWARGS: dict = {
    "cache": True,
    "nogil": True,
    "fastmath": {"nsz", "arcp", "contract", "afn", "reassoc"},
}
