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

from typing import ClassVar

import numpy as np
import pymc as pm

from pymc.step_methods.compound import BlockedStep, Competence, StepMethodState
from pymc.step_methods.state import dataclass_state
from pymc.util import get_random_generator, get_value_vars_from_user_vars
from pymc.vartypes import continuous_types

from pymc_pcrp._kernels import hyperprior as hp
from pymc_pcrp._kernels.partitions import TRUNCATION_NATS
from pymc_pcrp._runtime.interrupts import passes_interrupts
from pymc_pcrp.distributions.normaliser import certify_row, log_normaliser, stirling_row_arrays
from pymc_pcrp.step_methods._hyper_target import HyperTarget

__all__ = ["PCRPHyper", "PCRPHyperState"]

# Stepping out stops after this many widths on each side in total (Neal 2003, fig. 3):
# exact for any limit; it only bounds the cost of a badly tuned width.
MAX_STEPS_OUT = 50
# Shrinkage gives up (and keeps the current value, which is still exact only if it
# never happens: it raises instead) after this many rejected points.
MAX_SHRINKS = 200
_EMPTY = np.zeros(1)


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
        if initial_point is None:
            initial_point = model.initial_point()
        # With no free PowerCRP among the dependents (observed labels, say) the
        # step is a plain slice sampler on the compiled conditional: still exact.
        self.target = HyperTarget(model, value_var, initial_point, compile_kwargs)
        self._terms = self.target.terms
        self._inputs = self.target.inputs
        self._position = self.target.position
        self._fn = self.target.fn
        self._surrogate = self.target.surrogate
        self._g_memo: tuple[float, tuple] | None = None
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
            exact0 = self.target.exact(args, u0)
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
        exact1 = self.target.exact(args, u1)
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
