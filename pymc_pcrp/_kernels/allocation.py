r"""Proposal building for the split-merge move: the launch state and restricted scans.

The split-merge move of :mod:`pymc_pcrp._kernels.splitmerge` works on two
*groups*, each anchored by one of the two chosen points, held in small two-slot
arrays (``gcount``, ``gsum``, ``gsumsq``, ``gchol``, ``glogdet``) laid out like
the cluster arrays of :class:`~pymc_pcrp._kernels.state.SweepState`. This module
seats the other points ``S`` of the clusters involved in those two groups:

- :func:`~pymc_pcrp._kernels.draws.shuffle_pair_prefix` puts ``S`` in a uniformly random order;
- :func:`_sequential_allocation` seats ``S`` one point after another, each in
  group ``g`` with probability proportional to ``n_g^r`` times its NIW
  predictive given the points seated so far (Dahl, 2005);
- :func:`_restricted_scan` re-seats each point of ``S`` from its restricted
  Gibbs conditional (only the two groups allowed);
- :func:`launch_proposal` chains the three into the move's proposal and returns the
  log probability of the final choices (drawn for a split, or, with
  ``forced``, the current partition's choices scored for a merge).

Both allocation functions return the log probability of the choices they made,
which is the proposal term of the Metropolis-Hastings test. Every weight is
``r log n + log p(x | group)``; :func:`seat_constants` tabulates its
size-dependent part. The maths is in the docstring of
:mod:`pymc_pcrp._kernels.splitmerge`.
"""

import math

import numba
import numpy as np

from pymc_pcrp._kernels._config import NJIT_KWARGS
from pymc_pcrp._kernels.draws import shuffle_pair_prefix
from pymc_pcrp._kernels.moves import merge_bound
from pymc_pcrp._kernels.niw import log_predictive, predictive_constants
from pymc_pcrp._kernels.state import factorise, shift_point

# The helpers below run once or more per point and scan. They index the group
# arrays directly, never through views, and take the prior's scalars rather
# than ``NIWParams`` (which holds arrays): array views and array-holding
# arguments cost atomic reference counting at every call. Numba-level inlining
# (``inline="always"``) of the weight helpers was measured slower than leaving
# the calls to LLVM; the distance :func:`_group_norm2` alone is inlined (restricted
# scans measured 15-20% faster per proposal, benchmarks/bench_proposal_cost.py), and
# the restricted scan writes out the other group's weight rather than calling a helper
# with the group arrays (one restricted scan per proposal measured about 12% faster).
# Points enter and leave a group through the sweep's own slot operations
# (:func:`~pymc_pcrp._kernels.state.shift_point`) on the two-slot group arrays.


@numba.njit(inline="always", **NJIT_KWARGS)
def _group_norm2(
    g: int,
    xc: np.ndarray,
    p: int,
    gcount: np.ndarray,
    gsum: np.ndarray,
    gchol: np.ndarray,
    kappa0: float,
    y: np.ndarray,
) -> float:
    """``||L_g^{-1}(x_p - mu_g)||^2`` for the factor ``L_g`` and mean ``mu_g`` of group ``g``.

    ``y`` is scratch space of length ``D`` (used when ``D > 2``; ``D = 1`` and
    ``D = 2`` are written out, with the same operations as the loop). Inlined
    by numba (``inline="always"``) into the per-point loops below.
    """
    d = xc.shape[1]
    inv_kappa = 1.0 / (kappa0 + gcount[g])
    if d == 1:
        t0 = (xc[p, 0] - gsum[g, 0] * inv_kappa) / gchol[g, 0, 0]
        u = t0 * t0
    elif d == 2:
        t0 = (xc[p, 0] - gsum[g, 0] * inv_kappa) / gchol[g, 0, 0]
        t1 = (xc[p, 1] - gsum[g, 1] * inv_kappa - gchol[g, 1, 0] * t0) / gchol[g, 1, 1]
        u = t0 * t0 + t1 * t1
    else:
        u = 0.0
        for a in range(d):
            t = xc[p, a] - gsum[g, a] * inv_kappa
            for b in range(a):
                t -= gchol[g, a, b] * y[b]
            t /= gchol[g, a, a]
            y[a] = t
            u += t * t
    return u


