"""Is the sample good enough? R-hat and bulk ESS of the label-invariant quantities.

Labels of a partition have no meaning of their own (they are renumbered all the
time), so convergence is judged on two quantities that do not depend on the
numbering: the number of clusters ``K`` (the ``n_clusters`` deterministic in the
posterior) and the log joint density (``sample_stats.log_joint`` of
:class:`~pymc_pcrp.PCRPGibbs`). :func:`check_convergence` computes their
rank-normalised R-hat and bulk effective sample size with ArviZ and compares them
with the usual thresholds: R-hat at most 1.01 and a bulk ESS of at least 100
per chain. :func:`pymc_pcrp.fit` and the ``cluster`` command both use it.

Two cases ArviZ does not settle on its own are decided here:

* **A quantity constant within every chain.** Its variance is zero, so R-hat
  and ESS are undefined. If every chain holds the same value (for example
  ``K = 2`` throughout) the chains agree, and the quantity passes; if the
  chains hold different constants, each is stuck in its own state and the
  quantity fails, with R-hat reported as infinite.
* **One chain.** R-hat compares chains and needs at least two; only the ESS is
  checked, and the report says so.

R-hat says *that* chains disagree;
:func:`~pymc_pcrp.stats.chain_comparison.compare_chains` says *how*.

A run cut short (Ctrl-C, or a worker that died) must never pass for a complete
one: PyMC catches ``KeyboardInterrupt`` and returns the draws it has, so
:func:`check_complete` compares what came back with what was asked and raises
:class:`SamplingInterrupted`, which carries the partial InferenceData. When the
chains run one after another, PyMC's catch ends only the chain that was
running, and the next chain starts from scratch;
:func:`stop_after_interrupted_chain` makes one Ctrl-C end them all.
"""

from __future__ import annotations

import math
import warnings

from collections.abc import Callable
from dataclasses import dataclass

import arviz as az
import numpy as np

from pymc_pcrp._runtime.logging import quiet_loggers

__all__ = [
    "ConvergenceReport",
    "ConvergenceWarning",
    "QuantityDiagnostics",
    "SamplingInterrupted",
    "check_complete",
    "check_convergence",
    "stop_after_interrupted_chain",
    "warn_if_not_converged",
]

#: Largest acceptable R-hat.
RHAT_MAX = 1.01
#: Smallest acceptable bulk ESS per chain.
ESS_PER_CHAIN_MIN = 100

REMEDY = (
    "Run more draws, more chains, or another power r, give each draw more sweeps "
    "(fit(..., sweeps_per_draw=...) or pcrp_gibbs={'sweeps_per_draw': ...}; a log joint "
    "that drifts slowly needs them), or give the step more "
    "split-merge proposals (pcrp_gibbs={'split_merge': 1}; on large data each costs "
    "up to a sweep); a small sample size "
    "or chains that disagree make the posterior of K unreliable. "
    "pymc_pcrp.stats.compare_chains(idata) shows whether the chains sit in "
    "different modes and which points they cluster differently."
)


class ConvergenceWarning(UserWarning):
    """The chains of a pCRP fit have not converged or are too short to trust."""


class SamplingInterrupted(RuntimeError):
    """Sampling stopped before every chain had all its draws (for example on Ctrl-C).

    Attributes
    ----------
    idata : arviz.InferenceData or None
        What came back: fewer chains or fewer draws than asked. It is kept for
        inspection only; do not report it as the posterior. ``None`` when
        sampling stopped during tuning, before any draw was kept.
    """

    def __init__(self, message: str, idata: az.InferenceData | None) -> None:
        super().__init__(message)
        self.idata = idata


def check_complete(idata: az.InferenceData, chains: int | None, draws: int) -> None:
    """Raise :class:`SamplingInterrupted` unless ``idata`` holds every chain and draw asked.

    Parameters
    ----------
    idata : arviz.InferenceData
        The result of ``pm.sample``.
    chains : int or None
        Chains asked for (``None``: PyMC chose, only the draws are checked).
    draws : int
        Kept draws asked for per chain.

    Raises
    ------
    SamplingInterrupted
        When the posterior has fewer chains or fewer draws than asked.
    """
    sizes = idata.posterior.sizes
    got_chains, got_draws = int(sizes.get("chain", 0)), int(sizes.get("draw", 0))
    if got_draws >= draws and (chains is None or got_chains >= chains):
        return
    asked = f"{chains} chain(s) x {draws} draws" if chains is not None else f"{draws} draws"
    raise SamplingInterrupted(
        f"Sampling stopped early: {got_chains} chain(s) x {got_draws} draws came back, "
        f"{asked} were asked (interrupted, or a chain failed). The result is incomplete and "
        "is not a posterior to report; the partial InferenceData is in the exception's "
        "'idata' attribute.",
        idata,
    )


