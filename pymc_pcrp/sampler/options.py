"""The options of :class:`~pymc_pcrp.PCRPGibbs`: their checks and the rules behind ``None``.

``sweeps_per_draw=None`` and ``split_merge=None`` are resolved from the data's
size by :func:`auto_sweeps_per_draw` and :func:`auto_split_merge`,
``speck_moves=None`` by :func:`auto_speck_moves`, ``informed_moves=None`` by
:func:`auto_informed_moves` and :func:`informed_rate`, ``pair_moves=None`` by
:func:`auto_pair_moves` (docs/mixing.md explains each rule and the measurements
behind its constants). A chain's start for each ``init`` is drawn by
:func:`pymc_pcrp.sampler.restarts.initial_labels`.
"""

from __future__ import annotations

import math

from dataclasses import dataclass

import numpy as np

from pymc_pcrp._kernels.moves import SMALL_SIZE
from pymc_pcrp.sampler.restarts import RANDOM_INITS, auto_restarts
from pymc_pcrp.sampler.tempering import checked_ladder

__all__ = [
    "INIT_STRATEGIES",
    "OPTIONS",
    "PAIR_MOVES",
    "PAIR_MOVES_MAX_N",
    "PAIR_MOVES_MIN_D",
    "SPECK_MOVES",
    "SPECK_SIZE",
    "SPLIT_MERGE_SCANS",
    "TEMPLATE_JUMPS",
    "TEMPLATE_WORK",
    "TUNING_WORK",
    "ChainFacts",
    "MovePlan",
    "Option",
    "auto_informed_moves",
    "auto_pair_moves",
    "auto_speck_moves",
    "auto_split_merge",
    "auto_sweeps_per_draw",
    "auto_template_jumps",
    "auto_tune_sweeps",
    "check_options",
    "informed_rate",
    "resolve_plan",
    "tuning_split_merge",
    "visited_fraction",
]

INIT_STRATEGIES = ("random", "prior", "one", "singletons", "point")

# Default move set (docs/mixing.md): after each sweep, split_merge=None expected split-merge
# proposals, built by sequential allocation alone (SAMS, split_merge_scans=-1). While a
# chain tunes, min(TUNING_MAX, max(SPLIT_MERGE_RATE, TUNING_WORK / (N D))), the rule of
# earlier versions (tuning_split_merge; the tournament of restarts runs with it); from the
# first draw after tuning, min(SPLIT_MERGE_MAX, max(SPLIT_MERGE_RATE, SPLIT_MERGE_WORK /
# (N D f))), f the share of the points a proposal visits on average (visited_fraction) in
# the partition the chain has reached then, kept for every later draw (auto_split_merge).
# At N = 2,000, D = 2 in the three clusters of the budget benchmark (f = 0.61) the kept
# rate is 0.30, measured with benchmarks/run.py to cost 1.28-1.34x a plain sweep (at most
# 1.5x), since merges that must fail stop early (it was 360 before, 0.15 there).
# SPLIT_MERGE_MAX was 1 until 2026-11-29: on the digits embedding at r = 1 (f = 0.17) the
# rule asks for 2.2-2.8, and the log joint needs about 88 sweeps per effective draw
# instead of 124 (docs/mixing.md, "Tuning draws, three proposals, fewer sweeps per draw").
SPLIT_MERGE_RATE = 0.1
SPLIT_MERGE_MAX = 3.0
TUNING_MAX = 1.0
SPLIT_MERGE_WORK = 720
TUNING_WORK = 600
SPLIT_MERGE_SCANS = -1
# While a table chain tunes, at least the proposals that cost about one sweep (K / (2 f),
# sweep_matched_rate), at most TABLE_TUNING_MAX per sweep (docs/tables.md, "Tuning").
TABLE_TUNING_MAX = 100.0
# speck_moves=None with split-merge moves on: SPECK_MOVES proposals per sweep whose pair of
# points is drawn among the clusters of at most SPECK_SIZE points (docs/mixing.md,
# "Moves among the specks"). Each visits at most 2 * SPECK_SIZE points.
SPECK_MOVES = 4.0
#: The largest cluster a speck move draws its pair of points from.
SPECK_SIZE = SMALL_SIZE
# informed_moves=None with split-merge moves on, for the families that have the move (the
# table family): proposals per sweep that merge a cluster with one drawn by how much the
# posterior gains from the merge, or split a uniform cluster (_kernels/informed_moves.py;
# docs/tables.md, "Tuning"): min(INFORMED_MOVES, K^2 / 6), about half a sweep's work, set from
# the partition each tuning draw starts from and kept from the first draw after tuning.
INFORMED_MOVES = 40.0
# pair_moves=None with split-merge moves on: PAIR_MOVES moves per sweep that carry two nearby
# points of one cluster to another cluster together (docs/mixing.md, "Pair moves"), for the
# full-covariance family in at least PAIR_MOVES_MIN_D dimensions (a lone point costs the
# posterior more the more dimensions it has; at D = 2 the moves' cost would break the 1.5x
# budget) and on at most PAIR_MOVES_MAX_N points (their tables, built once per data set,
# cost O(N^2 D): 0.4 s at N = 10,000, D = 2).
PAIR_MOVES = 2.0
PAIR_MOVES_MIN_D = 3
PAIR_MOVES_MAX_N = 10_000
# template_jumps=None with split-merge moves on: proposals per kept draw from the partitions
# remembered during tuning (docs/mixing.md, "Template jumps"), TEMPLATE_WORK / (N D) kept
# between 1 and TEMPLATE_JUMPS. Each costs O(N + moved D^2 + K D^3) plus O(N K + 2^K K) per
# template: 25 on breast cancer (N D = 17,070), 1 from N D = 500,000 on.
TEMPLATE_JUMPS = 25.0
TEMPLATE_WORK = 500_000
# sweeps_per_draw=None: enough sweeps that a draw does about AUTO_SWEEP_WORK point-dimension
# updates (N * max(D, AUTO_SWEEP_MIN_D) per sweep), at most AUTO_SWEEPS_MAX sweeps; see
# auto_sweeps_per_draw. A point costs the kernel 0.77-0.87 times as much at D = 1 as at
# D = 2 for N = 1,000 to 10,000 (benchmarks/run.py --only scaling --repeats 7), not the half
# that N D says, so one dimension counts as two (since 2026-11-29; docs/mixing.md, "One
# dimension counts as two").
AUTO_SWEEP_WORK = 45000
AUTO_SWEEPS_MAX = 20
AUTO_SWEEP_MIN_D = 2
# tune_sweeps=None: a tuning draw after the tournament of restarts runs one TUNING_THIN-th
# of a kept draw's sweeps (rounded up); see auto_tune_sweeps.
TUNING_THIN = 5