@numba.njit(**NJIT_KWARGS)
def seat_constants(n_max: int, d: int, power: float, kappa0: float, nu0: float) -> np.ndarray:
    """``r log n + const[n]`` for ``n = 0..n_max`` (``const`` of ``predictive_constants``).

    Reading the pCRP weight and the size part of the predictive from this table
    spares two logarithms per group and point visit.
    """
    out = predictive_constants(n_max, d, kappa0, nu0)
    for n in range(1, n_max + 1):
        out[n] += power * math.log(n)
    return out


@numba.njit(**NJIT_KWARGS)
def choose_group(rng: np.random.Generator, w0: float, w1: float, forced: int) -> tuple[int, float]:
    """Pick group 0 or 1 with probabilities proportional to ``exp(w0)`` and ``exp(w1)``.

    With ``forced`` equal to 0 or 1 that group is taken instead of a draw.
    Returns the group and the log of its probability.
    """
    delta = w1 - w0
    e = math.exp(-abs(delta))  # odds of the less likely group, in (0, 1]
    top = 1 if delta >= 0.0 else 0
    if forced < 0:
        # P(top) = 1 / (1 + e)
        g = top if rng.random() * (1.0 + e) < 1.0 else 1 - top
    else:
        g = forced
    log_p = -math.log1p(e)
    if g != top:
        log_p -= abs(delta)
    return g, log_p


@numba.njit(**NJIT_KWARGS)
def _sequential_allocation(
    rng: np.random.Generator,
    xc: np.ndarray,
    seats: tuple,
    forced: bool,
    groups: tuple,
    work: tuple,
    floor: float,
) -> float:
    """Seat ``members[:m]`` one after another in the two groups (the launch's start).

    The groups must hold their anchors only. Each point joins group ``g`` with
    probability proportional to ``n_g^r`` times its predictive given the points
    seated so far, or, when ``forced`` is true, joins group ``target[t]``;
    ``side`` receives the groups. Returns the log probability of the choices
    made (the proposal probability of a SAMS move). ``seats``, ``groups`` and
    ``work`` are the tuples of :func:`launch_proposal`.

    The log probability only falls as points are seated, so once it is below
    ``floor`` the rest cannot lift it back: the allocation stops there and
    returns that partial value (below ``floor``; the groups are then left
    half-built). ``-inf`` never stops.
    """
    # Everything per point is written out here (or inlined by numba) rather than
    # called: helper calls that take arrays pay reference counting each time, which
    # was most of the cost of a visit (about 200 ns at D = 2, against 36 ns per point
    # in the sweep).
    members, m, side, target = seats
    gcount, gsum, gsumsq, gchol, glogdet = groups
    params, seat_const, v, y, _ = work
    kappa0 = params.kappa0
    nu0 = params.nu0
    d = xc.shape[1]
    log_q = 0.0
    lw = np.empty(2)  # log(1 + kappa_n u / (kappa_n + 1)) of each group
    w = np.empty(2)  # log weight of each group
    for t in range(m):
        p = members[t]
        for g in range(2):
            n_g = gcount[g]
            kappa_n = kappa0 + n_g
            u = _group_norm2(g, xc, p, gcount, gsum, gchol, kappa0, y)
            gain = math.log1p(u * kappa_n / (kappa_n + 1.0))
            lw[g] = gain
            w[g] = seat_const[n_g] - 0.5 * glogdet[g] - 0.5 * (nu0 + n_g + 1.0) * gain
        # choose_group, written out
        delta = w[1] - w[0]
        e = math.exp(-abs(delta))
        top = 1 if delta >= 0.0 else 0
        if forced:
            g = target[t]
        else:
            g = top if rng.random() * (1.0 + e) < 1.0 else 1 - top
        log_q -= math.log1p(e)
        if g != top:
            log_q -= abs(delta)
        if log_q < floor:
            return log_q
        side[t] = g
        # Add p to group g: Psi gains v v^T with v = sqrt(kappa_n / (kappa_n + 1)) (x - mu_n),
        # and log|Psi| gains the log term its weight just used (determinant lemma).
        kappa_n = kappa0 + gcount[g]
        c = math.sqrt(kappa_n / (kappa_n + 1.0))
        for a in range(d):
            v[a] = c * (xc[p, a] - gsum[g, a] / kappa_n)
        for k in range(d):
            lkk = gchol[g, k, k]
            rr = math.sqrt(lkk * lkk + v[k] * v[k])
            cc = rr / lkk
            ss = v[k] / lkk
            gchol[g, k, k] = rr
            for i in range(k + 1, d):
                gchol[g, i, k] = (gchol[g, i, k] + ss * v[i]) / cc
                v[i] = cc * v[i] - ss * gchol[g, i, k]
        if d > 0:
            glogdet[g] += lw[g]
        gcount[g] += 1
        for a in range(d):
            gsum[g, a] += xc[p, a]
            for b in range(d):
                gsumsq[g, a, b] += xc[p, a] * xc[p, b]
    return log_q


