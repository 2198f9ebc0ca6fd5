"""The pCRP collapsed Gibbs sweep for the diagonal-covariance family, in numba.

The same full conditional as :func:`~pymc_pcrp._kernels.sweep.gibbs_sweeps`
(weight ``n_k^r`` times the posterior predictive of each occupied cluster,
``alpha`` times the prior predictive for a new one), with the diagonal
family's predictive (:mod:`pymc_pcrp._kernels.diag_state`): a point update
costs ``O(K D)`` and one logarithm per cluster. Every cluster is scored
exactly (no bounds, no skipping).

The point's own cluster is scored with the point left out without taking it
out: removing ``x`` turns ``b_nj`` into ``b'_j = b_nj - kappa_n (x_j - m_j)^2
/ (2 kappa_{n-1})`` and adding it back multiplies ``b'_j`` by exactly the
predictive's factor ``1 + h'_j (x_j - m'_j)^2``, so with
``L = sum_j log(b_nj / b'_j)`` (one logarithm) the leave-one-out log weight is
``r log(n - 1) + c(n - 1) - (1/2) sum_j log b_nj - a_{n-1} L``. The state
changes only when a point moves.
"""

import math

import numba
import numpy as np

from pymc_pcrp._kernels._config import NJIT_KWARGS
from pymc_pcrp._kernels.diag_state import (
    DiagParams,
    DiagState,
    free_slot,
    grow_if_full,
    open_slot,
    refresh_slot,
    shift_at,
)
from pymc_pcrp._kernels.scores import _sample_log_weights
from pymc_pcrp._kernels.sweep import shuffle_in_place

__all__ = ["diag_sweeps", "loo_log_ratio", "seat_log_weight"]


@numba.njit(**NJIT_KWARGS)
def seat_log_weight(
    xc: np.ndarray,
    i: int,
    slot: int,
    n: int,
    logb: np.ndarray,
    mean: np.ndarray,
    hinv: np.ndarray,
    seat_n: float,
    a0: float,
) -> float:
    """``r log n + log p(x_i | cluster)`` for a cluster (``slot`` of ``n`` points) without ``i``."""
    acc = 0.0
    prod = 1.0
    for j in range(xc.shape[1]):
        t = xc[i, j] - mean[slot, j]
        prod *= 1.0 + t * t * hinv[slot, j]
        if prod > 1e150:
            acc += math.log(prod)
            prod = 1.0
    return seat_n - 0.5 * logb[slot] - (a0 + 0.5 * n + 0.5) * (acc + math.log(prod))


@numba.njit(**NJIT_KWARGS)
def loo_log_ratio(
    xc: np.ndarray,
    i: int,
    slot: int,
    n: int,
    sums: np.ndarray,
    sumsq: np.ndarray,
    bn: np.ndarray,
    logb: np.ndarray,
    mean: np.ndarray,
    kappa0: float,
    b0: np.ndarray,
) -> float:
    """``L = sum_j log(b_nj / b'_j)``: how much point ``i`` adds to its cluster's log rates.

    ``b'`` are the rates of ``slot`` (``n >= 2`` points, ``i`` among them)
    without ``i``. When a ratio is numerically close to zero (the point carries
    almost all of a dimension's scatter) ``b'`` is recomputed from the sums.
    """
    kappa_n = kappa0 + n
    c = kappa_n / (kappa_n - 1.0)
    acc = 0.0
    prod = 1.0
    for j in range(xc.shape[1]):
        t = xc[i, j] - mean[slot, j]
        r = 1.0 - c * t * t / (2.0 * bn[slot, j])
        if not r > 1e-8:
            # Safe path: b' from the sums without the point.
            inv_kappa = 1.0 / (kappa_n - 1.0)
            acc2 = 0.0
            prod2 = 1.0
            for a in range(xc.shape[1]):
                s = sums[slot, a] - xc[i, a]
                w = sumsq[slot, a] - xc[i, a] * xc[i, a] - s * s * inv_kappa
                prod2 *= b0[a] + 0.5 * (w if w > 0.0 else 0.0)
                if prod2 > 1e150 or prod2 < 1e-150:
                    acc2 += math.log(prod2)
                    prod2 = 1.0
            return logb[slot] - (acc2 + math.log(prod2))
        prod *= r
        if prod < 1e-150:
            acc += math.log(prod)
            prod = 1.0
    return -(acc + math.log(prod))


