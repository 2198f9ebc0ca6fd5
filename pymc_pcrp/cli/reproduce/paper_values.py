"""The numbers Lu, Li & Dunson (2018) report, as printed in the paper."""

from __future__ import annotations

from typing import NamedTuple

METHODS = ("CRP-Oracle", "CRP", "pCRP")
"""The three methods of the paper, in the order of its tables."""

K_TRUE = {"Sim 1": 3, "Sim 2": 2, "Digits 1-4": 4, "Old Faithful": 2}
"""True number of clusters of each data set (Old Faithful: the manual clustering)."""


# --------------------------------------------------------------------------- the paper's numbers


class PaperRow(NamedTuple):
    """One method's row of a results table, as printed in the paper.

    Attributes
    ----------
    nmi, nmi_se, vi, vi_se, k, k_se : float
        Posterior means and the standard errors in brackets.
    k_max : int
        Largest number of clusters during sampling.
    """

    nmi: float
    nmi_se: float
    vi: float
    vi_se: float
    k: float
    k_se: float
    k_max: int


PAPER_TABLE_1: dict[tuple[str, int, str], PaperRow] = {
    ("Sim 1", 300, "CRP-Oracle"): PaperRow(0.800, 1.1e-3, 0.669, 4.5e-3, 4.2, 2.3e-2, 8),
    ("Sim 1", 300, "CRP"): PaperRow(0.773, 1.2e-3, 0.795, 5.4e-3, 5.3, 3.3e-2, 12),
    ("Sim 1", 300, "pCRP"): PaperRow(0.827, 0.7e-3, 0.580, 4.4e-3, 3.6, 1.7e-2, 7),
    ("Sim 2", 300, "CRP-Oracle"): PaperRow(0.937, 0.8e-3, 0.210, 3.0e-3, 4.0, 2.3e-2, 9),
    ("Sim 2", 300, "CRP"): PaperRow(0.917, 0.9e-3, 0.287, 3.7e-3, 4.8, 2.9e-2, 12),
    ("Sim 2", 300, "pCRP"): PaperRow(0.963, 0.3e-3, 0.116, 0.8e-3, 3.2, 0.9e-2, 6),
    ("Sim 1", 2000, "CRP-Oracle"): PaperRow(0.812, 5.3e-4, 0.610, 2.6e-3, 4.0, 2.3e-2, 10),
    ("Sim 1", 2000, "CRP"): PaperRow(0.782, 8.5e-4, 0.732, 4.0e-3, 5.8, 3.6e-2, 12),
    ("Sim 1", 2000, "pCRP"): PaperRow(0.823, 6.6e-4, 0.869, 7.3e-3, 3.5, 1.6e-2, 7),
    ("Sim 2", 2000, "CRP-Oracle"): PaperRow(0.962, 4.8e-4, 0.122, 1.7e-3, 4.1, 2.2e-2, 8),
    ("Sim 2", 2000, "CRP"): PaperRow(0.940, 8.2e-4, 0.205, 3.1e-3, 5.6, 3.5e-2, 13),
    ("Sim 2", 2000, "pCRP"): PaperRow(0.977, 1.2e-4, 0.072, 0.4e-3, 3.1, 0.8e-2, 6),
}
"""The paper's Table 1 (Sim 1 and Sim 2), keyed by ``(data set, N, method)``.

Transcribed from the paper; these are reported values, not results of this
package. The paper's ground-truth rows are ``K = 3`` (Sim 1) and ``K = 2``
(Sim 2) with NMI 1 and VI 0.
"""

PAPER_TABLE_2: dict[tuple[str, int, str], PaperRow] = {
    ("Digits 1-4", 1000, "CRP-Oracle"): PaperRow(0.651, 3.3e-4, 1.382, 1.4e-3, 4.37, 1.3e-2, 7),
    ("Digits 1-4", 1000, "CRP"): PaperRow(0.651, 3.3e-4, 1.386, 1.4e-3, 4.58, 1.6e-2, 8),
    ("Digits 1-4", 1000, "pCRP"): PaperRow(0.651, 3.3e-4, 1.382, 1.4e-3, 4.08, 0.6e-2, 6),
    ("Digits 1-4", 3000, "CRP-Oracle"): PaperRow(0.651, 2.0e-4, 1.400, 1.1e-3, 5.17, 1.2e-2, 8),
    ("Digits 1-4", 3000, "CRP"): PaperRow(0.651, 2.0e-4, 1.402, 1.1e-3, 5.44, 1.6e-2, 9),
    ("Digits 1-4", 3000, "pCRP"): PaperRow(0.652, 1.9e-4, 1.389, 1.1e-3, 4.57, 1.2e-2, 7),
}
"""The paper's Table 2 (MNIST digits 1-4), keyed by ``(data set, N, method)``.

Reported values transcribed from the paper (ground truth: ``K = 4``).
"""

PAPER_OLD_FAITHFUL: dict[str, int] = {"CRP-Oracle": 2, "CRP": 4, "pCRP": 2, "Manual": 2}
"""Number of mixture components per method on Old Faithful (``N = 172``), as the
paper's text reads its Fig. 7; the paper gives no table for this data set."""

PAPER_SETTINGS: dict[str, dict[str, object]] = {
    "Sim 1": {
        "n": (300, 2000),
        "k_true": 3,
        "oracle_alpha": (0.52, 0.40),
        "power": None,
        "cv": "training set of 200 samples (held-out size not stated)",
        "cv_loss_before_jump": (14.9020, 15.5260),
    },
    "Sim 2": {
        "n": (300, 2000),
        "k_true": 2,
        "oracle_alpha": (0.52, 0.40),
        "power": None,
        "cv": "training set of 200 samples (held-out size not stated)",
        "cv_loss_before_jump": (14.2005, 14.2595),
    },
    "Digits 1-4": {
        "n": (1000, 3000),
        "k_true": 4,
        "oracle_alpha": (0.58, 0.50),
        "power": 1.05,
        "cv": "a different set of 1000 samples",
        "cv_loss_before_jump": None,
    },
    "Old Faithful": {
        "n": (172,),
        "k_true": 2,
        "oracle_alpha": (0.39,),
        "power": 1.11,
        "cv": "a test sample of 100; the other 172 points are clustered",
        "cv_loss_before_jump": None,
    },
}
"""Settings the paper reports: sizes, true ``K``, CRP-Oracle ``alpha``, chosen ``r``
(``None``: shown only in a figure), its description of the cross-validation data,
and the range of the loss before the jump it quotes for the simulations."""

PAPER_K_PROBABILITIES: dict[tuple[str, str, int], tuple[float, float]] = {
    ("Sim 1", "pCRP", 3): (0.55, 0.68),
    ("Sim 1", "CRP-Oracle", 4): (0.37, 0.38),
}
"""Posterior probabilities of ``K`` quoted in the paper's text (Fig. 5), keyed by
``(data set, method, K)``, at the two sample sizes (``N = 300`` and ``2000``)."""

TABLE_TITLES = (
    "Settings",
    "Cross-validation of r",
    "Table 1: Sim 1 and Sim 2",
    "Table 2: digits 1-4",
    "Old Faithful",
    "Posterior probability of K quoted in the text",
    "The default sampler beside Algorithm 1",
    "The paper's claims, checked mechanically",
    "Sampler diagnostics and run times",
    "Figures",
)
"""Section titles of ``tables.md``, in order."""
