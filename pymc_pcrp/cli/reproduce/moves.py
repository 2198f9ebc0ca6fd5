"""The sampler and prior of the paper's protocol, pinned, and the default sampler beside it.

Every fit of the paper's protocol (the main fits of the three methods and the
cross-validation fits) runs the paper's Algorithm 1, the single-point collapsed
Gibbs sweep (:class:`~pymc_pcrp.PCRPGibbs` with ``split_merge=0``), under the
fixed prior ``NIWPrior.from_data(X, scale=0.1)``. Both are passed explicitly,
so a change of the package defaults cannot leak into the paper's numbers.

Beside them, for the pCRP at the cross-validated ``r``, one more fit uses the
step method's *default* options (whatever :class:`~pymc_pcrp.PCRPGibbs` does
when given none), with the same data, prior, ``r``, seed and budget of sweeps;
its label names the options read from the step's signature at run time.
"""

from __future__ import annotations

import inspect

from collections.abc import Sequence

import numpy as np

from pymc_pcrp.cli.reproduce.protocol import ReproductionResult, RunResult
from pymc_pcrp.distributions.niw_prior import NIWPrior
from pymc_pcrp.step_methods.pcrp_gibbs import PCRPGibbs

ALGORITHM_1: dict[str, object] = {"split_merge": 0, "init": "random", "restarts": 1}
"""``pcrp_gibbs`` options of every paper fit: the plain collapsed Gibbs sweep of the
paper's Algorithm 1 (no split-merge proposals), from one random initial partition (no
restarts during tuning)."""

PRIOR_SCALE = 0.1
"""``scale`` of :meth:`NIWPrior.from_data` in every fit: a fixed prior whose cluster
covariance is a priori 10% of the per-feature variance of the data."""

DEFAULT_MOVES = "pCRP (default moves)"
"""Method name of the extra pCRP fit that uses the step method's default options."""

_NOT_MOVES = frozenset(
    {
        "self",
        "vars",
        "sweeps_per_draw",
        "model",
        "rng",
        "initial_point",
        "compile_kwargs",
        "blocked",
    }
)
"""Arguments of ``PCRPGibbs.__init__`` that do not choose the move set (``sweeps_per_draw``
is set by the protocol for every fit)."""


def paper_prior(X) -> NIWPrior:
    """Return the fixed prior of the paper's protocol for the data ``X``."""
    return NIWPrior.from_data(X, scale=PRIOR_SCALE)


def default_step_options() -> dict[str, object]:
    """Return the default options of :class:`~pymc_pcrp.PCRPGibbs`, read at run time.

    Only the options that choose the moves and the start are returned, not the
    technical ones (model, random generator, compilation) nor ``sweeps_per_draw``.
    """
    parameters = inspect.signature(PCRPGibbs.__init__).parameters.values()
    return {
        p.name: p.default
        for p in parameters
        if p.name not in _NOT_MOVES
        and p.default is not inspect.Parameter.empty
        and p.kind is not inspect.Parameter.VAR_KEYWORD
    }


def describe_options(options: dict[str, object]) -> str:
    """Return ``"name=value, ..."`` for step options, sorted by name."""
    return ", ".join(f"{name}={value!r}" for name, value in sorted(options.items()))


ALGORITHM_1_LABEL = f"Algorithm 1 ({describe_options(ALGORITHM_1)})"
"""How the paper fits' sampler is described in the tables."""


def _fmt(value: float, digits: int) -> str:
    return "-" if not np.isfinite(value) else f"{value:.{digits}f}"


def _row(run: RunResult, moves: str) -> str:
    s = run.summary
    return (
        f"| {run.dataset} | {run.n} | {run.power:g} | {moves} | "
        f"{s.k_mean:.2f} ({s.k_se:.1e}) | {s.k_max} | {s.nmi_mean:.3f} ({s.nmi_se:.1e}) | "
        f"{s.vi_mean:.3f} ({s.vi_se:.1e}) | {_fmt(run.k_rhat, 3)} | "
        f"{_fmt(run.k_ess_bulk, 0)} | {run.seconds:.1f} |"
    )


def moves_section(result: ReproductionResult, title: str, order: Sequence[str]) -> list[str]:
    """Return the table of the pCRP under Algorithm 1 and under the default moves.

    Parameters
    ----------
    result : ReproductionResult
    title : str
        Section title.
    order : sequence of str
        Data-set names in the order of the tables.

    Returns
    -------
    list of str
        Markdown lines (empty when the run has no default-moves fits, as in
        results pickled before they existed).
    """
    extra = {(r.dataset, r.n): r for r in result.runs if r.method == DEFAULT_MOVES}
    if not extra:
        return []
    lines = [
        "",
        "## " + title,
        "",
        "The pCRP at the cross-validated r fitted twice: with the paper's sampler "
        f"({ALGORITHM_1_LABEL}) and with the step method's default options at the time "
        f"of the run ({result.default_moves}); same data, prior, r, seed, chains and "
        "sweeps. Cells read `mean (naive SE)`; R-hat(K) above 1.1 means the chains "
        "disagree.",
        "",
        "| Data | N | r | Moves | K | K_max | NMI | VI | R-hat(K) | bulk ESS(K) | seconds |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (name, n), run in sorted(extra.items(), key=lambda g: (order.index(g[0][0]), g[0][1])):
        lines.append(_row(result.run(name, n, "pCRP"), ALGORITHM_1_LABEL))
        lines.append(_row(run, f"default ({result.default_moves})"))
    return lines
