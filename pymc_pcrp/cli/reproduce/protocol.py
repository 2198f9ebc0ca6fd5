"""The settings of a reproduction run and the records of its fits."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from pymc_pcrp.stats.cross_validation import CVResult
from pymc_pcrp.stats.metrics import ClusteringSummary

# --------------------------------------------------------------------------- protocol


@dataclass(frozen=True)
class Protocol:
    """Sizes and sampler settings of one reproduction run.

    Attributes
    ----------
    name : {"full", "quick"}
        Which of the two protocols.
    sim_sizes, digit_sizes : tuple of int
        Sample sizes clustered (the paper: 300 and 2000; 1000 and 3000).
    sim_cv : tuple of int
        Training and held-out sizes of the independent simulation sample used for
        cross-validation.
    digit_cv : int
        Size of the disjoint digits sample used for cross-validation (split in half).
    faithful_cv : int
        Old Faithful eruptions set aside for cross-validation (split in half); the
        rest are clustered.
    tune, draws, sweeps_per_draw, chains, cores : int
        Main fits: ``tune * sweeps_per_draw`` burn-in sweeps, then ``draws`` kept
        draws ``sweeps_per_draw`` sweeps apart, per chain.
    cv_tune, cv_draws, cv_sweeps_per_draw, cv_chains : int
        The same for each grid point of the cross-validation (chains run in turn).
    powers : tuple of float
        Grid of ``r`` for the cross-validation.
    n_jobs : int
        Grid points fitted in parallel.
    density_draws : int
        Draws averaged for the predictive-density figure.
    """

    name: str
    sim_sizes: tuple[int, ...]
    digit_sizes: tuple[int, ...]
    sim_cv: tuple[int, int]
    digit_cv: int
    faithful_cv: int
    tune: int
    draws: int
    sweeps_per_draw: int
    chains: int
    cores: int
    cv_tune: int
    cv_draws: int
    cv_sweeps_per_draw: int
    cv_chains: int
    powers: tuple[float, ...]
    n_jobs: int
    density_draws: int

    @property
    def sweeps(self) -> int:
        """Sweeps per chain of a main fit, burn-in included."""
        return (self.tune + self.draws) * self.sweeps_per_draw

    @property
    def cv_sweeps(self) -> int:
        """Sweeps per chain of a cross-validation fit, burn-in included."""
        return (self.cv_tune + self.cv_draws) * self.cv_sweeps_per_draw


# Every setting of the two protocols side by side: (full, quick).
_SETTINGS: dict[str, tuple] = {
    "sim_sizes": ((300, 2000), (100, 200)),
    "digit_sizes": ((1000, 3000), (150, 300)),
    "sim_cv": ((200, 200), (100, 100)),
    "digit_cv": (1000, 200),
    "faithful_cv": (100, 100),
    "tune": (2000, 40),
    "draws": (2000, 40),
    "sweeps_per_draw": (5, 2),
    "chains": (2, 2),
    "cores": (2, 1),
    "cv_tune": (1000, 25),
    "cv_draws": (1000, 25),
    "cv_sweeps_per_draw": (5, 1),
    "cv_chains": (2, 1),
    "powers": (tuple(round(1.0 + 0.05 * i, 2) for i in range(11)), (1.0, 1.2, 1.4)),
    "n_jobs": (2, 1),
    "density_draws": (500, 40),
}

FULL_PROTOCOL = Protocol(name="full", **{key: full for key, (full, _) in _SETTINGS.items()})
"""The paper's protocol (see :mod:`pymc_pcrp.cli.reproduce`): 20,000 sweeps per
chain, the first 10,000 discarded, every fifth kept; two chains."""

QUICK_PROTOCOL = Protocol(name="quick", **{key: quick for key, (_, quick) in _SETTINGS.items()})
"""The same pipeline on small data with few sweeps (a smoke test, not a result)."""


def select_protocol(quick: bool, n_jobs: int | None = None) -> Protocol:
    """:data:`QUICK_PROTOCOL` or :data:`FULL_PROTOCOL`, with ``n_jobs`` replaced when given."""
    protocol = QUICK_PROTOCOL if quick else FULL_PROTOCOL
    return protocol if n_jobs is None else replace(protocol, n_jobs=int(n_jobs))


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class RunResult:
    """One fit of one method to one data set at one size.

    Attributes
    ----------
    dataset : str
        Data-set name (``"Sim 1"``, ``"Sim 2"``, ``"Digits 1-4"``, ``"Old Faithful"``).
    n : int
        Number of points clustered.
    method : str
        One of :data:`METHODS`.
    alpha, power : float
        Concentration and power of the fit.
    seed : int
        ``random_seed`` of ``pm.sample``.
    summary : ClusteringSummary
        NMI, VI and ``K`` against the true partition.
    k_draws : numpy.ndarray
        ``K`` of every kept draw, shape ``(chain, draw)``.
    k_rhat, k_ess_bulk, k_ess_tail : float
        ArviZ diagnostics of ``K`` (NaN when ``K`` never changes).
    point_sizes : tuple of int
        Cluster sizes (decreasing) of the point estimate.
    point_method : str
        How the point estimate was obtained.
    seconds : float
        Wall time of the sampling.
    """

    dataset: str
    n: int
    method: str
    alpha: float
    power: float
    seed: int
    summary: ClusteringSummary
    k_draws: np.ndarray = field(repr=False)
    k_rhat: float
    k_ess_bulk: float
    k_ess_tail: float
    point_sizes: tuple[int, ...]
    point_method: str
    seconds: float

    def k_probability(self, k: int) -> float:
        """Posterior probability that the number of clusters equals ``k``."""
        return float(np.mean(self.k_draws == k))


@dataclass(frozen=True)
class CVRun:
    """The cross-validation of ``r`` for one data set.

    Attributes
    ----------
    dataset : str
    n_train, n_test : int
    result : CVResult
    seed : int
        ``random_seed`` of :func:`~pymc_pcrp.stats.cross_validation.cross_validate_power`.
    seconds : float
    """

    dataset: str
    n_train: int
    n_test: int
    result: CVResult
    seed: int
    seconds: float


@dataclass
class ReproductionResult:
    """Everything :func:`run_reproduction` computed and wrote.

    Attributes
    ----------
    protocol : Protocol
    seed : int
        The base seed.
    runs : list of RunResult
    cv : dict of str to CVRun
        Keyed by data-set name.
    notes : dict of str to str
        Data description per data set.
    digits_source : str
        ``"mnist-train"`` or ``"sklearn-8x8"``.
    figures : list of pathlib.Path
        The PNG files written.
    tables : pathlib.Path
        ``tables.md``.
    command : str
    started : str
        ISO date and time (UTC) at which the run started.
    machine : str
    code : str
        Git commit of the package and the package files changed since.
    seconds : float
        Total wall time.
    default_moves : str
        The default options of :class:`~pymc_pcrp.PCRPGibbs` used by the
        ``"pCRP (default moves)"`` fits (empty in results pickled before them).
    """

    protocol: Protocol
    seed: int
    runs: list[RunResult] = field(default_factory=list)
    cv: dict[str, CVRun] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)
    digits_source: str = ""
    figures: list[Path] = field(default_factory=list)
    tables: Path | None = None
    command: str = ""
    started: str = ""
    machine: str = ""
    code: str = ""
    seconds: float = 0.0
    default_moves: str = ""

    def run(self, dataset: str, n: int, method: str) -> RunResult:
        """Return the run of ``method`` on ``dataset`` at size ``n``."""
        for result in self.runs:
            if (result.dataset, result.n, result.method) == (dataset, n, method):
                return result
        raise KeyError((dataset, n, method))
