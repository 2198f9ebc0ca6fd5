"""How long the first fit in a new environment compiles, and how many kernels.

Runs one default :func:`pymc_pcrp.fit` (200 two-dimensional points, 2 chains of 50
draws) into an empty numba cache folder and counts the package's numba compilations
(every function and signature, nested ones included) with the listener that draws the
compile progress line::

    python benchmarks/compile_first_fit.py

It prints the wall seconds of the fit (nearly all of it compiling) and the count; the
two constants ``COMPILE_SECONDS`` and ``COMPILE_KERNELS`` of
``pymc_pcrp/_runtime/compile_notice.py`` come from a run of it.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="pcrp_numba_cold_") as cache:
        os.environ["NUMBA_CACHE_DIR"] = cache  # before numba is imported
        os.environ.setdefault("PYMC_PCRP_PROGRESS", "0")
        import numpy as np

        import pymc_pcrp as pcrp

        from pymc_pcrp._runtime.compile_notice import watch_compilation

        progress = watch_compilation()
        x = np.random.default_rng(0).normal(size=(200, 2))
        start = time.perf_counter()
        pcrp.fit(x, power=1.1, draws=50, tune=50, chains=2, random_seed=1)
        seconds = time.perf_counter() - start
    print(f"first fit: {seconds:.0f} s, {progress.done} package numba compilations")
    return 0


if __name__ == "__main__":
    sys.exit(main())
