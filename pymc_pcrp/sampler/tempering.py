"""Parallel tempering for :class:`~pymc_pcrp.PCRPGibbs`: the ladder, the hot replicas, the swaps.

``PCRPGibbs(temper=...)`` keeps, inside each chain, hot replicas of the state
that target the posterior with the likelihood raised to ``beta < 1``
(their kernels come from the cluster family: :mod:`pymc_pcrp._kernels.tempering`
for the full Gaussian family, :mod:`pymc_pcrp._kernels.family_tempering` for the
families of the generic moves, such as the table family). After the chain's own draw (replica 0,
``beta = 1``) every hot replica makes its draw, then exchanges of states between
neighbouring temperatures are proposed, from the hottest pair down to the
coldest, each accepted with probability
``min(1, exp((beta_i - beta_j)(L_j - L_i)))`` where ``L = log p(X | z, s)``.
Only replica 0's state is ever returned to PyMC; the hot replicas live in the
step, like its kept sweep state.
"""

from __future__ import annotations

import math

from collections.abc import Callable, Sequence
from typing import NamedTuple

import numba
import numpy as np

from pymc_pcrp._kernels.chain import finish_draw
from pymc_pcrp._kernels.hyper import FRESH_CHAIN, REBUILT, ScaleGrid, partition_log_joint_scaled
from pymc_pcrp._kernels.partitions import canonical_labels
from pymc_pcrp._kernels.state import SweepState
from pymc_pcrp.sampler.families import ClusterFamily
from pymc_pcrp.sampler.inputs import compiled_for

__all__ = ["TEMPER_BETA_MIN", "Replicas", "checked_ladder", "swap_log_ratio", "temper_ladder"]

# temper=M (an integer) gives the geometric ladder beta_m = TEMPER_BETA_MIN ** (m / (M - 1)).
TEMPER_BETA_MIN = 0.1


def temper_ladder(temper: int | Sequence[float] | None) -> np.ndarray | None:
    """Return the inverse temperatures of ``PCRPGibbs(temper=...)``, or ``None`` (no tempering).

    Parameters
    ----------
    temper : int, sequence of float or None
        ``None``: no tempering. An integer ``M >= 2``: ``M`` replicas on the
        geometric ladder ``beta_m = 0.1 ** (m / (M - 1))``, from 1 down to
        :data:`TEMPER_BETA_MIN`. A sequence: the ``beta`` values themselves,
        starting at 1, strictly decreasing and positive.

    Returns
    -------
    numpy.ndarray or None
        The ``beta`` values, ``beta[0] = 1``.
    """
    if temper is None:
        return None
    if isinstance(temper, int | np.integer) and not isinstance(temper, bool):
        if temper < 2:
            raise ValueError(f"Argument 'temper' as an integer must be at least 2, got {temper}.")
        return TEMPER_BETA_MIN ** (np.arange(temper) / (temper - 1))
    try:
        betas = np.asarray(temper, dtype=np.float64)
    except (TypeError, ValueError):
        betas = np.empty(0)
    if (
        betas.ndim != 1
        or betas.size < 2
        or betas[0] != 1.0
        or not np.all(np.isfinite(betas))
        or not np.all(betas > 0)
        or not np.all(np.diff(betas) < 0)
    ):
        raise ValueError(
            "Argument 'temper' must be None, an integer M >= 2 (a geometric ladder from 1 to "
            f"{TEMPER_BETA_MIN}) or a sequence of at least two inverse temperatures starting at "
            f"1, strictly decreasing and positive; got {temper!r}."
        )
    return betas


def swap_log_ratio(beta_i: float, beta_j: float, l_i: float, l_j: float) -> float:
    """Log acceptance ratio of exchanging the states of replicas at ``beta_i`` and ``beta_j``.

    ``l_i`` and ``l_j`` are the log likelihoods of their current states:
    ``(beta_i - beta_j)(l_j - l_i)``.
    """
    return (beta_i - beta_j) * (l_j - l_i)