def _check_rate(name: str, value) -> None:
    """Raise ``ValueError`` unless ``value`` is None or a finite non-negative number."""
    try:
        ok = value is None or (math.isfinite(float(value)) and float(value) >= 0)
    except (TypeError, ValueError):
        ok = False
    if not ok or isinstance(value, bool):
        raise ValueError(
            f"Argument '{name}' must be a finite non-negative number (expected "
            f"proposals per sweep) or None (automatic), got {value!r}."
        )


def check_options(
    sweeps_per_draw,
    split_merge,
    split_merge_scans,
    init,
    alpha_w=1.0,
    restarts=None,
    speck_moves=None,
    pair_moves=None,
    template_jumps=None,
    tune_sweeps=None,
    informed_moves=None,
) -> None:
    """Raise ``ValueError`` naming the first invalid option of :class:`~pymc_pcrp.PCRPGibbs`."""
    for name, value in (("sweeps_per_draw", sweeps_per_draw), ("tune_sweeps", tune_sweeps)):
        if value is not None and (
            isinstance(value, bool)
            or not isinstance(value, int | float | np.number)
            or not math.isfinite(value)
            or int(value) != value
            or value < 1
        ):
            raise ValueError(
                f"Argument '{name}' must be a positive integer or None (automatic), got {value!r}."
            )
    _check_rate("split_merge", split_merge)
    _check_rate("speck_moves", speck_moves)
    _check_rate("pair_moves", pair_moves)
    _check_rate("template_jumps", template_jumps)
    _check_rate("informed_moves", informed_moves)
    try:
        scans_ok = int(split_merge_scans) == split_merge_scans and split_merge_scans >= -1
    except (TypeError, ValueError):
        scans_ok = False
    if not scans_ok:
        raise ValueError(
            "Argument 'split_merge_scans' must be an integer >= -1 (-1: sequential "
            f"allocation alone), got {split_merge_scans!r}."
        )
    if init not in INIT_STRATEGIES:
        raise ValueError(f"Argument 'init' must be one of {INIT_STRATEGIES}, got {init!r}.")
    try:
        width_ok = not isinstance(alpha_w, bool) and math.isfinite(alpha_w) and alpha_w > 0
    except TypeError:
        width_ok = False
    if not width_ok:
        raise ValueError(
            f"Argument 'alpha_w' must be a positive number (a slice width), got {alpha_w!r}."
        )
    if restarts is not None and (
        isinstance(restarts, bool) or not isinstance(restarts, int | np.integer) or restarts < 1
    ):
        raise ValueError(
            "Argument 'restarts' must be a positive integer (1: no restarts) or None "
            f"(automatic), got {restarts!r}."
        )
    if restarts is not None and restarts > 1 and init not in RANDOM_INITS:
        raise ValueError(
            f"Argument 'restarts' > 1 needs a random start, init='random' or 'prior'; with "
            f"init={init!r} every start would be the same partition. Pass restarts=1."
        )


