"""What a running process of pymc_pcrp needs besides the statistics.

* :mod:`~pymc_pcrp._runtime.interrupts`: a Ctrl-C held back while numba loads a
  kernel or a step runs, raised as soon as it is safe;
* :mod:`~pymc_pcrp._runtime.compile_notice`: the notice and progress lines of the
  first compilation of the kernels;
* :mod:`~pymc_pcrp._runtime.logging`: PyMC's and ArviZ's loggers quietened around
  inner fits, and progress lines;
* :mod:`~pymc_pcrp._runtime.numba_cache`: where numba keeps the compiled kernels
  (one folder per version of the kernel sources).

This package imports nothing at import time: numba's cache must be set up before
the first kernel module is loaded.
"""
