"""One Markov chain of labels: its state, its move plan and everything it remembers.

A :class:`Chain` owns what belongs to one chain and not to the model: its
random generator, the sweep state it carries from draw to draw, the rate of
split-merge proposals it settles on, the tournament of restarts it runs while
tuning, the template jumps it makes after tuning, its hot replicas (parallel
tempering) and the cache of its compiled kernel. It knows nothing of PyMC:
:class:`~pymc_pcrp.PCRPGibbs` reads the point, builds the kernel's inputs
(:class:`~pymc_pcrp.sampler.inputs.SweepInputs`) and calls :meth:`Chain.begin`,
then :meth:`Chain.draw`, then :meth:`Chain.record`.

One draw is: the start state (a new chain's initial partition, the state kept
from the previous draw when the labels did not change, or a state rebuilt from
the labels); one call of the family's compiled kernel (sweeps, split-merge,
speck and pair moves, the learned scale; an owned ``alpha``'s proposal too);
after tuning, the template jumps; with tempering, the hot replicas and their
swaps.
"""

from __future__ import annotations

import math

from typing import NamedTuple

import numpy as np

from pymc_pcrp._kernels.chain import labels_match
from pymc_pcrp._kernels.hyper import FRESH_CHAIN, REBUILT, params_at, partition_log_joint_scaled
from pymc_pcrp._kernels.pair_moves import no_pairs, pair_picks
from pymc_pcrp._kernels.partitions import canonical_labels
from pymc_pcrp.sampler.families import ClusterFamily
from pymc_pcrp.sampler.inputs import (
    REFRESH_EVERY,
    CompiledAdvance,
    KeptState,
    SweepInputs,
    call_compiled,
    same_argument_types,
)
from pymc_pcrp.sampler.options import (
    MovePlan,
    auto_split_merge,
    informed_rate,
    sweep_matched_rate,
    tuning_split_merge,
    visited_fraction,
)
from pymc_pcrp.sampler.restarts import FRESH, RestartTournament, initial_labels, segment_draws
from pymc_pcrp.sampler.scouting import scout
from pymc_pcrp.sampler.tempering import Replicas
from pymc_pcrp.sampler.templates import TemplateJumps, check_templates

__all__ = ["Chain", "ChainDraw"]


class ChainDraw(NamedTuple):
    """What one :meth:`Chain.draw` made: the new labels and what the stats report."""

    labels: np.ndarray  # canonical, in the chain's label dtype
    n_clusters: int
    log_density: float
    split_merge: np.ndarray  # split proposed, accepted, merge proposed, accepted
    pairs: tuple[int, int]  # pair moves proposed, accepted
    swaps: tuple[int, int]  # replica swaps proposed, accepted
    jumps: tuple[int, int]  # template jumps proposed, accepted
    niw_scale: float
    niw_nu0: float
    split_merge_rate: float

    def stats(self, log_joint: float) -> dict:
        """Return the draw's sample stats, as :class:`~pymc_pcrp.PCRPGibbs` reports them."""
        split, pairs, swaps, jumps = self.split_merge, self.pairs, self.swaps, self.jumps
        return {
            "log_joint": log_joint,
            "n_clusters": self.n_clusters,
            "split_proposed": int(split[0]),
            "split_accepted": int(split[1]),
            "merge_proposed": int(split[2]),
            "merge_accepted": int(split[3]),
            "niw_scale": self.niw_scale,
            "niw_nu0": self.niw_nu0,
            "swap_proposed": swaps[0],
            "swap_accepted": swaps[1],
            "pair_proposed": pairs[0],
            "pair_accepted": pairs[1],
            "split_merge_rate": self.split_merge_rate,
            "jump_proposed": jumps[0],
            "jump_accepted": jumps[1],
        }