def stop_after_interrupted_chain(
    draws_per_chain: int, callback: Callable | None = None
) -> Callable:
    """Return a ``pm.sample`` callback that ends a sequential run after an interrupt.

    With ``cores=1`` PyMC samples the chains one after another and catches a
    ``KeyboardInterrupt`` per chain: Ctrl-C ends the running chain, and the next
    one starts. The returned callback sees every draw (PyMC's documented
    callback, which may stop sampling by raising ``KeyboardInterrupt``). When a
    chain's first draw comes after a chain that stopped short of its last draw,
    the earlier chain was interrupted, and the callback raises
    ``KeyboardInterrupt`` again, so each remaining chain stops at its first draw.

    Parameters
    ----------
    draws_per_chain : int
        Tuning plus kept draws of each chain (PyMC's ``draw_idx`` runs from 0
        to ``draws_per_chain - 1``).
    callback : callable, optional
        The caller's own callback, called first with the same arguments.

    Returns
    -------
    callable
        ``callback(trace, draw)``.
    """
    last: dict[str, int] = {}

    def stop_if_a_chain_was_cut(trace, draw) -> None:
        if callback is not None:
            callback(trace=trace, draw=draw)
        if last and draw.chain != last["chain"] and last["draw_idx"] < draws_per_chain - 1:
            last.update(chain=draw.chain, draw_idx=-1)  # this chain is cut too
            raise KeyboardInterrupt
        last.update(chain=draw.chain, draw_idx=draw.draw_idx)

    return stop_if_a_chain_was_cut


@dataclass(frozen=True)
class QuantityDiagnostics:
    """R-hat and bulk ESS of one label-invariant quantity.

    Attributes
    ----------
    name : str
        ``"n_clusters"`` or ``"log_joint"``.
    r_hat : float
        Rank-normalised split R-hat; NaN with one chain or when the quantity is
        the same constant in every chain, ``inf`` when it is constant in every
        chain but the chains disagree.
    ess_bulk : float
        Bulk effective sample size over all chains; NaN when the quantity is
        constant in every chain.
    constant : bool
        Whether the quantity never changes within any chain.
    problems : tuple of str
        One sentence per failed check (empty when the quantity passes).
    """

    name: str
    r_hat: float
    ess_bulk: float
    constant: bool
    problems: tuple[str, ...]

    @property
    def ok(self) -> bool:
        """Whether every check passed."""
        return not self.problems


@dataclass(frozen=True)
class ConvergenceReport:
    """Result of :func:`check_convergence`.

    Attributes
    ----------
    n_chains, n_draws : int
        Shape of the sample.
    quantities : tuple of QuantityDiagnostics
        ``n_clusters`` and ``log_joint``, those present in the InferenceData.
    converged : bool
        Whether every check of every quantity passed.
    rhat_max, ess_min : float
        The thresholds used: R-hat must not exceed ``rhat_max`` and the bulk
        ESS must reach ``ess_min`` (100 per chain).
    """

    n_chains: int
    n_draws: int
    quantities: tuple[QuantityDiagnostics, ...]
    rhat_max: float
    ess_min: float

    @property
    def converged(self) -> bool:
        """Whether every check of every quantity passed."""
        return all(q.ok for q in self.quantities)

    @property
    def problems(self) -> tuple[str, ...]:
        """Every failed check, one sentence each."""
        return tuple(p for q in self.quantities for p in q.problems)

    def __getitem__(self, name: str) -> QuantityDiagnostics:
        for q in self.quantities:
            if q.name == name:
                return q
        raise KeyError(name)

    def summary(self) -> str:
        """Return a few lines for a person: the numbers, the verdict and, if needed, the remedy."""
        parts = []
        for q in self.quantities:
            if q.constant:
                parts.append(f"{q.name} constant ({'equal' if q.ok else 'differs'} across chains)")
            elif self.n_chains < 2:
                parts.append(f"{q.name} bulk ESS {q.ess_bulk:.0f}")
            else:
                parts.append(f"{q.name} R-hat {q.r_hat:.3f}, bulk ESS {q.ess_bulk:.0f}")
        lines = ["; ".join(parts) + f" ({self.n_chains} chain(s) x {self.n_draws} draws)."]
        if self.n_chains < 2:
            lines.append("R-hat needs at least 2 chains; only the ESS was checked.")
        if self.converged:
            lines.append(
                f"Convergence checks passed (R-hat <= {self.rhat_max:g}, bulk ESS >= "
                f"{self.ess_min:g})."
            )
        else:
            lines.append("NOT CONVERGED: " + " ".join(self.problems))
            lines.append(REMEDY)
        return "\n".join(lines)


