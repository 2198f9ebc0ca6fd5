"""PyMC step method for the slot labels of ``PowerCRP(..., max_clusters=K)``, any likelihood.

:class:`PCRPSlotGibbs` reads the point, asks
:class:`~pymc_pcrp.step_methods._slot_likelihood.SlotLikelihood` for every
point's log-likelihood under every slot (one compiled call), runs the Gibbs
sweep of :func:`pymc_pcrp._kernels.slot_gibbs.slot_gibbs_sweep` and writes the
labels and the sample stats. The cluster parameters are left to the other steps
of ``pm.sample`` (NUTS for continuous ones).
"""

from __future__ import annotations

import math
import warnings

from dataclasses import field
from typing import ClassVar

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt

from pymc.step_methods.compound import BlockedStep, Competence, StepMethodState
from pymc.step_methods.state import dataclass_state
from pymc.util import get_random_generator, get_value_vars_from_user_vars

from pymc_pcrp._kernels.slot_gibbs import slot_gibbs_sweep
from pymc_pcrp.distributions.slots import PowerCRPSlotsRV
from pymc_pcrp.step_methods._slot_likelihood import SlotLikelihood

__all__ = ["MaxClustersWarning", "PCRPSlotGibbs", "PCRPSlotGibbsState"]


class MaxClustersWarning(UserWarning):
    """A chain of slot labels used every one of its ``max_clusters`` slots."""


@dataclass_state
class PCRPSlotGibbsState(StepMethodState):
    """Sampling state of :class:`PCRPSlotGibbs` (nothing is kept between draws but these)."""

    sweeps_per_draw: int = field(metadata={"frozen": True})
    warned_full: bool
    tune: bool


