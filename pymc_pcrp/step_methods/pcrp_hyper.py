r"""PyMC step method for the pCRP hyper-parameters: exact slice updates of ``alpha`` and ``r``.

Given the labels ``z`` the pCRP term of the model depends on ``alpha`` and the
power ``r`` only through the number of blocks ``K`` and
``T = sum_k log Gamma(n_k)``:

.. math::

    \log p(z \mid \alpha, r) = K \log\alpha + r T - \log Z_N(\alpha, r),

so the conditional of a hyper-parameter ``theta`` (``alpha``, ``r``, or a
variable they are built from) is

.. math::

    \log p(\theta \mid z, \ldots) = \log p(\theta \mid \ldots)
        + \sum_{\text{pCRP terms}} \left[K \log\alpha(\theta) + r(\theta) T
        - \log Z_N(\alpha(\theta), r(\theta))\right] + \text{other terms},

where "other terms" are the log densities of any other model term that
depends on ``theta`` (none in the usual model). :class:`PCRPHyper` draws
``theta`` from it by univariate slice sampling (Neal 2003, stepping out and
shrinkage) on its unconstrained value (so the transform's Jacobian is part of
``log p(theta | ...)``). Slice sampling leaves the conditional exactly
invariant for any fixed interval width; the width is adapted during tuning only,
as in :class:`pymc.Slice`. The data ``X`` never enter: the cost per step is
``O(N)`` to count the labels, plus a handful of evaluations of ``log Z_N``
(``O(k_max)`` each from a cached Stirling row when ``r`` is fixed, ``O(N^2)``
each by the direct recursion when ``r`` is random), instead of the
``O(N D^2)`` per evaluation of the full model density that NUTS or
:class:`pymc.Slice` would pay.
"""

from __future__ import annotations

import math

from typing import ClassVar, NamedTuple

import numpy as np
import pymc as pm
import pytensor.tensor as pt

from pymc.logprob.transforms import IntervalTransform, LogTransform
from pymc.pytensorf import compile as pm_compile
from pymc.step_methods.compound import BlockedStep, Competence, StepMethodState
from pymc.step_methods.state import dataclass_state
from pymc.util import get_random_generator, get_value_vars_from_user_vars
from pymc.vartypes import continuous_types
from pytensor.graph.traversal import graph_inputs
from pytensor.tensor.exceptions import NotScalarConstantError

from pymc_pcrp._kernels import hyperprior as hp
from pymc_pcrp._kernels.partitions import TRUNCATION_NATS
from pymc_pcrp._runtime.interrupts import passes_interrupts
from pymc_pcrp.distributions.normaliser import (
    certify_row,
    is_fixed,
    log_normaliser,
    stirling_row_arrays,
)
from pymc_pcrp.distributions.pcrp import PowerCRPRV

__all__ = ["PCRPHyper", "PCRPHyperState"]

# Stepping out stops after this many widths on each side in total (Neal 2003, fig. 3):
# exact for any limit; it only bounds the cost of a badly tuned width.
MAX_STEPS_OUT = 50
# Shrinkage gives up (and keeps the current value, which is still exact only if it
# never happens: it raises instead) after this many rejected points.
MAX_SHRINKS = 200
# The tabulated surrogate of the prior term: this many points over +- this half-width
# (unconstrained units) around the initial value, linear beyond.
_Q_POINTS = 1201
_Q_HALF_WIDTH = 30.0
_EMPTY = np.zeros(1)


class _Surrogate(NamedTuple):
    """What the numba slice kernel needs besides the labels (the fast path)."""

    code: int  # transform code of pymc_pcrp._kernels.hyperprior
    lower: float
    upper: float
    q_lo: float  # the tabulated prior term q: grid start, step and values
    q_step: float
    q_values: np.ndarray
    is_power: bool  # the variable is the term's power (else its alpha)


class _PCRPTerm(NamedTuple):
    """A pCRP whose ``alpha`` or ``power`` depends on the updated variable."""

    labels: str  # name of the labels' value variable in the point
    n: int
    method: str  # log_normaliser method: "row" (fixed power) or "recursion"


