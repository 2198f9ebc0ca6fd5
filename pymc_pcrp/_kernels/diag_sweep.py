"""The pCRP collapsed Gibbs sweep for the diagonal-covariance family, in numba.

The same full conditional as :func:`~pymc_pcrp._kernels.sweep.gibbs_sweeps`
(weight ``n_k^r`` times the posterior predictive of each occupied cluster,
``alpha`` times the prior predictive for a new one), with the diagonal
family's predictive (:mod:`pymc_pcrp._kernels.diag_state`): a point update
costs ``O(K D)`` and at most one logarithm per cluster; far clusters are
bounded without a logarithm and skipped, with an exact draw (see
:func:`diag_sweeps`).

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
    grow_if_full,
    refresh_slot,
    shift_at,
)
from pymc_pcrp._kernels.draws import shuffle_in_place, sweep_order
from pymc_pcrp._kernels.scores import (
    SKIP_NATS,
    pick_option,
    scored_weights,
    skipped_stage,
    sweep_workspace,
)
from pymc_pcrp._kernels.slots import free_slot, open_slot

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
def diag_sweeps(rng: np.random.Generator, chain: tuple, n_sweeps: int) -> int:
    """Run ``n_sweeps`` sweeps in place; return how many moves changed a cluster.

    ``chain`` is ``(xc, state, params, tables)``: the centred data, the
    :class:`~pymc_pcrp._kernels.diag_state.DiagState` (updated in place), the
    :class:`~pymc_pcrp._kernels.diag_state.DiagParams` and
    :func:`~pymc_pcrp._kernels.diag_state.diag_tables` of the same data and
    parameters. Each sweep visits the points in a fresh uniformly random order
    and draws each point's cluster from its full conditional given the others.
    A singleton's own cluster is not an option (choosing a new cluster leaves
    it where it is).

    Far clusters are bounded instead of scored, and the draw stays exact, as in
    :func:`~pymc_pcrp._kernels.sweep.gibbs_sweeps`. The own cluster (left out)
    and the new cluster are scored exactly; their larger log weight is the
    reference. Another cluster's log weight ``c_k - e_k log prod_j (1 + t_j)``
    is at most ``c_k - e_k T / (1 + T)`` with ``T = sum_j t_j`` (the product is at
    least ``1 + T``, and ``log(1 + T) >= T / (1 + T)``), which needs no
    logarithm; a cluster whose bound is more than ``skip_nats`` below the
    reference is skipped (so is the new cluster when its exact weight is), each
    skipped option's weight being below ``exp(-skip_nats)`` of the reference.
    A uniform ``u`` is then drawn: below ``a = S / (S + B)`` (``S`` the scored
    options' total weight, ``B`` the skipped ones' bound) it picks among the
    scored options; otherwise the skipped options are scored exactly, with
    total ``B' <= B``, and ``u`` picks among the scored ones when
    ``u < g = S / (S + B')`` and among the skipped ones otherwise. Each option
    then has exactly its conditional probability. ``skip_nats`` (here
    :data:`~pymc_pcrp._kernels.scores.SKIP_NATS`) only trades work between the
    branches.
    """
    # Performance note (as in pymc_pcrp._kernels.sweep): the per-point loop reads
    # the state's arrays through locals and writes the scoring loops out, because
    # reading a structure's field or passing an array to a helper costs numba
    # reference counting at every call; helpers run only when a point moves or
    # a leave-one-out ratio is numerically unsafe.
    xc, state, params, tables = chain
    n, d = xc.shape
    log_new, _, by_size = tables
    logw, skipped, wts, wsk, skip_weight = sweep_workspace(n, SKIP_NATS)
    moved = 0
    kappa0 = params.kappa0
    a0 = params.a0
    b0 = params.b0
    perm = sweep_order(n)
    labels, n_occupied = state.labels, state.k
    counts, order, where = state.counts, state.order, state.where
    logb, mean, hinv = state.logb, state.mean, state.hinv
    for _ in range(n_sweeps):
        shuffle_in_place(rng, perm)
        for i in perm:
            old = labels[i]
            m = counts[old]
            k = n_occupied[0]
            own_p = where[old]
            # 1. The own cluster with the point left out, exactly.
            w_own = -math.inf
            if m > 1:
                kappa_n = kappa0 + m
                f = (kappa_n + 1.0) / (kappa_n - 1.0)
                acc = 0.0
                prod = 1.0
                safe = True
                for j in range(d):
                    t = xc[i, j] - mean[old, j]
                    r = 1.0 - t * t * hinv[old, j] * f
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
                        xc, i, old, m, state.sums, state.sumsq, state.bn, logb, mean, kappa0, b0
                    )
                w_own = by_size[m - 1, 0] - 0.5 * logb[old] - (a0 + 0.5 * (m - 1)) * big_l
            ref = max(w_own, log_new[i])
            floor = ref - SKIP_NATS
            # 2. The other clusters: bounded first, scored only when the bound is not low.
            n_skip = 0
            for p in range(k):
                if p == own_p:
                    logw[p] = w_own
                    continue
                slot = order[p]
                c = counts[slot]
                const = by_size[c, 0] - 0.5 * logb[slot]
                expo = a0 + 0.5 * c + 0.5
                big_t = 0.0
                for j in range(d):
                    t = xc[i, j] - mean[slot, j]
                    big_t += t * t * hinv[slot, j]
                if const - expo * big_t / (1.0 + big_t) < floor:
                    skipped[n_skip] = p
                    n_skip += 1
                    logw[p] = -math.inf
                    continue
                acc = 0.0
                prod = 1.0
                for j in range(d):
                    t = xc[i, j] - mean[slot, j]
                    prod *= 1.0 + t * t * hinv[slot, j]
                    if prod > 1e150:
                        acc += math.log(prod)
                        prod = 1.0
                logw[p] = const - expo * (acc + math.log(prod))
            if log_new[i] < floor:
                skipped[n_skip] = k
                n_skip += 1
                logw[k] = -math.inf
            else:
                logw[k] = log_new[i]
            # 3. The exact draw, with weights relative to the largest scored one (a
            #    skipped weight is below exp(-skip_nats) of it too, as top >= ref).
            top, total = scored_weights(logw, wts, k + 1, ref)
            u = rng.random()
            a = total / (total + n_skip * skip_weight)
            in_scored = u < a
            target = u / a * total if in_scored else 0.0
            if not in_scored:
                big = 0.0
                for s_ in range(n_skip):
                    p = skipped[s_]
                    if p == k:
                        lw = log_new[i]
                    else:
                        slot = order[p]
                        c = counts[slot]
                        lw = seat_log_weight(xc, i, slot, c, logb, mean, hinv, by_size[c, 0], a0)
                    wsk[s_] = math.exp(lw - top)
                    big += wsk[s_]
                in_scored, target = skipped_stage(u, a, total, big)
            choice = pick_option(in_scored, target, wts, k + 1, wsk, skipped, n_skip)
            if choice == k:
                if m == 1:
                    continue
            elif choice == own_p:
                continue
            # Read the target before moving: freeing a slot reorders ``order``
            # (for choice == k the point is not a singleton, so nothing is freed).
            slot = order[choice]
            move_point(state, xc, i, old, slot, params)
            moved += 1
            if choice == k and grow_if_full(state):
                counts, order, where = state.counts, state.order, state.where
                logb, mean, hinv = state.logb, state.mean, state.hinv
    return moved
