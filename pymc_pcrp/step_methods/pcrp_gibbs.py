"""PyMC step method for pCRP label vectors: the adapter between PyMC and a chain.

:class:`PCRPGibbs` reads the point, asks its :class:`~pymc_pcrp.sampler.chain.Chain`
for a draw and writes the point and the sample stats. What the chain is made of
lives elsewhere: the model reading in :mod:`pymc_pcrp.step_methods._model_inputs`,
the options in :mod:`pymc_pcrp.sampler.options`, the chain's state and moves in
:mod:`pymc_pcrp.sampler`, the compiled kernels in ``pymc_pcrp._kernels``.
"""

from __future__ import annotations

import math

from collections.abc import Sequence
from dataclasses import field
from typing import ClassVar

import numpy as np
import pymc as pm

from pymc.step_methods.compound import BlockedStep, Competence, StepMethodState
from pymc.step_methods.state import dataclass_state
from pymc.util import get_random_generator

from pymc_pcrp._runtime.compile_notice import announce_compilation
from pymc_pcrp._runtime.interrupts import passes_interrupts
from pymc_pcrp.distributions.pcrp import PowerCRPRV
from pymc_pcrp.sampler.chain import Chain
from pymc_pcrp.sampler.options import SPLIT_MERGE_SCANS, ChainFacts, resolve_plan
from pymc_pcrp.step_methods._alpha_update import AlphaUpdate
from pymc_pcrp.step_methods._model_inputs import ModelInputs
from pymc_pcrp.step_methods._variables import (
    group_vars,
    model_value_vars,
    several_steps,
    split_vars,
)
from pymc_pcrp.step_methods.pcrp_hyper import PCRPHyper

__all__ = ["PCRPGibbs", "PCRPGibbsState"]


@dataclass_state
class PCRPGibbsState(StepMethodState):
    """Sampling state of :class:`PCRPGibbs` (cluster statistics are rebuilt from the labels)."""

    sweeps_per_draw: int = field(metadata={"frozen": True})
    tune_sweeps: int = field(metadata={"frozen": True})
    init: str = field(metadata={"frozen": True})
    split_merge_auto: bool = field(metadata={"frozen": True})
    split_merge: float  # the rate in use (see sampler.chain.Chain.settle_rates)
    split_merge_settled: bool
    split_merge_scans: int = field(metadata={"frozen": True})
    speck_moves: float = field(metadata={"frozen": True})
    informed_moves: float  # the rate in use (see sampler.chain.Chain.settle_rates)
    informed_settled: bool
    pair_moves: float = field(metadata={"frozen": True})
    fresh_chain: bool
    tune: bool
    alpha_w: float  # the slice move of an alpha the step owns (NaN and 0 when it owns none)
    alpha_n_tunes: int


class _On:
    """A step attribute kept by one of the step's parts (PyMC's sampling state reads it)."""

    def __init__(self, part: str, attr: str, writable: bool = True):
        self.part, self.attr, self.writable = part, attr, writable

    def __get__(self, step, owner=None):
        return self if step is None else getattr(getattr(step, self.part), self.attr)

    def __set__(self, step, value) -> None:
        if not self.writable:
            raise AttributeError(f"'{self.attr}' is fixed when the step is built")
        setattr(getattr(step, self.part), self.attr, value)