@dataclass_state
class PCRPHyperState(StepMethodState):
    """Sampling state of :class:`PCRPHyper`."""

    w: float
    tune: bool
    n_tunes: int


class PCRPHyper(BlockedStep):
    """Exact slice-sampling update of a pCRP ``alpha`` or ``power`` given the labels.

    ``pm.sample()`` assigns this step by itself (competence ``IDEAL``) to every
    scalar continuous free variable that the ``alpha`` or ``power`` of a
    :class:`~pymc_pcrp.PowerCRP` is built from (``alpha`` itself, or
    ``log_alpha`` in ``alpha=pt.exp(log_alpha)``), instead of NUTS. Each variable
    gets its own step. See the module docstring for the conditional it samples.

    Parameters
    ----------
    vars : list of TensorVariable
        One scalar continuous variable.
    w : float, default=1.0
        Initial width of the slice interval on the unconstrained scale.
    tune : bool, default=True
        Adapt ``w`` during tuning (to the mean width of the final intervals); it
        is fixed afterwards, which keeps the draws exact.
    model : pm.Model, optional
    rng : int or numpy.random.Generator, optional

    Notes
    -----
    Other model terms that depend on the variable (if any) are included through
    a compiled PyTensor function of their log density, so the update stays
    exact for any model; only the pCRP terms get the cheap form.

    Sample stats: ``hyper_evals``, the number of evaluations of the
    conditional log density in the step (its cost).
    """

    name = "pcrp_hyper"
    default_blocked = False
    stats_dtypes_shapes: ClassVar = {"hyper_evals": (np.int64, [])}
    _state_class = PCRPHyperState

    def __init__(
        self,
        vars,
        *,
        w: float = 1.0,
        tune: bool = True,
        model=None,
        rng=None,
        initial_point=None,
        compile_kwargs=None,
        blocked: bool = False,
    ):
        model = pm.modelcontext(model)
        vars = get_value_vars_from_user_vars(vars, model)
        if len(vars) != 1:
            raise ValueError("PCRPHyper updates one scalar variable per step; pass one variable.")
        value_var = vars[0]
        rv = model.values_to_rvs[value_var]
        if value_var.ndim != 0 or value_var.dtype not in continuous_types:
            raise ValueError(
                f"PCRPHyper updates scalar continuous variables; '{rv.name}' is not one."
            )
        if not (math.isfinite(float(w)) and float(w) > 0):
            raise ValueError(f"Argument 'w' must be a positive number, got {w!r}.")
        self.vars = vars
        self.w = float(w)
        self.tune = bool(tune)
        self.n_tunes = 0
        self.rng = get_random_generator(rng)
        self._name = value_var.name
        self._dtype = np.dtype(value_var.dtype)
        # With no free PowerCRP among the dependents (observed labels, say) the
        # step is a plain slice sampler on the compiled conditional: still exact.
        terms, params, others = self._inspect(model, rv)
        self._terms = terms
        logp_other = model.logp(vars=[rv, *others], jacobian=True, sum=True)
        outputs = [logp_other, *model.replace_rvs_by_values(params)]
        needed = set(graph_inputs(outputs))
        self._inputs = [v for v in model.value_vars if v in needed]
        self._position = self._inputs.index(value_var) if value_var in needed else None
        fn = pm_compile(self._inputs, outputs, on_unused_input="ignore", **(compile_kwargs or {}))
        fn.trust_input = True
        self._fn = fn
        self._g_memo: tuple[float, tuple] | None = None
        if initial_point is None:
            initial_point = model.initial_point()
        self._surrogate = self._fast_path(model, rv, params, others, initial_point)
        self.accepted = 0
        self.proposed = 0

    @staticmethod
    def competence(var, has_grad):
        """``IDEAL`` for scalar continuous variables that a PowerCRP's alpha or power uses.

        ``PREFERRED`` for an ``alpha`` that :class:`~pymc_pcrp.PCRPGibbs` may
        update in its own step (it claims those as ``IDEAL``, and gives this
        class any it cannot own).
        """
        tagged = getattr(var.tag, "pcrp_hyperparameter", False)
        if tagged and var.ndim == 0 and var.dtype in continuous_types:
            if getattr(var.tag, "pcrp_gibbs_alpha", False) is True:
                return Competence.PREFERRED
            return Competence.IDEAL
        return Competence.INCOMPATIBLE

    def stop_tuning(self):
        """Freeze the interval width."""
        self.tune = False

    # -- model inspection -------------------------------------------------

    @staticmethod
    def _inspect(model, rv):
        """Return the pCRP terms fed by ``rv``, their (alpha, power) and other dependent terms."""
        terms: list[_PCRPTerm] = []
        params: list = []
        others: list = []
        stop = set(model.basic_RVs)
        for term in [v for v in model.basic_RVs if v is not rv] + list(model.potentials):
            inputs = term.owner.inputs if term in model.basic_RVs else [term]
            if not _uses(inputs, rv, stop):
                continue
            if isinstance(term.owner.op, PowerCRPRV) and term in model.free_RVs:
                alpha, power, n = term.owner.op.dist_params(term.owner)
                if not _uses([alpha, power], rv, stop):
                    others.append(term)  # rv enters through n or the size: keep it general
                    continue
                power_value = model.replace_rvs_by_values([power])[0]
                method = "row" if is_fixed(power_value) else "recursion"
                value_name = model.rvs_to_values[term].name
                terms.append(_PCRPTerm(value_name, int(n.eval()), method))
                params.extend([alpha, power])
            else:
                others.append(term)
        return terms, params, others

    def _fast_path(self, model, rv, params, others, initial_point) -> _Surrogate | None:
        """Set up the numba slice kernel when the model allows it, else return ``None``.

        It needs one pCRP term whose ``alpha`` or ``power`` is the variable
        itself, no other dependent term, and a transform of known form (none,
        log, or an interval with constant bounds). The prior term (log density
        plus Jacobian) is then tabulated once on a grid of the unconstrained
        value around the initial point: the kernel slice-samples the pCRP term
        plus that piecewise-linear surrogate, and :meth:`step` corrects the
        surrogate by a Metropolis-Hastings test with the exact prior term.
        """
        if len(self._terms) != 1 or others or self._position is None:
            return None
        alpha, power = params
        if (alpha is rv) == (power is rv):
            return None
        known = transform_code(model, rv)
        if known is None:
            return None
        code, lower, upper = known
        center = float(initial_point[self._name])
        grid = center + np.linspace(-_Q_HALF_WIDTH, _Q_HALF_WIDTH, _Q_POINTS)
        args = [np.asarray(initial_point[v.name]) for v in self._inputs]
        values = np.empty(grid.size)
        for j, u in enumerate(grid):
            args[self._position] = np.asarray(u, dtype=self._dtype)
            values[j] = float(self._fn(*args)[0])
        finite = np.isfinite(values)
        if not finite.any():
            return None
        # outside the support the exact target is zero anyway: any finite value will do
        values[~finite] = values[finite].min() - 50.0
        step = float(grid[1] - grid[0])
        return _Surrogate(code, lower, upper, float(grid[0]), step, values, power is rv)

    # -- the conditional ----------------------------------------------------

    def _conditional(self, point, stats):
        """Return ``f(u)``, the conditional log density of the unconstrained value ``u``."""
        args = [np.asarray(point[v.name]) for v in self._inputs]
        fn = self._fn
        position = self._position
        terms = self._terms
        dtype = self._dtype

        def logp(u: float) -> float:
            if position is not None:
                args[position] = np.asarray(u, dtype=dtype)
            out = fn(*args)
            total = float(out[0])
            if not math.isfinite(total):
                return -math.inf
            for j, term in enumerate(terms):
                alpha, power = float(out[1 + 2 * j]), float(out[2 + 2 * j])
                if not (alpha > 0 and power > 0 and math.isfinite(alpha * power)):
                    return -math.inf
                k, t = stats[j]
                total += (
                    k * math.log(alpha)
                    + power * t
                    - log_normaliser(term.n, alpha, power, term.method)
                )
            return total if total == total else -math.inf

        return logp

    # -- the step ---------------------------------------------------------

    @passes_interrupts
    def step(self, point):
        """Draw the variable from its conditional given the labels (one slice update)."""
        if self._surrogate is not None:
            return self._fast_step(point)
        stats = [hp.label_statistics(point[term.labels]) for term in self._terms]
        logp = self._conditional(point, stats)
        x0 = float(point[self._name])
        x1, width, evals = _slice_update(logp, x0, self.w, self.rng)
        if self.tune:
            self.n_tunes += 1
            self.w += (width - self.w) / self.n_tunes
        new_point = dict(point)
        new_point[self._name] = np.asarray(x1, dtype=self._dtype)
        return new_point, [{"hyper_evals": evals}]

    def _exact_prior_term(self, args: list, u: float) -> tuple:
        """Return the compiled function's outputs (prior term, alpha, power) at ``u``."""
        args[self._position] = np.asarray(u, dtype=self._dtype)
        return tuple(float(v) for v in self._fn(*args))

    def _kernel_inputs(self, point, u0: float):
        """Return what :func:`~pymc_pcrp._kernels.hyperprior.slice_surrogate` needs at ``u0``.

        That is ``(args, (g0, alpha0, power0), fpar, ipar, row, bound)``: the
        compiled function's arguments (``None`` when the memo served), its
        outputs at ``u0``, the packed scalars and the Stirling row of a fixed
        power (a dummy when the power varies: the kernel then uses the recursion).
        """
        sur = self._surrogate
        term = self._terms[0]
        args = None
        memo = self._g_memo
        if memo is not None and memo[0] == u0:
            exact0 = memo[1]
        else:
            args = [np.asarray(point[v.name]) for v in self._inputs]
            exact0 = self._exact_prior_term(args, u0)
        _, alpha0, power0 = exact0
        other = alpha0 if sur.is_power else power0
        use_row = term.method == "row"  # a fixed power: its cached Stirling row
        row, bound = stirling_row_arrays(term.n, power0) if use_row else (_EMPTY, _EMPTY)
        fpar = np.array(
            [u0, self.w, sur.lower, sur.upper, sur.q_lo, sur.q_step, other, TRUNCATION_NATS]
        )
        ipar = np.array(
            [MAX_STEPS_OUT, MAX_SHRINKS, sur.code, int(sur.is_power), term.n, int(use_row)],
            dtype=np.int64,
        )
        return args, exact0, fpar, ipar, row, bound

    def _fast_step(self, point):
        """Slice-sample the surrogate in numba, then accept or reject with the exact prior term.

        The slice update is reversible with respect to the surrogate target
        ``pi_q ∝ exp(h + q)`` (``h`` the pCRP term, ``q`` the tabulated prior
        term), so using it as a Metropolis-Hastings proposal for the exact
        target ``pi ∝ exp(h + g)`` gives the acceptance ratio
        ``exp((g - q)(u1) - (g - q)(u0))``: exact for any surrogate, and close
        to one because ``q`` interpolates ``g`` finely.
        """
        sur = self._surrogate
        term = self._terms[0]
        u0 = float(point[self._name])
        args, (g0, alpha0, power0), fpar, ipar, row, bound = self._kernel_inputs(point, u0)
        missed = np.array([-math.inf])
        out = np.empty(4)
        labels = point[term.labels]
        evals = hp.slice_surrogate(
            self.rng, fpar, ipar, labels, sur.q_values, row, bound, missed, out
        )
        if evals < 0:
            raise RuntimeError(
                f"PCRPHyper: the slice did not shrink onto an accepted point in {MAX_SHRINKS} "
                f"tries (current value {u0})."
            )
        if math.isfinite(missed[0]) and term.method == "row":
            certify_row(term.n, power0, missed[0])  # grow the row once, for later steps
        u1, q1, q0, width = (float(v) for v in out)
        if args is None:
            args = [np.asarray(point[v.name]) for v in self._inputs]
        exact1 = self._exact_prior_term(args, u1)
        g1 = exact1[0]
        log_ratio = (g1 - q1) - (g0 - q0)
        self.proposed += 1
        accept = log_ratio >= 0 or self.rng.random() < math.exp(log_ratio)
        if self.tune:
            self.n_tunes += 1
            self.w += (width - self.w) / self.n_tunes
        new_point = dict(point)
        if accept:
            self.accepted += 1
            new_point[self._name] = np.asarray(u1, dtype=self._dtype)
        if len(self._inputs) == 1:
            # the prior term and the parameters depend on this variable only: keep
            # them for the next step, which starts from u1 or u0
            self._g_memo = (u1, exact1) if accept else (u0, (g0, alpha0, power0))
        return new_point, [{"hyper_evals": evals}]