@numba.njit(**NJIT_KWARGS)
def _restricted_scan(
    rng: np.random.Generator, xc: np.ndarray, seats: tuple, forced: bool, groups: tuple, work: tuple
) -> float:
    """One restricted Gibbs scan over ``members[:m]``, in that order.

    ``side[t]`` is the group (0 or 1) of ``members[t]`` and is updated: each
    point is re-seated by a draw from its restricted conditional given all the
    other points, or, when ``forced`` is true, put in group ``target[t]``.
    Returns the log probability, under the restricted conditionals, of the
    choices made. ``seats``, ``groups`` and ``work`` are the tuples of :func:`launch_proposal`.
    """
    members, m, side, target = seats
    gcount, gsum, _, gchol, glogdet = groups
    params, seat_const, v, y, buf = work
    log_q = 0.0
    kappa0 = params.kappa0
    nu0 = params.nu0
    w = np.empty(2)  # the two groups' log weights when the point is taken out
    for t in range(m):
        p = members[t]
        g = side[t]
        forced_g = target[t] if forced else -1
        # Leave-one-out weight of the point's own group without taking it out:
        # Psi_{n-1} = Psi_n - c (x - mu_n)(x - mu_n)^T with c = kappa_n / kappa_{n-1},
        # so |Psi_{n-1}| = |Psi_n| (1 - c u) (determinant lemma) and the distance
        # to the leave-one-out mean is c^2 u / (1 - c u) (Sherman-Morrison).
        # The point moves (two rank-one updates) only if it changes group.
        n_g = gcount[g]
        u = _group_norm2(g, xc, p, gcount, gsum, gchol, kappa0, y)
        c = (kappa0 + n_g) / (kappa0 + n_g - 1.0)
        shrink = 1.0 - c * u
        if shrink > 1e-10:
            w_own = log_predictive(
                n_g - 1,
                c * c * u / shrink,
                glogdet[g] + math.log(shrink),
                kappa0,
                nu0,
                seat_const[n_g - 1],
            )
            # the other group's restricted-Gibbs log weight (it does not hold p)
            o = 1 - g
            n_o = gcount[o]
            u_o = _group_norm2(o, xc, p, gcount, gsum, gchol, kappa0, y)
            w_other = log_predictive(n_o, u_o, glogdet[o], kappa0, nu0, seat_const[n_o])
            if g == 0:
                new, log_p = choose_group(rng, w_own, w_other, forced_g)
            else:
                new, log_p = choose_group(rng, w_other, w_own, forced_g)
            if new != g:
                shift_point(groups, g, xc, p, -1, params, v, buf)
                shift_point(groups, new, xc, p, 1, params, v, buf)
        else:
            # The shortcut is numerically unsafe: take the point out explicitly.
            shift_point(groups, g, xc, p, -1, params, v, buf)
            for h in range(2):
                n_h = gcount[h]
                u_h = _group_norm2(h, xc, p, gcount, gsum, gchol, kappa0, y)
                w[h] = log_predictive(n_h, u_h, glogdet[h], kappa0, nu0, seat_const[n_h])
            new, log_p = choose_group(rng, w[0], w[1], forced_g)
            shift_point(groups, new, xc, p, 1, params, v, buf)
        side[t] = new
        log_q += log_p
    return log_q


