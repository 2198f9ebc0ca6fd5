"""Split-merge moves (SAMS and restricted Gibbs) for the diagonal-covariance family.

The move of :mod:`pymc_pcrp._kernels.splitmerge` (Jain & Neal 2004; Dahl
2005) with the diagonal family's predictive and marginal likelihood: two
points ``i`` and ``j`` are drawn, the other members ``S`` of their cluster(s)
are seated in two groups anchored by ``i`` and ``j`` by sequential
allocation, optionally followed by restricted Gibbs scans, and the split or
merge is accepted with the Metropolis-Hastings ratio of that module's
docstring. The pair rule, member lists, prior ratio, test and relabelling are
the shared helpers of :mod:`pymc_pcrp._kernels.moves`; only the group
statistics and the weights differ.

A group is held in two-slot arrays laid out like the slots of
:class:`~pymc_pcrp._kernels.diag_state.DiagState` (``gcount``, ``gsum``,
``gsumsq``, ``gbn``, ``glogb``, ``gmean``, ``ghinv``), updated by the state's
own :func:`~pymc_pcrp._kernels.diag_state.refresh_at`.
"""

import math

import numba
import numpy as np

from pymc_pcrp._kernels import moves
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
def _put_group(state: DiagState, slot: int, groups, g: int) -> None:
    """Write group ``g`` (statistics and caches) into ``slot`` of ``state``."""
    gcount, gsum, gsumsq, gbn, glogb, gmean, ghinv = groups
    moves.put_group(state, slot, g, gcount, gsum, gsumsq)
    state.bn[slot] = gbn[g]
    state.logb[slot] = glogb[g]
    state.mean[slot] = gmean[g]
    state.hinv[slot] = ghinv[g]


@numba.njit(**NJIT_KWARGS)
def _allocate(
    rng: np.random.Generator, xc: np.ndarray, seats: tuple, forced: bool, groups, work: tuple
) -> float:
    """Sequential allocation of ``S`` (see :func:`pymc_pcrp._kernels.allocation._launch`)."""
    members, m, side, target = seats
    params, seat = work
    a0 = params.a0
    log_q = 0.0
    for t in range(m):
        p = members[t]
        w0 = _group_weight(groups, 0, xc, p, seat, a0)
        w1 = _group_weight(groups, 1, xc, p, seat, a0)
        g, log_p = _choose(rng, w0, w1, target[t] if forced else -1)
        log_q += log_p
        side[t] = g
        _shift_group(groups, g, xc, p, 1, params)
    return log_q


@numba.njit(**NJIT_KWARGS)
def _scan(
    rng: np.random.Generator, xc: np.ndarray, seats: tuple, forced: bool, groups, work: tuple
) -> float:
    """One restricted Gibbs scan over ``S`` (the own group scored with the point left out)."""
    members, m, side, target = seats
    params, seat = work
    gcount, gsum, gsumsq = groups[0], groups[1], groups[2]
    a0 = params.a0
    log_q = 0.0
    for t in range(m):
        p = members[t]
        g = side[t]
        n_g = gcount[g]
        big_l = loo_log_ratio(
            xc, p, g, n_g, gsum, gsumsq, groups[3], groups[4], groups[5], params.kappa0, params.b0
        )
        w_own = seat[n_g - 1] - 0.5 * groups[4][g] - (a0 + 0.5 * (n_g - 1)) * big_l
        w_other = _group_weight(groups, 1 - g, xc, p, seat, a0)
        forced_g = target[t] if forced else -1
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
def _launch(
    rng: np.random.Generator,
    xc: np.ndarray,
    i: int,
    j: int,
    seats: tuple,
    forced: bool,
    n_scans: int,
    groups,
    work: tuple,
) -> float:
    """Build one proposal (see :func:`pymc_pcrp._kernels.allocation._launch`); return log q.

    ``work`` is ``(params, seat)``.
    """
    members, m, _, target = seats
    gcount, gsum, gsumsq = groups[0], groups[1], groups[2]
    shuffle_pair_prefix(rng, members, target, m)
    gcount[:] = 0
    gsum[:, :] = 0.0
    gsumsq[:, :] = 0.0
    _shift_group(groups, 0, xc, i, 1, work[0])
    _shift_group(groups, 1, xc, j, 1, work[0])
    # The skeleton of allocation._launch. (A shared skeleton taking the two
    # functions as arguments would stop numba from caching every caller.)
    if n_scans < 0:
        return _allocate(rng, xc, seats, forced, groups, work)
    _allocate(rng, xc, seats, False, groups, work)
    for _scan_index in range(n_scans):
        _scan(rng, xc, seats, False, groups, work)
    return _scan(rng, xc, seats, forced, groups, work)


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
    head, nxt, members, side, target = moves.move_workspace(state)
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
    kappa0, a0, logb0 = params.kappa0, params.a0, params.logb0
    n_split = n_split_acc = n_merge = n_merge_acc = 0
    for _ in range(n_moves):
        i, j = moves.draw_pair(rng, state, head, nxt, n, False)
        si = labels[i]
        sj = labels[j]
        m = moves.gather_members(head, nxt, si, sj, i, j, members, target)
        merge = si != sj
        seats = (members, m, side, target)
        log_q = _launch(rng, xc, i, j, seats, merge, n_scans, groups, (params, seat))
        if not merge:
            n_split += 1
            n0 = gcount[0]
            n1 = gcount[1]
            lm = (
                diag_log_marginal(n0, glogb[0], d, kappa0, a0, logb0),
                diag_log_marginal(n1, glogb[1], d, kappa0, a0, logb0),
                diag_log_marginal(n0 + n1, state.logb[sj], d, kappa0, a0, logb0),
            )
            log_a = moves.split_log_ratio(
                params.log_alpha, ratio_power, n0, n1, lm, proposal_weight * log_q
            )
            if moves.accepts(rng, log_a):
                n_split_acc += 1
                new = moves.split_labels(state, sj, i, j, members, m, side, head, nxt)
                _put_group(state, new, groups, 0)
                _put_group(state, sj, groups, 1)
                grow_if_full(state)
                head = moves.cover_slots(head, state)
        else:
            n_merge += 1
            ni = state.counts[si]
            nj = state.counts[sj]
            # The merged cluster's rates, in group slot 0 (the launch is finished).
            moves.merge_into_group(state, si, sj, gcount, gsum, gsumsq)
            refresh_at(gcount, gsum, gsumsq, gbn, glogb, gmean, ghinv, 0, kappa0, params.b0)
            lm = (
                diag_log_marginal(ni + nj, glogb[0], d, kappa0, a0, logb0),
                diag_log_marginal(ni, state.logb[si], d, kappa0, a0, logb0),
                diag_log_marginal(nj, state.logb[sj], d, kappa0, a0, logb0),
            )
            log_a = moves.merge_log_ratio(
                params.log_alpha, ratio_power, ni, nj, lm, proposal_weight * log_q
            )
            if moves.accepts(rng, log_a):
                n_merge_acc += 1
                _put_group(state, sj, groups, 0)
                moves.merge_labels(state, si, sj, i, j, members, m, head, nxt)
    return n_split, n_split_acc, n_merge, n_merge_acc