def transform_code(model, rv) -> tuple[int, float, float] | None:
    """``(code, lower, upper)`` of ``rv``'s transform for the numba kernel, or ``None``.

    Known are no transform, the log transform and an interval transform with
    constant bounds (both finite, or a finite lower bound alone); see the
    transform codes of :mod:`pymc_pcrp._kernels.hyperprior`.
    """
    transform = model.rvs_to_transforms.get(rv)
    if transform is None:
        return hp.IDENTITY, 0.0, 0.0
    if isinstance(transform, LogTransform):
        return hp.LOG, 0.0, 0.0
    if not isinstance(transform, IntervalTransform):
        return None
    a, b, has_a, has_b = transform.get_a_and_b(rv.owner.inputs)
    try:
        a = float(pt.get_underlying_scalar_constant_value(a)) if has_a else -math.inf
        b = float(pt.get_underlying_scalar_constant_value(b)) if has_b else math.inf
    except NotScalarConstantError:
        return None
    if math.isfinite(a) and math.isfinite(b):
        return hp.INTERVAL, a, b
    if math.isfinite(a):
        return hp.LOWER, a, 0.0
    return None


def _uses(outputs, rv, stop: set) -> bool:
    """Whether ``rv`` enters the log density of ``outputs`` directly.

    The search does not pass through other random variables (``stop``): in the
    model's log density they are replaced by their values, so a term that sees
    ``rv`` only through another variable (the data term, through the labels) does
    not depend on it.
    """
    stack = list(outputs)
    seen: set[int] = set()
    while stack:
        var = stack.pop()
        if var is rv:
            return True
        if id(var) in seen or var.owner is None or var in stop:
            continue
        seen.add(id(var))
        stack.extend(var.owner.inputs)
    return False


