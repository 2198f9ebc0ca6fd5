r"""Parameters, slot state and tables of the diagonal-covariance cluster family, in numba.

Each cluster has a diagonal covariance with an independent Normal-Inverse-Gamma
prior per dimension (:mod:`pymc_pcrp.distributions._diag_numpy` states the model). For data
centred at the prior mean and a cluster with ``n`` points, sums ``S_j`` and
sums of squares ``Q_j``,

.. math::

    \kappa_n = \kappa_0 + n, \quad a_n = a_0 + n/2, \quad
    b_{nj} = b_{0j} + (Q_j - S_j^2 / \kappa_n) / 2 ,

and a point's posterior predictive is a product of Student-t densities whose
exponent ``-(a_n + 1/2)`` is the same in every dimension, so its log is

.. math::

    c(n) - \tfrac12 \sum_j \log b_{nj}
        - (a_n + \tfrac12) \log \prod_j \bigl(1 + h_{nj} (x_j - S_j/\kappa_n)^2\bigr)

with ``h_nj = kappa_n / ((kappa_n + 1) 2 b_nj)`` and ``c(n)`` a constant of the
size (:func:`predictive_constants`): ``O(D)`` and one logarithm per cluster,
no Cholesky factor. The product is flushed into the logarithm whenever it
leaves ``[1e-150, 1e150]`` (:func:`log_prod_at`), so it cannot overflow.

The state (:class:`DiagState`) keeps the slots of
:mod:`pymc_pcrp._kernels.slots` (``labels``, ``order``, ``where``, ``k``,
capacity doubling), shared with the full family, with per-slot ``counts``, ``sums``, ``sumsq`` (per
dimension), ``bn``, ``logb = sum_j log b_nj`` and the scoring caches ``mean``
and ``hinv``. A slot's ``bn``, ``logb`` and caches are recomputed from its
sums whenever it changes (:func:`refresh_at`, ``O(D)``), so nothing drifts
but the sums themselves.
"""

import math

from typing import NamedTuple

import numba
import numpy as np

from numba.experimental import structref

from pymc_pcrp._kernels import slots
from pymc_pcrp._kernels._config import NJIT_KWARGS

__all__ = [
    "DiagGrid",
    "DiagParams",
    "DiagState",
    "diag_log_marginal",
    "diag_tables",
    "init_diag_state",
    "log_prod_at",
    "make_diag_grid",
    "make_diag_params",
    "predictive_constants",
]

_LOG_2PI = math.log(2.0 * math.pi)

# Values of ``DiagGrid.current[1]`` (the same meaning as in pymc_pcrp._kernels.hyper).
IN_SYNC = 0
REBUILT = 1
FRESH_CHAIN = 2

_FIELDS = (
    "labels",
    "counts",
    "sums",
    "sumsq",
    "bn",
    "logb",
    "mean",
    "hinv",
    "order",
    "where",
    "k",
)


@numba.njit(**NJIT_KWARGS)
def _caches(state):
    """``(bn, logb, mean, hinv)`` of a state, for Python."""
    return state.bn, state.logb, state.mean, state.hinv


@structref.register
class DiagStateType(slots.SlotStateType):
    """numba type of :class:`DiagState`."""


class DiagState(slots.SlotStateProxy, structref.StructRefProxy):
    """Mutable sweep state of the diagonal family; see the module docstring for the fields."""

    _fields = _FIELDS

    def __new__(cls, labels, counts, sums, sumsq, bn, logb, mean, hinv, order, where, k):
        return structref.StructRefProxy.__new__(
            cls, labels, counts, sums, sumsq, bn, logb, mean, hinv, order, where, k
        )

    bn = slots.field_reader(_caches, 0)
    logb = slots.field_reader(_caches, 1)
    mean = slots.field_reader(_caches, 2)
    hinv = slots.field_reader(_caches, 3)


structref.define_proxy(DiagState, DiagStateType, list(_FIELDS))


class DiagParams(NamedTuple):
    """Fixed parameters of a diagonal-family sweep: pCRP prior and NIG prior (centred).

    ``b0`` holds the inverse-gamma rates at the scale in use, ``logb0`` their log sum.
    """

    log_alpha: float
    power: float
    kappa0: float
    a0: float
    b0: np.ndarray
    logb0: float


class DiagGrid(NamedTuple):
    """Grid of the scale ``s`` of ``b0 = s base`` and the chain's current ``s``.

    ``b0`` holds ``s base`` for the current ``s`` (written in place);
    ``current`` is ``[grid index, status]`` with the status values of
    :mod:`pymc_pcrp._kernels.hyper`. A fixed scale is a one-point grid.
    """

    log_s: np.ndarray
    log_w: np.ndarray
    base: np.ndarray
    b0: np.ndarray
    current: np.ndarray