def auto_sweeps_per_draw(n: int, d: int = 1) -> int:
    """Sweeps per draw of ``sweeps_per_draw=None``: ``min(20, ceil(45000 / (n max(d, 2))))``.

    At least 1. A sweep costs about ``n max(d, 2)`` point-dimension updates: the
    kernel spends nearly as much on a point at ``d = 1`` as at ``d = 2``. ``d = 0`` (no
    likelihood: the prior's weights alone) counts as 1.
    """
    dims = 1 if int(d) <= 0 else max(int(d), AUTO_SWEEP_MIN_D)
    work = max(int(n), 1) * dims
    return max(1, min(AUTO_SWEEPS_MAX, math.ceil(AUTO_SWEEP_WORK / work)))


def auto_tune_sweeps(sweeps_per_draw: int) -> int:
    """Sweeps per tuning draw of ``tune_sweeps=None``: ``ceil(sweeps_per_draw / 5)``.

    These are the tuning draws after the tournament of restarts (all of them when
    there is none): they only carry the chain to the posterior, and no estimate
    uses them, so they need not be thinned like the kept draws. The tournament's
    own draws keep ``sweeps_per_draw`` sweeps, so that its segments are as long as
    its rules say (:mod:`pymc_pcrp.sampler.restarts`).
    """
    return max(1, math.ceil(int(sweeps_per_draw) / TUNING_THIN))


def visited_fraction(counts: np.ndarray) -> float:
    """Return the expected share of the points one split-merge proposal visits.

    A proposal draws two points uniformly and visits the points of their cluster
    (a split) or of their two clusters (a merge). With cluster shares ``p_k``
    (``counts`` may hold zeros, empty slots) that is
    ``sum_k p_k^2 p_k + sum_{k != l} p_k p_l (p_k + p_l) = 2 sum p_k^2 - sum p_k^3``:
    1 for one cluster, ``2 / K - 1 / K^2`` for ``K`` equal ones.
    """
    sizes = np.asarray(counts, dtype=np.float64)
    total = sizes.sum()
    if total <= 0:
        return 1.0
    shares = sizes[sizes > 0] / total
    return float(2.0 * np.sum(shares**2) - np.sum(shares**3))


def auto_split_merge(n: int, d: int, visited: float) -> float:
    """Split-merge proposals per sweep of ``split_merge=None`` once a chain has tuned.

    ``min(3, max(0.1, 720 / (n d visited)))``, ``visited`` the
    :func:`visited_fraction` of the partition the chain has reached at its first
    draw after tuning: the proposals of a sweep visit about ``720 / d`` points on
    average, up to three proposals per sweep and at least one every ten sweeps. A
    proposal's cost grows with the points it visits, not with ``n``, while PyMC
    adds a fixed cost per draw: on small data sets, and where the clusters are
    many and small (each proposal visits few points), more proposals take little
    of a draw's time; on large data sets the rate stays at 0.1. The chain keeps
    that rate for the rest of its draws (see :class:`~pymc_pcrp.PCRPGibbs`);
    while it tunes it uses :func:`tuning_split_merge`. ``d = 0`` (no likelihood)
    counts as 1.
    """
    visited = min(max(float(visited), 1e-12), 1.0)
    rate = SPLIT_MERGE_WORK / (max(int(n), 1) * max(int(d), 1) * visited)
    return _bounded_rate(rate, SPLIT_MERGE_MAX)


