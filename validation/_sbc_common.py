"""What the simulation-based calibration scripts share: ranks, the run header, the table.

Imported by ``validation/sbc.py``, ``sbc_latent.py`` and ``sbc_power.py`` (run as
``python validation/<script>.py``, so this folder is on ``sys.path``).
"""

from __future__ import annotations

import datetime
import os
import platform

import numpy as np
import scipy.stats


def rank_with_ties(rng: np.random.Generator, true_value: float, draws: np.ndarray) -> int:
    """Rank of ``true_value`` among ``draws``, ties broken uniformly at random.

    The same rule as ``tests/statistical/test_sbc.py``: values within 1e-9
    (relative or absolute) count as ties, because the log joint of the truth
    (PyTensor) and of the draws (numba) agree to about 1e-12, not bitwise.
    """
    tie = np.isclose(draws, true_value, rtol=1e-9, atol=1e-9)
    below = np.sum((draws < true_value) & ~tie)
    return int(below + rng.integers(0, tie.sum() + 1))


def print_header(script: str, given: list[str]) -> None:
    """Print the command, the date and the machine of a run."""
    print(f"command: python validation/{script} {' '.join(given)}")
    print(
        f"date: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC; machine: "
        f"{os.cpu_count()} CPUs, {platform.machine()}, load {os.getloadavg()[0]:.1f}"
    )


def print_rank_table(ranks: np.ndarray, names: tuple[str, ...], kept: int, bins: int = 10) -> None:
    """Chi-square test of uniformity of each column of ``ranks`` (values ``0..kept``)."""
    print(
        f"| statistic | chi-square ({bins - 1} df) | p-value | counts per tenth of the rank range |"
    )
    print("|---|---|---|---|")
    for s, name in enumerate(names):
        counts = np.bincount(np.minimum(ranks[:, s] * bins // (kept + 1), bins - 1), minlength=bins)
        chi2, p = scipy.stats.chisquare(counts)
        print(f"| {name} | {chi2:.1f} | {p:.3f} | {' '.join(map(str, counts))} |")
