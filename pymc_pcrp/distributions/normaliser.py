"""The pCRP normalising constant as a cached function of ``alpha`` and as PyTensor Ops.

For ``n`` items the pCRP prior on partitions is normalised by

    Z_n(alpha, r) = sum_k alpha**k S_r(n, k),

where ``S_r(n, k)`` are the generalised Stirling numbers of
:mod:`pymc_pcrp._kernels.partitions`. The numbers ``S_r(n, k)`` do not depend on
``alpha``, so they are computed once per ``(n, r)`` and kept: evaluating
``log Z_n``, the prior on ``K`` or its moments for a new ``alpha`` is then a
log-sum-exp over at most ``n + 1`` numbers, plus new columns of the Stirling
recursion only when a larger ``alpha`` needs more of them.

This module holds the only ``log Z_n``. The number of columns is chosen with the
certified rule of :mod:`pymc_pcrp._kernels.partitions`
(:func:`~pymc_pcrp._kernels.partitions.truncation_certified`: a rigorous bound
on every omitted weight, 50 nats below the largest one), re-checked for every
``alpha``; columns already
computed for a larger ``alpha`` are always used, which only makes the result more
exact. For ``r = 1`` the whole row ``log |s(n, k)|`` costs ``O(n**2)`` and is
computed at once.

A Stirling row costs ``O(n**2 k_max)`` for each new ``r``, which is wasted when
``r`` changes at every call (a random power, updated by a slice sampler). For
that case :func:`log_normaliser` also offers ``method="recursion"``: the
recursion of :mod:`pymc_pcrp._kernels.normaliser` on ``Z_m`` itself, ``O(n**2)``
for one ``(alpha, r)``, no truncation, no per-``r`` state; its last few values
are memoised, so that the step that reports ``log_joint`` and the step that
drew ``(alpha, r)`` do not compute the same value twice.

The Ops let a model with a random ``alpha`` or ``r`` include ``-log Z_n(alpha, r)``
in its log density, with the derivatives

    d log Z_n / d alpha = E[K | n, alpha, r] / alpha,
    d log Z_n / d r     = E[T | n, alpha, r],   T = sum_k log Gamma(n_k),

(the prior means of the two statistics the pCRP weights depend on), so that
gradient-based samplers (NUTS) can update ``alpha`` and ``r``.
"""

from __future__ import annotations

import functools
import math
import threading

import numpy as np
import pytensor.tensor as pt

from pytensor.compile.sharedvalue import SharedVariable
from pytensor.gradient import grad_not_implemented
from pytensor.graph.basic import Apply, Constant, Variable
from pytensor.graph.op import Op
from pytensor.graph.traversal import graph_inputs

from pymc_pcrp._kernels.normaliser import normaliser_recursion, row_log_normaliser
from pymc_pcrp._kernels.partitions import (
    TRUNCATION_NATS,
    check_prior_args,
    log_gamma_table,
    log_stirling_bounds,
    log_stirling_next_column,
    log_stirling_rows,
    truncation_certified,
)
from pymc_pcrp._validation import depends_on_random_variable

__all__ = [
    "NORMALISER_METHODS",
    "PCRPExpectedClusters",
    "PCRPExpectedLogGammaSizes",
    "PCRPLogNormaliser",
    "is_constant",
    "is_fixed",
    "log_normaliser",
    "log_prior_weights",
    "prior_k_moments",
    "prior_statistic_means",
]


