"""Slot bookkeeping of the sweep state: per-cluster sufficient statistics in numba.

The state of a sweep is a :class:`SweepState` of per-cluster statistics kept in
*slots*:

* ``labels[i]`` is the slot of point ``i``;
* ``order[:k[0]]`` lists the occupied slots and ``order[k[0]:]`` the free ones,
  ``where[slot]`` is the position of a slot in ``order``: opening or closing a
  cluster is O(1) and never renumbers points;
* for each slot: ``counts``, ``sums`` (sum of centred points), ``sumsq`` (sum of
  their outer products), ``chol`` (lower Cholesky factor of ``Psi_n``) and
  ``logdet`` (``log|Psi_n|``).

:func:`shift_point` moves one point in or out of a slot with a rank-one
Cholesky change (:func:`place_point` does the same on a :class:`SweepState`,
opening and closing slots). It takes the five per-slot arrays and a slot index
rather than a :class:`SweepState`, so that the split-merge move
(:mod:`pymc_pcrp._kernels.splitmerge`) runs the very same code on its own two
groups. It indexes the arrays and never take views: numba's reference counting
of array views and array-passing calls was most of the cost of a point update.
The data must be centred at the prior mean (see :mod:`pymc_pcrp._kernels.niw`).

Capacity
--------
The per-slot arrays hold ``capacity`` slots, not ``N + 1``: :func:`init_state`
allocates ``min(N + 1, 2 K + 8)`` for ``K`` initial clusters, and whatever opens
a cluster calls :func:`grow_if_full` afterwards, which doubles the capacity
(up to ``N + 1``) when no free slot is left. The invariant every kernel relies
on is therefore ``k[0] < capacity``: ``order[k[0]]`` is always a free slot for
a new cluster. Memory is ``O(K_max D^2 + N D)`` with ``K_max`` the largest
number of clusters the chain has held, instead of ``O(N D^2)``.

:class:`SweepState` is a mutable numba structure (a ``StructRef``), not a
tuple, so that growing replaces its arrays in place: a caller that holds the
state sees the grown arrays, and no kernel has to return a new state.

The bookkeeping of ``labels``, ``order``, ``where``, ``k`` and the capacity is
shared with the diagonal family's state and lives in
:mod:`pymc_pcrp._kernels.slots`.
"""

import math

from typing import NamedTuple

import numba
import numpy as np

from numba.experimental import structref

from pymc_pcrp._kernels import slots
from pymc_pcrp._kernels._config import NJIT_KWARGS
from pymc_pcrp._kernels.niw import (
    chol_rank_one_at,
    cholesky_lower,
    log_det_at,
    log_det_chol,
    scale_matrix,
)

__all__ = [
    "NIWParams",
    "SweepState",
    "factorise",
    "grow_if_full",
    "init_state",
    "make_params",
    "place_point",
    "refresh_slot",
    "shift_point",
]


_FIELDS = ("labels", "counts", "sums", "sumsq", "chol", "logdet", "order", "where", "k")


@numba.njit(**NJIT_KWARGS)
def _factors(state):
    """``(chol, logdet)`` of a state, for Python."""
    return state.chol, state.logdet


@structref.register
class SweepStateType(slots.SlotStateType):
    """numba type of :class:`SweepState`."""


class SweepState(slots.SlotStateProxy, structref.StructRefProxy):
    """Mutable state of the sweep; see the module docstring for the fields.

    Built by :func:`init_state`. Its fields read in Python as described in
    :class:`~pymc_pcrp._kernels.slots.SlotStateProxy` (``state.counts[slot]``,
    ``state.k[0]``).
    """

    _fields = _FIELDS

    def __new__(cls, labels, counts, sums, sumsq, chol, logdet, order, where, k):
        return structref.StructRefProxy.__new__(
            cls, labels, counts, sums, sumsq, chol, logdet, order, where, k
        )

    chol = slots.field_reader(_factors, 0)
    logdet = slots.field_reader(_factors, 1)


structref.define_proxy(SweepState, SweepStateType, list(_FIELDS))


