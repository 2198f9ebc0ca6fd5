"""Say so, once, when the numba kernels are about to be compiled for this environment.

The first model sampled in a new environment spends a minute or so compiling the
kernels before the first draw, with nothing else on the screen. numba caches the
result on disk, so this happens once per environment (or in every process when no
cache folder is writable, see :mod:`pymc_pcrp._kernels._config`).
"""

from __future__ import annotations

import logging
import os

from glob import glob

from pymc_pcrp._kernels._config import CACHING

__all__ = ["announce_compilation"]

_log = logging.getLogger("pymc_pcrp")
_announced = False


def _kernels_cached() -> bool:
    """Whether the step's kernels are compiled in this process or have an on-disk cache index.

    ``run_moves`` (sweeps and split-merge moves) is compiled by both of the step's
    entry kernels, ``advance`` (fixed NIW scale) and ``advance_scaled`` (learned scale).
    """
    from pymc_pcrp._kernels.chain import run_moves

    if run_moves.signatures:
        return True
    if not CACHING:
        return False
    try:
        # numba names a kernel's cache index <module>.<function>-<line>.nbi
        return bool(glob(os.path.join(run_moves.stats.cache_path, "chain.run_moves-*.nbi")))
    except (AttributeError, OSError, TypeError):  # an unfamiliar numba: stay silent
        return True


def announce_compilation() -> bool:
    """Log one line, once per process, if the kernels still need compiling; say if it did."""
    global _announced
    if _announced or _kernels_cached():
        return False
    _announced = True
    where = "once per environment" if CACHING else "in every new process: no writable cache"
    _log.warning(
        "pymc_pcrp: compiling the numba kernels before the first draw (%s; about a minute "
        "on a small machine).",
        where,
    )
    return True