def _step_out(logp, y: float, edge: float, step: float, budget: int) -> tuple[float, int]:
    """Move a slice edge by ``step`` while ``logp`` there is above ``y``, ``budget`` times at most.

    Returns the new edge and the number of evaluations of ``logp``.
    """
    evals = 0
    while budget > 0:
        evals += 1
        if not y < logp(edge):
            break
        edge += step
        budget -= 1
    return edge, evals


def _slice_update(logp, x0: float, w: float, rng: np.random.Generator):
    """One univariate slice-sampling update (Neal 2003: stepping out, then shrinkage).

    Returns the new value, the width of the final interval and the number of
    evaluations of ``logp``.
    """
    f0 = logp(x0)
    if not math.isfinite(f0):
        raise ValueError(
            f"PCRPHyper: the conditional log density is {f0} at the current value {x0}; "
            "start from a point inside the support."
        )
    y = f0 - rng.standard_exponential()
    left = x0 - w * rng.random()
    right = left + w
    j = int(MAX_STEPS_OUT * rng.random())
    left, evals_left = _step_out(logp, y, left, -w, j)
    right, evals_right = _step_out(logp, y, right, w, MAX_STEPS_OUT - 1 - j)
    evals = 1 + evals_left + evals_right
    for _ in range(MAX_SHRINKS):
        x1 = left + (right - left) * rng.random()
        evals += 1
        if y < logp(x1):
            return x1, right - left, evals
        if x1 < x0:
            left = x1
        else:
            right = x1
    raise RuntimeError(
        f"PCRPHyper: the slice did not shrink onto an accepted point in {MAX_SHRINKS} tries "
        f"(current value {x0}, log density {f0})."
    )


if PCRPHyper not in pm.STEP_METHODS:
    pm.STEP_METHODS.append(PCRPHyper)