@numba.njit(**NJIT_KWARGS)
def launch_proposal(
    rng: np.random.Generator, xc: np.ndarray, proposal: tuple, groups: tuple, work: tuple
) -> tuple[float, float]:
    """Build one proposal over ``S`` from the anchors ``i`` (group 0) and ``j`` (group 1).

    ``proposal`` is ``(i, j, seats, forced, n_restricted_scans, bound)``.
    ``seats`` is ``(members, m, side, target)``: ``S`` is ``members[:m]``,
    ``side`` receives the groups and ``target`` holds the current partition's
    (for a merge). The members (and ``target`` with them) are put in a
    uniformly random order, the groups ``(gcount, gsum, gsumsq, gchol,
    glogdet)`` are reset to their anchors, and ``S`` is seated by sequential
    allocation (``work`` is ``(params, seat_const, v, y, buf)``). With
    ``n_restricted_scans < 0`` (SAMS) that allocation is the proposal;
    otherwise ``n_restricted_scans`` intermediate restricted scans follow, then
    a final one that is the proposal. The proposal step draws the groups, or,
    when ``forced`` is true (a merge), puts ``members[t]`` in group
    ``target[t]``. ``side`` and the group arrays hold the proposed groups.

    Returns ``(log_q, log_u)``: the log probability of the proposal step's
    choices, and the log of the uniform of the move's Metropolis-Hastings test
    when the launch drew it (``nan`` otherwise).

    ``bound = (base, weight)`` lets a SAMS merge stop early: the merge is
    accepted when ``log_u < weight * log_q + base`` (``base`` is the rest of its
    log ratio), and with ``base < 0`` the launch draws ``log_u`` right after the
    shuffle and stops scoring once the merge can no longer pass
    (:func:`~pymc_pcrp._kernels.moves.merge_bound`): the test's outcome and the
    random stream are those of the full computation, and a merge far from
    acceptance, such as one of two well separated clusters, costs almost
    nothing. Pass ``weight = 0`` for no bound.
    """
    i, j, seats, forced, n_restricted_scans, bound = proposal
    members, m, _, target = seats
    gcount, gsum, gsumsq, gchol, glogdet = groups
    params, _, _, _, buf = work
    d = xc.shape[1]
    shuffle_pair_prefix(rng, members, target, m)
    gcount[:] = 1
    for a in range(d):
        gsum[0, a] = xc[i, a]
        gsum[1, a] = xc[j, a]
        for b in range(d):
            gsumsq[0, a, b] = xc[i, a] * xc[i, b]
            gsumsq[1, a, b] = xc[j, a] * xc[j, b]
    for g in range(2):
        glogdet[g] = factorise(1, gsum[g], gsumsq[g], params, buf, gchol[g])
    sams = n_restricted_scans < 0
    log_u, floor = merge_bound(rng, forced and sams, bound)
    # SAMS (n_restricted_scans < 0): the allocation is the proposal step.
    log_q = _sequential_allocation(rng, xc, seats, forced and sams, groups, work, floor)
    for t in range(n_restricted_scans + 1):
        log_q = _restricted_scan(rng, xc, seats, forced and t == n_restricted_scans, groups, work)
    return log_q, log_u
