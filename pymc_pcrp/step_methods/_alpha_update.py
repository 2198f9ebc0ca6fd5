r"""A random ``alpha`` updated inside :class:`~pymc_pcrp.PCRPGibbs`'s kernel call.

A draw of :class:`~pymc_pcrp.PCRPGibbs` with a fixed ``alpha`` costs a few
hundred microseconds at ``N = 2,000``: PyMC's overhead for a second step
method (and a second call into numba) would be a large share of it. So when
``alpha`` is a free scalar random variable that feeds one ``PowerCRP`` and
nothing else, with a fixed power and a transform the kernel knows, the labels'
step also owns ``alpha`` (``pm.sample`` assigns both to it). Each draw then

1. runs the sweeps (and split-merge moves) given the current ``alpha``;
2. in the same numba call, proposes a new unconstrained value ``u1`` by one
   slice update (:func:`~pymc_pcrp._kernels.hyperprior.alpha_proposal`) of the
   surrogate target ``K log(alpha) - log Z_N(alpha, r) + q(u)``, where ``q`` is
   the tabulated prior term of :class:`~pymc_pcrp.PCRPHyper` (log density plus
   Jacobian, piecewise linear on a fine grid), ``K`` and the partition's
   ``sum_k log Gamma(n_k)`` from the new labels;
3. accepts ``u1`` with probability ``min(1, exp((g - q)(u1) - (g - q)(u0)))``,
   ``g`` the exact prior term (a compiled PyTensor function).

Step 2 is reversible with respect to the surrogate target, so step 3 makes the
pair an exact Metropolis-Hastings update of ``alpha`` given the labels: the
same move as :class:`~pymc_pcrp.PCRPHyper`'s, without the second step. The
sweep tables hold ``log alpha`` only in the new-cluster weights, rewritten in
``O(N)`` when ``alpha`` changed (``PCRPGibbs._with_prior``).
"""

from __future__ import annotations

import math

import numpy as np
import pymc as pm

from pymc.vartypes import continuous_types

from pymc_pcrp._kernels import hyperprior as hp
from pymc_pcrp._kernels.partitions import TRUNCATION_NATS
from pymc_pcrp.distributions.normaliser import certify_row, is_fixed, stirling_row_arrays
from pymc_pcrp.distributions.pcrp import PowerCRPRV
from pymc_pcrp.step_methods.pcrp_hyper import (
    MAX_SHRINKS,
    MAX_STEPS_OUT,
    PCRPHyper,
    transform_code,
)

__all__ = ["AlphaUpdate", "claimed_alpha"]

_EMPTY = np.zeros(1)


def claimed_alpha(model: pm.Model, labels_rv):
    """Return the value variable of the ``alpha`` that the labels' step may own, or ``None``.

    That is the ``alpha`` of the ``PowerCRP`` ``labels_rv`` when it is a free
    scalar continuous random variable itself (not a function of one), the power
    is fixed (numbers or ``pm.Data``), ``alpha`` enters no other model term than
    this ``PowerCRP`` (its own prior aside), and its transform is one the numba
    kernel knows (none, log, or an interval with constant bounds). For any other
    model :class:`~pymc_pcrp.PCRPHyper` keeps ``alpha``.
    """
    if labels_rv not in model.free_RVs or not isinstance(
        getattr(labels_rv.owner, "op", None), PowerCRPRV
    ):
        return None
    alpha, power, _ = labels_rv.owner.op.dist_params(labels_rv.owner)
    if alpha not in model.free_RVs or alpha.ndim != 0 or alpha.dtype not in continuous_types:
        return None
    if not is_fixed(model.replace_rvs_by_values([power])[0]):
        return None
    terms, params, others = PCRPHyper._inspect(model, alpha)
    labels_name = model.rvs_to_values[labels_rv].name
    if others or len(terms) != 1 or terms[0].labels != labels_name or params[0] is not alpha:
        return None
    if transform_code(model, alpha) is None:
        return None
    return model.rvs_to_values[alpha]


