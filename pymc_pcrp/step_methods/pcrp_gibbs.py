"""PyMC step method for pCRP label vectors: collapsed Gibbs sweeps (Algorithm 1).

The numerical work happens in :mod:`pymc_pcrp._kernels.sweep`; this module
reads the model, checks that the collapsed update is valid for it, and turns
points into arrays and back.
"""

from __future__ import annotations

import math

from collections.abc import Sequence
from dataclasses import field
from typing import ClassVar

import numpy as np
import pymc as pm

from pymc.step_methods.compound import BlockedStep, Competence, CompoundStep, StepMethodState
from pymc.step_methods.state import dataclass_state
from pymc.util import get_random_generator

from pymc_pcrp._kernels.chain import labels_match
from pymc_pcrp._kernels.hyper import (
    FRESH_CHAIN,
    REBUILT,
    _params_at,
    partition_log_joint_scaled,
)
from pymc_pcrp._kernels.log_joint import partition_log_joint
from pymc_pcrp._kernels.pair_moves import no_pairs, pair_picks
from pymc_pcrp._kernels.partitions import canonical_labels
from pymc_pcrp._kernels.state import NIWParams, SweepState
from pymc_pcrp._validation import check_data, check_prior_scale
from pymc_pcrp.distributions.normaliser import log_normaliser
from pymc_pcrp.distributions.pcrp import PowerCRPRV
from pymc_pcrp.step_methods._alpha_update import AlphaUpdate, OwnedAlphaMixin
from pymc_pcrp.step_methods._compile_notice import announce_compilation
from pymc_pcrp.step_methods._diag_inputs import advance_kernel, diag_family, init_family_state
from pymc_pcrp.step_methods._input_building import StepInputsMixin
from pymc_pcrp.step_methods._interrupts import passes_interrupts
from pymc_pcrp.step_methods._options import (
    INIT_STRATEGIES,
    SPLIT_MERGE_SCANS,
    auto_pair_moves,
    auto_speck_moves,
    auto_split_merge,
    auto_sweeps_per_draw,
    auto_template_jumps,
    auto_tune_sweeps,
    check_options,
    initial_labels,
    tuning_split_merge,
    visited_fraction,
)
from pymc_pcrp.step_methods._restarts import (
    FRESH,
    RestartTournament,
    auto_restarts,
    segment_draws,
)
from pymc_pcrp.step_methods._step_inputs import (
    REFRESH_EVERY,
    CompiledAdvance,
    InputCache,
    KeptState,
    SweepInputs,
    call_compiled,
    same_argument_types,
)
from pymc_pcrp.step_methods._tempering import make_replicas
from pymc_pcrp.step_methods._templates import TemplateJumps, check_templates
from pymc_pcrp.step_methods._variables import group_vars, model_value_vars, split_vars
from pymc_pcrp.step_methods.pcrp_hyper import PCRPHyper

__all__ = [
    "INIT_STRATEGIES",
    "PCRPGibbs",
    "PCRPGibbsState",
    "auto_pair_moves",
    "auto_speck_moves",
    "auto_split_merge",
    "auto_sweeps_per_draw",
    "tuning_split_merge",
    "visited_fraction",
]

# Draws after which the kept cluster statistics are rebuilt from the labels.
_REFRESH_EVERY = REFRESH_EVERY


@dataclass_state
class PCRPGibbsState(StepMethodState):
    """Sampling state of :class:`PCRPGibbs` (cluster statistics are rebuilt from the labels)."""

    sweeps_per_draw: int = field(metadata={"frozen": True})
    tune_sweeps: int = field(metadata={"frozen": True})
    init: str = field(metadata={"frozen": True})
    split_merge_auto: bool = field(metadata={"frozen": True})
    # the rate in use: with split_merge=None, the tuning rate, then the one set from the
    # partition at the first draw after tuning (split_merge_settled), kept after that
    split_merge: float
    split_merge_settled: bool
    split_merge_scans: int = field(metadata={"frozen": True})
    speck_moves: float = field(metadata={"frozen": True})
    pair_moves: float = field(metadata={"frozen": True})
    fresh_chain: bool
    tune: bool
    # the slice move of an alpha the step owns (NaN and 0 when it owns none)
    alpha_w: float
    alpha_n_tunes: int