@functools.lru_cache(maxsize=8)
def _classical_rows(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Return the cached ``log |s(n, k)|`` and ``log S(n, k)`` (Stirling numbers of both kinds)."""
    first, second = log_stirling_rows(n)
    first.flags.writeable = False
    second.flags.writeable = False
    return first, second


class _LogStirlingRow:
    """The row ``log S_r(n, k)``, ``k = 0, 1, ...``, grown on demand for one ``(n, r)``.

    Parameters
    ----------
    n : int
        Number of items, ``n >= 0``.
    r : float
        Power of the pCRP.
    """

    def __init__(self, n: int, r: float):
        self.n = n
        self.r = r
        self._lock = threading.Lock()
        self._bound = log_stirling_bounds(n, r)
        if r == 1.0:
            # Unsigned Stirling numbers of the first kind: the full row at once.
            self._row = _classical_rows(n)[0].copy()
            self._column = None
            self._lgam = None
        else:
            self._lgam = log_gamma_table(n)
            self._column = np.full(n + 1, -np.inf)
            self._column[0] = 0.0
            self._row = np.array([self._column[n]])
        # One-entry memo: a sampler asks for log Z and E[K] at the same alpha.
        self._memo: tuple[float, tuple[float, float, float]] | None = None

    def _add_column(self) -> None:
        """Compute column ``k + 1`` of the table from column ``k`` and keep its last entry."""
        k = self._row.size
        column = np.empty(self.n + 1)
        log_stirling_next_column(self._column, k, self.r, self._lgam, column)
        self._column = column
        self._row = np.append(self._row, column[self.n])

    def log_weights(self, log_alpha: float) -> np.ndarray:
        """Return ``k log(alpha) + log S_r(n, k)`` for ``k = 0..k_max``.

        Parameters
        ----------
        log_alpha : float
            Finite log concentration.

        Returns
        -------
        numpy.ndarray
            The log weights, with ``k_max`` large enough that every omitted
            weight is certified below ``exp(-50)`` times the largest one.
        """
        with self._lock:
            while True:
                k_built = self._row.size - 1
                weights = np.arange(k_built + 1) * log_alpha + self._row
                if truncation_certified(k_built, log_alpha, np.max(weights), self._bound):
                    return weights
                self._add_column()

    def log_z(self, log_alpha: float) -> float:
        """Return ``log Z_n`` at ``alpha = exp(log_alpha)`` (one numba pass over the row).

        Same certified truncation as :meth:`log_weights`, no temporary arrays.
        """
        memo = self._memo
        if memo is not None and memo[0] == log_alpha:
            return memo[1][0]
        with self._lock:
            while True:
                value, ok = row_log_normaliser(self._row, self._bound, log_alpha, TRUNCATION_NATS)
                if ok:
                    return value
                self._add_column()

    def summary(self, log_alpha: float) -> tuple[float, float, float]:
        """Return ``(log Z_n, E[K], Var[K])`` at ``alpha = exp(log_alpha)``.

        ``log_alpha`` as in :meth:`log_weights`; the three floats are the log
        normaliser and the mean and variance of the number of blocks.
        """
        memo = self._memo
        if memo is not None and memo[0] == log_alpha:
            return memo[1]
        log_w = self.log_weights(log_alpha)
        top = float(np.max(log_w))
        w = np.exp(log_w - top)
        total = float(np.sum(w))
        p = w / total
        k = np.arange(p.size)
        mean = float(np.dot(k, p))
        result = (top + math.log(total), mean, float(np.dot((k - mean) ** 2, p)))
        self._memo = (log_alpha, result)
        return result


@functools.lru_cache(maxsize=32)
def _stirling_row(n: int, r: float) -> _LogStirlingRow:
    """Shared, cached :class:`_LogStirlingRow` for ``(n, r)``."""
    return _LogStirlingRow(n, r)


def log_prior_weights(n: int, alpha: float, r: float) -> np.ndarray:
    """Unnormalised log prior on the number of blocks, from the cached Stirling row.

    Parameters as in :func:`log_normaliser` (``n >= 0``, ``alpha > 0``, power ``r``).

    Returns
    -------
    numpy.ndarray
        ``k log(alpha) + log S_r(n, k)`` for ``k = 0..k_max`` (certified
        truncation, see the module docstring).
    """
    n, alpha, r = check_prior_args(n, alpha, r)
    return _stirling_row(n, r).log_weights(math.log(alpha))


def stirling_row_arrays(n: int, r: float) -> tuple[np.ndarray, np.ndarray]:
    """Return the cached row ``log S_r(n, k)`` (computed so far) and its bounds.

    The row grows by reallocation: fetch it again after :func:`certify_row`.

    Parameters
    ----------
    n : int
        Number of items.
    r : float
        Power of the pCRP.

    Returns
    -------
    row, bound : numpy.ndarray
        ``log S_r(n, k)`` for ``k = 0..k_built`` and upper bounds for ``k = 0..n``.
    """
    row = _stirling_row(int(n), float(r))
    return row._row, row._bound


def certify_row(n: int, r: float, log_alpha: float) -> None:
    """Grow the cached row of ``(n, r)`` until it certifies ``log Z_n`` at ``log_alpha``."""
    _stirling_row(int(n), float(r)).log_z(float(log_alpha))


#: The methods of :func:`log_normaliser`: a cached Stirling row, or the direct recursion.
NORMALISER_METHODS = ("row", "recursion")

# (n, alpha, r) -> (log Z, E[K], E[T]) of the last calls of the recursion
_RECURSION_MEMO: dict[tuple[int, float, float], tuple[float, float, float]] = {}
_RECURSION_MEMO_SIZE = 16
_RECURSION_LOCK = threading.Lock()


def _recursion_values(n: int, alpha: float, r: float) -> tuple[float, float, float]:
    """Memoised :func:`~pymc_pcrp._kernels.normaliser.normaliser_recursion` with moments.

    ``log Z``, ``E[K]`` and ``E[T]`` come from one pass, so that NUTS, which asks
    for the log density and its gradient at the same point, pays for one.
    """
    key = (n, alpha, r)
    with _RECURSION_LOCK:
        value = _RECURSION_MEMO.get(key)
    if value is not None:
        return value
    value = tuple(float(v) for v in normaliser_recursion(n, math.log(alpha), r, True))
    with _RECURSION_LOCK:
        if len(_RECURSION_MEMO) >= _RECURSION_MEMO_SIZE:
            _RECURSION_MEMO.pop(next(iter(_RECURSION_MEMO)))
        _RECURSION_MEMO[key] = value
    return value


def log_normaliser(n: int, alpha: float, r: float, method: str = "row") -> float:
    """``log Z_n(alpha, r)``, from the cached Stirling row or by the direct recursion.

    Parameters
    ----------
    n, alpha, r : int, float, float
        Number of items ``n >= 0``, concentration ``alpha > 0`` and power ``r`` of the pCRP.
    method : {"row", "recursion"}, default="row"
        ``"row"``: from the Stirling row of ``(n, r)``, built once per ``(n, r)``
        in ``O(n**2 k_max)`` and cached, then ``O(k_max)`` per ``alpha`` (for a
        fixed ``r``). ``"recursion"``: ``O(n**2)`` per call, nothing kept per
        ``r`` but the last few results (for an ``r`` that changes at every call).
        Both are exact to rounding; they agree to about ``1e-15`` relative.

    Returns
    -------
    float
        The log normalising constant; for ``r = 1`` it equals
        ``log Gamma(alpha + n) - log Gamma(alpha)``.
    """
    n, alpha, r = check_prior_args(n, alpha, r)
    if method == "recursion":
        return _recursion_values(n, alpha, r)[0]
    if method != "row":
        raise ValueError(f"method must be one of {NORMALISER_METHODS}, got {method!r}")
    return _stirling_row(n, r).log_z(math.log(alpha))


def prior_k_moments(n: int, alpha: float, r: float) -> tuple[float, float]:
    """Mean and variance of the number of blocks ``K`` under the pCRP prior.

    Parameters as in :func:`log_normaliser` (``n >= 0``, ``alpha > 0``, power ``r``).

    Returns
    -------
    mean, variance : float
        ``E[K]`` and ``Var[K]``. Note ``d log Z_n / d log(alpha) = E[K]`` and
        ``d E[K] / d log(alpha) = Var[K]``.
    """
    n, alpha, r = check_prior_args(n, alpha, r)
    _, mean, variance = _stirling_row(n, r).summary(math.log(alpha))
    return mean, variance


def prior_statistic_means(n: int, alpha: float, r: float) -> tuple[float, float]:
    """Prior means of ``K`` and ``T = sum_k log Gamma(n_k)``: the derivatives of ``log Z_n``.

    Given the labels, the pCRP's log probability is ``K log(alpha) + r T - log Z_n``,
    so ``d log Z_n / d log(alpha) = E[K]`` and ``d log Z_n / d r = E[T]``, both
    under the prior. Computed by the ``O(n**2)`` recursion (no per-``r`` table),
    the route for a power that changes at every call.

    Parameters as in :func:`log_normaliser` (``n >= 0``, ``alpha > 0``, power ``r``).

    Returns
    -------
    mean_k, mean_t : float
        ``E[K]`` and ``E[sum_k log Gamma(n_k)]`` under the pCRP prior.
    """
    n, alpha, r = check_prior_args(n, alpha, r)
    _, mean_k, mean_t = _recursion_values(n, alpha, r)
    return mean_k, mean_t


def is_fixed(var: Variable) -> bool:
    """Whether a tensor is fixed data: built from constants and ``pm.Data`` only.

    A tensor that depends on a random variable, or on any other input (such as
    the value variable PyMC substitutes for a random variable in the model's log
    density), is not fixed.

    Parameters
    ----------
    var : pytensor.graph.basic.Variable
        The tensor to inspect.

    Returns
    -------
    bool
        ``True`` when every input of its graph is a constant or a shared variable
        and no random variable lies on the way.
    """
    if depends_on_random_variable(var):
        return False
    return all(isinstance(v, Constant | SharedVariable) for v in graph_inputs([var]))


def is_constant(var) -> bool:
    """Whether a tensor is built from constants only (no ``pm.Data``, shared or random input).

    ``PowerCRP``'s log density leaves out ``log Z_N(alpha, r)`` exactly when both
    are constant; a ``pm.Data`` or shared value can change with ``pm.set_data``.
    """
    var = pt.as_tensor_variable(var)
    return not depends_on_random_variable(var) and all(
        isinstance(v, Constant) for v in graph_inputs([var])
    )


def _scalar_float_input(x, name: str) -> pt.TensorVariable:
    x = pt.as_tensor_variable(x)
    if x.ndim != 0:
        raise ValueError(f"'{name}' must be a scalar, got a tensor with {x.ndim} dimensions.")
    return pt.cast(x, "float64") if x.dtype != "float64" else x


class _ScalarOfAlphaPower(Op):
    """Base of the Ops below: ``(alpha, power) -> float64 scalar`` for a fixed ``n``.

    ``method`` is the :func:`log_normaliser` method: ``"row"`` for a fixed power,
    ``"recursion"`` for a random one.
    """

    __props__ = ("n", "method")

    def __init__(self, n: int, method: str = "row"):
        if int(n) != n or n < 0:
            raise ValueError(f"n must be a non-negative integer, got {n!r}")
        if method not in NORMALISER_METHODS:
            raise ValueError(f"method must be one of {NORMALISER_METHODS}, got {method!r}")
        self.n = int(n)
        self.method = method

    def make_node(self, alpha, power) -> Apply:
        """Build the node of a scalar function of ``alpha`` and ``power``."""
        alpha = _scalar_float_input(alpha, "alpha")
        power = _scalar_float_input(power, "power")
        return Apply(self, [alpha, power], [pt.dscalar()])

    def infer_shape(self, fgraph, node, input_shapes):
        """Return the output shape: a scalar."""
        return [()]

    def _value(self, alpha: float, power: float) -> float:
        raise NotImplementedError

    def perform(self, node, inputs, output_storage):
        """Evaluate; ``nan`` when ``alpha`` or ``power`` is outside the domain."""
        alpha, power = (float(v) for v in inputs)
        valid = math.isfinite(alpha) and alpha > 0 and math.isfinite(power)
        value = self._value(alpha, power) if valid else math.nan
        output_storage[0][0] = np.asarray(value, dtype="float64")

    def grad(self, inputs, output_grads):
        """Not implemented for the prior means: only first derivatives of ``log Z`` exist."""
        return [
            grad_not_implemented(self, i, x, "second derivative of log Z")
            for i, x in enumerate(inputs)
        ]


class PCRPExpectedClusters(_ScalarOfAlphaPower):
    """``E[K | n, alpha, power]``, the prior mean number of clusters, as a PyTensor Op.

    Parameters as in :class:`PCRPLogNormaliser`.
    """

    def _value(self, alpha: float, power: float) -> float:
        if self.method == "recursion":
            return prior_statistic_means(self.n, alpha, power)[0]
        return prior_k_moments(self.n, alpha, power)[0]


class PCRPExpectedLogGammaSizes(_ScalarOfAlphaPower):
    """``E[sum_k log Gamma(n_k) | n, alpha, power]`` as a PyTensor Op: ``d log Z / d power``.

    Always computed by the ``O(n**2)`` recursion (:func:`prior_statistic_means`),
    whatever ``method``. Parameters as in :class:`PCRPLogNormaliser`.
    """

    def _value(self, alpha: float, power: float) -> float:
        return prior_statistic_means(self.n, alpha, power)[1]


class PCRPLogNormaliser(_ScalarOfAlphaPower):
    """``log Z_n(alpha, power)`` of the pCRP prior as a PyTensor Op.

    The gradient in ``alpha`` is ``E[K] / alpha`` (:class:`PCRPExpectedClusters`),
    the gradient in ``power`` is ``E[sum_k log Gamma(n_k)]``
    (:class:`PCRPExpectedLogGammaSizes`), both prior means.

    Parameters
    ----------
    n : int
        Number of items.
    method : {"row", "recursion"}, default="row"
        How :func:`log_normaliser` computes the value: ``"row"`` for a fixed power,
        ``"recursion"`` for a random one.

    Examples
    --------
    .. code-block:: python

        alpha = pt.dscalar("alpha")
        log_z = PCRPLogNormaliser(10)(alpha, 1.5)
        d_log_z = pytensor.grad(log_z, alpha)
    """

    def _value(self, alpha: float, power: float) -> float:
        return log_normaliser(self.n, alpha, power, self.method)

    def grad(self, inputs, output_grads):
        """``d log Z / d alpha = E[K] / alpha`` and ``d log Z / d power = E[T]``."""
        alpha, power = inputs
        (g,) = output_grads
        mean_k = PCRPExpectedClusters(self.n, self.method)(alpha, power)
        mean_t = PCRPExpectedLogGammaSizes(self.n, self.method)(alpha, power)
        return [g * mean_k / alpha, g * mean_t]
