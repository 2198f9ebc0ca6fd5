"""One numba configuration shared by every kernel.

``fastmath`` is off: every floating-point operation rounds as IEEE 754 says. With
fast-math flags (``reassoc``, ``contract``, ``arcp``, ``afn``) LLVM may fuse or
reorder operations differently depending on what it inlines, and what it can
inline depends on whether a called kernel was compiled in the same process or
loaded from numba's on-disk cache. The same seed then gave log joints differing
in the 14th digit between a chain run in the main process and the same chain
run in a Dask worker (tests/test_distributed.py), and such differences can
eventually change a draw. Strict arithmetic cost about 4% at D = 10 and 1% at
D = 2 (126 -> 131 and 37.6 -> 38.1 ns per update; benchmarks/run.py --only
kernel, 2026-11-26). ``nnan``/``ninf`` would be wrong in any case: the kernels use ``-inf``
as a log weight.

``parallel`` is never used: the sweep is sequential by nature, and ``pm.sample``
already runs chains on separate cores.
"""

__all__ = ["NJIT_KWARGS"]

NJIT_KWARGS: dict = {
    "cache": True,
    "nogil": True,
    "fastmath": False,
}