def _is_constant(values: np.ndarray) -> np.ndarray:
    """Per chain, whether the values never change (up to rounding of a recomputed density)."""
    scale = np.maximum(1.0, np.abs(values).max(axis=1))
    return np.ptp(values, axis=1) <= 1e-9 * scale


def _chain_means(values: np.ndarray, shown: int = 8) -> str:
    """Format the mean of each chain (four significant digits), the first ``shown`` of them."""
    means = values.mean(axis=1)
    text = ", ".join(f"{m:.4g}" for m in means[:shown])
    return text + (f", ... ({means.size} chains)" if means.size > shown else "")


def _diagnose(
    name: str, values: np.ndarray, rhat_max: float, ess_min: float
) -> QuantityDiagnostics:
    n_chains = values.shape[0]
    constant_chains = _is_constant(values)
    problems = []
    if constant_chains.all():
        first = values[:, 0]
        agree = bool(np.all(np.abs(first - first[0]) <= 1e-9 * max(1.0, np.abs(first).max())))
        r_hat = math.nan if agree else math.inf
        if not agree:
            shown = ", ".join(f"{v:.6g}" for v in first)
            problems.append(
                f"{name} is constant within each chain but differs between chains ({shown}): "
                "each chain is stuck in its own state."
            )
        return QuantityDiagnostics(name, r_hat, math.nan, True, tuple(problems))
    with quiet_loggers("arviz"), np.errstate(invalid="ignore", divide="ignore"):
        ess = float(az.ess(values, method="bulk"))
        r_hat = float(az.rhat(values)) if n_chains >= 2 else math.nan
    if n_chains >= 2 and not r_hat <= rhat_max:
        problems.append(
            f"{name} has R-hat {r_hat:.3f} > {rhat_max:g}: the chains disagree "
            f"(chain means {_chain_means(values)})."
        )
    if not ess >= ess_min:
        problems.append(
            f"{name} has bulk ESS {ess:.0f} < {ess_min:g} ({ESS_PER_CHAIN_MIN} per chain x "
            f"{n_chains} chain(s))."
        )
    return QuantityDiagnostics(name, r_hat, ess, False, tuple(problems))


def check_convergence(
    idata: az.InferenceData,
    *,
    var_name: str = "n_clusters",
    rhat_max: float = RHAT_MAX,
    ess_per_chain: float = ESS_PER_CHAIN_MIN,
) -> ConvergenceReport:
    """R-hat and bulk ESS of the number of clusters and the log joint, against thresholds.

    Parameters
    ----------
    idata : arviz.InferenceData
        Output of :func:`pymc_pcrp.fit` or of ``pm.sample`` on a pCRP model.
    var_name : str, default="n_clusters"
        The number-of-clusters deterministic in ``idata.posterior``.
    rhat_max : float, default=1.01
        Largest acceptable R-hat (checked only with two chains or more).
    ess_per_chain : float, default=100
        Smallest acceptable bulk ESS per chain.

    Returns
    -------
    ConvergenceReport
        The numbers of each quantity present (``var_name`` in the posterior,
        ``log_joint`` in ``sample_stats``) and the verdict ``converged``.

    Raises
    ------
    ValueError
        If ``idata`` holds neither quantity.
    """
    series = {}
    if "posterior" in idata.groups() and var_name in idata.posterior:
        series[var_name] = idata.posterior[var_name]
    if "sample_stats" in idata.groups() and "log_joint" in idata.sample_stats:
        series["log_joint"] = idata.sample_stats["log_joint"]
    if not series:
        raise ValueError(
            f"Argument 'idata' holds neither posterior['{var_name}'] nor "
            "sample_stats['log_joint']; nothing to check."
        )
    shapes = {np.shape(da.values)[:2] for da in series.values()}
    n_chains, n_draws = next(iter(shapes))
    ess_min = float(ess_per_chain) * n_chains
    quantities = tuple(
        _diagnose(name, np.asarray(da.values, dtype=np.float64), rhat_max, ess_min)
        for name, da in series.items()
    )
    return ConvergenceReport(n_chains, n_draws, quantities, float(rhat_max), ess_min)


def warn_if_not_converged(report: ConvergenceReport, stacklevel: int = 2) -> None:
    """Issue one :class:`ConvergenceWarning` per failed check, each with the remedy."""
    for problem in report.problems:
        warnings.warn(f"{problem} {REMEDY}", ConvergenceWarning, stacklevel=stacklevel + 1)
