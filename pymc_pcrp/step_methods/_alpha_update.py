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
   surrogate target ``K log(alpha) - L(u) + q(u)`` given ``K`` of the new labels,
   where ``q`` is the tabulated prior term of :class:`~pymc_pcrp.PCRPHyper` (log
   density plus Jacobian, piecewise linear on a fine grid of ``u``) and ``L`` a
   piecewise-linear approximation of ``log Z_N(alpha(u), r)`` on the same grid
   (each node computed the first time it is needed, as the sum over a copy of
   the Stirling row that is kept fixed after tuning), so that the slice costs no
   sum over the Stirling row per evaluation;
3. accepts ``u1`` with probability
   ``min(1, exp((g - q)(u1) - (g - q)(u0) - (log Z - L)(u1) + (log Z - L)(u0)))``,
   ``g`` the exact prior term and ``log Z`` the exact normaliser (one
   Stirling-row sum per draw). For the usual priors of ``alpha`` (Gamma,
   Exponential, HalfNormal, LogNormal, HalfCauchy, InverseGamma, Uniform, with
   constant parameters) the kernel evaluates ``g`` and makes the test itself,
   once it has checked at construction that its ``g`` equals PyMC's on the whole
   grid of ``q``; for any other prior the step evaluates ``g`` with a compiled
   PyTensor function after the call.