class NIWParams(NamedTuple):
    """Fixed parameters of a sweep: the pCRP prior and the NIW prior (centred)."""

    log_alpha: float
    power: float
    kappa0: float
    nu0: float
    psi0: np.ndarray
    chol0: np.ndarray
    logdet0: float


def make_params(alpha: float, power: float, kappa0: float, nu0: float, psi0) -> NIWParams:
    """Build :class:`NIWParams`, factorising ``psi0`` once.

    ``psi0`` may have shape ``(0, 0)``: the sweep then has no likelihood and
    samples the pCRP prior itself.
    """
    psi0 = np.ascontiguousarray(psi0, dtype=np.float64)
    chol0 = np.linalg.cholesky(psi0) if psi0.size else np.zeros((0, 0))
    logdet0 = 2.0 * float(np.sum(np.log(np.diag(chol0))))
    return NIWParams(math.log(alpha), float(power), float(kappa0), float(nu0), psi0, chol0, logdet0)


@numba.njit(**NJIT_KWARGS)
def factorise(
    n: int, s: np.ndarray, q: np.ndarray, params: NIWParams, buf: np.ndarray, chol: np.ndarray
) -> float:
    """Factorise ``Psi_n`` from sufficient statistics into ``chol``; return ``log|Psi_n|``."""
    scale_matrix(n, s, q, params.kappa0, params.psi0, buf)
    if not cholesky_lower(buf, chol):
        raise FloatingPointError("posterior scale matrix lost positive definiteness")
    return log_det_chol(chol)


@numba.njit(**NJIT_KWARGS)
def refresh_slot(state: SweepState, slot: int, params: NIWParams, buf: np.ndarray) -> None:
    """Recompute the Cholesky factor of one slot from its sums (drift control)."""
    state.logdet[slot] = factorise(
        state.counts[slot], state.sums[slot], state.sumsq[slot], params, buf, state.chol[slot]
    )


@numba.njit(**NJIT_KWARGS)
def shift_stats(
    sums: np.ndarray, sumsq: np.ndarray, slot: int, xc: np.ndarray, i: int, sign: float
) -> None:
    """Add (``sign = 1``) or subtract (``sign = -1``) point ``i`` to the sums of ``slot``."""
    d = xc.shape[1]
    for a in range(d):
        sums[slot, a] += sign * xc[i, a]
        for b in range(d):
            sumsq[slot, a, b] += sign * xc[i, a] * xc[i, b]


@numba.njit(**NJIT_KWARGS)
def init_state(
    xc: np.ndarray, labels: np.ndarray, params: NIWParams, capacity: int = 0
) -> SweepState:
    """Build a fresh :class:`SweepState` from centred data and labels ``0..K-1``.

    The capacity is ``min(N + 1, 2 K + 8)`` slots (see "Capacity" in the module
    docstring), or ``capacity`` when given (at least ``K + 1``); labels need not
    be contiguous, ``K`` is the largest plus one. The capacity changes nothing
    but memory: a chain run from either start makes the same moves.
    """
    n, d = xc.shape
    cap = slots.initial_capacity(labels, capacity)
    counts = np.zeros(cap, dtype=np.int64)
    sums = np.zeros((cap, d))
    sumsq = np.zeros((cap, d, d))
    chol = np.zeros((cap, d, d))
    logdet = np.zeros(cap)
    order = np.arange(cap)
    where = np.arange(cap)
    k = np.zeros(1, dtype=np.int64)
    state = SweepState(labels.copy(), counts, sums, sumsq, chol, logdet, order, where, k)
    for i in range(n):
        counts[labels[i]] += 1
        shift_stats(sums, sumsq, labels[i], xc, i, 1.0)
    slots.open_occupied(state)
    buf = np.empty((d, d))
    for p in range(state.k[0]):
        refresh_slot(state, state.order[p], params, buf)
    return state


