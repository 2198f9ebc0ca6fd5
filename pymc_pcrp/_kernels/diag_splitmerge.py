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
from pymc_pcrp._kernels.allocation import choose_group
from pymc_pcrp._kernels.diag_state import (
    DiagParams,
    DiagState,
    grow_if_full,
    refresh_at,
    shift_at,
)
from pymc_pcrp._kernels.diag_sweep import loo_log_ratio, seat_log_weight
from pymc_pcrp._kernels.draws import shuffle_pair_prefix

__all__ = ["diag_split_merge_moves"]


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
def _seat(
    rng: np.random.Generator,
    xc: np.ndarray,
    seats: tuple,
    forced: bool,
    groups,
    work: tuple,
    scan: bool,
    floor: float,
) -> float:
    """Seat ``S`` in the two groups; return the log probability of the choices made.

    ``seats`` is ``(members, m, side, target)``. Without ``scan``, sequential
    allocation: the groups hold their anchors only and each point joins one given
    the points seated before it. With ``scan``, one restricted Gibbs scan: each
    point is re-seated given all the others (its own group scored with the point
    left out). ``forced`` puts ``members[t]`` in group ``target[t]`` instead of
    drawing it (see :func:`pymc_pcrp._kernels.allocation.launch_proposal`). Sequential
    allocation stops as soon as its log probability falls below ``floor``
    (``-inf`` never stops), as in
    :func:`pymc_pcrp._kernels.allocation._sequential_allocation`.
    """
    members, m, side, target = seats
    params, seat = work
    gcount, gsum, gsumsq = groups[0], groups[1], groups[2]
    a0 = params.a0
    log_q = 0.0
    for t in range(m):
        p = members[t]
        forced_g = target[t] if forced else -1
        if not scan:
            w0 = _group_weight(groups, 0, xc, p, seat, a0)
            w1 = _group_weight(groups, 1, xc, p, seat, a0)
            g, log_p = choose_group(rng, w0, w1, forced_g)
            log_q += log_p
            if log_q < floor:
                return log_q
            side[t] = g
            _shift_group(groups, g, xc, p, 1, params)
            continue
        g = side[t]
        n_g = gcount[g]
        big_l = loo_log_ratio(
            xc, p, g, n_g, gsum, gsumsq, groups[3], groups[4], groups[5], params.kappa0, params.b0
        )
        w_own = seat[n_g - 1] - 0.5 * groups[4][g] - (a0 + 0.5 * (n_g - 1)) * big_l
        w_other = _group_weight(groups, 1 - g, xc, p, seat, a0)
        if g == 0:
            new, log_p = choose_group(rng, w_own, w_other, forced_g)
        else:
            new, log_p = choose_group(rng, w_other, w_own, forced_g)
        log_q += log_p
        if new != g:
            _shift_group(groups, g, xc, p, -1, params)
            _shift_group(groups, new, xc, p, 1, params)
            side[t] = new
    return log_q


@numba.njit(**NJIT_KWARGS)
def launch_proposal(
    rng: np.random.Generator, xc: np.ndarray, proposal: tuple, groups, work: tuple
) -> tuple[float, float]:
    """Build one proposal (as ``allocation.launch_proposal``); return log q and log u.

    ``proposal`` is ``(i, j, seats, forced, n_scans, bound)`` and ``work`` is
    ``(params, seat)``; ``bound = (base, weight)`` lets a SAMS merge draw its
    test's uniform after the shuffle and stop once it must fail, exactly as there.
    """
    i, j, seats, forced, n_scans, bound = proposal
    members, m, _, target = seats
    gcount, gsum, gsumsq = groups[0], groups[1], groups[2]
    shuffle_pair_prefix(rng, members, target, m)
    gcount[:] = 0
    gsum[:, :] = 0.0
    gsumsq[:, :] = 0.0
    _shift_group(groups, 0, xc, i, 1, work[0])
    _shift_group(groups, 1, xc, j, 1, work[0])
    sams = n_scans < 0
    log_u, floor = moves.merge_bound(rng, forced and sams, bound)
    # As in allocation.launch_proposal: the allocation, then n_scans + 1 scans (none for SAMS).
    log_q = _seat(rng, xc, seats, forced and sams, groups, work, False, floor)
    for t in range(n_scans + 1):
        log_q = _seat(rng, xc, seats, forced and t == n_scans, groups, work, True, -math.inf)
    return log_q, log_u