class AlphaUpdate:
    """The ``alpha`` move of :class:`~pymc_pcrp.PCRPGibbs` (see the module docstring).

    Built on a :class:`~pymc_pcrp.PCRPHyper` for the same variable, which
    compiles the exact prior term and tabulates its surrogate; the rest is the
    per-draw bookkeeping: the kernel's packed arguments, the acceptance test and
    the interval width, adapted during tuning as in :class:`~pymc_pcrp.PCRPHyper`.

    Parameters
    ----------
    model : pm.Model
    value_var : TensorVariable
        The value variable :func:`claimed_alpha` returned.
    initial_point : dict, optional
    compile_kwargs : dict, optional
    w : float
        Initial width of the slice interval on the unconstrained scale.
    """

    def __init__(self, model, value_var, initial_point=None, compile_kwargs=None, w=1.0):
        hyper = PCRPHyper(
            [value_var],
            model=model,
            initial_point=initial_point,
            compile_kwargs=compile_kwargs,
            w=w,
        )
        sur = hyper._surrogate
        if sur is None or sur.is_power:
            rv = model.values_to_rvs[value_var]
            raise ValueError(
                f"PCRPGibbs cannot update '{rv.name}' in its own step: its prior term is not "
                "finite near the initial point. Give it its own step, "
                f"pm.sample(step=[pymc_pcrp.PCRPHyper([{rv.name}])])."
            )
        term = hyper._terms[0]
        self.name = value_var.name
        self.dtype = np.dtype(value_var.dtype)
        self.w = float(w)
        self.n_tunes = 0
        self.accepted = 0
        self.proposed = 0
        self._hyper = hyper
        self._n = term.n
        self._use_row = term.method == "row"
        self._names = [(v.name, np.dtype(v.dtype)) for v in hyper._inputs]
        self._position = hyper._position
        self._q_values = sur.q_values
        self._fpar = np.array(
            [0.0, self.w, sur.lower, sur.upper, sur.q_lo, sur.q_step, 1.0, TRUNCATION_NATS]
        )
        self._ipar = np.array(
            [MAX_STEPS_OUT, MAX_SHRINKS, sur.code, 0, term.n, int(self._use_row)], dtype=np.int64
        )
        self._missed = np.array([-math.inf])
        self._out = np.empty(hp.OUT_SIZE)
        # (point value object, u, (prior term, alpha, power)) of the last value seen
        self._last: tuple | None = None

    def __getstate__(self) -> dict:
        """Pickle without the memo (it holds a point's array by identity)."""
        state = self.__dict__.copy()
        state["_last"] = None
        return state

    def _exact(self, point, u: float) -> tuple[float, float, float]:
        """``(prior term, alpha, power)`` at the unconstrained value ``u`` (compiled PyTensor)."""
        args = [np.asarray(point[name], dtype=dtype) for name, dtype in self._names]
        args[self._position] = np.asarray(u, dtype=self.dtype)
        return tuple(float(v) for v in self._hyper._fn(*args))

    def current(self, point) -> float:
        """Return ``alpha`` at the point (remembered when the point holds the value last set)."""
        raw = point[self.name]
        last = self._last
        if last is not None and raw is last[0] and len(self._names) == 1:
            return last[2][1]
        u = float(raw)
        exact = self._exact(point, u)
        if not (exact[1] > 0 and math.isfinite(exact[0])):
            raise ValueError(
                f"PCRPGibbs: the start value of '{self.name}' ({u}) gives alpha = {exact[1]} "
                f"and prior log density {exact[0]}; start from a point inside the support."
            )
        self._last = (raw, u, exact)
        return exact[1]

    def kernel_args(self, power: float) -> tuple:
        """Return the packed arguments of the kernel's proposal (call :meth:`current` first)."""
        fpar = self._fpar
        fpar[hp.F_U0] = self._last[1]
        fpar[hp.F_W] = self.w
        fpar[hp.F_OTHER] = power
        self._missed[0] = -math.inf
        self._power = power
        row, bound = stirling_row_arrays(self._n, power) if self._use_row else (_EMPTY, _EMPTY)
        return (fpar, self._ipar, self._q_values, row, bound, self._missed, self._out)

    def finish(self, point, rng: np.random.Generator, tune: bool) -> tuple[float, float]:
        """Accept or reject the kernel's proposal; return ``(alpha, log Z_N(alpha, r))``.

        Writes nothing into ``point``; :meth:`store` does.
        """
        out = self._out
        evals = int(out[hp.O_EVALS])
        u0, exact0 = self._last[1], self._last[2]
        if evals < 0:
            raise RuntimeError(
                f"PCRPGibbs: the slice update of '{self.name}' did not shrink onto an accepted "
                f"point in {MAX_SHRINKS} tries (current value {u0})."
            )
        h0 = float(out[hp.O_H0])
        if not math.isfinite(h0):
            raise ValueError(
                f"PCRPGibbs: the pCRP term of '{self.name}' is {h0} at its current value {u0}."
            )
        if self._use_row and math.isfinite(self._missed[0]):
            certify_row(self._n, self._power, float(self._missed[0]))  # once, for later draws
        u1 = float(out[hp.O_U1])
        exact1 = self._exact(point, u1)
        if len(self._names) > 1:
            exact0 = self._exact(point, u0)  # the prior term depends on other variables too
        log_ratio = (exact1[0] - float(out[hp.O_Q1])) - (exact0[0] - float(out[hp.O_Q0]))
        self.proposed += 1
        accept = log_ratio >= 0 or rng.random() < math.exp(log_ratio)
        if tune:
            self.n_tunes += 1
            self.w += (float(out[hp.O_WIDTH]) - self.w) / self.n_tunes
        k, t = float(out[hp.O_K]), float(out[hp.O_T])
        if accept:
            self.accepted += 1
            self._next = (u1, exact1)
            h = float(out[hp.O_H1])
        else:
            self._next = (u0, exact0)
            h = h0
        alpha = self._next[1][1]
        # h = K log(alpha) + r T - log Z_N(alpha, r)
        return alpha, k * math.log(alpha) + self._power * t - h

    def store(self, new_point: dict) -> None:
        """Write the value :meth:`finish` chose into ``new_point`` and remember it."""
        u, exact = self._next
        raw = np.asarray(u, dtype=self.dtype)
        new_point[self.name] = raw
        # a float32 value is not u: read it again from the point next time
        self._last = (raw, u, exact) if float(raw) == u else None