class PCRPGibbs(BlockedStep):
    """Collapsed Gibbs sampler for a :class:`~pymc_pcrp.PowerCRP` label vector.

    Each draw runs ``sweeps_per_draw`` sweeps of Algorithm 1 of Lu, Li & Dunson
    (2018) (a point leaves its cluster, then is re-seated with probability
    proportional to ``n_k^r`` times the cluster's posterior predictive, or to
    ``alpha`` times the prior predictive for a new cluster) with the cluster
    parameters of the :class:`~pymc_pcrp.NIWMixture` integrated out. By default
    each sweep is followed by exact split-merge proposals (some aimed at small
    clusters) and, in three or more dimensions, pair moves; tuning runs a
    tournament of random restarts and the kept draws add template jumps. Every
    move leaves the exact posterior invariant. ``split_merge=0`` gives the
    paper's Algorithm 1 alone. docs/sampler.md describes each move and the rule
    behind every automatic option.

    ``pm.sample()`` picks this step by itself for every ``PowerCRP`` variable
    once :mod:`pymc_pcrp` is imported; pass options as
    ``pm.sample(pcrp_gibbs={"sweeps_per_draw": 5})``. When ``alpha`` is a free
    random variable used by this ``PowerCRP`` alone and the power is fixed, the
    step also owns ``alpha`` (an exact slice update in the same compiled call);
    another random ``alpha`` or power gets a :class:`~pymc_pcrp.PCRPHyper` step.
    The labels must feed one ``NIWMixture`` (observed, or latent values that
    another step updates) or nothing (the step samples the prior); any other use
    of them is refused, since the collapsed update could not account for it.

    Parameters
    ----------
    vars : list of TensorVariable, optional
        The ``PowerCRP`` variable(s) (and alphas it may own); each gets its own step.
    sweeps_per_draw : int or None, default=None
        Sweeps between stored draws; ``None``: ``min(20, ceil(45000 / (N max(D, 2))))``.
    tune_sweeps : int or None, default=None
        Sweeps per tuning draw after the restarts; ``None``: ``ceil(sweeps_per_draw / 5)``.
    init : {"random", "prior", "one", "singletons", "point"}, default="random"
        Where each chain starts, drawn from the chain's own generator.
    split_merge : float or None, default=None
        Expected split-merge proposals after each sweep (0: Algorithm 1 alone).
    split_merge_scans : int, default=-1
        Restricted Gibbs scans per proposal (-1: sequential allocation alone).
    speck_moves : float or None, default=None
        Expected split-merge proposals among clusters of at most 8 points per sweep.
    informed_moves : float or None, default=None
        Expected informed split-merge proposals per sweep (merges aimed at similar
        clusters; the table family only, where ``None`` gives ``min(40, K^2 / 6)``
        from the partition when tuning ends, else 0).
    pair_moves : float or None, default=None
        Expected moves of two nearby points together per sweep.
    temper : int, sequence of float or None, default=None
        Parallel tempering: the number of replicas, or their inverse temperatures.
    restarts : int or None, default=None
        Random starts each chain tries during tuning (1: none).
    template_jumps : float or None, default=None
        Proposals per kept draw of partitions drawn from templates met during tuning
        (the chain's restarts and its scouting tournaments, which are seeded by the
        data so that every chain scouts the same: :mod:`pymc_pcrp.sampler.scouting`).
    templates : sequence of array_like or None, default=None
        Further template partitions (label arrays of length N); given ones replace
        the scouting.
    alpha_w : float, default=1.0
        Initial width of the slice move of an owned ``alpha`` (adapted while tuning).
    model : pm.Model, optional
    rng : int or numpy.random.Generator, optional
        Overridden per chain by ``pm.sample(random_seed=...)``.

    Notes
    -----
    Sample stats: ``log_joint`` (the log density of the labels' and the
    NIWMixture's terms given ``alpha``, including ``-log Z_N`` when ``alpha`` or
    the power is random), ``n_clusters``, ``niw_scale`` and ``niw_nu0`` (the
    draw's learned ``s`` and ``nu0``), the counts ``split_proposed``,
    ``split_accepted``, ``merge_proposed``, ``merge_accepted``, ``pair_proposed``,
    ``pair_accepted``, ``swap_proposed``, ``swap_accepted``, ``jump_proposed``,
    ``jump_accepted``, and ``split_merge_rate``.
    """

    name = "pcrp_gibbs"
    default_blocked = False
    stats_dtypes_shapes: ClassVar = {
        "log_joint": (np.float64, []),
        "n_clusters": (np.int64, []),
        **{
            f"{move}_{what}": (np.int64, [])
            for move in ("split", "merge")
            for what in ("proposed", "accepted")
        },
        "niw_scale": (np.float64, []),
        "niw_nu0": (np.float64, []),
        **{
            f"{move}_{what}": (np.int64, [])
            for move in ("swap", "pair")
            for what in ("proposed", "accepted")
        },
        "split_merge_rate": (np.float64, []),
        "jump_proposed": (np.int64, []),
        "jump_accepted": (np.int64, []),
    }
    _state_class = PCRPGibbsState

    # the plan's options and the chain's state, as the step attributes PyMC's state reads
    sweeps_per_draw = _On("plan", "sweeps_per_draw", False)
    tune_sweeps = _On("plan", "tune_sweeps", False)
    init = _On("plan", "init", False)
    split_merge_auto = _On("plan", "split_merge_auto", False)
    split_merge_scans = _On("plan", "split_merge_scans", False)
    speck_moves = _On("plan", "speck_moves", False)
    informed_moves = _On("chain", "informed_moves")
    informed_settled = _On("chain", "informed_settled")
    pair_moves = _On("plan", "pair_moves", False)
    restarts = _On("plan", "restarts", False)
    split_merge = _On("chain", "split_merge")
    split_merge_settled = _On("chain", "split_merge_settled")
    fresh_chain = _On("chain", "fresh")
    tune = _On("chain", "tune")
    rng = _On("chain", "rng")

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
        return several_steps(cls, PCRPHyper, groups, hyper, rest, kwargs)

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
        informed_moves: float | None = None,
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
        options = {k: v for k, v in locals().items() if k in _OPTION_NAMES}
        model, value_vars = model_value_vars(vars, model)
        if vars is None:  # the model's one PowerCRP (with its alpha): see __new__
            (value_vars,), _ = group_vars(model, value_vars)
        self.vars = value_vars
        labels_var, alpha_var = split_vars(model, value_vars)
        rv = model.values_to_rvs[labels_var]
        if not isinstance(getattr(rv.owner, "op", None), PowerCRPRV):
            raise ValueError(f"PCRPGibbs can only update PowerCRP variables; '{rv.name}' is not.")
        inputs = ModelInputs(model, rv, labels_var.name, compile_kwargs)
        self.inputs = inputs
        facts = ChainFacts(
            n=inputs.n,
            d=inputs.data_dimension(),
            family=inputs.family.name,
            local_moves=inputs.family.supports_local_moves,
            template_jumps=inputs.family.supports_template_jumps,
            tempering=inputs.family.supports_tempering,
            informed_moves=inputs.family.supports_informed_moves,
            has_likelihood=inputs.data_readers is not None,
            latent=inputs.latent is not None,
            random_prior=inputs.alpha_is_random or alpha_var is not None,
            learns_nu0=inputs.learns_nu0(),
        )
        # the checks of the options come first: a bad option is named before any compiling
        self.plan = resolve_plan(options, facts)
        announce_compilation()
        inputs.check_observed()  # before any sampling: a prior the data would swamp
        self._dtype = np.dtype(rv.dtype)
        self.chain = Chain(
            self.plan, inputs.family, facts.n, facts.d, get_random_generator(rng),
            self._dtype, labels_var.name,
        )  # fmt: skip
        inputs.chain = self.chain
        # the alpha this step updates itself (None: fixed, or another step's)
        if alpha_var is not None:
            inputs.alpha = AlphaUpdate(model, alpha_var, initial_point, compile_kwargs, w=alpha_w)

    @property
    def alpha_w(self) -> float:
        """Width of the owned ``alpha``'s slice move on the unconstrained scale (NaN: none)."""
        return math.nan if self.inputs.alpha is None else self.inputs.alpha.w

    @alpha_w.setter
    def alpha_w(self, value: float) -> None:
        if self.inputs.alpha is not None:
            self.inputs.alpha.w = float(value)

    @property
    def alpha_n_tunes(self) -> int:
        """Tuning draws that have adapted :attr:`alpha_w` so far (0 without an owned alpha)."""
        return 0 if self.inputs.alpha is None else self.inputs.alpha.n_tunes

    @alpha_n_tunes.setter
    def alpha_n_tunes(self, value: int) -> None:
        if self.inputs.alpha is not None:
            self.inputs.alpha.n_tunes = int(value)

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
        self.chain.stop_tuning()

    def set_rng(self, rng) -> None:
        """Seed a new chain; its first step draws the initial partition."""
        self.chain.reset(get_random_generator(rng, copy=False))

    @passes_interrupts
    def step(self, point):
        """Make one draw of the chain and return the new point and its stats."""
        name, inputs, chain = self.inputs.name, self.inputs, self.chain
        start = chain.begin()  # a start of the tournament of restarts, while tuning
        if start is not None:
            point = {**point, name: start}
        arrays = inputs.arrays(point)
        alpha = inputs.alpha
        owned = None if alpha is None else float(alpha.log_alpha[0])
        kernel_alpha = None if alpha is None else alpha.kernel_args(arrays.params.power)
        drawn = chain.draw(point[name], arrays, owned, kernel_alpha)
        log_density = drawn.log_density
        new_point = {**point, name: drawn.labels}
        if alpha is not None:  # accept or reject the proposed alpha; the stat at the new one
            log_z = alpha.finish(point, chain.rng, chain.tune, arrays.tables[0])
            alpha.store(new_point)
            log_density += drawn.n_clusters * (float(alpha.log_alpha[0]) - owned) - log_z
            inputs.refresh_owned_alpha(arrays)
        elif inputs.normaliser_in_logp:  # alpha or power can change: log Z_N is no constant
            log_density -= inputs.log_normaliser(arrays.params)
        chain.record(drawn.labels, log_density)
        return new_point, [drawn.stats(log_density)]


_OPTION_NAMES = frozenset(
    ("sweeps_per_draw", "tune_sweeps", "init", "split_merge", "split_merge_scans", "speck_moves",
     "informed_moves", "pair_moves", "temper", "restarts", "template_jumps", "templates", "alpha_w")
)  # fmt: skip

if PCRPGibbs not in pm.STEP_METHODS:
    pm.STEP_METHODS.append(PCRPGibbs)