class PCRPGibbs(StepInputsMixin, OwnedAlphaMixin, BlockedStep):
    """Collapsed Gibbs sampler for a :class:`~pymc_pcrp.PowerCRP` label vector.

    One step runs ``sweeps_per_draw`` sweeps of Algorithm 1 of Lu, Li & Dunson
    (2018): each sweep visits the points in a fresh random order; a point is
    removed from its cluster (an emptied cluster disappears), then re-seated
    with probability proportional to ``n_k^r`` times the NIW posterior
    predictive for each occupied cluster ``k`` and ``alpha`` times the prior
    predictive for a new cluster. Its stationary distribution is the exact
    posterior ``p(z | X) ∝ alpha^K prod Gamma(n_k)^r prod m(X_k)``.

    **Default move set.** By default each sweep is followed by split-merge
    proposals (built by sequential allocation: ``split_merge_scans=-1``), which
    move whole clusters where single-site Gibbs is stuck and keep the target
    exact: ``min(3, max(0.1, 720 / (N D f)))`` of them per sweep on average
    (:func:`auto_split_merge`), ``f`` the share of the points a proposal visits
    in the partition the chain has reached when tuning ends, kept for the rest
    of the chain (while it tunes, ``min(1, max(0.1, 600 / (N D)))``,
    :func:`tuning_split_merge`), so up to three per sweep on small data sets,
    where a draw's time is mostly PyMC's fixed cost, and where the clusters are
    many and small, and 0.1 on large data sets; then four
    more whose two points are drawn among the clusters of at most 8 points
    (``speck_moves``), which split and merge the small outlying clusters that
    the other moves rarely pick; then, in three or more dimensions, two moves
    that carry two nearby points of one cluster into another cluster together
    (``pair_moves``; full covariances, up to 10,000 points). At
    ``N = 2,000, D = 2`` the default moves cost at most 1.5 times a plain sweep.
    ``PCRPGibbs(split_merge=0)`` (or ``pm.sample(pcrp_gibbs={"split_merge": 0})``)
    runs the paper's Algorithm 1 alone.

    ``alpha`` and ``power`` may be random variables; the model's log density then
    includes the normaliser ``-log Z_N(alpha, r)``. When ``alpha`` is itself a
    free random variable used by this ``PowerCRP`` alone and the power is fixed
    (``alpha = pm.Gamma("alpha", 2, 1)``, say), the step owns ``alpha`` too
    (``pm.sample`` gives it both variables): in the same numba call as the
    sweeps it makes an exact Metropolis-corrected slice update of ``alpha``
    given the new labels (:mod:`pymc_pcrp.step_methods._alpha_update`), so that
    a random ``alpha`` costs little more per draw than a fixed one. Otherwise
    (a random power, an expression such as ``pt.exp(log_alpha)``, an ``alpha``
    that feeds other terms) :class:`~pymc_pcrp.PCRPHyper`, which ``pm.sample``
    assigns by itself, updates them given the labels and this step reads their
    current values from the point at every step. A new ``alpha`` or ``power``
    costs this step ``O(N)`` (the sweep tables are rewritten in place).

    The labels must feed exactly one :class:`~pymc_pcrp.NIWMixture` (whose
    component parameters the update integrates out), or nothing at all, in which
    case the step samples the pCRP prior. The NIWMixture may be observed, or a
    latent variable whose values another step (NUTS) updates: the step then reads
    them from the point at every draw, and terms that depend on the labels only
    through those values are allowed. Any other use of the labels is refused,
    because the collapsed update cannot account for it.

    ``pm.sample()`` picks this step by itself for every ``PowerCRP`` variable
    once :mod:`pymc_pcrp` is imported; pass options through
    ``pm.sample(pcrp_gibbs={"sweeps_per_draw": 5})`` or build the step explicitly.

    Parameters
    ----------
    vars : list of TensorVariable
        The ``PowerCRP`` variable(s); each gets its own step.
    sweeps_per_draw : int or None, default=None
        Sweeps between stored draws (thinning inside the step). ``None`` picks
        ``min(20, ceil(45000 / (N max(D, 2))))`` for ``N`` points of dimension
        ``D`` (:func:`auto_sweeps_per_draw`; a point costs nearly as much at
        ``D = 1`` as at ``D = 2``): one sweep from ``N D = 45,000`` up, up to
        twenty below. PyMC's own work per draw (calling the step, recording the
        point and its stats) is about 0.35 ms, as much as sweeping about
        ``N D = 15,000`` point-dimensions (about 25 ns each at ``D = 2``), so the
        rule spends about three quarters of a draw's time in sweeps or more: on
        small data sets several sweeps per draw buy several times the effective
        sample size. The cap was thirty sweeps until up to three split-merge
        proposals per sweep (instead of one) made the log joint of the slowest
        data set of the real-data panel (the digits embedding) mix about 1.4
        times as fast per sweep (docs/mixing.md, "Tuning draws, three
        proposals, fewer sweeps per draw"). Give an integer to fix it.
    tune_sweeps : int or None, default=None
        Sweeps per tuning draw once the tournament of restarts is over (every
        tuning draw when there is none). These draws only carry the chain into
        the posterior and are discarded, so they need not be thinned like the
        kept ones: ``None`` picks ``ceil(sweeps_per_draw / 5)``
        (:func:`auto_tune_sweeps`), and PyMC's ``tune=500`` then costs about a
        fifth of 500 kept draws. The tournament's draws run ``sweeps_per_draw``
        sweeps. Pass ``tune_sweeps=sweeps_per_draw`` for the behaviour of earlier
        versions.
    init : {"random", "prior", "one", "singletons", "point"}, default="random"
        Where each chain starts, drawn from the chain's own random generator:

        * ``"random"``: ``K0`` uniform on ``1..min(ceil(sqrt(N)), 20)``, then each
          point put in one of ``K0`` clusters uniformly at random; chains start
          from different, over-dispersed partitions so that R-hat is meaningful,
          and the first sweep costs at most 20 clusters' worth of scoring per
          point (at ``N = 10^6`` a cap of ``sqrt(N)`` meant up to 1,000 clusters
          and about a minute before the first draw);
        * ``"prior"``: an exact draw from the pCRP prior;
        * ``"one"``: all points in one cluster;
        * ``"singletons"``: every point in its own cluster;
        * ``"point"``: the labels of the start point ``pm.sample`` passes
          (``initvals``, or one cluster by default).
    split_merge : float, optional
        Expected number of split-merge proposals after each sweep (Jain & Neal,
        2004, and Dahl, 2005, with the pCRP prior ratio;
        :mod:`pymc_pcrp._kernels.splitmerge`). Each proposal picks two points
        at random and proposes to split their cluster or merge their two
        clusters, with a Metropolis-Hastings test that keeps the target exact.
        The integer part is made after every sweep; the fractional part is the
        probability of one more, drawn after each sweep from the chain's
        generator without looking at the state, so every sweep applies a fixed
        mixture of kernels that each leave the posterior invariant: the chain
        stays exact. Integer values behave exactly as in earlier versions.
        By default (``None``) :func:`auto_split_merge`:
        ``min(3, max(0.1, 720 / (N D f)))``, where ``f`` is the expected share of
        the points one proposal visits (:func:`visited_fraction`: 1 for one
        cluster, about ``2 / K`` for ``K`` equal ones). While the chain tunes,
        :func:`tuning_split_merge`, ``min(1, max(0.1, 600 / (N D)))``, the rule of
        earlier versions; the first draw after tuning sets ``f`` from the
        partition the chain has reached, and the chain keeps that rate, so the
        kept draws apply one fixed mixture of exact kernels. Many small clusters
        thus get more proposals, each of which visits few points (on the digits
        at ``r = 1``, about 16 clusters, one per sweep instead of 0.41: the bulk
        ESS of the log joint rose from 397-473 to 689-834 at six seeds,
        docs/mixing.md). The sample stat ``split_merge_rate`` records the rate
        of each draw.

        **``split_merge=0`` gives the paper's Algorithm 1 alone** (single-site
        Gibbs sweeps, nothing else). The default is not Algorithm 1 but the
        best exact move set measured (docs/mixing.md): single-site Gibbs frees
        chains slowly, or never, from states where whole clusters are merged
        or split. A proposal costs about one or two sweeps' work whatever
        ``N`` (it visits the points of one or two clusters), so on large data
        sets one every ten sweeps (at most 1.5 times the cost of a plain sweep
        at ``N = 2,000, D = 2``, ``benchmarks/run.py``); on small ones, where
        each draw's time is mostly PyMC's fixed cost per draw, up to one per
        sweep for little extra wall time (on iris at ``r = 1`` the effective
        sample size of ``K`` rose from 44 to 447, docs/real_data.md).
    split_merge_scans : int, default=-1
        How each proposal is built. ``-1`` (default): by sequential allocation
        alone (SAMS, Dahl 2005): the other points of the cluster(s) are seated
        one by one in the two groups, and that is the proposal; cheapest, and
        as good in the measurements. ``t >= 0``: the sequential allocation is the
        launch state, followed by ``t`` intermediate restricted Gibbs scans and
        one final scan that gives the proposal (Jain & Neal); earlier versions'
        default was 3.
    speck_moves : float, optional
        Expected number of further split-merge proposals after each sweep (made
        after the ``split_merge`` ones, with the same integer and fractional
        parts) whose pair of points is drawn among the "specks": two clusters
        drawn uniformly, with replacement, among those of at most 8 points, and
        a point uniformly in each (two points of one cluster propose to split
        it, of two clusters to merge them). The test multiplies in the ratio of
        the pair's probabilities back and forth, so the target stays exact; a
        merge whose union would have more than 8 points is not proposed (its
        reverse could not be drawn). Such a proposal visits at most 16 points,
        a small fraction of a sweep. On breast cancer and wine, where a few
        outlying points form and re-form tiny clusters, they raised the
        effective sample size of ``K`` (docs/mixing.md, "Moves among the
        specks"). By default (``None``) 4, or 0 when ``split_merge`` is 0, so
        that ``split_merge=0`` alone still gives Algorithm 1; ``speck_moves=0``
        gives the uniformly drawn pairs alone (the default of earlier versions).
        The proposals are counted in the same sample stats as the others.
    pair_moves : float, optional
        Expected number of pair moves after each sweep's split-merge proposals
        (same integer and fractional parts): two nearby points ``i, j`` are
        drawn from a fixed distribution built once from the data (``i`` with
        weight growing with the distance to its 4th nearest neighbour, so that
        outlying points are drawn more often; ``j`` among its 4 nearest
        neighbours); when they share a cluster, both are proposed to move to
        another occupied cluster or, unless they are its only points, a new
        one, drawn uniformly, and the Metropolis-Hastings test is the posterior
        ratio (the proposal is symmetric). A few outlying points that belong
        together move between clusters this way where single-site Gibbs would
        have to pass through a state the posterior dislikes (docs/mixing.md,
        "Pair moves"). Two Cholesky factorisations per move. By default
        (``None``) 2, or 0 when ``split_merge`` is 0, in one or two dimensions
        (a lone point costs the posterior little there, and single-site Gibbs
        moves outlying points one at a time; the moves' cost would break the
        1.5x budget at ``N = 2,000, D = 2``) and for more than 10,000 points
        (the tables cost ``O(N^2 D)`` to build). The move does not exist with
        ``covariance="diag"``, with latent values or without a likelihood: the
        default is 0 there and an explicit value above 0 is refused. Counted in
        the sample stats ``pair_proposed`` and ``pair_accepted``.
    temper : int, sequence of float or None, default=None
        Parallel tempering over the likelihood, off by default (``None``): on
        breast cancer its chains reached better states but still disagreed,
        at about ten times the cost (docs/mixing.md, "Parallel tempering"). An
        integer ``M >= 2`` keeps ``M - 1`` hot replicas of the chain's state on
        the geometric ladder ``beta_m = 0.1 ** (m / (M - 1))`` (on breast cancer
        neighbours must be about 0.1 apart or closer to swap); a sequence gives the inverse
        temperatures themselves (``1 > beta_1 > ... > 0``, starting at 1).
        Replica ``m`` targets the posterior with the likelihood raised to
        ``beta_m`` (``p(z) p(s) p(X | z, s) ** beta_m``); after each draw of the
        chain (replica 0, the one returned), every hot replica makes
        ``sweeps_per_draw`` plain tempered Gibbs sweeps (each followed by a draw
        of the learned scale ``s``), then neighbours propose to exchange their
        states, from the hottest pair down, each accepted with probability
        ``min(1, exp((beta_i - beta_j)(L_j - L_i)))``, ``L = log p(X | z, s)``;
        the chain stays exact (:mod:`pymc_pcrp.step_methods._tempering`). A hot
        replica's sweep scores every cluster, so a draw costs about ``M`` times
        or more. Needs a fixed ``alpha``, power and ``nu0`` (e.g.
        ``NIWPrior.from_data(X, nu0=D + 2)``: the default prior learns ``nu0``).
    restarts : int or None, default=None
        Random starts each chain tries during tuning, in a tournament of two
        rounds (:mod:`pymc_pcrp.step_methods._restarts`): ``restarts`` starts of
        ``ceil(30 / sweeps_per_draw)`` draws, each drawn by ``init``, then the
        best ``min(4, restarts // 4)`` go on for twice as many draws each; the
        chain goes on from the candidate whose latest segment ended with the
        highest mean log joint (over its last third), at the latest when tuning
        ends. Only tuning draws change: the kept draws come from the exact
        kernel, and each chain runs its own tournament, so chains that end in
        different basins still show in R-hat. ``None``: the most starts, up to
        16, whose tournament fits in 400 tuning draws, with ``init="random"`` or
        ``"prior"``, else 1; ``1`` turns restarts off (docs/mixing.md, "Restarts
        during tuning").
    template_jumps : float or None, default=None
        Proposals per kept draw of a partition drawn from templates: partitions
        met during tuning (the tournament's starts, plus ``templates``), fixed when
        tuning ends (:mod:`pymc_pcrp.step_methods._templates`). A proposal picks a
        template uniformly and draws every point's cluster independently from its
        Gibbs conditional given the template's other points (one of the template's
        clusters, or alone in one new cluster, so that a proposal may have one
        cluster more than its template); it is accepted with
        the exact Metropolis-Hastings ratio of this independence proposal (its
        probability of a partition sums over every labelling). It lets a chain
        jump between families of states that no local move crosses (docs/mixing.md,
        "Template jumps"). The templates are chosen best log joint first among the
        candidates within 20 nats of the best, each placing more than 2% of the
        points differently from those chosen before it (at most 8, none of more
        than 10 clusters); the move runs when at least two are chosen. ``None``:
        ``min(25, max(1, 500,000 / (N D)))`` proposals per draw; 0 when
        ``split_merge`` is 0 (Algorithm 1 alone), and with ``covariance="diag"``,
        latent values, no likelihood, a random ``alpha`` or power, or ``temper``,
        where an explicit value above 0 is refused. Counted in the sample stats
        ``jump_proposed`` and ``jump_accepted`` (from a state no template can make,
        every proposal would be rejected: they are counted as proposed and not
        drawn).
    templates : sequence of array_like or None, default=None
        Partitions of the data (label arrays of length N) to use as templates
        beside the chain's own tournament starts. :func:`~pymc_pcrp.fit` passes
        the starts of two scouting tournaments made for all chains, so that every
        chain can jump to a family that only some chains' tournaments met.
    alpha_w : float, default=1.0
        Initial width, on the unconstrained scale, of the slice move of an
        ``alpha`` this step owns (see below); adapted during tuning. Ignored
        when the step owns no ``alpha``. It takes the place of
        ``pm.sample(pcrp_hyper={"w": ...})``, which applies only when alpha has a
        :class:`~pymc_pcrp.PCRPHyper` step of its own.
    model : pm.Model, optional
    rng : int or numpy.random.Generator, optional
        Overridden per chain by ``pm.sample(random_seed=...)``.

    Notes
    -----
    When the NIW prior learns its scale (``NIWPrior.scale_grid``, the default of
    ``NIWPrior.from_data``), the step samples the scale ``s`` of ``Psi_0 = s psi0``
    along with the labels: after each sweep (and its split-merge proposals) it
    draws ``s`` exactly from its conditional given the partition on the grid
    (:mod:`pymc_pcrp._kernels.hyper`), so that the labels' marginal is the
    model's posterior with ``s`` integrated out. The chain's ``s`` is kept
    between draws; a new chain draws its first ``s`` given its initial partition.

    With a hyperprior on ``nu0`` as well (``NIWPrior.nu0_grid``, e.g.
    ``NIWPrior.from_data(X, nu0="learn")``), ``nu0`` is drawn exactly from its
    conditional given the partition and ``s`` after the sweeps of each draw.

    Sample stats: ``log_joint``, ``n_clusters``, ``niw_scale`` (the draw's ``s``;
    1 for a fixed-scale prior, whose ``Psi_0`` is ``psi0`` itself), ``niw_nu0``
    (the draw's ``nu0``), and the
    split-merge counts of the draw ``split_proposed``, ``split_accepted``,
    ``merge_proposed`` and ``merge_accepted`` (both kinds of proposal, ``split_merge`` and
    ``speck_moves``; zeros when both are 0); acceptance rates are
    their ratios, e.g. ``idata.sample_stats.split_accepted.sum() /
    idata.sample_stats.split_proposed.sum()``; with ``temper`` the swaps of the
    draw, ``swap_proposed`` (``M - 1``) and ``swap_accepted`` (zeros without);
    the pair moves of the draw, ``pair_proposed`` (drawn pairs that shared a
    cluster) and ``pair_accepted``; ``split_merge_rate``, the draw's expected
    split-merge proposals per sweep (see ``split_merge``); the template jumps of
    the draw, ``jump_proposed`` and ``jump_accepted`` (zeros while tuning).
    ``log_joint`` is the log density of the terms this step owns, the ``PowerCRP`` labels and the
    ``NIWMixture`` data given ``alpha``, exactly as PyMC computes them:
    ``K log alpha + r sum_k log Gamma(n_k) + sum_k log m(X_k)`` (with a learned
    scale ``log sum_g w_g prod_k m(X_k | s_g)`` in place of the last sum, and a
    sum over the ``nu0`` grid as well when ``nu0`` is learned), minus
    ``log Z_N(alpha, r)`` when ``alpha`` or ``power`` is a random variable (for
    fixed ones the normaliser is a constant that ``PowerCRP`` leaves out). With a
    fixed ``alpha`` and no other terms it equals the model's log density.
    """

    name = "pcrp_gibbs"
    default_blocked = False
    stats_dtypes_shapes: ClassVar = {
        "log_joint": (np.float64, []),
        "n_clusters": (np.int64, []),
        "split_proposed": (np.int64, []),
        "split_accepted": (np.int64, []),
        "merge_proposed": (np.int64, []),
        "merge_accepted": (np.int64, []),
        "niw_scale": (np.float64, []),
        "niw_nu0": (np.float64, []),
        "swap_proposed": (np.int64, []),
        "swap_accepted": (np.int64, []),
        "pair_proposed": (np.int64, []),
        "pair_accepted": (np.int64, []),
        "split_merge_rate": (np.float64, []),
        "jump_proposed": (np.int64, []),
        "jump_accepted": (np.int64, []),
    }
    _state_class = PCRPGibbsState

    def __new__(cls, *args, **kwargs):
        """One step per ``PowerCRP`` variable, with the ``alpha`` it owns (see the class notes).

        ``pm.sample`` hands this class every ``PowerCRP`` variable and every
        ``alpha`` whose competence it claimed. Each ``PowerCRP`` gets one step,
        together with its ``alpha`` when :func:`claimed_alpha` allows it; an
        ``alpha`` that cannot be owned (another term uses it, say) gets a
        :class:`~pymc_pcrp.PCRPHyper` step instead.
        """
        if kwargs.get("blocked") is True:  # one step's variables (and unpickling)
            return super().__new__(cls, *args, **kwargs)
        if "vars" in kwargs:
            vars, rest = kwargs.pop("vars"), args
        elif args:
            vars, rest = args[0], args[1:]
        else:
            vars, rest = None, args
        model, value_vars = model_value_vars(vars, kwargs.get("model"))
        groups, hyper = group_vars(model, value_vars)
        if len(groups) == 1 and not hyper:
            kwargs["blocked"] = True
            return super().__new__(cls, groups[0], *rest, **kwargs)
        kwargs.pop("blocked", None)
        rngs = get_random_generator(kwargs.pop("rng", None)).spawn(len(groups) + len(hyper))
        steps = [
            cls(group, *rest, rng=rng, blocked=True, **kwargs)
            for group, rng in zip(groups, rngs, strict=False)
        ]
        shared = {k: kwargs.get(k) for k in ("model", "initial_point", "compile_kwargs")}
        steps += [
            PCRPHyper([var], rng=rng, **shared)
            for var, rng in zip(hyper, rngs[len(groups) :], strict=True)
        ]
        return steps[0] if len(steps) == 1 else CompoundStep(steps)

    def __init__(
        self,
        vars=None,
        *,
        sweeps_per_draw: int | None = None,
        tune_sweeps: int | None = None,
        init: str = "random",
        split_merge: float | None = None,
        split_merge_scans: int = SPLIT_MERGE_SCANS,
        speck_moves: float | None = None,
        pair_moves: float | None = None,
        temper: int | Sequence[float] | None = None,
        restarts: int | None = None,
        template_jumps: float | None = None,
        templates: Sequence[np.ndarray] | None = None,
        alpha_w: float = 1.0,
        model=None,
        rng=None,
        initial_point=None,
        compile_kwargs=None,
        blocked: bool = False,
    ):
        model, value_vars = model_value_vars(vars, model)
        if vars is None:  # the model's one PowerCRP (with its alpha): see __new__
            (value_vars,), _ = group_vars(model, value_vars)
        vars = value_vars
        labels_var, alpha_var = split_vars(model, vars)
        check_options(
            sweeps_per_draw,
            split_merge,
            split_merge_scans,
            init,
            alpha_w,
            restarts,
            speck_moves,
            pair_moves,
            template_jumps,
            tune_sweeps,
        )
        self.vars = vars
        rv = model.values_to_rvs[labels_var]
        if not isinstance(getattr(rv.owner, "op", None), PowerCRPRV):
            raise ValueError(f"PCRPGibbs can only update PowerCRP variables; '{rv.name}' is not.")
        self._n = int(rv.owner.op.dist_params(rv.owner)[-1].eval())
        self.init = init
        self.split_merge_scans = int(split_merge_scans)
        self.fresh_chain = True
        self.rng = get_random_generator(rng)
        announce_compilation()
        self._name = labels_var.name
        self._dtype = np.dtype(rv.dtype)
        self._prior_readers, (alpha_random, power_random) = self._prior_value_readers(
            model, rv, compile_kwargs
        )
        # a random alpha or power is read from the point at every step (PCRPHyper draws it)
        self._alpha_is_random = alpha_random or power_random
        self._power_is_random = power_random
        self._latest: np.ndarray | None = None  # latent values from the last point
        self._data_readers, self._niw = self._find_likelihood(model, rv)
        self._latent = None if self._niw is None else self._latent_name(model, self._niw)
        # the cluster covariance family of the NIWMixture: "diag" runs the diagonal kernels
        self._diag = diag_family(self._niw, self._latent)
        if self._data_readers is not None and self._latent is None:
            # Before any sampling: a prior the cluster statistics would swamp.
            data, mu0, _, _, psi0, grid, *_ = (read() for read in self._data_readers)
            check_prior_scale(
                check_data(data, "observed"), np.asarray(mu0), np.asarray(psi0), np.min(grid)
            )
        self.sweeps_per_draw = (
            auto_sweeps_per_draw(self._n, self._data_dimension())
            if sweeps_per_draw is None
            else int(sweeps_per_draw)
        )
        self.tune_sweeps = (
            auto_tune_sweeps(self.sweeps_per_draw) if tune_sweeps is None else int(tune_sweeps)
        )
        # split_merge=None: the tuning rate, then one set from the partition the chain has
        # reached when tuning ends (see _settle_split_merge)
        self.split_merge_auto = split_merge is None
        self.split_merge_settled = not self.split_merge_auto
        self.split_merge = (
            tuning_split_merge(self._n, self._data_dimension())
            if split_merge is None
            else float(split_merge)
        )
        self.speck_moves = (
            auto_speck_moves(self.split_merge) if speck_moves is None else float(speck_moves)
        )
        self.pair_moves = self._resolve_pair_moves(pair_moves)
        self._pairs: tuple | None = None  # (data the tables were built on, plan entry)
        self.restarts = (
            auto_restarts(self.sweeps_per_draw, init) if restarts is None else int(restarts)
        )
        # random starts tried during tuning, the chain going on from the best (_restarts.py)
        self._tournament = RestartTournament(self.restarts, segment_draws(self.sweeps_per_draw))
        self._inputs: InputCache | None = None  # see _arrays
        self._kept: KeptState | None = None  # see step
        self._compiled: CompiledAdvance | None = None  # see _call_advance
        self._scale_inputs: SweepInputs | None = None  # inputs the current s was applied to
        self._nu0_start = 0  # grid index of the nu0 every chain starts from (a learned nu0)
        self._prior_shifts = 0  # new alphas applied by shifting the new-cluster weights
        self.tune = True  # pm.sample sets it; adapts the width of alpha's slice move
        self._alpha_draws = 0  # owned-alpha draws since the new-cluster weights were recomputed
        # the alpha this step updates itself (None: fixed, or another step's)
        self._alpha = (
            None
            if alpha_var is None
            else AlphaUpdate(model, alpha_var, initial_point, compile_kwargs, w=alpha_w)
        )
        # hot replicas of parallel tempering (None: off), see _tempering.py
        self._replicas = make_replicas(
            temper,
            self.sweeps_per_draw,
            self._data_readers is not None,
            self._alpha_is_random or self._alpha is not None,
            "with covariance='diag'"
            if self._diag
            else "with latent values"
            if self._latent is not None
            else "with a learned nu0 (NIWPrior.nu0_grid); fix it, e.g. "
            "NIWPrior.from_data(X, nu0=D + 2)"
            if self._learns_nu0()
            else None,
        )
        # partitions remembered from the tournament, proposed after each kept draw
        self._jumps = TemplateJumps(
            self._resolve_template_jumps(template_jumps), check_templates(templates, self._n)
        )

    def _local_moves_unsupported(self) -> str | None:
        """Why the pair moves and template jumps do not exist for this model (None: they do)."""
        if self._diag:
            return "covariance='diag'"
        if self._latent is not None:
            return "latent values (the data move at every draw)"
        if self._data_readers is None:
            return "no NIWMixture likelihood"
        return None

    def _resolve_rate(self, name: str, value: float | None, auto, unsupported: str | None):
        """Return an option's rate (the rule ``auto`` for ``None``); refuse one unsupported.

        ``auto(split_merge, n, d, supported)`` is the option's automatic rule; an
        explicit rate above 0 is refused, naming the fix, where the move does not exist.
        """
        if value is None:
            return auto(self.split_merge, self._n, self._data_dimension(), unsupported is None)
        if float(value) > 0 and unsupported is not None:
            raise ValueError(
                f"Argument '{name}' > 0 is not available with {unsupported}: pass "
                f"{name}=0, or None (the default), which turns them off there."
            )
        return float(value)

    def _resolve_pair_moves(self, pair_moves: float | None) -> float:
        """Return the pair-move rate (:func:`auto_pair_moves` for ``None``); refuse unsupported."""
        unsupported = self._local_moves_unsupported()
        return self._resolve_rate("pair_moves", pair_moves, auto_pair_moves, unsupported)

    def _resolve_template_jumps(self, rate: float | None) -> float:
        """Return the template-jump rate (:func:`auto_template_jumps` for ``None``).

        Besides the models without pair moves, a random ``alpha`` or power and
        parallel tempering have none (the jumps' target holds them fixed).
        """
        unsupported = self._local_moves_unsupported() or (
            "a random alpha or power"
            if self._alpha_is_random or self._alpha is not None
            else "temper (parallel tempering)"
            if self._replicas is not None
            else None
        )
        return self._resolve_rate("template_jumps", rate, auto_template_jumps, unsupported)

    def _template_jump(self, inputs: SweepInputs, new_labels: np.ndarray):
        """Propose partitions drawn from the templates (after tuning); new labels or None."""
        jumps = self._jumps
        jumps.proposed = jumps.accepted = 0
        built = jumps.built
        if self.tune or jumps.rate == 0 or (built and not jumps.active):
            return None
        params = inputs.params if inputs.scale is None else _params_at(inputs.params, inputs.scale)
        if not built:  # the first kept draw: the tournament's starts, and given ones
            jumps.build(
                inputs.xc,
                params,
                self._tournament.candidates,
                lambda labels: self._labels_log_density(inputs, labels),
            )
        labels = canonical_labels(np.asarray(new_labels, dtype=np.int64))
        return jumps.run(self.rng, inputs.xc, labels, params)

    def _labels_log_density(self, inputs: SweepInputs, labels: np.ndarray) -> float:
        """Return the step's ``log_joint`` of ``labels`` from scratch (scale, nu0 summed out)."""
        labels = canonical_labels(np.asarray(labels, dtype=np.int64))
        if inputs.scale is None:
            return partition_log_joint(inputs.xc, labels, inputs.params) + inputs.fixed_scale[1]
        return partition_log_joint_scaled(inputs.xc, labels, inputs.params, inputs.scale)

    def _pair_plan(self, xc: np.ndarray) -> tuple:
        """Return the ``pairs`` entry of the kernel's plan: the rate, the pair tables, a tally.

        The tables (:func:`~pymc_pcrp._kernels.pair_moves.pair_picks`) depend on
        the data only; they are built on the first draw and again when the data
        change (``pm.set_data``).
        """
        if self.pair_moves == 0:
            if self._pairs is None:
                self._pairs = (None, no_pairs())
            return self._pairs[1]
        if self._pairs is None or self._pairs[0] is not xc:
            entry = (self.pair_moves, pair_picks(xc), np.zeros(2, dtype=np.int64))
            self._pairs = (xc, entry)
        return self._pairs[1]

    def _fixed_nu0(self, params) -> float:
        """Return the ``nu0`` of fixed kernel parameters (the diagonal family keeps ``nu0 / 2``)."""
        return 2.0 * params.a0 if self._diag else params.nu0

    @staticmethod
    def competence(var, has_grad):
        """``IDEAL`` for PowerCRP variables and the alphas they may own, else ``INCOMPATIBLE``.

        An ``alpha`` may be owned when it is itself a free random variable passed
        as the ``alpha`` of one ``PowerCRP`` with a fixed power (the tag that
        ``PowerCRP`` sets); :meth:`__new__` checks the whole model and hands it
        to :class:`~pymc_pcrp.PCRPHyper` if another term uses it.
        """
        if isinstance(getattr(var.owner, "op", None), PowerCRPRV):
            return Competence.IDEAL
        if getattr(var.tag, "pcrp_gibbs_alpha", False) is True:
            return Competence.IDEAL
        return Competence.INCOMPATIBLE

    def stop_tuning(self):
        """End the restarts (the chain goes on from the best start) and freeze alpha's move."""
        self.tune = False
        self._tournament.stop()

    def __getstate__(self) -> dict:
        """Pickle without the compiled function (looked up again on the first step)."""
        state = self.__dict__.copy()
        state["_compiled"] = None
        state["_scale_inputs"] = None
        state["_pairs"] = None  # rebuilt from the data on the first step
        return state

    def set_rng(self, rng) -> None:
        """Seed a new chain; its first step draws the initial partition."""
        super().set_rng(rng)
        self.fresh_chain = True
        self.split_merge_settled = not self.split_merge_auto  # a new chain tunes its own rate
        self._kept = None
        self._tournament.reset()
        self._jumps.reset()

    def _initial_labels(self, current: np.ndarray, params: NIWParams) -> np.ndarray:
        """Draw a new chain's start labels from the step's generator (:func:`initial_labels`)."""
        alpha, power = math.exp(params.log_alpha), params.power
        return initial_labels(self.init, self.rng, self._n, current, alpha, power)

    def _settle_split_merge(self, state) -> None:
        """Set the automatic split-merge rate (``split_merge=None``) of this draw.

        While the chain tunes, :func:`tuning_split_merge` (the rule of earlier
        versions, ``600 / (N D)``); the first draw after tuning (the first draw at all
        with ``tune=0``) sets it by :func:`auto_split_merge` from the
        :func:`visited_fraction` of the partition it starts from, and the chain keeps
        that rate: the kept draws use one fixed mixture of exact kernels.
        """
        if self.split_merge_settled:
            return
        n, d = self._n, self._data_dimension()
        if self.tune:
            self.split_merge = tuning_split_merge(n, d)
        else:
            self.split_merge = auto_split_merge(n, d, visited_fraction(state.counts))
        self.split_merge_settled = not self.tune

    # -- the step ---------------------------------------------------------

    def _call_advance(self, inputs: SweepInputs, args: tuple, kernel) -> float:
        """Call an advance kernel, through the compiled function while the types hold.

        See :func:`~pymc_pcrp.step_methods._step_inputs.call_compiled`.
        """
        result, self._compiled = call_compiled(self._compiled, inputs, args, kernel)
        return result

    def _sweep_state(self, point, inputs: SweepInputs, params: NIWParams) -> tuple[SweepState, int]:
        """Return the state the draw starts from, and its age (draws since built from labels).

        A new chain draws its initial labels. When the point still holds the
        labels this step returned last time, the draw carries on from the kept
        cluster statistics instead of rebuilding them (but rebuilds them now and
        then, so that rank-one updates cannot drift). Other labels are rebuilt
        from scratch.
        """
        xc, scale = inputs.xc, inputs.scale
        current = point[self._name]
        kept = self._kept
        if self.fresh_chain:
            labels = self._initial_labels(np.asarray(current, dtype=np.int64), params)
            self.fresh_chain = False
            if scale is not None:
                scale.current[1] = FRESH_CHAIN  # draw s given the initial partition
                if not self._diag:  # and start nu0 where every chain starts it
                    scale.current[2] = self._nu0_start
            return init_family_state(self._diag, xc, labels, params), 0
        if (
            kept is not None
            and kept.xc is xc
            and kept.age < _REFRESH_EVERY
            and (current is kept.labels or labels_match(np.asarray(current), kept.labels))
        ):
            return kept.state, kept.age + 1
        current = np.asarray(current, dtype=np.int64)
        if current.min() < 0:
            raise ValueError(f"Labels of '{self._name}' must be non-negative.")
        if scale is not None:
            # built with Psi_0 = P: the kernel refreshes it for the current s
            scale.current[1] = max(scale.current[1], REBUILT)
        return init_family_state(self._diag, xc, canonical_labels(current), params), 0

    @passes_interrupts
    def step(self, point):
        """Run ``sweeps_per_draw`` sweeps and return the new point and stats."""
        start = self._tournament.before_draw()  # restarts during tuning (_restarts.py)
        if start is FRESH:
            self.fresh_chain = True
        elif start is not None:  # a finalist of the tournament, or its winner
            point = {**point, self._name: start.astype(self._dtype)}
        inputs = self._arrays(point)
        xc, params, scale = inputs.xc, inputs.params, inputs.scale
        fresh = self.fresh_chain
        if fresh and self._alpha is not None:  # the alpha the tables hold (_sync_owned_alpha)
            params = params._replace(log_alpha=float(self._alpha.log_alpha[0]))
        state, age = self._sweep_state(point, inputs, params)
        self._settle_split_merge(state)
        counts = np.empty(4, dtype=np.int64)
        # the kernels write int64 labels whatever the variable's dtype: one compilation serves
        # int16 and int32 labels alike (the copy to the variable's dtype is O(N) per draw)
        labels64 = np.empty(self._n, dtype=np.int64)
        pairs = self._pair_plan(xc)
        # tuning draws after the tournament (all of them without one) only carry the chain
        # to the posterior: tune_sweeps sweeps each (auto_tune_sweeps)
        tuning_after = self.tune and self._tournament.done
        plan = (
            self.tune_sweeps if tuning_after else self.sweeps_per_draw,
            self.split_merge,
            self.split_merge_scans,
            self.speck_moves,
            pairs,
        )
        args = (self.rng, (xc, state, params, inputs.tables), plan, (counts, labels64))
        alpha = self._alpha
        if alpha is not None:  # the same call sweeps at the tables' alpha, proposes the next
            log_alpha = float(alpha.log_alpha[0])
        # Every argument is passed (None too): call_compiled looks the function up by type.
        args = (*args, None if alpha is None else alpha.kernel_args(params.power))
        kernel = advance_kernel(self._diag, scale is not None)
        if scale is None:
            log_density = self._call_advance(inputs, args, kernel) + inputs.fixed_scale[1]
            niw_scale = inputs.fixed_scale[0]
            niw_nu0 = self._fixed_nu0(inputs.params)
        else:
            if self._scale_inputs is not inputs:
                shifted = (
                    self._scale_inputs is not None
                    and 0 < self._prior_shifts < _REFRESH_EVERY
                    and same_argument_types(self._scale_inputs, inputs)
                )
                if not shifted:
                    # new tables (new data, new NIW parameters), or time to recompute the
                    # weights that _with_prior shifted: apply s to them
                    scale.current[1] = max(scale.current[1], REBUILT)
                    self._prior_shifts = 0
                self._scale_inputs = inputs
            args = (*args[:2], scale, *args[2:])
            log_density = self._call_advance(inputs, args, kernel)
            niw_scale = math.exp(scale.log_s[scale.current[0]])
            niw_nu0 = (
                self._fixed_nu0(inputs.params)
                if self._diag
                else float(scale.nu0s[scale.current[2]])
            )
        jumped = self._template_jump(inputs, labels64)
        if jumped is not None:  # a template jump was accepted: rebuild from its labels
            labels64[:] = jumped
            state = init_family_state(self._diag, xc, jumped, params)
            age = 0
            if scale is not None:
                scale.current[1] = max(scale.current[1], REBUILT)  # tables for the current s
            log_density = self._labels_log_density(inputs, jumped)
        swaps = (0, 0)
        if self._replicas is not None:  # hot replicas' draws, then swaps (may change state)
            drawn = self._replicas.draw(
                self.rng,
                inputs,
                state,
                labels64,
                log_density,
                fresh,
                lambda: self._initial_labels(point[self._name], params),
            )
            state, log_density, niw_scale = drawn.state, drawn.log_density, drawn.niw_scale
            swaps = (self._replicas.proposed, drawn.swap_accepted)
            age = 0 if drawn.cold_swapped else age
        new_labels = labels64.astype(self._dtype)
        self._kept = KeptState(xc, state, new_labels, age)
        new_point = dict(point)
        new_point[self._name] = new_labels
        if alpha is not None:  # accept or reject the proposed alpha; the stat at the new one
            log_z = alpha.finish(point, self.rng, self.tune, inputs.tables[0])
            alpha.store(new_point)
            log_density += state.k[0] * (float(alpha.log_alpha[0]) - log_alpha) - log_z
            self._refresh_owned_alpha(inputs)
        elif self._alpha_is_random:  # alpha or power random: the normaliser is not a constant
            method = "recursion" if self._power_is_random else "row"
            log_density -= log_normaliser(self._n, math.exp(params.log_alpha), params.power, method)
        stats = {
            "log_joint": log_density,
            "n_clusters": int(state.k[0]),
            "split_proposed": int(counts[0]),
            "split_accepted": int(counts[1]),
            "merge_proposed": int(counts[2]),
            "merge_accepted": int(counts[3]),
            "niw_scale": niw_scale,
            "niw_nu0": niw_nu0,
            "swap_proposed": swaps[0],
            "swap_accepted": swaps[1],
            "pair_proposed": int(pairs[2][0]),
            "pair_accepted": int(pairs[2][1]),
            "split_merge_rate": self.split_merge,
            "jump_proposed": self._jumps.proposed,
            "jump_accepted": self._jumps.accepted,
        }
        if self.tune:
            self._tournament.record(new_labels, log_density)
        return new_point, [stats]


if PCRPGibbs not in pm.STEP_METHODS:
    pm.STEP_METHODS.append(PCRPGibbs)