def tuning_split_merge(n: int, d: int) -> float:
    """Split-merge proposals per sweep of ``split_merge=None`` while a chain tunes.

    ``min(1, max(0.1, 600 / (n d)))``: the rule of versions before the rate was
    set from the partition, which the tuning draws (the tournament of restarts
    included) keep. ``d = 0`` (no likelihood) counts as 1.
    """
    rate = TUNING_WORK / (max(int(n), 1) * max(int(d), 1))
    return _bounded_rate(rate, TUNING_MAX)


def sweep_matched_rate(counts: np.ndarray, cap: float = TABLE_TUNING_MAX) -> float:
    """Split-merge proposals per sweep that cost about one sweep, ``K / (2 f)``, at most ``cap``.

    ``K`` is the number of occupied clusters in ``counts`` and ``f`` their
    :func:`visited_fraction`. A table family's sweep scores every row under each
    of the ``K`` clusters, while a proposal scores the ``f N`` rows it visits
    under two groups; ``K / (2 f)`` proposals thus do about the work of one
    sweep. The table family tunes with at least this rate
    (:attr:`~pymc_pcrp.sampler.families.ClusterFamily.tunes_by_sweep_cost`).
    """
    k = int(np.count_nonzero(np.asarray(counts)))
    if k == 0:
        return 0.0
    return min(cap, k / (2.0 * visited_fraction(counts)))


def _bounded_rate(rate: float, cap: float) -> float:
    """``rate`` kept between :data:`SPLIT_MERGE_RATE` (0.1) and ``cap``."""
    return min(cap, max(SPLIT_MERGE_RATE, rate))


def auto_speck_moves(split_merge: float) -> float:
    """Speck proposals per sweep of ``speck_moves=None``: ``SPECK_MOVES`` (4), or 0.

    0 when ``split_merge == 0``, so that ``split_merge=0`` alone still gives the
    paper's Algorithm 1.
    """
    return SPECK_MOVES if split_merge > 0 else 0.0


def auto_informed_moves(split_merge: float, supported: bool = True) -> float:
    """Return the cap on the informed proposals per sweep of ``informed_moves=None``.

    0 when ``split_merge == 0`` (so that ``split_merge=0`` alone still gives the
    paper's Algorithm 1) and for a family without the move (the Gaussian ones).
    Otherwise ``INFORMED_MOVES`` (40), and a chain makes :func:`informed_rate` of
    its partition, at most that.
    """
    return INFORMED_MOVES if split_merge > 0 and supported else 0.0


def informed_rate(counts: np.ndarray, cap: float = INFORMED_MOVES) -> float:
    """Informed proposals per sweep that cost about half a sweep, ``K^2 / 6``, at most ``cap``.

    A table's sweep scores every row under each of the ``K`` clusters (``N K``
    scores). An informed split visits the rows of a uniform cluster (``N / K`` on
    average), a merge those of two (about ``2 N / K``), each row under two groups:
    about ``3 N / K`` scores a proposal, so ``K^2 / 6`` of them make about half
    a sweep's work (more in practice: a row seated in a group also updates the
    group's statistics). On few clusters the move is then rare (it has little to
    choose from); on many it runs at ``cap``.
    """
    k = int(np.count_nonzero(np.asarray(counts)))
    return min(float(cap), k * k / 6.0)


def auto_pair_moves(split_merge: float, n: int, d: int, supported: bool = True) -> float:
    """Pair moves per sweep of ``pair_moves=None``: ``PAIR_MOVES`` (2), or 0.

    0 when ``split_merge == 0`` (so that ``split_merge=0`` alone still gives the
    paper's Algorithm 1), in fewer than ``PAIR_MOVES_MIN_D`` (3) dimensions (no
    data is ``d == 0``), above ``PAIR_MOVES_MAX_N`` points, or when the model
    does not support the move (``supported``: the diagonal covariance family and
    latent values have none).
    """
    if split_merge <= 0 or d < PAIR_MOVES_MIN_D or n > PAIR_MOVES_MAX_N or not supported:
        return 0.0
    return PAIR_MOVES


def auto_template_jumps(split_merge: float, n: int, d: int, supported: bool = True) -> float:
    """Template-jump proposals per kept draw of ``template_jumps=None``.

    ``min(TEMPLATE_JUMPS, max(1, TEMPLATE_WORK / (N D)))`` (25 up to ``N D = 20,000``,
    1 from ``N D = 500,000`` on); 0 when ``split_merge == 0`` (so that ``split_merge=0``
    alone still gives the paper's Algorithm 1) or when the model does not support
    the move (``supported``).
    """
    if split_merge <= 0 or not supported:
        return 0.0
    return min(TEMPLATE_JUMPS, max(1.0, TEMPLATE_WORK / max(n * max(d, 1), 1)))