def make_diag_params(
    alpha: float, power: float, kappa0: float, nu0: float, psi0_diag
) -> DiagParams:
    """Build :class:`DiagParams` from the stored parameters: ``a0 = nu0 / 2``, ``b0 = psi0 / 2``."""
    b0 = 0.5 * np.ascontiguousarray(psi0_diag, dtype=np.float64)
    return DiagParams(
        math.log(alpha), float(power), float(kappa0), 0.5 * float(nu0), b0, float(np.log(b0).sum())
    )


def make_diag_grid(psi0_diag, grid, log_weights) -> DiagGrid:
    """Build a :class:`DiagGrid` (status: fresh chain, ``s = s_1``)."""
    base = 0.5 * np.ascontiguousarray(psi0_diag, dtype=np.float64)
    log_s = np.ascontiguousarray(np.log(np.asarray(grid, dtype=np.float64)))
    return DiagGrid(
        log_s,
        np.ascontiguousarray(np.asarray(log_weights, dtype=np.float64)),
        base,
        base * math.exp(log_s[0]),
        np.array([0, FRESH_CHAIN], dtype=np.int64),
    )


@numba.njit(**NJIT_KWARGS)
def log_prod_at(values: np.ndarray, row: int, scale: float, shift: float) -> float:
    """``sum_j log(scale * values[row, j] + shift)`` as the log of a flushed product."""
    acc = 0.0
    prod = 1.0
    for j in range(values.shape[1]):
        prod *= scale * values[row, j] + shift
        if prod > 1e150 or prod < 1e-150:
            acc += math.log(prod)
            prod = 1.0
    return acc + math.log(prod)


@numba.njit(**NJIT_KWARGS)
def predictive_constants(n_max: int, d: int, kappa0: float, a0: float) -> np.ndarray:
    """Size part ``c(n)`` of the log predictive, ``n = 0..n_max`` (see the module docstring).

    ``c(n) = D [lgamma(a_n + 1/2) - lgamma(a_n) + log(kappa_n / (kappa_n + 1)) / 2
    - log(2 pi) / 2]``.
    """
    out = np.empty(n_max + 1)
    for n in range(n_max + 1):
        kappa_n = kappa0 + n
        a_n = a0 + 0.5 * n
        out[n] = d * (
            math.lgamma(a_n + 0.5)
            - math.lgamma(a_n)
            + 0.5 * math.log(kappa_n / (kappa_n + 1.0))
            - 0.5 * _LOG_2PI
        )
    return out


@numba.njit(**NJIT_KWARGS)
def new_cluster_log_weights(xc: np.ndarray, params: DiagParams, c0: float, out: np.ndarray) -> None:
    """Write ``log alpha + log prior predictive`` of every point into ``out``."""
    n, d = xc.shape
    kappa0 = params.kappa0
    h = kappa0 / (kappa0 + 1.0)
    expo = params.a0 + 0.5
    base = params.log_alpha + c0 - 0.5 * params.logb0
    b0 = params.b0
    for i in range(n):
        acc = 0.0
        prod = 1.0
        for j in range(d):
            x = xc[i, j]
            prod *= 1.0 + h * x * x / (2.0 * b0[j])
            if prod > 1e150:
                acc += math.log(prod)
                prod = 1.0
        out[i] = base - expo * (acc + math.log(prod))


