"""Split-merge moves (SAMS and restricted Gibbs) for the diagonal-covariance family.

The move of :mod:`pymc_pcrp._kernels.splitmerge` (Jain & Neal 2004; Dahl
2005) with the diagonal family's predictive and marginal likelihood: two
points ``i`` and ``j`` are drawn, the other members ``S`` of their cluster(s)
are seated in two groups anchored by ``i`` and ``j`` by sequential
allocation, optionally followed by restricted Gibbs scans, and the split or
merge is accepted with the Metropolis-Hastings ratio of that module's
docstring. The pair rule, member lists and shuffles are that module's own
helpers; only the group statistics and the weights differ.

A group is held in two-slot arrays laid out like the slots of
:class:`~pymc_pcrp._kernels.diag_state.DiagState` (``gcount``, ``gsum``,
``gsumsq``, ``gbn``, ``glogb``, ``gmean``, ``ghinv``), updated by the state's
own :func:`~pymc_pcrp._kernels.diag_state.refresh_at`.
"""

import math

import numba
import numpy as np

from pymc_pcrp._kernels._config import NJIT_KWARGS
from pymc_pcrp._kernels.allocation import _choose
from pymc_pcrp._kernels.diag_state import (
    DiagParams,
    DiagState,
    grow_if_full,
    refresh_at,
    shift_at,
)
from pymc_pcrp._kernels.diag_sweep import loo_log_ratio, seat_log_weight
from pymc_pcrp._kernels.draws import shuffle_pair_prefix
from pymc_pcrp._kernels.slots import free_slot, open_slot
from pymc_pcrp._kernels.splitmerge import _draw_pair, _gather_members, _relist

__all__ = ["diag_log_marginal", "diag_split_merge_moves"]

_LOG_2PI = math.log(2.0 * math.pi)


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


@numba.njit(**NJIT_KWARGS)
def _shift_group(groups, g: int, xc: np.ndarray, p: int, sign: int, params: DiagParams) -> None:
    gcount, gsum, gsumsq, gbn, glogb, gmean, ghinv = groups
    shift_at(gcount, gsum, gsumsq, g, xc, p, sign)
    refresh_at(gcount, gsum, gsumsq, gbn, glogb, gmean, ghinv, g, params.kappa0, params.b0)


@numba.njit(**NJIT_KWARGS)
def _group_weight(groups, g: int, xc: np.ndarray, p: int, seat: np.ndarray, a0: float) -> float:
    gcount, _, _, _, glogb, gmean, ghinv = groups
    n = gcount[g]
    return seat_log_weight(xc, p, g, n, glogb, gmean, ghinv, seat[n], a0)


@numba.njit(**NJIT_KWARGS)
def _launch(
    rng: np.random.Generator,
    xc: np.ndarray,
    i: int,
    j: int,
    members: np.ndarray,
    m: int,
    side: np.ndarray,
    target: np.ndarray,
    forced: bool,
    n_scans: int,
    groups,
    params: DiagParams,
    seat: np.ndarray,
) -> float:
    """Build one proposal (see :func:`pymc_pcrp._kernels.allocation._launch`); return log q."""
    gcount, gsum, gsumsq = groups[0], groups[1], groups[2]
    shuffle_pair_prefix(rng, members, target, m)
    gcount[:] = 0
    gsum[:, :] = 0.0
    gsumsq[:, :] = 0.0
    _shift_group(groups, 0, xc, i, 1, params)
    _shift_group(groups, 1, xc, j, 1, params)
    a0 = params.a0
    seq_forced = forced and n_scans < 0
    log_q = 0.0
    for t in range(m):
        p = members[t]
        w0 = _group_weight(groups, 0, xc, p, seat, a0)
        w1 = _group_weight(groups, 1, xc, p, seat, a0)
        g, log_p = _choose(rng, w0, w1, target[t] if seq_forced else -1)
        log_q += log_p
        side[t] = g
        _shift_group(groups, g, xc, p, 1, params)
    if n_scans < 0:
        return log_q
    for scan in range(n_scans + 1):
        last = scan == n_scans
        log_q = 0.0
        for t in range(m):
            p = members[t]
            g = side[t]
            n_g = gcount[g]
            big_l = loo_log_ratio(
                xc,
                p,
                g,
                n_g,
                gsum,
                gsumsq,
                groups[3],
                groups[4],
                groups[5],
                params.kappa0,
                params.b0,
            )
            w_own = seat[n_g - 1] - 0.5 * groups[4][g] - (a0 + 0.5 * (n_g - 1)) * big_l
            w_other = _group_weight(groups, 1 - g, xc, p, seat, a0)
            forced_g = target[t] if (forced and last) else -1
            if g == 0:
                new, log_p = _choose(rng, w_own, w_other, forced_g)
            else:
                new, log_p = _choose(rng, w_other, w_own, forced_g)
            log_q += log_p
            if new != g:
                _shift_group(groups, g, xc, p, -1, params)
                _shift_group(groups, new, xc, p, 1, params)
                side[t] = new
    return log_q


