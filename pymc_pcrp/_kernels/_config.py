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

``cache`` is on when numba can write its cache somewhere: first the package's own
folder for its current sources (:mod:`pymc_pcrp._runtime.numba_cache`, under
``NUMBA_CACHE_DIR`` or the user's cache folder, the same for every copy of the
package), then numba's usual places (beside the package, ``NUMBA_CACHE_DIR``, the
user's cache folder). When it cannot (a read-only installation with no writable
cache folder), numba would refuse to decorate the kernels at import; the package
then compiles without caching and says so once.
"""

import warnings

import numba

from pymc_pcrp._runtime import numba_cache as _cache

__all__ = ["CACHE_LOCATOR_INSTALLED", "CACHING", "NJIT_KWARGS"]

CACHE_LOCATOR_INSTALLED: bool = _cache.install()


def _numba_can_cache() -> bool:
    """Whether numba finds a writable cache location for a function of this package."""

    def probe() -> int:
        return 0

    try:
        numba.njit(cache=True)(probe)
    except RuntimeError:
        return False
    return True


CACHING: bool = _numba_can_cache()
if not CACHING:
    warnings.warn(
        "pymc_pcrp: numba found no writable cache folder (beside the package, NUMBA_CACHE_DIR "
        "or the user cache folder), so its kernels are compiled again in every new process "
        "(tens of seconds). Set the environment variable NUMBA_CACHE_DIR to a writable folder "
        "to keep them.",
        RuntimeWarning,
        stacklevel=2,
    )

NJIT_KWARGS: dict = {
    "cache": CACHING,
    "nogil": True,
    "fastmath": False,
}