@numba.njit(**NJIT_KWARGS)
def group_workspace(d: int) -> tuple:
    """Allocate the two-slot group arrays of a move.

    ``(gcount, gsum, gsumsq, gbn, glogb, gmean, ghinv)``, laid out like a state's slots.
    """
    return (
        np.zeros(2, dtype=np.int64),
        np.zeros((2, d)),
        np.zeros((2, d)),
        np.ones((2, d)),
        np.zeros(2),
        np.zeros((2, d)),
        np.zeros((2, d)),
    )


@numba.njit(**NJIT_KWARGS)
def diag_split_merge_moves(
    rng: np.random.Generator,
    xc: np.ndarray,
    state: DiagState,
    params: DiagParams,
    n_moves: int,
    n_scans: int,
    seat: np.ndarray,
    pairs: tuple,
) -> tuple[int, int, int, int]:
    """Run ``n_moves`` split-merge proposals in place; return the four counts.

    ``seat`` is ``r log n + c(n)`` for ``n = 0..N`` (column 0 of the sweep's
    ``by_size`` table). ``n_scans = -1`` builds proposals by sequential
    allocation alone (SAMS, the default move set), ``t >= 0`` adds ``t``
    intermediate and one final restricted scan. ``pairs`` is
    ``(pair_rule, small)``, how each move draws its pair of points, as in
    :func:`~pymc_pcrp._kernels.splitmerge.run_split_merge` (the ratio of the
    pair's probabilities enters the test).
    """
    n, d = xc.shape
    if n < 2 or n_moves <= 0 or moves.nothing_to_pair(state, pairs):
        return 0, 0, 0, 0
    labels = state.labels
    head, nxt, members, side, target = moves.move_workspace(state)
    groups = group_workspace(d)
    gcount, gsum, gsumsq, gbn, glogb, gmean, ghinv = groups
    kappa0 = params.kappa0
    n_split = n_split_acc = n_merge = n_merge_acc = 0
    for _ in range(n_moves):
        i, j, k_now = moves.draw_move(rng, state, (head, nxt), pairs)
        if j < 0:
            continue  # no move (see moves.draw_move)
        si = labels[i]
        sj = labels[j]
        m = moves.gather_members(head, nxt, si, sj, i, j, members, target)
        merge = si != sj
        seats = (members, m, side, target)
        base = 0.0
        if merge:
            # The rest of the merge's log ratio, known before the launch scores
            # log q (see allocation.launch_proposal); the union's rates in group slot 0.
            sizes = (state.counts[si], state.counts[sj])
            moves.merge_into_group(state, si, sj, gcount, gsum, gsumsq)
            refresh_at(gcount, gsum, gsumsq, gbn, glogb, gmean, ghinv, 0, kappa0, params.b0)
            stats = (state.logb[si], state.logb[sj], glogb[0])
            base = -moves.split_gain(params, params.power, sizes, stats, d)
            base += moves.selection_log_ratio(pairs[0], k_now, sizes, False)
        bound = (base, 1.0 if merge else 0.0)
        proposal = (i, j, seats, merge, n_scans, bound)
        log_q, log_u = launch_proposal(rng, xc, proposal, groups, (params, seat))
        if not merge:
            n_split += 1
            stats = (glogb[0], glogb[1], state.logb[sj])
            sizes = (gcount[0], gcount[1])
            gain = moves.split_gain(params, params.power, sizes, stats, d)
            gain += moves.selection_log_ratio(pairs[0], k_now, sizes, True)
            if moves.accepts(rng, gain - log_q):
                n_split_acc += 1
                new = moves.split_labels(state, sj, i, j, members, m, side, head, nxt)
                _put_group(state, new, groups, 0)
                _put_group(state, sj, groups, 1)
                grow_if_full(state)
                head = moves.cover_slots(head, state)
        else:
            n_merge += 1
            if moves.merge_accepted(rng, log_q, log_u, base, 1.0):
                n_merge_acc += 1
                # The merged cluster's rates, back in group slot 0 (the launch reset it).
                moves.merge_into_group(state, si, sj, gcount, gsum, gsumsq)
                refresh_at(gcount, gsum, gsumsq, gbn, glogb, gmean, ghinv, 0, kappa0, params.b0)
                _put_group(state, sj, groups, 0)
                moves.merge_labels(state, si, sj, i, j, members, m, head, nxt)
    return n_split, n_split_acc, n_merge, n_merge_acc