Step 2 is reversible with respect to the surrogate target, so step 3 makes the
pair an exact Metropolis-Hastings update of ``alpha`` given the labels, for any
surrogate; the surrogate is within a small fraction of a nat of the exact
target, so nearly every proposal is accepted. The sweep tables hold ``log
alpha`` only in the new-cluster weights, rewritten in ``O(N)`` when ``alpha``
changed (``PCRPGibbs._with_prior``).
"""

from __future__ import annotations

import math

import numpy as np
import pymc as pm

from pymc.distributions.continuous import HalfCauchyRV
from pymc.vartypes import continuous_types
from pytensor.graph.basic import Constant
from pytensor.graph.traversal import graph_inputs
from pytensor.tensor.random.basic import (
    ExponentialRV,
    GammaRV,
    HalfNormalRV,
    InvGammaRV,
    LogNormalRV,
    UniformRV,
)

from pymc_pcrp._kernels import hyperprior as hp
from pymc_pcrp._kernels.partitions import TRUNCATION_NATS
from pymc_pcrp.distributions.normaliser import certify_row, is_fixed, stirling_row_arrays
from pymc_pcrp.distributions.pcrp import PowerCRPRV
from pymc_pcrp.step_methods._hyper_target import HyperTarget, dependent_terms, transform_code
from pymc_pcrp.step_methods.pcrp_hyper import MAX_SHRINKS, MAX_STEPS_OUT

__all__ = ["AlphaUpdate", "claimed_alpha", "prior_family"]

_EMPTY = np.zeros(1)
# random variable types whose log density the kernel evaluates (hyperprior.prior_log_density)
_FAMILIES = (
    (GammaRV, hp.GAMMA),
    (ExponentialRV, hp.EXPONENTIAL),
    (HalfNormalRV, hp.HALF_NORMAL),
    (LogNormalRV, hp.LOG_NORMAL),
    (HalfCauchyRV, hp.HALF_CAUCHY),
    (InvGammaRV, hp.INV_GAMMA),
    (UniformRV, hp.UNIFORM),
)
# largest variation of the difference from PyMC's prior term on the grid (relative, or
# absolute below 1)
_FAMILY_TOLERANCE = 1e-9


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
    terms, params, others = dependent_terms(model, alpha)
    labels_name = model.rvs_to_values[labels_rv].name
    if others or len(terms) != 1 or terms[0].labels != labels_name or params[0] is not alpha:
        return None
    if transform_code(model, alpha) is None:
        return None
    return model.rvs_to_values[alpha]


def prior_family(rv) -> tuple[int, float, float]:
    """``(family, p0, p1)`` of ``rv``'s distribution for the kernel, or ``(UNKNOWN, 0, 0)``.

    Known families need constant parameters (see
    :func:`~pymc_pcrp._kernels.hyperprior.prior_log_density`).
    """
    op = rv.owner.op
    family = next((code for cls, code in _FAMILIES if isinstance(op, cls)), hp.UNKNOWN)
    if family == hp.UNKNOWN:
        return hp.UNKNOWN, 0.0, 0.0
    params = op.dist_params(rv.owner)
    # constants, or expressions of constants only (pm.Gamma's scale is 1 / beta)
    if any(p.ndim != 0 or not isinstance(v, Constant) for p in params for v in graph_inputs([p])):
        return hp.UNKNOWN, 0.0, 0.0
    values = [float(p.eval()) for p in params]
    if len(values) not in (1, 2):
        return hp.UNKNOWN, 0.0, 0.0
    values.append(0.0)
    return family, values[0], values[1]


class AlphaUpdate:
    """The ``alpha`` move of :class:`~pymc_pcrp.PCRPGibbs` (see the module docstring).

    Built on the variable's ``HyperTarget`` (``step_methods._hyper_target``, shared
    with :class:`~pymc_pcrp.PCRPHyper`), which compiles the exact prior term and
    tabulates its surrogate; the rest is the
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
        if initial_point is None:
            initial_point = model.initial_point()
        target = HyperTarget(model, value_var, initial_point, compile_kwargs)
        sur = target.surrogate
        if sur is None or sur.is_power:
            rv = model.values_to_rvs[value_var]
            raise ValueError(
                f"PCRPGibbs cannot update '{rv.name}' in its own step: its prior term is not "
                "finite near the initial point. Give it its own step, "
                f"pm.sample(step=[pymc_pcrp.PCRPHyper([{rv.name}])])."
            )
        term = target.terms[0]
        self.name = value_var.name
        self.dtype = np.dtype(value_var.dtype)
        self.w = float(w)
        self.n_tunes = 0
        self.accepted = 0
        self.proposed = 0
        self._target = target
        self._n = term.n
        self._use_row = term.method == "row"
        self._names = [(v.name, np.dtype(v.dtype)) for v in target.inputs]
        self._position = target.position
        self._q_values = sur.q_values
        family, p0, p1 = prior_family(model.values_to_rvs[value_var])
        if family != hp.UNKNOWN and not self._family_matches(target, family, p0, p1):
            family = hp.UNKNOWN
        self.family = family
        # layout hyperprior.F_*: u0, w, bounds, the grid of q, r, nats, log Z(u0), prior
        grid = (sur.lower, sur.upper, sur.q_lo, sur.q_step)
        self._fpar = np.array([0.0, self.w, *grid, 1.0, TRUNCATION_NATS, 0.0, p0, p1])
        # log Z_N at the grid nodes of q from a copy of the Stirling row (nan until
        # needed): (values, row, bound), for the power _z_power; see _new_table
        self._z_table = (np.full(sur.q_values.shape[0], math.nan), _EMPTY, _EMPTY)
        self._z_power = math.nan
        self._ipar = np.array(
            [MAX_STEPS_OUT, MAX_SHRINKS, sur.code, 0, term.n, int(self._use_row), family],
            dtype=np.int64,
        )
        self._missed = np.array([-math.inf])
        self._out = np.empty(hp.OUT_SIZE)
        self._args: tuple | None = None  # what kernel_args returns, while the row stays
        # the log(alpha) the sweep tables hold (the kernel sweeps at it and moves it), and
        # that alpha as the step last saw it
        self.log_alpha = np.array([math.nan])
        self.tables_alpha = math.nan
        # (point value object, u, (prior term, alpha, power), log Z_N or nan) of the
        # last value seen
        self._last: tuple | None = None

    @staticmethod
    def _family_matches(target: HyperTarget, family: int, p0: float, p1: float) -> bool:
        """Whether the kernel's prior term equals PyMC's on the grid of ``q``, up to a constant.

        PyMC may round a constant term of the density in single precision (the
        log of a ``float32`` parameter, say); a constant cancels in the
        acceptance ratio, so only the variation of the difference is checked.
        """
        if len(target.inputs) != 1:
            return False
        sur = target.surrogate
        dtype = np.dtype(target.inputs[0].dtype)
        diffs, scales = [], []
        for j in range(sur.q_values.shape[0]):
            u = sur.q_lo + j * sur.q_step
            ours = hp.prior_term(u, family, p0, p1, sur.code, sur.lower, sur.upper)
            theirs = float(target.fn(np.asarray(u, dtype=dtype))[0])
            if math.isfinite(ours) != math.isfinite(theirs):
                return False
            if math.isfinite(ours):
                diffs.append(ours - theirs)
                scales.append(max(1.0, abs(theirs)))
        if not diffs:
            return False
        diffs = np.asarray(diffs)
        offset = float(np.median(diffs))
        return bool(np.all(np.abs(diffs - offset) <= _FAMILY_TOLERANCE * np.asarray(scales)))

    def __getstate__(self) -> dict:
        """Pickle without the memos (one holds a point's array by identity)."""
        state = self.__dict__.copy()
        state["_last"] = None
        state["_args"] = None
        return state

    def _exact(self, point, u: float) -> tuple[float, float, float]:
        """``(prior term, alpha, power)`` at the unconstrained value ``u`` (compiled PyTensor)."""
        args = [np.asarray(point[name], dtype=dtype) for name, dtype in self._names]
        args[self._position] = np.asarray(u, dtype=self.dtype)
        return tuple(float(v) for v in self._target.fn(*args))

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
        self._last = (raw, u, exact, math.nan)
        return exact[1]

    def kernel_args(self, power: float) -> tuple:
        """Return the packed arguments of the kernel's proposal (call :meth:`current` first)."""
        fpar = self._fpar
        log_z0 = self._last[3]
        if power != self._z_power:  # a new power (pm.Data): a new table, a new row
            self._z_power = power
            self._new_table()
            log_z0 = math.nan
        fpar[hp.F_U0] = self._last[1]
        fpar[hp.F_W] = self.w
        fpar[hp.F_OTHER] = power
        fpar[hp.F_LOG_Z0] = log_z0
        self._missed[0] = -math.inf
        if self._args is None:
            # the row as cached now: a row grown later (it reallocates) is fetched after
            # certify_row; an older one stays valid, as it certifies what it certifies
            row, bound = stirling_row_arrays(self._n, power) if self._use_row else (_EMPTY,) * 2
            tables = (self._q_values, self._z_table, row, bound)  # the row itself: exact sums
            self._args = (fpar, self._ipar, *tables, self._missed, self._out, self.log_alpha)
        return self._args

    def _new_table(self) -> None:
        """Start the table of ``log Z_N`` afresh, on a copy of the Stirling row as it is now.

        The nodes are sums over that copy, so the table is a fixed function of
        ``u`` for as long as the copy is kept: the copy is renewed only for a new
        power and, while tuning, when the row has grown (the slice's proposals then
        stay closer to the exact target).
        """
        row, bound = stirling_row_arrays(self._n, self._z_power)
        values = self._z_table[0]
        values.fill(math.nan)
        self._z_table = (values, row.copy(), bound.copy())
        self._args = None

    def tables_built(self, alpha: float, log_alpha: float) -> None:
        """Record that the sweep tables were built for ``alpha`` (``log_alpha`` its log)."""
        self.log_alpha[0] = log_alpha
        self.tables_alpha = alpha

    def move_tables(self, log_new: np.ndarray, alpha: float) -> None:
        """Shift the new-cluster weights ``log_new`` to ``alpha`` (another step set it)."""
        hp.shift_new_cluster_weights(log_new, self.log_alpha, math.log(alpha))
        self.tables_alpha = alpha

    def finish(self, point, rng: np.random.Generator, tune: bool, log_new: np.ndarray) -> float:
        """Accept or reject the kernel's proposal; return ``log Z_N(alpha, r)`` at the new alpha.

        The new-cluster weights ``log_new`` and :attr:`log_alpha` then hold the new
        ``alpha`` (the kernel moved them when it made the test). Writes nothing
        into ``point``; :meth:`store` does.
        """
        out = self._out.tolist()
        evals = int(out[hp.O_EVALS])
        u0, exact0 = self._last[1], self._last[2]
        if evals < 0:
            raise RuntimeError(
                f"PCRPGibbs: the slice update of '{self.name}' did not shrink onto an accepted "
                f"point in {MAX_SHRINKS} tries (current value {u0})."
            )
        power = self._z_power
        if self._use_row and math.isfinite(self._missed[0]):
            certify_row(self._n, power, float(self._missed[0]))  # once, for later draws
            self._args = None
            if tune:
                self._new_table()
        u1 = out[hp.O_U1]
        log_z0, log_z1 = out[hp.O_LOG_Z0], out[hp.O_LOG_Z1]
        if not math.isfinite(log_z0):
            raise ValueError(f"PCRPGibbs: log Z_N is {log_z0} at the value {u0} of '{self.name}'.")
        decided = out[hp.O_ACCEPT]
        if decided >= 0:  # the kernel evaluated the prior and made the test
            accept = decided > 0
            exact1 = (out[hp.O_G1], out[hp.O_ALPHA1], power)
        else:
            exact1 = self._exact(point, u1)
            if len(self._names) > 1:
                exact0 = self._exact(point, u0)  # the prior term depends on other variables
            log_ratio = (
                (exact1[0] - out[hp.O_Q1])
                - (exact0[0] - out[hp.O_Q0])
                - (log_z1 - out[hp.O_TABLE1])
                + (log_z0 - out[hp.O_TABLE0])
            )
            accept = log_ratio >= 0 or rng.random() < math.exp(log_ratio)
            if accept:
                hp.shift_new_cluster_weights(log_new, self.log_alpha, math.log(exact1[1]))
        self.proposed += 1
        if tune:
            self.n_tunes += 1
            self.w += (out[hp.O_WIDTH] - self.w) / self.n_tunes
        if accept:
            self.accepted += 1
            self._next = (u1, exact1, log_z1)
        else:
            self._next = (u0, exact0, log_z0)
        self.tables_alpha = self._next[1][1]
        return log_z1 if accept else log_z0

    def store(self, new_point: dict) -> None:
        """Write the value :meth:`finish` chose into ``new_point`` and remember it."""
        u, exact, log_z = self._next
        raw = np.asarray(u, dtype=self.dtype)
        new_point[self.name] = raw
        # a float32 value is not u: read it again from the point next time
        self._last = (raw, u, exact, log_z) if float(raw) == u else None