class PCRPSlotGibbs(BlockedStep):
    r"""Gibbs sampler over labelled slots for a ``PowerCRP(..., max_clusters=K)`` label vector.

    With the cluster parameters fixed, each sweep seats every point again, in a
    fresh random order, with probability proportional to

    .. math::

        n_{s,-i}^r \, p(y_i \mid \theta_s) \text{ (occupied slot } s), \qquad
        \frac{\alpha}{K - K_{-i}} \, p(y_i \mid \theta_s) \text{ (each empty slot } s),

    where :math:`K_{-i}` is the number of slots the other points occupy and
    :math:`\theta_s` the parameters of slot ``s`` (those of an empty slot are
    whatever the other steps last drew, from their prior given no data, as in
    Neal's Algorithm 8). This is the exact full conditional of the labels, so
    the step leaves the model's posterior invariant. The likelihood of every
    point under every slot comes from the model's own graph, in one compiled
    call per draw; it requires that each point's likelihood depends on the
    labels only through its own label, which the step checks at construction.

    Parameters
    ----------
    vars : list
        The label variable (one ``PowerCRP`` with ``max_clusters``).
    sweeps_per_draw : int, default=1
        Sweeps over all points per draw (the likelihood matrix is computed once
        per draw, since the parameters do not change during the sweeps).
    model : pymc.Model, optional
        The model (default: from the context).
    rng : int or numpy.random.Generator, optional
        Seed of the step's generator.
    initial_point : dict, optional
        A point of the model, used for the independence check (default: the
        model's initial point).
    compile_kwargs : dict, optional
        Passed to PyMC's compilation of the likelihood matrix.
    blocked : bool, default=False
        As for other PyMC steps (one step per label variable).

    Notes
    -----
    Sample stats: ``n_clusters`` (occupied slots), ``log_joint`` and
    ``slots_moved`` (points whose slot changed). ``log_joint`` is the model's
    log density, without Jacobian terms, at the labels this step drew and the
    other variables as this step received them (in ``pm.sample`` the step runs
    first, so these are the previous draw's parameters). Both ``n_clusters``
    and ``log_joint`` are label-invariant, so R-hat and ESS apply to them. A
    :class:`MaxClustersWarning` is given once per chain when a kept draw (after
    tuning) occupies every slot: ``max_clusters`` may then be too small for the
    data.
    """

    name = "pcrp_slot_gibbs"
    default_blocked = False
    stats_dtypes_shapes: ClassVar = {
        "log_joint": (np.float64, []),
        "n_clusters": (np.int64, []),
        "slots_moved": (np.int64, []),
    }
    _state_class = PCRPSlotGibbsState

    def __init__(
        self,
        vars=None,
        *,
        sweeps_per_draw: int = 1,
        model=None,
        rng=None,
        initial_point=None,
        compile_kwargs=None,
        blocked: bool = False,
    ):
        model = pm.modelcontext(model)
        value_vars = get_value_vars_from_user_vars(
            model.value_vars if vars is None else vars, model
        )
        labels = [v for v in value_vars if _is_slot_labels(model, v)]
        if len(value_vars) != 1 or len(labels) != 1:
            names = [model.values_to_rvs[v].name for v in value_vars]
            raise ValueError(
                "PCRPSlotGibbs updates exactly one PowerCRP variable built with max_clusters, "
                f"but got {names}; give each such variable its own step."
            )
        if int(sweeps_per_draw) != sweeps_per_draw or sweeps_per_draw < 1:
            raise ValueError(
                f"Argument 'sweeps_per_draw' must be an integer >= 1, but got {sweeps_per_draw!r}."
            )
        self.vars = value_vars
        self.sweeps_per_draw = int(sweeps_per_draw)
        self.warned_full = False
        self.tune = True  # PyMC calls stop_tuning when the kept draws begin
        self.rng = get_random_generator(rng)
        (value,) = labels
        rv = model.values_to_rvs[value]
        alpha, power, n, max_clusters = rv.owner.op.dist_params(rv.owner)
        self.n_points = int(pt.get_underlying_scalar_constant_value(n))
        self.n_slots = int(pt.get_underlying_scalar_constant_value(max_clusters))
        self._name, self._labels_name, self._dtype = value.name, rv.name, np.dtype(rv.dtype)
        self._prior = pytensor.function([], [alpha, power])
        self.likelihood = SlotLikelihood(model, rv, self.n_points, self.n_slots, compile_kwargs)
        if initial_point is None:
            initial_point = model.initial_point()
        self.likelihood.check_independence(initial_point, np.random.default_rng(0))
        self._log_joint = model.compile_logp(jacobian=False, **(compile_kwargs or {}))

    @staticmethod
    def competence(var, has_grad):
        """``IDEAL`` for a ``PowerCRP`` built with ``max_clusters``, else ``INCOMPATIBLE``."""
        if isinstance(getattr(var.owner, "op", None), PowerCRPSlotsRV):
            return Competence.IDEAL
        return Competence.INCOMPATIBLE

    def stop_tuning(self) -> None:
        """Tuning is over: from now on a chain that fills every slot is warned about."""
        self.tune = False

    def _labels(self, point) -> np.ndarray:
        """Return the labels of ``point`` as ``int64``; refuse any outside ``0..K-1``."""
        labels = np.asarray(point[self._name])
        if labels.shape != (self.n_points,):
            raise ValueError(
                f"The labels of '{self._labels_name}' must have shape ({self.n_points},), but "
                f"got {labels.shape}."
            )
        bad = (labels < 0) | (labels >= self.n_slots)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"The labels of '{self._labels_name}' must be slots 0..{self.n_slots - 1} "
                f"(max_clusters={self.n_slots}), but label {int(labels[i])} is at index {i}; "
                "pass initvals with labels in that range, or raise max_clusters."
            )
        return labels.astype(np.int64)

    def step(self, point):
        """Make one draw of the labels and return the new point and its stats."""
        labels = self._labels(point)
        loglik = self.likelihood.matrix(point)
        alpha, power = (float(v) for v in self._prior())
        log_alpha = math.log(alpha)
        moved = occupied = 0
        for _ in range(self.sweeps_per_draw):
            order = self.rng.permutation(self.n_points)
            n_moved, occupied = slot_gibbs_sweep(self.rng, labels, loglik, log_alpha, power, order)
            moved += n_moved
        new_point = {**point, self._name: labels.astype(self._dtype)}
        if occupied == self.n_slots and not self.warned_full and not self.tune:
            self.warned_full = True
            warnings.warn(
                f"A chain of '{self._labels_name}' occupies all max_clusters={self.n_slots} "
                "slots: the truncation may be cutting off clusters the data support. Raise "
                "max_clusters, unless the number of clusters the model wants is this many.",
                MaxClustersWarning,
                stacklevel=2,
            )
        stats = {
            "log_joint": float(self._log_joint(new_point)),
            "n_clusters": int(occupied),
            "slots_moved": int(moved),
        }
        return new_point, [stats]


def _is_slot_labels(model, value) -> bool:
    """Whether a value variable is that of a ``PowerCRP`` with ``max_clusters``."""
    return isinstance(getattr(model.values_to_rvs[value].owner, "op", None), PowerCRPSlotsRV)


if PCRPSlotGibbs not in pm.STEP_METHODS:
    pm.STEP_METHODS.append(PCRPSlotGibbs)