@numba.njit(**NJIT_KWARGS)
def move_point(
    state: DiagState, xc: np.ndarray, i: int, old: int, slot: int, params: DiagParams
) -> None:
    """Move point ``i`` from ``old`` to ``slot`` (opening or freeing slots as needed)."""
    if state.counts[old] == 1:
        free_slot(state, old)
    else:
        shift_at(state.counts, state.sums, state.sumsq, old, xc, i, -1)
        refresh_slot(state, old, params)
    if state.counts[slot] == 0:
        open_slot(state, slot)
    shift_at(state.counts, state.sums, state.sumsq, slot, xc, i, 1)
    refresh_slot(state, slot, params)
    state.labels[i] = slot


@numba.njit(**NJIT_KWARGS)
def diag_sweeps(
    rng: np.random.Generator,
    xc: np.ndarray,
    state: DiagState,
    params: DiagParams,
    tables: tuple[np.ndarray, np.ndarray, np.ndarray],
    n_sweeps: int,
    visit: np.ndarray | None = None,
) -> int:
    """Run ``n_sweeps`` sweeps in place; return how many moves changed a cluster.

    Each sweep visits the points in a fresh uniformly random order and draws
    each point's cluster from its full conditional given the others.
    ``tables`` is :func:`~pymc_pcrp._kernels.diag_state.diag_tables` of the same
    data and parameters. A singleton's own cluster is not an option (choosing
    a new cluster leaves it where it is). ``visit``, for tests, replaces the
    random order by exactly the points ``visit`` in that order.
    """
    # Performance note (as in pymc_pcrp._kernels.sweep): the per-point loop reads
    # the state's arrays through locals and writes the scoring loops out, because
    # reading a structure's field or passing an array to a helper costs numba
    # reference counting at every call; helpers run only when a point moves or
    # a leave-one-out ratio is numerically unsafe.
    n, d = xc.shape
    log_new, _, by_size = tables
    logw = np.empty(n + 1)
    kappa0 = params.kappa0
    a0 = params.a0
    b0 = params.b0
    if visit is None:
        perm = np.arange(n)
    else:
        perm = visit.astype(np.int64)
    labels = state.labels
    counts = state.counts
    order = state.order
    logb = state.logb
    mean = state.mean
    hinv = state.hinv
    n_occupied = state.k
    moved = 0
    for _ in range(n_sweeps):
        if visit is None:
            shuffle_in_place(rng, perm)
        for step in range(perm.shape[0]):
            i = perm[step]
            old = labels[i]
            m = counts[old]
            k = n_occupied[0]
            for p in range(k):
                slot = order[p]
                if slot == old:
                    if m == 1:
                        logw[p] = -math.inf
                        continue
                    # own cluster, point left out: L = -sum_j log(b'_j / b_nj)
                    kappa_n = kappa0 + m
                    f = (kappa_n + 1.0) / (kappa_n - 1.0)
                    acc = 0.0
                    prod = 1.0
                    safe = True
                    for j in range(d):
                        t = xc[i, j] - mean[slot, j]
                        r = 1.0 - t * t * hinv[slot, j] * f
                        if not r > 1e-8:
                            safe = False
                            break
                        prod *= r
                        if prod < 1e-150:
                            acc += math.log(prod)
                            prod = 1.0
                    if safe:
                        big_l = -(acc + math.log(prod))
                    else:
                        big_l = loo_log_ratio(
                            xc, i, slot, m, state.sums, state.sumsq, state.bn, logb, mean,
                            kappa0, b0,
                        )  # fmt: skip
                    logw[p] = by_size[m - 1, 0] - 0.5 * logb[slot] - (a0 + 0.5 * (m - 1)) * big_l
                else:
                    c = counts[slot]
                    acc = 0.0
                    prod = 1.0
                    for j in range(d):
                        t = xc[i, j] - mean[slot, j]
                        prod *= 1.0 + t * t * hinv[slot, j]
                        if prod > 1e150:
                            acc += math.log(prod)
                            prod = 1.0
                    logw[p] = (
                        by_size[c, 0]
                        - 0.5 * logb[slot]
                        - (a0 + 0.5 * c + 0.5) * (acc + math.log(prod))
                    )
            logw[k] = log_new[i]
            choice = _sample_log_weights(rng, logw, k + 1)
            if choice == k:
                if m == 1:
                    continue
            elif order[choice] == old:
                continue
            # Read the target before moving: freeing a slot reorders ``order``
            # (for choice == k the point is not a singleton, so nothing is freed).
            slot = order[choice]
            move_point(state, xc, i, old, slot, params)
            moved += 1
            if choice == k and grow_if_full(state):
                counts, order, logb, mean, hinv = (
                    state.counts, state.order, state.logb, state.mean, state.hinv
                )  # fmt: skip
    return moved