# -- The options declared once, resolved once ---------------------------------------------


@dataclass(frozen=True)
class ChainFacts:
    """What the automatic rules and the checks of the options need to know about a model.

    ``n`` points of dimension ``d`` (0 without a likelihood); ``family`` is the
    cluster family's name, ``local_moves`` whether it has pair moves,
    ``template_jumps`` whether it has template jumps and ``tempering`` whether it
    has hot replicas; ``latent`` whether the clustered values are latent;
    ``random_prior`` whether ``alpha`` or the power is random (owned by the step
    or not); ``learns_nu0`` whether the NIW prior has a grid of ``nu0`` values.
    """

    n: int
    d: int
    family: str = "full"
    local_moves: bool = True
    template_jumps: bool = True
    tempering: bool = True
    informed_moves: bool = False
    has_likelihood: bool = True
    latent: bool = False
    random_prior: bool = False
    learns_nu0: bool = False

    def local_moves_unsupported(self) -> str | None:
        """Why the pair moves do not exist for this model (None: they do)."""
        return self._moves_unsupported(self.local_moves)

    def informed_moves_unsupported(self) -> str | None:
        """Why the informed split-merge proposals do not exist for this model (None: they do)."""
        return None if self.informed_moves else f"covariance='{self.family}'"

    def template_jumps_unsupported(self) -> str | None:
        """Why the template jumps do not exist for this model (None: they do)."""
        return self._moves_unsupported(self.template_jumps)

    def _moves_unsupported(self, family_has_them: bool) -> str | None:
        if not family_has_them:
            return f"covariance='{self.family}'"
        if self.latent:
            return "latent values (the data move at every draw)"
        if not self.has_likelihood:
            return "no NIWMixture likelihood"
        return None

    def tempering_unsupported(self) -> str | None:
        """Return what of the model the hot replicas of ``temper`` cannot handle (None: nothing)."""
        if not self.tempering:
            return f"with covariance='{self.family}'"
        if self.latent:
            return "with latent values"
        if self.learns_nu0:
            return (
                "with a learned nu0 (NIWPrior.nu0_grid); fix it, e.g. "
                "NIWPrior.from_data(X, nu0=D + 2)"
            )
        return None


@dataclass(frozen=True)
class Option:
    """One option of a chain: its name, default and the rule that resolves ``None``."""

    name: str
    default: object
    rule: str


#: Every option of :class:`~pymc_pcrp.PCRPGibbs`, in the order they are resolved. The
#: checks are :func:`check_options`; the rules are applied by :func:`resolve_plan`.
OPTIONS: tuple[Option, ...] = (
    Option("sweeps_per_draw", None, "min(20, ceil(45000 / (N max(D, 2)))), auto_sweeps_per_draw"),
    Option("tune_sweeps", None, "ceil(sweeps_per_draw / 5), auto_tune_sweeps"),
    Option("init", "random", "fixed default"),
    Option(
        "split_merge",
        None,
        "tuning_split_merge while tuning (tables: at least sweep_matched_rate), "
        "then auto_split_merge",
    ),
    Option("split_merge_scans", SPLIT_MERGE_SCANS, "fixed default (-1: sequential allocation)"),
    Option("speck_moves", None, "4 with split-merge moves, else 0 (auto_speck_moves)"),
    Option(
        "informed_moves",
        None,
        "min(40, K^2 / 6) with split-merge moves where supported (tables; informed_rate), else 0",
    ),
    Option("pair_moves", None, "2 in D >= 3 up to N = 10,000 where supported (auto_pair_moves)"),
    Option("temper", None, "off"),
    Option("restarts", None, "most starts whose tournament fits 400 draws (auto_restarts)"),
    Option("template_jumps", None, "min(25, max(1, 500,000 / (N D))) where supported"),
    Option("templates", None, "none given"),
    Option("alpha_w", 1.0, "fixed default"),
)