@numba.njit(**NJIT_KWARGS)
def grow_if_full(state: SweepState) -> bool:
    """Double the capacity when every slot is occupied; return whether it grew.

    Called after each opening of a cluster, it keeps ``k[0] < capacity``
    (:func:`~pymc_pcrp._kernels.slots.grow_slots`, then the factors and
    log-determinants).
    """
    new_cap = slots.grow_slots(state)
    if new_cap == 0:
        return False
    state.chol = slots.grown(state.chol, new_cap, 0.0)
    state.logdet = slots.grown(state.logdet, new_cap, 0.0)
    return True


@numba.njit(**NJIT_KWARGS)
def _rank_one_vector(
    sums: np.ndarray, slot: int, xc: np.ndarray, i: int, kappa_n: float, c: float, v: np.ndarray
) -> float:
    """Write ``v = c (x_i - mu_n)`` with ``mu_n = sums[slot] / kappa_n``; return ``|v|^2``."""
    vv = 0.0
    for a in range(xc.shape[1]):
        v[a] = c * (xc[i, a] - sums[slot, a] / kappa_n)
        vv += v[a] * v[a]
    return vv


@numba.njit(**NJIT_KWARGS)
def shift_point(
    stats: tuple,
    slot: int,
    xc: np.ndarray,
    i: int,
    sign: int,
    params: NIWParams,
    v: np.ndarray,
    buf: np.ndarray,
) -> float:
    """Add (``sign = 1``) or remove (``sign = -1``) point ``i`` in ``slot``; return ``|v|^2``.

    ``stats`` is ``(counts, sums, sumsq, chol, logdet)``, the per-slot arrays of a
    :class:`SweepState` or of the split-merge groups, updated in place. The
    factor ``chol[slot]`` must be set, and a removal must leave the slot at
    least one point. ``Psi`` changes by ``sign * v v^T`` with
    ``v = sqrt(kappa_n / (kappa_n + sign)) (x - mu_n)``: one rank-one update or
    downdate of the factor, or a fresh factorisation when a downdate loses
    positive definiteness numerically. ``v`` (length ``D``) and ``buf``
    (``D x D``, used only for that refactorisation) are scratch space.

    Callers pass the literal ``1`` or ``-1``: numba compiles one copy per sign
    (as many as the separate add and remove functions this replaced), with the
    other sign's branch folded away.
    """
    counts, sums, sumsq, chol, logdet = stats
    n = counts[slot]
    kappa_n = params.kappa0 + n
    vv = _rank_one_vector(sums, slot, xc, i, kappa_n, math.sqrt(kappa_n / (kappa_n + sign)), v)
    counts[slot] = n + sign
    shift_stats(sums, sumsq, slot, xc, i, float(sign))
    if chol_rank_one_at(chol, slot, v, float(sign)):
        logdet[slot] = log_det_at(chol, slot)
    else:
        logdet[slot] = factorise(n + sign, sums[slot], sumsq[slot], params, buf, chol[slot])
    return vv


@numba.njit(**NJIT_KWARGS)
def place_point(
    state: SweepState,
    xc: np.ndarray,
    i: int,
    slot: int,
    sign: int,
    params: NIWParams,
    v: np.ndarray,
    buf: np.ndarray,
) -> float:
    """Put point ``i`` into ``slot`` (``sign = 1``) or take it out (``sign = -1``).

    An empty slot is opened before a point goes in, and a slot is closed when
    its last point leaves; ``labels[i]`` is the caller's to set. Returns
    ``|v|^2`` for the rank-one change ``Psi_{n + sign} = Psi_n + sign * v v^T`` of
    :func:`~pymc_pcrp._kernels.state.shift_point` (``0`` when the slot empties).
    """
    if sign < 0 and state.counts[slot] == 1:
        slots.free_slot(state, slot)
        return 0.0
    if sign > 0 and state.counts[slot] == 0:
        slots.open_slot(state, slot)
        state.chol[slot, :, :] = params.chol0
    stats = (state.counts, state.sums, state.sumsq, state.chol, state.logdet)
    return shift_point(stats, slot, xc, i, sign, params, v, buf)
