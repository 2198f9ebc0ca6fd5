"""The numbers Lu, Li & Dunson (2018) report, as printed in the paper."""

from __future__ import annotations

import csv

from importlib.resources import files
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


def _read_paper_table(table: int) -> dict[tuple[str, int, str], PaperRow]:
    """Rows of the paper's Table ``table`` from ``paper_tables.csv`` beside this module.

    The CSV holds the numbers as printed, one row per ``(data set, N, method)``;
    they are parsed with :class:`float` and :class:`int`, so each value equals
    the literal it was transcribed as.
    """
    resource = files("pymc_pcrp.cli.reproduce") / "paper_tables.csv"
    rows = {}
    for record in csv.DictReader(resource.read_text(encoding="utf-8").splitlines()):
        if int(record["table"]) != table:
            continue
        key = (record["dataset"], int(record["n"]), record["method"])
        values = {name: float(record[name]) for name in PaperRow._fields if name != "k_max"}
        rows[key] = PaperRow(**values, k_max=int(record["k_max"]))
    return rows


PAPER_TABLE_1: dict[tuple[str, int, str], PaperRow] = _read_paper_table(1)
"""The paper's Table 1 (Sim 1 and Sim 2), keyed by ``(data set, N, method)``.

Transcribed from the paper into ``paper_tables.csv``; these are reported values,
not results of this package. The paper's ground-truth rows are ``K = 3`` (Sim 1)
and ``K = 2`` (Sim 2) with NMI 1 and VI 0.
"""

PAPER_TABLE_2: dict[tuple[str, int, str], PaperRow] = _read_paper_table(2)
"""The paper's Table 2 (MNIST digits 1-4), keyed by ``(data set, N, method)``.

Reported values transcribed from the paper into ``paper_tables.csv`` (ground
truth: ``K = 4``).
"""

PAPER_OLD_FAITHFUL: dict[str, int] = {"CRP-Oracle": 2, "CRP": 4, "pCRP": 2, "Manual": 2}
"""Number of mixture components per method on Old Faithful (``N = 172``), as the
paper's text reads its Fig. 7; the paper gives no table for this data set."""

# The paper runs Sim 1 and Sim 2 alike; they differ in K and in the loss it quotes.
_SIMULATION_SETTINGS: dict[str, object] = {
    "n": (300, 2000),
    "oracle_alpha": (0.52, 0.40),
    "power": None,
    "cv": "training set of 200 samples (held-out size not stated)",
}

PAPER_SETTINGS: dict[str, dict[str, object]] = {
    "Sim 1": {**_SIMULATION_SETTINGS, "k_true": 3, "cv_loss_before_jump": (14.9020, 15.5260)},
    "Sim 2": {**_SIMULATION_SETTINGS, "k_true": 2, "cv_loss_before_jump": (14.2005, 14.2595)},
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