@dataclass(frozen=True)
class MovePlan:
    """The resolved options of a chain (no ``None`` left but ``temper`` and ``templates``).

    ``temper`` holds the inverse temperatures of parallel tempering (``None``: off).

    ``split_merge`` is the rate a chain starts with; with ``split_merge_auto`` the
    chain sets its kept rate once, at its first draw after tuning. Likewise
    ``informed_moves`` with ``informed_moves_auto``, where it is the cap of
    :func:`informed_rate`.
    """

    sweeps_per_draw: int
    tune_sweeps: int
    init: str
    split_merge: float
    split_merge_auto: bool
    split_merge_scans: int
    speck_moves: float
    informed_moves: float
    informed_moves_auto: bool
    pair_moves: float
    temper: np.ndarray | None
    restarts: int
    template_jumps: float
    templates: object
    alpha_w: float


def _refused(name: str, value, unsupported: str | None) -> float:
    """Return an explicit rate; refuse one above 0 where its move does not exist."""
    if float(value) > 0 and unsupported is not None:
        raise ValueError(
            f"Argument '{name}' > 0 is not available with {unsupported}: pass "
            f"{name}=0, or None (the default), which turns them off there."
        )
    return float(value)


def resolve_plan(options: dict, facts: ChainFacts) -> MovePlan:
    """Check every option, apply the automatic rules of :data:`OPTIONS`; return the plan.

    ``options`` maps option names to the values given (missing names take their
    defaults). Raises ``ValueError`` naming the first invalid option. The rules
    depend on ``facts`` only, so a model always gets the same plan.
    """
    unknown = set(options) - {option.name for option in OPTIONS}
    if unknown:
        raise TypeError(f"Unknown PCRPGibbs option(s): {sorted(unknown)}.")
    given = {option.name: options.get(option.name, option.default) for option in OPTIONS}
    check_options(
        given["sweeps_per_draw"],
        given["split_merge"],
        given["split_merge_scans"],
        given["init"],
        given["alpha_w"],
        given["restarts"],
        given["speck_moves"],
        given["pair_moves"],
        given["template_jumps"],
        given["tune_sweeps"],
        given["informed_moves"],
    )
    n, d = facts.n, facts.d
    sweeps = given["sweeps_per_draw"]
    sweeps = auto_sweeps_per_draw(n, d) if sweeps is None else int(sweeps)
    tune_sweeps = given["tune_sweeps"]
    tune_sweeps = auto_tune_sweeps(sweeps) if tune_sweeps is None else int(tune_sweeps)
    split_merge = given["split_merge"]
    split_merge_auto = split_merge is None
    split_merge = tuning_split_merge(n, d) if split_merge_auto else float(split_merge)
    speck = given["speck_moves"]
    speck = auto_speck_moves(split_merge) if speck is None else float(speck)
    informed = given["informed_moves"]
    if informed is None:
        informed = auto_informed_moves(split_merge, facts.informed_moves_unsupported() is None)
    else:
        informed = _refused("informed_moves", informed, facts.informed_moves_unsupported())
    local = facts.local_moves_unsupported()
    pairs = given["pair_moves"]
    if pairs is None:
        pairs = auto_pair_moves(split_merge, n, d, local is None)
    else:
        pairs = _refused("pair_moves", pairs, local)
    restarts = given["restarts"]
    restarts = auto_restarts(sweeps, given["init"]) if restarts is None else int(restarts)
    # the inverse temperatures of parallel tempering (None: off), checked against the model
    betas = checked_ladder(
        given["temper"], facts.has_likelihood, facts.random_prior, facts.tempering_unsupported()
    )
    jumps_unsupported = facts.template_jumps_unsupported() or (
        "a random alpha or power"
        if facts.random_prior
        else "temper (parallel tempering)"
        if betas is not None
        else None
    )
    jumps = given["template_jumps"]
    if jumps is None:
        jumps = auto_template_jumps(split_merge, n, d, jumps_unsupported is None)
    else:
        jumps = _refused("template_jumps", jumps, jumps_unsupported)
    return MovePlan(
        sweeps_per_draw=sweeps,
        tune_sweeps=tune_sweeps,
        init=given["init"],
        split_merge=split_merge,
        split_merge_auto=split_merge_auto,
        split_merge_scans=int(given["split_merge_scans"]),
        speck_moves=speck,
        informed_moves=informed,
        informed_moves_auto=given["informed_moves"] is None and informed > 0,
        pair_moves=pairs,
        temper=betas,
        restarts=restarts,
        template_jumps=jumps,
        templates=given["templates"],
        alpha_w=float(given["alpha_w"]),
    )
