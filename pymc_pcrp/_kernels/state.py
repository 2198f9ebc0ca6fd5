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

:func:`add_point` and :func:`remove_point` move one point in or out of a slot
with a rank-one Cholesky change. They take the five per-slot arrays and a slot
index rather than a :class:`SweepState`, so that the split-merge move
(:mod:`pymc_pcrp._kernels.splitmerge`) runs the very same code on its own two
groups. They index the arrays and never take views: numba's reference counting
of array views and array-passing calls was most of the cost of a point update.
The data must be centred at the prior mean (see :mod:`pymc_pcrp._kernels.niw`).
"""

import math

from typing import NamedTuple

import numba
import numpy as np

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
    "add_point",
    "close_slot",
    "factorise",
    "free_slot",
    "init_state",
    "make_params",
    "open_slot",
    "refresh_slot",
    "remove_point",
]


class SweepState(NamedTuple):
    """Mutable state of the sweep; see the module docstring for the fields."""

    labels: np.ndarray
    counts: np.ndarray
    sums: np.ndarray
    sumsq: np.ndarray
    chol: np.ndarray
    logdet: np.ndarray
    order: np.ndarray
    where: np.ndarray
    k: np.ndarray


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
def init_state(xc: np.ndarray, labels: np.ndarray, params: NIWParams) -> SweepState:
    """Build a fresh :class:`SweepState` from centred data and labels ``0..K-1``."""
    n, d = xc.shape
    cap = n + 1
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
    buf = np.empty((d, d))
    # Occupied slots first in ``order``: swap each into the occupied prefix.
    for slot in range(cap):
        if counts[slot] > 0:
            open_slot(state, slot)
            refresh_slot(state, slot, params, buf)
    return state


@numba.njit(**NJIT_KWARGS)
def open_slot(state: SweepState, slot: int) -> None:
    """Move ``slot`` into the occupied prefix of ``order``."""
    k = state.k[0]
    pos = state.where[slot]
    other = state.order[k]
    state.order[k] = slot
    state.order[pos] = other
    state.where[slot] = k
    state.where[other] = pos
    state.k[0] = k + 1


@numba.njit(**NJIT_KWARGS)
def close_slot(state: SweepState, slot: int) -> None:
    """Move an emptied ``slot`` out of the occupied prefix of ``order``."""
    last = state.k[0] - 1
    pos = state.where[slot]
    other = state.order[last]
    state.order[last] = slot
    state.order[pos] = other
    state.where[slot] = last
    state.where[other] = pos
    state.k[0] = last


@numba.njit(**NJIT_KWARGS)
def free_slot(state: SweepState, slot: int) -> None:
    """Empty ``slot`` and move it out of the occupied prefix of ``order``."""
    state.counts[slot] = 0
    state.sums[slot, :] = 0.0
    state.sumsq[slot, :, :] = 0.0
    close_slot(state, slot)


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
def add_point(
    counts: np.ndarray,
    sums: np.ndarray,
    sumsq: np.ndarray,
    chol: np.ndarray,
    logdet: np.ndarray,
    slot: int,
    xc: np.ndarray,
    i: int,
    kappa0: float,
    v: np.ndarray,
) -> float:
    """Add point ``i`` to ``slot``, whose factor ``chol[slot]`` must be set; return ``|v|^2``.

    ``Psi_{n+1} = Psi_n + v v^T`` with ``v = sqrt(kappa_n / (kappa_n + 1)) (x - mu_n)``:
    one rank-one update of the factor. ``v`` is scratch space of length ``D``.
    """
    kappa_n = kappa0 + counts[slot]
    vv = _rank_one_vector(sums, slot, xc, i, kappa_n, math.sqrt(kappa_n / (kappa_n + 1.0)), v)
    chol_rank_one_at(chol, slot, v, 1.0)
    logdet[slot] = log_det_at(chol, slot)
    counts[slot] += 1
    shift_stats(sums, sumsq, slot, xc, i, 1.0)
    return vv


@numba.njit(**NJIT_KWARGS)
def remove_point(
    counts: np.ndarray,
    sums: np.ndarray,
    sumsq: np.ndarray,
    chol: np.ndarray,
    logdet: np.ndarray,
    slot: int,
    xc: np.ndarray,
    i: int,
    params: NIWParams,
    v: np.ndarray,
    buf: np.ndarray,
) -> float:
    """Remove point ``i`` from ``slot``, which keeps at least one point; return ``|v|^2``.

    ``Psi_{n-1} = Psi_n - v v^T`` with ``v = sqrt(kappa_n / kappa_{n-1}) (x - mu_n)``:
    one rank-one downdate, or a fresh factorisation when the downdate loses
    positive definiteness numerically.
    """
    n = counts[slot]
    kappa_n = params.kappa0 + n
    vv = _rank_one_vector(sums, slot, xc, i, kappa_n, math.sqrt(kappa_n / (kappa_n - 1.0)), v)
    counts[slot] = n - 1
    shift_stats(sums, sumsq, slot, xc, i, -1.0)
    if chol_rank_one_at(chol, slot, v, -1.0):
        logdet[slot] = log_det_at(chol, slot)
    else:
        logdet[slot] = factorise(n - 1, sums[slot], sumsq[slot], params, buf, chol[slot])
    return vv