class Chain:
    """The state and moves of one chain (see the module).

    Parameters
    ----------
    plan : MovePlan
        The resolved options (:func:`~pymc_pcrp.sampler.options.resolve_plan`).
    family : ClusterFamily
        The cluster family whose kernels make the draws.
    n, d : int
        Points and their dimension (``d = 0`` without a likelihood).
    rng : numpy.random.Generator
        The chain's generator; every random number of a draw comes from it.
    label_dtype : numpy.dtype
        The dtype of the labels the chain returns.
    name : str
        The labels' name, for messages.
    """

    def __init__(
        self,
        plan: MovePlan,
        family: ClusterFamily,
        n: int,
        d: int,
        rng: np.random.Generator,
        label_dtype=np.int64,
        name: str = "z",
    ):
        self.plan = plan
        self.family = family
        self.n, self.d = int(n), int(d)
        self.rng = rng
        self.label_dtype = np.dtype(label_dtype)
        self.name = name
        self.fresh = True  # the next draw starts a new chain
        self.tune = True
        # split_merge=None: the tuning rate, then one set from the partition the chain has
        # reached when tuning ends (settle_rates)
        self.split_merge = plan.split_merge
        self.split_merge_settled = not plan.split_merge_auto
        # informed_moves=None: informed_rate of the partition while tuning, then kept
        self.informed_moves = plan.informed_moves
        self.informed_settled = not plan.informed_moves_auto
        # random starts tried during tuning, the chain going on from the best (restarts.py)
        self.tournament = RestartTournament(plan.restarts, segment_draws(plan.sweeps_per_draw))
        # hot replicas of parallel tempering (None: off), see tempering.py
        self.replicas = (
            None if plan.temper is None else Replicas(plan.temper, plan.sweeps_per_draw, family)
        )
        # partitions remembered from the tournament, proposed after each kept draw
        self.given = check_templates(plan.templates, self.n)
        self.jumps = TemplateJumps(plan.template_jumps, self.given, family.pack_templates)
        self.scouted = False  # the scouting tournaments ran (sampler/scouting.py)
        self.kept: KeptState | None = None  # the state after the last draw
        self.compiled: CompiledAdvance | None = None  # see call_advance
        self.scale_inputs: SweepInputs | None = None  # inputs the current s was applied to
        self.prior_shifts = 0  # new alphas applied by shifting the new-cluster weights
        self.nu0_start = 0  # grid index of the nu0 every chain starts from (a learned nu0)
        self.pairs: tuple | None = None  # (data the pair tables were built on, plan entry)

    def __getstate__(self) -> dict:
        """Pickle without the compiled function and the tables rebuilt on the next draw."""
        state = self.__dict__.copy()
        state["compiled"] = None
        state["scale_inputs"] = None
        state["pairs"] = None
        return state

    # -- the life of a chain --------------------------------------------------

    def reset(self, rng: np.random.Generator) -> None:
        """Start a new chain from generator ``rng``; its next draw draws the initial labels."""
        self.rng = rng
        self.fresh = True
        self.split_merge_settled = not self.plan.split_merge_auto  # a new chain tunes its own
        self.informed_settled = not self.plan.informed_moves_auto
        self.kept = None
        self.tournament.reset()
        self.jumps.reset()
        self.scouted = False

    def stop_tuning(self) -> None:
        """End the restarts (the chain goes on from the best start)."""
        self.tune = False
        self.tournament.stop()

    def begin(self) -> np.ndarray | None:
        """Return the labels the coming draw must start from (a restart), or ``None``."""
        start = self.tournament.before_draw()
        if start is FRESH:
            self.fresh = True
            return None
        if start is None:
            return None
        return start.astype(self.label_dtype)

    def record(self, labels: np.ndarray, log_density: float) -> None:
        """Give the tournament of restarts the draw's outcome (while tuning)."""
        if self.tune:
            self.tournament.record(labels, log_density)

    # -- one draw ---------------------------------------------------------------

    def scout(self, inputs: SweepInputs, owned_log_alpha: float | None = None) -> None:
        """Run the scouting tournaments (at the first tuning draw); their starts join the templates.

        See :mod:`pymc_pcrp.sampler.scouting`: the same for every chain of a model,
        and without a draw from this chain's generator.
        """
        self.scouted = True

        def make_chain(plan: MovePlan, rng: np.random.Generator) -> Chain:
            return Chain(plan, self.family, self.n, self.d, rng, self.label_dtype, self.name)

        found = scout(self.plan, make_chain, inputs, self.family.name, owned_log_alpha)
        self.jumps.given = [*self.given, *found]

    def initial_labels(self, current: np.ndarray, params) -> np.ndarray:
        """Draw a new chain's start labels from the chain's generator (``plan.init``)."""
        alpha, power = math.exp(params.log_alpha), params.power
        return initial_labels(self.plan.init, self.rng, self.n, current, alpha, power)

    def settle_rates(self, state) -> None:
        """Set the automatic split-merge and informed proposal rates of this draw.

        While the chain tunes, :func:`~pymc_pcrp.sampler.options.tuning_split_merge`
        (for a family that ``tunes_by_sweep_cost``, at least
        :func:`~pymc_pcrp.sampler.options.sweep_matched_rate` of the partition);
        the first draw after tuning sets it by
        :func:`~pymc_pcrp.sampler.options.auto_split_merge` from the partition it
        starts from, and the chain keeps that rate. An automatic rate of informed
        proposals is set the same way, by
        :func:`~pymc_pcrp.sampler.options.informed_rate` at every tuning draw and at
        the first kept one (the rate of a kept draw must not depend on the state).
        """
        if not self.split_merge_settled:
            if self.tune:
                self.split_merge = tuning_split_merge(self.n, self.d)
                if self.family.tunes_by_sweep_cost:
                    self.split_merge = max(self.split_merge, sweep_matched_rate(state.counts))
            else:
                counts = state.counts
                self.split_merge = auto_split_merge(self.n, self.d, visited_fraction(counts))
            self.split_merge_settled = not self.tune
        if not self.informed_settled:  # informed_moves=None: informed_rate, kept after tuning
            self.informed_moves = informed_rate(state.counts, self.plan.informed_moves)
            self.informed_settled = not self.tune

    def pair_plan(self, xc: np.ndarray) -> tuple:
        """Return the ``pairs`` entry of the kernel's plan: the rate, the pair tables, a tally.

        The tables (:func:`~pymc_pcrp._kernels.pair_moves.pair_picks`) depend on
        the data only; they are built on the first draw and again when the data
        change (``pm.set_data``).
        """
        rate = self.plan.pair_moves
        if rate == 0:
            if self.pairs is None:
                self.pairs = (None, no_pairs())
            return self.pairs[1]
        if self.pairs is None or self.pairs[0] is not xc:
            self.pairs = (xc, (rate, pair_picks(xc), np.zeros(2, dtype=np.int64)))
        return self.pairs[1]

    def start_state(self, current, inputs: SweepInputs, params) -> tuple:
        """Return the state the draw starts from, and its age (draws since built from labels).

        A new chain draws its initial labels. When ``current`` still holds the
        labels this chain returned last time, the draw carries on from the kept
        cluster statistics instead of rebuilding them (but rebuilds them now and
        then, so that rank-one updates cannot drift). Other labels are rebuilt.
        """
        xc, scale = inputs.xc, inputs.scale
        kept = self.kept
        if self.fresh:
            labels = self.initial_labels(np.asarray(current, dtype=np.int64), params)
            self.fresh = False
            if scale is not None:
                scale.current[1] = FRESH_CHAIN  # draw s given the initial partition
                if self.family.has_nu0_grid:  # and start nu0 where every chain starts it
                    scale.current[2] = self.nu0_start
            return self.family.init_state(xc, labels, params), 0
        if (
            kept is not None
            and kept.xc is xc
            and kept.age < REFRESH_EVERY
            and (current is kept.labels or labels_match(np.asarray(current), kept.labels))
        ):
            return kept.state, kept.age + 1
        current = np.asarray(current, dtype=np.int64)
        if current.min() < 0:
            raise ValueError(f"Labels of '{self.name}' must be non-negative.")
        if scale is not None:
            # built with Psi_0 = P: the kernel refreshes it for the current s
            scale.current[1] = max(scale.current[1], REBUILT)
        return self.family.init_state(xc, canonical_labels(current), params), 0

    def labels_log_density(self, inputs: SweepInputs, labels: np.ndarray) -> float:
        """Return the log joint of ``labels`` from scratch (scale and ``nu0`` summed out)."""
        labels = canonical_labels(np.asarray(labels, dtype=np.int64))
        if inputs.scale is None:
            return self.family.log_joint(inputs.xc, labels, inputs.params) + inputs.fixed_scale[1]
        return partition_log_joint_scaled(inputs.xc, labels, inputs.params, inputs.scale)

    def template_jump(self, inputs: SweepInputs, new_labels: np.ndarray):
        """Propose partitions drawn from the templates (after tuning); new labels or None."""
        jumps = self.jumps
        jumps.proposed = jumps.accepted = 0
        built = jumps.built
        if self.tune or jumps.rate == 0 or (built and not jumps.active):
            return None
        params = inputs.params if inputs.scale is None else params_at(inputs.params, inputs.scale)
        if not built:  # the first kept draw: the tournament's starts, and given ones
            jumps.build(
                inputs.xc,
                params,
                self.tournament.candidates,
                lambda labels: self.labels_log_density(inputs, labels),
            )
        labels = canonical_labels(np.asarray(new_labels, dtype=np.int64))
        return jumps.run(self.rng, inputs.xc, labels, params)

    def call_advance(self, inputs: SweepInputs, args: tuple, kernel) -> float:
        """Call a draw kernel, through its compiled function while the types hold."""
        result, self.compiled = call_compiled(self.compiled, inputs, args, kernel)
        return result

    def _scaled_args(self, inputs: SweepInputs, args: tuple) -> tuple:
        """Insert the scale grid into the kernel's arguments; mark its tables for a rebuild.

        New tables (new data, new NIW parameters), or new-cluster weights shifted
        too often by new alphas, get the current ``s`` applied afresh.
        """
        scale = inputs.scale
        if self.scale_inputs is not inputs:
            shifted = (
                self.scale_inputs is not None
                and 0 < self.prior_shifts < REFRESH_EVERY
                and same_argument_types(self.scale_inputs, inputs)
            )
            if not shifted:
                scale.current[1] = max(scale.current[1], REBUILT)
                self.prior_shifts = 0
            self.scale_inputs = inputs
        return (*args[:2], scale, *args[2:])

    def draw(
        self,
        current: np.ndarray,
        inputs: SweepInputs,
        owned_log_alpha: float | None = None,
        alpha_args: tuple | None = None,
    ) -> ChainDraw:
        """Make one draw from labels ``current`` with the kernel inputs ``inputs``.

        ``owned_log_alpha`` is the ``log alpha`` the sweep tables hold when the
        step owns ``alpha`` (a new chain starts there), and ``alpha_args`` the
        arguments of its proposal, made in the same kernel call (both ``None``
        otherwise).
        """
        xc, params, scale = inputs.xc, inputs.params, inputs.scale
        if self.tune and not self.scouted:
            self.scout(inputs, owned_log_alpha)
        fresh = self.fresh
        if fresh and owned_log_alpha is not None:
            params = params._replace(log_alpha=owned_log_alpha)
        state, age = self.start_state(current, inputs, params)
        self.settle_rates(state)
        counts = np.empty(4, dtype=np.int64)
        # the kernels write int64 labels whatever the variable's dtype: one compilation serves
        # int16 and int32 labels alike (the copy to the label dtype is O(N) per draw)
        labels64 = np.empty(self.n, dtype=np.int64)
        pairs = self.pair_plan(xc)
        # tuning draws after the tournament (all of them without one) only carry the chain
        # to the posterior: tune_sweeps sweeps each
        plan = self.plan
        tuning_after = self.tune and self.tournament.done
        moves = (
            plan.tune_sweeps if tuning_after else plan.sweeps_per_draw,
            self.split_merge,
            plan.split_merge_scans,
            plan.speck_moves,
            pairs,
        )
        kernel_plan = self.family.kernel_plan(moves, self.informed_moves)
        # Every argument is passed (None too): call_compiled looks the function up by type.
        args = (self.rng, (xc, state, params, inputs.tables), kernel_plan, (counts, labels64))
        args = (*args, alpha_args)
        kernel = self.family.advance_kernel(scale is not None)
        if scale is None:
            log_density = self.call_advance(inputs, args, kernel) + inputs.fixed_scale[1]
            niw_scale = inputs.fixed_scale[0]
        else:
            log_density = self.call_advance(inputs, self._scaled_args(inputs, args), kernel)
            niw_scale = math.exp(scale.log_s[scale.current[0]])
        niw_nu0 = self.family.nu0(inputs)
        jumped = self.template_jump(inputs, labels64)
        if jumped is not None:  # a template jump was accepted: rebuild from its labels
            labels64[:] = jumped
            state = self.family.init_state(xc, jumped, params)
            age = 0
            if scale is not None:
                scale.current[1] = max(scale.current[1], REBUILT)  # tables for the current s
            log_density = self.labels_log_density(inputs, jumped)
        swaps = (0, 0)
        if self.replicas is not None:  # hot replicas' draws, then swaps (may change state)
            drawn = self.replicas.draw(
                self.rng,
                inputs,
                state,
                labels64,
                log_density,
                fresh,
                lambda: self.initial_labels(current, params),
            )
            state, log_density, niw_scale = drawn.state, drawn.log_density, drawn.niw_scale
            swaps = (self.replicas.proposed, drawn.swap_accepted)
            age = 0 if drawn.cold_swapped else age
        labels = labels64.astype(self.label_dtype)
        self.kept = KeptState(xc, state, labels, age)
        return ChainDraw(
            labels=labels,
            n_clusters=int(state.k[0]),
            log_density=log_density,
            split_merge=counts,
            pairs=(int(pairs[2][0]), int(pairs[2][1])),
            swaps=swaps,
            jumps=(self.jumps.proposed, self.jumps.accepted),
            niw_scale=niw_scale,
            niw_nu0=niw_nu0,
            split_merge_rate=self.split_merge,
        )