@numba.njit(**NJIT_KWARGS)
def diag_tables(xc: np.ndarray, params: DiagParams) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(log_new, pred_const, by_size)`` for :func:`~pymc_pcrp._kernels.diag_sweep.diag_sweeps`.

    The layout of :func:`~pymc_pcrp._kernels.scores.sweep_tables`: each point's
    ``log alpha + log prior predictive``, the size constants ``c(n)`` and a
    one-column table ``r log n + c(n)`` for ``n = 0..N`` (``c(0)`` at ``n = 0``).
    """
    n, d = xc.shape
    pred_const = predictive_constants(n, d, params.kappa0, params.a0)
    by_size = np.empty((n + 1, 1))
    for m in range(n + 1):
        by_size[m, 0] = (params.power * math.log(m) if m > 0 else 0.0) + pred_const[m]
    log_new = np.empty(n)
    new_cluster_log_weights(xc, params, pred_const[0], log_new)
    return log_new, pred_const, by_size


@numba.njit(**NJIT_KWARGS)
def refresh_at(
    counts: np.ndarray,
    sums: np.ndarray,
    sumsq: np.ndarray,
    bn: np.ndarray,
    logb: np.ndarray,
    mean: np.ndarray,
    hinv: np.ndarray,
    slot: int,
    kappa0: float,
    b0: np.ndarray,
) -> None:
    """Recompute ``bn``, ``logb``, ``mean`` and ``hinv`` of ``slot`` from its sums, ``O(D)``."""
    kappa_n = kappa0 + counts[slot]
    inv_kappa = 1.0 / kappa_n
    h = kappa_n / (kappa_n + 1.0)
    acc = 0.0
    prod = 1.0
    for j in range(sums.shape[1]):
        s = sums[slot, j]
        w = sumsq[slot, j] - s * s * inv_kappa
        b = b0[j] + 0.5 * (w if w > 0.0 else 0.0)
        bn[slot, j] = b
        mean[slot, j] = s * inv_kappa
        hinv[slot, j] = h / (2.0 * b)
        prod *= b
        if prod > 1e150 or prod < 1e-150:
            acc += math.log(prod)
            prod = 1.0
    logb[slot] = acc + math.log(prod)


@numba.njit(**NJIT_KWARGS)
def shift_at(
    counts: np.ndarray,
    sums: np.ndarray,
    sumsq: np.ndarray,
    slot: int,
    xc: np.ndarray,
    i: int,
    sign: int,
) -> None:
    """Add (``sign = 1``) or take out (``sign = -1``) point ``i`` from the sums of ``slot``."""
    counts[slot] += sign
    for j in range(xc.shape[1]):
        x = xc[i, j]
        sums[slot, j] += sign * x
        sumsq[slot, j] += sign * x * x


@numba.njit(**NJIT_KWARGS)
def refresh_slot(state: DiagState, slot: int, params: DiagParams) -> None:
    """:func:`refresh_at` on a state's slot."""
    refresh_at(
        state.counts,
        state.sums,
        state.sumsq,
        state.bn,
        state.logb,
        state.mean,
        state.hinv,
        slot,
        params.kappa0,
        params.b0,
    )


@numba.njit(**NJIT_KWARGS)
def _empty_state(labels: np.ndarray, cap: int, d: int) -> DiagState:
    return DiagState(
        labels,
        np.zeros(cap, dtype=np.int64),
        np.zeros((cap, d)),
        np.zeros((cap, d)),
        np.ones((cap, d)),
        np.zeros(cap),
        np.zeros((cap, d)),
        np.zeros((cap, d)),
        np.arange(cap),
        np.arange(cap),
        np.zeros(1, dtype=np.int64),
    )


@numba.njit(**NJIT_KWARGS)
def init_diag_state(
    xc: np.ndarray, labels: np.ndarray, params: DiagParams, capacity: int = 0
) -> DiagState:
    """Build a fresh :class:`DiagState` from centred data and labels ``0..K-1``.

    Capacity as in :func:`~pymc_pcrp._kernels.state.init_state`.
    """
    n, d = xc.shape
    state = _empty_state(labels.copy(), slots.initial_capacity(labels, capacity), d)
    for i in range(n):
        shift_at(state.counts, state.sums, state.sumsq, labels[i], xc, i, 1)
    slots.open_occupied(state)
    for p in range(state.k[0]):
        refresh_slot(state, state.order[p], params)
    return state


@numba.njit(**NJIT_KWARGS)
def grow_if_full(state: DiagState) -> bool:
    """Double the capacity when every slot is occupied (see ``state.grow_if_full``)."""
    new_cap = slots.grow_slots(state)
    if new_cap == 0:
        return False
    state.bn = slots.grown(state.bn, new_cap, 1.0)
    state.logb = slots.grown(state.logb, new_cap, 0.0)
    state.mean = slots.grown(state.mean, new_cap, 0.0)
    state.hinv = slots.grown(state.hinv, new_cap, 0.0)
    return True


@numba.njit(**NJIT_KWARGS)
def resync_diag_state(xc: np.ndarray, state: DiagState, params: DiagParams) -> None:
    """Rebuild the occupied slots' sums and caches from ``state.labels`` in place."""
    slots.clear_occupied(state)
    for i in range(xc.shape[0]):
        shift_at(state.counts, state.sums, state.sumsq, state.labels[i], xc, i, 1)
    for p in range(state.k[0]):
        refresh_slot(state, state.order[p], params)


@numba.njit(**NJIT_KWARGS)
def diag_log_marginal(
    n: int, logb_n: float, d: int, kappa0: float, a0: float, logb0: float
) -> float:
    """Log marginal likelihood of a cluster of ``n`` points from ``logb_n = sum_j log b_nj``.

    ``sum_j [lgamma(a_n) - lgamma(a0) + a0 log b0_j - a_n log b_nj
    + log(kappa0 / kappa_n) / 2 - n log(2 pi) / 2]``; zero for ``n = 0``.
    """
    if n == 0:
        return 0.0
    kappa_n = kappa0 + n
    a_n = a0 + 0.5 * n
    return (
        d * (math.lgamma(a_n) - math.lgamma(a0) + 0.5 * math.log(kappa0 / kappa_n))
        - 0.5 * n * d * _LOG_2PI
        + a0 * logb0
        - a_n * logb_n
    )