@numba.njit(**NJIT_KWARGS)
def diag_split_merge_moves(
    rng: np.random.Generator,
    xc: np.ndarray,
    state: DiagState,
    params: DiagParams,
    n_moves: int,
    n_scans: int,
    seat: np.ndarray,
    ratio_power: float,
    proposal_weight: float,
) -> tuple[int, int, int, int]:
    """Run ``n_moves`` split-merge proposals in place; return the four counts.

    ``seat`` is ``r log n + c(n)`` for ``n = 0..N`` (column 0 of the sweep's
    ``by_size`` table). ``n_scans = -1`` builds proposals by sequential
    allocation alone (SAMS, the default move set), ``t >= 0`` adds ``t``
    intermediate and one final restricted scan. The move is exact only with
    ``ratio_power == params.power`` and ``proposal_weight == 1``; other values
    let the tests show that a wrong acceptance ratio is detected.
    """
    n, d = xc.shape
    if n < 2 or n_moves <= 0:
        return 0, 0, 0, 0
    labels = state.labels
    head = np.full(state.counts.shape[0], -1, dtype=np.int64)
    nxt = np.full(n, -1, dtype=np.int64)
    for p in range(n - 1, -1, -1):
        nxt[p] = head[labels[p]]
        head[labels[p]] = p
    members = np.empty(n, dtype=np.int64)
    side = np.empty(n, dtype=np.int64)
    target = np.empty(n, dtype=np.int64)
    groups = (
        np.zeros(2, dtype=np.int64),
        np.zeros((2, d)),
        np.zeros((2, d)),
        np.ones((2, d)),
        np.zeros(2),
        np.zeros((2, d)),
        np.zeros((2, d)),
    )
    gcount, gsum, gsumsq, gbn, glogb, gmean, ghinv = groups
    msum = np.empty(d)
    msumsq = np.empty(d)
    kappa0, a0, logb0 = params.kappa0, params.a0, params.logb0
    n_split = n_split_acc = n_merge = n_merge_acc = 0
    for _ in range(n_moves):
        i, j = _draw_pair(rng, state, head, nxt, n, False)
        si = labels[i]
        sj = labels[j]
        m = _gather_members(head, nxt, si, sj, i, j, members, target)
        merge = si != sj
        log_q = _launch(
            rng, xc, i, j, members, m, side, target, merge, n_scans, groups, params, seat
        )
        if not merge:
            n_split += 1
            n0 = gcount[0]
            n1 = gcount[1]
            log_a = (
                params.log_alpha
                + ratio_power * (math.lgamma(n0) + math.lgamma(n1) - math.lgamma(n0 + n1))
                + diag_log_marginal(n0, glogb[0], d, kappa0, a0, logb0)
                + diag_log_marginal(n1, glogb[1], d, kappa0, a0, logb0)
                - diag_log_marginal(n0 + n1, state.logb[sj], d, kappa0, a0, logb0)
                - proposal_weight * log_q
            )
            if log_a >= 0.0 or math.log(rng.random()) < log_a:
                n_split_acc += 1
                new = state.order[state.k[0]]
                open_slot(state, new)
                for g in range(2):
                    slot = new if g == 0 else sj
                    state.counts[slot] = gcount[g]
                    state.sums[slot, :] = gsum[g]
                    state.sumsq[slot, :] = gsumsq[g]
                    state.bn[slot, :] = gbn[g]
                    state.logb[slot] = glogb[g]
                    state.mean[slot, :] = gmean[g]
                    state.hinv[slot, :] = ghinv[g]
                labels[i] = new
                for t in range(m):
                    if side[t] == 0:
                        labels[members[t]] = new
                members[m] = i
                members[m + 1] = j
                _relist(head, nxt, new, labels, members, m + 2)
                _relist(head, nxt, sj, labels, members, m + 2)
                if grow_if_full(state):
                    grown = np.full(state.counts.shape[0], -1, dtype=np.int64)
                    grown[: head.shape[0]] = head
                    head = grown
        else:
            n_merge += 1
            ni = state.counts[si]
            nj = state.counts[sj]
            for a in range(d):
                msum[a] = state.sums[si, a] + state.sums[sj, a]
                msumsq[a] = state.sumsq[si, a] + state.sumsq[sj, a]
            # The merged cluster's rates, in group slot 0 (the launch is finished).
            gcount[0] = ni + nj
            gsum[0, :] = msum
            gsumsq[0, :] = msumsq
            refresh_at(gcount, gsum, gsumsq, gbn, glogb, gmean, ghinv, 0, kappa0, params.b0)
            log_a = (
                -params.log_alpha
                + ratio_power * (math.lgamma(ni + nj) - math.lgamma(ni) - math.lgamma(nj))
                + diag_log_marginal(ni + nj, glogb[0], d, kappa0, a0, logb0)
                - diag_log_marginal(ni, state.logb[si], d, kappa0, a0, logb0)
                - diag_log_marginal(nj, state.logb[sj], d, kappa0, a0, logb0)
                + proposal_weight * log_q
            )
            if log_a >= 0.0 or math.log(rng.random()) < log_a:
                n_merge_acc += 1
                state.counts[sj] = ni + nj
                state.sums[sj, :] = msum
                state.sumsq[sj, :] = msumsq
                state.bn[sj, :] = gbn[0]
                state.logb[sj] = glogb[0]
                state.mean[sj, :] = gmean[0]
                state.hinv[sj, :] = ghinv[0]
                free_slot(state, si)
                labels[i] = sj
                for t in range(m):
                    labels[members[t]] = sj
                members[m] = i
                members[m + 1] = j
                _relist(head, nxt, sj, labels, members, m + 2)
                head[si] = -1
    return n_split, n_split_acc, n_merge, n_merge_acc