class TemperedDraw(NamedTuple):
    """What :meth:`Replicas.draw` hands back to the step."""

    state: SweepState  # replica 0's state after the swaps
    log_density: float  # its log joint (the step's ``log_joint`` stat)
    niw_scale: float  # its s (the fixed scale without a learned one)
    swap_accepted: int  # swaps accepted in this draw
    cold_swapped: bool  # whether replica 0's state changed in the swaps


class Replicas:
    """The hot replicas of one chain and the swap moves between them.

    Parameters
    ----------
    betas : numpy.ndarray
        Inverse temperatures, ``betas[0] = 1`` (replica 0 is the step's own state).
    n_sweeps : int
        Tempered sweeps per draw of each hot replica.
    family : ClusterFamily
        The cluster family, whose hot-replica kernel and log likelihood are used.
    """

    def __init__(self, betas: np.ndarray, n_sweeps: int, family: ClusterFamily):
        self.betas = np.asarray(betas, dtype=np.float64)
        self.n_sweeps = int(n_sweeps)
        self.family = family
        self.states: list[SweepState] | None = None  # hot replicas 1..M-1
        self.grids: list[ScaleGrid] = []
        self.tables: list[tuple] = []
        self._inputs = None  # the step inputs the hot replicas were built for
        self._calls: dict = {}  # compiled hot-replica kernels, see _compiled
        self.proposed = 0  # swaps proposed per draw
        self.accepted = np.zeros(self.betas.size - 1, dtype=np.int64)  # per pair, whole run

    def __getstate__(self) -> dict:
        """Pickle without the compiled kernels (looked up again at the next draw)."""
        state = self.__dict__.copy()
        state["_calls"] = {}
        return state

    def reset(self) -> None:
        """Forget the hot replicas (a new chain starts them again)."""
        self.states = None
        self._inputs = None

    def _build(self, inputs, labels: Sequence[np.ndarray], scales: Sequence[int] = ()) -> None:
        """Build the hot replicas' states (and their own scale grids and tables) from labels.

        ``scales``: the grid indices of ``s`` the replicas keep (a rebuild for new
        inputs); empty for a new chain, whose replicas draw ``s`` first.
        """
        xc, params, scale = inputs.xc, inputs.params, inputs.scale
        self.states = [self.family.init_state(xc, canonical_labels(z), params) for z in labels]
        self.grids, self.tables = [], []
        self._calls = {}
        if scale is None:
            return
        for m in range(len(labels)):
            # [s index, status, nu0 index]: nu0 is fixed with tempering (one grid value)
            current = (scales[m], REBUILT, 0) if scales else (0, FRESH_CHAIN, 0)
            self.grids.append(
                scale._replace(
                    psi0=scale.psi0.copy(),
                    chol0=scale.chol0.copy(),
                    current=np.array(current, dtype=np.int64),
                )
            )
            self.tables.append((inputs.tables[0].copy(), *inputs.tables[1:]))

    def _ensure(self, inputs, restart: bool, init: Callable[[], np.ndarray]) -> None:
        """Start the hot replicas for a new chain, or rebuild them for new step inputs."""
        if restart or self.states is None:
            self._build(inputs, [init() for _ in range(self.betas.size - 1)])
        elif inputs is not self._inputs:
            scales = [int(g.current[0]) for g in self.grids] if inputs.scale is not None else []
            if inputs.scale is not None and len(scales) != len(self.states):
                scales = []  # the prior learned no scale before: draw one
            self._build(inputs, [np.asarray(s.labels) for s in self.states], scales)
        self._inputs = inputs

    def _compiled(self, kernel, args: tuple):
        """Return the compiled function of a hot-replica kernel for ``args`` (``compiled_for``).

        ``args[1]`` is the chain ``(xc, state, params, tables)``. Between two builds
        the replicas' data, parameters, tables and grids keep their types and only the
        states move (replica 0's is the step's own), so one function per kernel and
        state type serves every draw; numba would otherwise type the chain in Python
        at each call.
        """
        key = (kernel, numba.typeof(args[1][1]))
        call = self._calls.get(key)
        if call is None:
            call = self._calls[key] = compiled_for(kernel, args)
        return call

    def draw(
        self,
        rng: np.random.Generator,
        inputs,
        state: SweepState,
        labels_out: np.ndarray,
        log_density: float,
        restart: bool,
        init: Callable[[], np.ndarray],
    ) -> TemperedDraw:
        """Advance the hot replicas, propose the swaps, and return replica 0's outcome.

        Called after the step's own draw of replica 0 (``state``, whose
        canonical labels are in ``labels_out`` and log joint is
        ``log_density``). When a swap changes replica 0's state, ``labels_out``
        is rewritten and the log joint recomputed from the new labels.
        """
        self._ensure(inputs, restart, init)
        xc, params, scale = inputs.xc, inputs.params, inputs.scale
        betas = self.betas
        logliks = np.empty(betas.size)
        family = self.family
        kernel = family.hot_kernel(scale is not None)
        logliks[0] = family.log_likelihood(state, params, scale)
        for m, hot in enumerate(self.states, start=1):
            if scale is None:
                args = (rng, (xc, hot, params, inputs.tables), betas[m], self.n_sweeps)
            else:
                chain = (xc, hot, params, self.tables[m - 1])
                args = (rng, chain, self.grids[m - 1], betas[m], self.n_sweeps)
            logliks[m] = self._compiled(kernel, args)(*args)
        states = [state, *self.states]
        grids = [scale, *self.grids] if scale is not None else None
        accepted = 0
        for m in range(betas.size - 2, -1, -1):  # hottest pair first, down to replica 0
            log_ratio = swap_log_ratio(betas[m], betas[m + 1], logliks[m], logliks[m + 1])
            if not (log_ratio >= 0.0 or math.log(rng.random()) < log_ratio):
                continue
            accepted += 1
            self.accepted[m] += 1
            states[m], states[m + 1] = states[m + 1], states[m]
            logliks[m], logliks[m + 1] = logliks[m + 1], logliks[m]
            if grids is not None:
                # s travels with the state; each side applies it to its tables next time
                g_m, g_n = int(grids[m].current[0]), int(grids[m + 1].current[0])
                grids[m].current[:2] = (g_n, REBUILT)
                grids[m + 1].current[:2] = (g_m, REBUILT)
        self.proposed = betas.size - 1
        self.states = states[1:]
        cold = states[0]
        cold_swapped = cold is not state  # pair (0, 1) comes last: it is the only way in
        if cold_swapped:
            finish_draw(cold, labels_out)
            if scale is None:
                log_density = family.log_joint(xc, labels_out, params) + inputs.fixed_scale[1]
            else:
                log_density = partition_log_joint_scaled(xc, labels_out, params, scale)
        niw_scale = (
            inputs.fixed_scale[0] if scale is None else math.exp(scale.log_s[scale.current[0]])
        )
        return TemperedDraw(cold, log_density, niw_scale, accepted, cold_swapped)


def checked_ladder(
    temper: int | Sequence[float] | None,
    has_likelihood: bool,
    random_prior: bool,
    unsupported: str | None = None,
) -> np.ndarray | None:
    """Return the ladder of ``PCRPGibbs(temper=...)`` (``None``: off); refuse bad models.

    Tempering needs a likelihood (without one every replica would sample the same
    prior) and a fixed ``alpha`` and power: with a random one the hot replicas'
    targets depend on it through their normalising constants, which its update
    would have to take into account. ``unsupported`` names a model feature the
    hot replicas do not handle (refused with that reason).
    """
    betas = temper_ladder(temper)
    if betas is None:
        return None
    if unsupported is not None:
        raise ValueError(f"Argument 'temper' is not supported {unsupported} yet.")
    if not has_likelihood:
        raise ValueError(
            "Argument 'temper' needs labels observed through an NIWMixture or TableMixture: "
            "without a likelihood there is nothing to temper."
        )
    if random_prior:
        raise ValueError(
            "Argument 'temper' needs a fixed alpha and power for now: with a random one the "
            "tempered replicas' targets depend on it through their normalising constants."
        )
    return betas
