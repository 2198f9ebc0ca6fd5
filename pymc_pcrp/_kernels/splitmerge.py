r"""Restricted-Gibbs split-merge moves for the pCRP-NIW mixture, in numba.

The collapsed Gibbs sweep moves one point at a time, so it cannot split a large
cluster in two or merge two large clusters when every intermediate partition is
improbable. The split-merge move of Jain & Neal (2004) proposes such changes in
one step and corrects for the proposal with a Metropolis-Hastings test, so the
move leaves the target of the sweep exactly invariant:

.. math:: p(z \mid X) \propto \alpha^K \prod_k \Gamma(n_k)^r \prod_k m(X_k)

(design.md section 1, ``m`` the NIW marginal likelihood of section 3).

One move
--------
1. Two distinct points ``i`` and ``j`` are drawn uniformly. ``S`` is the set of
   the *other* points of the clusters holding ``i`` and ``j`` (one cluster if
   they share it). Two groups are formed: group 0 is anchored by ``i`` and
   group 1 by ``j``.
2. Launch state: the points of ``S`` are put in a uniformly random order and
   allocated one after another to group 0 or 1, each with probability
   proportional to ``n_g^r`` times the NIW posterior predictive of the point
   given the points already in group ``g`` (the sequential allocation of
   Dahl, 2005); then ``n_restricted_scans`` restricted Gibbs scans visit ``S``
   in the same order. A restricted scan re-seats point ``k`` in group ``g``
   with probability proportional to ``n_{g,-k}^r`` times the predictive of
   ``x_k`` given the rest of the group: the full conditional of the target when
   ``k`` may only join one of the two groups. Both groups always keep their
   anchor, so they never empty. The launch state depends only on ``i``, ``j``,
   ``S``, the data and fresh random numbers, never on how the current state
   divides ``S``; it therefore has the same distribution from the split and
   from the merged state, which is what makes the acceptance ratio below exact
   (the argument of Jain & Neal).

   Jain & Neal start the launch from a uniformly random split instead. Any
   start with the property above is valid. With thousands of points in a
   cluster a random start leaves the two groups statistically identical and a
   few restricted scans cannot separate them: on two well separated clusters
   of 1,000 points started as one, none of 150 split proposals from a random
   start was accepted in 50 sweeps, while the sequential start split them in
   the first sweep.
3. *Split* (``i`` and ``j`` in the same cluster): one more restricted scan from
   the launch state gives the proposal ``z'``; ``q`` is the product of the
   probabilities of the choices that scan made. Then

   .. math:: \log a = \log\alpha + r\,[\log\Gamma(n_0) + \log\Gamma(n_1) - \log\Gamma(n_0+n_1)]
                     + \log m(X_0) + \log m(X_1) - \log m(X_0 \cup X_1) - \log q .

   *Merge* (different clusters ``A`` holding ``i`` and ``B`` holding ``j``):
   the proposal puts ``A`` and ``B`` together, with probability one. The
   reverse split would have to produce exactly ``A, B`` from a launch state
   drawn as in step 2, so ``q`` is the probability that a restricted scan from
   the launch state makes the choices of the current state:

   .. math:: \log a = -\log\alpha + r\,[\log\Gamma(n_A+n_B) - \log\Gamma(n_A) - \log\Gamma(n_B)]
                     + \log m(X_A \cup X_B) - \log m(X_A) - \log m(X_B) + \log q .

4. The proposal is accepted with probability ``min(1, exp(log a))``.

The prior ratio is that of the exchangeable pCRP joint ``alpha^K prod
Gamma(n_k)^r``: there is no sequential-seating factor, and for ``r = 1`` it is
the Dirichlet-process ratio of Jain & Neal.

Work and memory
---------------
Each call builds, in ``O(N)`` integer work, a linked list of the members of
every cluster and allocates its workspace once; the size constants of the
predictive are computed on demand, up to the largest pair of clusters met.
A move then costs ``O((t + 2) |S| D^2 + D^3)`` and nothing proportional to
``N``: sequential allocation, ``t`` intermediate and one final restricted
scan, then one fresh factorisation of each proposed cluster. A restricted scan
scores a point against its own group without taking it out (the determinant
lemma and the Sherman-Morrison formula give the leave-one-out weight from the
in-group distance), so the two rank-one Cholesky updates of a move between
groups are paid only when the point actually changes group. Measured at
N = 2,000 and D = 2, a point visit costs about as much as one point update of
:func:`~pymc_pcrp._kernels.sweep.gibbs_sweeps` with K = 2.

An accepted move writes the proposed clusters' statistics into the
:class:`~pymc_pcrp._kernels.state.SweepState` with freshly computed Cholesky
factors, so the state stays consistent for
:func:`~pymc_pcrp._kernels.sweep.gibbs_sweeps`.

An empty ``psi0`` (shape ``(0, 0)``, data of shape ``(N, 0)``) means no
likelihood: every ``m`` is one and the move targets the pCRP prior.

References
----------
S. Jain and R. M. Neal (2004), "A split-merge Markov chain Monte Carlo procedure
for the Dirichlet process mixture model", Journal of Computational and
Graphical Statistics 13(1), 158-182.

D. B. Dahl (2005), "Sequentially-allocated merge-split sampler for conjugate and
nonconjugate Dirichlet process mixture models", technical report, Texas A&M
University.
"""

import math

import numba
import numpy as np

from pymc_pcrp._kernels._config import NJIT_KWARGS
from pymc_pcrp._kernels.niw import (
    chol_rank_one_at,
    log_marginal_from_logdet,
    predictive_constants,
)
from pymc_pcrp._kernels.state import (
    NIWParams,
    SweepState,
    add_point,
    factorise,
    free_slot,
    open_slot,
    remove_point,
    shift_stats,
)

__all__ = ["split_merge_moves"]


# The helpers below run once or more per point and scan. They index the group
# arrays directly, never through views, and take the prior's scalars rather
# than ``NIWParams`` (which holds arrays): array views and array-holding
# arguments cost atomic reference counting at every call. Numba-level inlining
# (``inline="always"``) was measured slower than leaving the calls to LLVM.
# Points enter and leave a group through the sweep's own slot operations
# (:func:`~pymc_pcrp._kernels.state.add_point` and
# :func:`~pymc_pcrp._kernels.state.remove_point`) on the two-slot group arrays.


@numba.njit(**NJIT_KWARGS)
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

    ``y`` is scratch space of length ``D`` (used when ``D > 2``).
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
def _log_seat(n: int, u: float, logdet: float, kappa0: float, nu0: float, seat_n: float) -> float:
    """``r log n + log p(x | group)`` for a group of ``n`` points that does not hold ``x``.

    ``u`` is ``||L^{-1}(x - mu_n)||^2``, ``logdet`` is ``log|Psi_n|`` of the
    group and ``seat_n`` is ``r log n`` plus the size constant of
    :func:`~pymc_pcrp._kernels.niw.predictive_constants` (see :func:`_seat_constants`).
    """
    kappa_n = kappa0 + n
    return seat_n - 0.5 * logdet - 0.5 * (nu0 + n + 1.0) * math.log1p(u * kappa_n / (kappa_n + 1.0))


@numba.njit(**NJIT_KWARGS)
def _seat_constants(n_max: int, d: int, power: float, kappa0: float, nu0: float) -> np.ndarray:
    """``r log n + const[n]`` for ``n = 0..n_max`` (``const`` of ``predictive_constants``).

    Reading the pCRP weight and the size part of the predictive from this table
    spares two logarithms per group and point visit.
    """
    out = predictive_constants(n_max, d, kappa0, nu0)
    for n in range(1, n_max + 1):
        out[n] += power * math.log(n)
    return out


@numba.njit(**NJIT_KWARGS)
def _log_seat_weight(
    g: int,
    xc: np.ndarray,
    p: int,
    gcount: np.ndarray,
    gsum: np.ndarray,
    gchol: np.ndarray,
    glogdet: np.ndarray,
    kappa0: float,
    nu0: float,
    seat_const: np.ndarray,
    y: np.ndarray,
) -> float:
    """Restricted-Gibbs log weight of group ``g`` (which does not hold point ``p``)."""
    n = gcount[g]
    u = _group_norm2(g, xc, p, gcount, gsum, gchol, kappa0, y)
    return _log_seat(n, u, glogdet[g], kappa0, nu0, seat_const[n])


@numba.njit(**NJIT_KWARGS)
def _choose(rng: np.random.Generator, w0: float, w1: float, forced: int) -> tuple[int, float]:
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
def _add_known(
    gcount: np.ndarray,
    gsum: np.ndarray,
    gsumsq: np.ndarray,
    gchol: np.ndarray,
    glogdet: np.ndarray,
    g: int,
    xc: np.ndarray,
    p: int,
    kappa0: float,
    log_gain: float,
    v: np.ndarray,
) -> None:
    """Add point ``p`` to group ``g``, given ``log_gain = log(1 + kappa_n u / (kappa_n + 1))``.

    By the determinant lemma ``log|Psi_{n+1}| = log|Psi_n| + log_gain``, the very
    term the group's predictive weight of ``p`` already computed; so the log
    determinant needs no logarithm of the new factor's diagonal.
    """
    kappa_n = kappa0 + gcount[g]
    c = math.sqrt(kappa_n / (kappa_n + 1.0))
    for a in range(xc.shape[1]):
        v[a] = c * (xc[p, a] - gsum[g, a] / kappa_n)
    chol_rank_one_at(gchol, g, v, 1.0)
    glogdet[g] += log_gain
    gcount[g] += 1
    shift_stats(gsum, gsumsq, g, xc, p, 1.0)


@numba.njit(**NJIT_KWARGS)
def _sequential_allocation(
    rng: np.random.Generator,
    xc: np.ndarray,
    members: np.ndarray,
    m: int,
    side: np.ndarray,
    target: np.ndarray,
    forced: bool,
    gcount: np.ndarray,
    gsum: np.ndarray,
    gsumsq: np.ndarray,
    gchol: np.ndarray,
    glogdet: np.ndarray,
    params: NIWParams,
    seat_const: np.ndarray,
    v: np.ndarray,
    y: np.ndarray,
    buf: np.ndarray,
) -> float:
    """Seat ``members[:m]`` one after another in the two groups (the launch's start).

    The groups must hold their anchors only. Each point joins group ``g`` with
    probability proportional to ``n_g^r`` times its predictive given the points
    seated so far, or, when ``forced`` is true, joins group ``target[t]``;
    ``side`` receives the groups. Returns the log probability of the choices
    made (the proposal probability of a SAMS move).
    """
    # Everything per point is written out here rather than called: helper calls
    # that take arrays pay reference counting each time, which was most of the
    # cost of a visit (about 200 ns at D = 2, against 36 ns per point in the sweep).
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
            inv_kappa = 1.0 / kappa_n
            u = 0.0
            for a in range(d):
                r = xc[p, a] - gsum[g, a] * inv_kappa
                for b in range(a):
                    r -= gchol[g, a, b] * y[b]
                r /= gchol[g, a, a]
                y[a] = r
                u += r * r
            gain = math.log1p(u * kappa_n / (kappa_n + 1.0))
            lw[g] = gain
            w[g] = seat_const[n_g] - 0.5 * glogdet[g] - 0.5 * (nu0 + n_g + 1.0) * gain
        # _choose, written out
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
    rng: np.random.Generator,
    xc: np.ndarray,
    members: np.ndarray,
    m: int,
    side: np.ndarray,
    target: np.ndarray,
    forced: bool,
    gcount: np.ndarray,
    gsum: np.ndarray,
    gsumsq: np.ndarray,
    gchol: np.ndarray,
    glogdet: np.ndarray,
    params: NIWParams,
    seat_const: np.ndarray,
    v: np.ndarray,
    y: np.ndarray,
    buf: np.ndarray,
) -> float:
    """One restricted Gibbs scan over ``members[:m]``, in that order.

    ``side[t]`` is the group (0 or 1) of ``members[t]`` and is updated: each
    point is re-seated by a draw from its restricted conditional given all the
    other points, or, when ``forced`` is true, put in group ``target[t]``.
    Returns the log probability, under the restricted conditionals, of the
    choices made.
    """
    log_q = 0.0
    kappa0 = params.kappa0
    nu0 = params.nu0
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
            w_own = _log_seat(
                n_g - 1,
                c * c * u / shrink,
                glogdet[g] + math.log(shrink),
                kappa0,
                nu0,
                seat_const[n_g - 1],
            )
            w_other = _log_seat_weight(
                1 - g, xc, p, gcount, gsum, gchol, glogdet, kappa0, nu0, seat_const, y
            )
            if g == 0:
                new, log_p = _choose(rng, w_own, w_other, forced_g)
            else:
                new, log_p = _choose(rng, w_other, w_own, forced_g)
            if new != g:
                remove_point(gcount, gsum, gsumsq, gchol, glogdet, g, xc, p, params, v, buf)
                add_point(gcount, gsum, gsumsq, gchol, glogdet, new, xc, p, kappa0, v)
        else:
            # The shortcut is numerically unsafe: take the point out explicitly.
            remove_point(gcount, gsum, gsumsq, gchol, glogdet, g, xc, p, params, v, buf)
            w0 = _log_seat_weight(
                0, xc, p, gcount, gsum, gchol, glogdet, kappa0, nu0, seat_const, y
            )
            w1 = _log_seat_weight(
                1, xc, p, gcount, gsum, gchol, glogdet, kappa0, nu0, seat_const, y
            )
            new, log_p = _choose(rng, w0, w1, forced_g)
            add_point(gcount, gsum, gsumsq, gchol, glogdet, new, xc, p, kappa0, v)
        side[t] = new
        log_q += log_p
    return log_q


@numba.njit(**NJIT_KWARGS)
def _shuffle_prefix(rng: np.random.Generator, a: np.ndarray, b: np.ndarray, m: int) -> None:
    """Put ``a[:m]`` in a uniformly random order (Fisher-Yates), ``b[:m]`` in the same order.

    Each index is drawn exactly by Lemire's multiply-and-reject method from the
    top 32 bits of one ``rng.random()``, as
    :func:`~pymc_pcrp._kernels.sweep.shuffle_in_place` does: ``rng.integers``
    per element was a visible share of a proposal.
    """
    two32 = 4294967296.0
    for j in range(m - 1, 0, -1):
        bound = j + 1
        prod = np.uint64(rng.random() * two32) * np.uint64(bound)
        low = prod & np.uint64(0xFFFFFFFF)
        if low < np.uint64(bound):
            threshold = np.uint64((4294967296 - bound) % bound)
            while low < threshold:
                prod = np.uint64(rng.random() * two32) * np.uint64(bound)
                low = prod & np.uint64(0xFFFFFFFF)
        r = np.int64(prod >> np.uint64(32))
        a[j], a[r] = a[r], a[j]
        b[j], b[r] = b[r], b[j]


@numba.njit(**NJIT_KWARGS)
def _relist(head: np.ndarray, nxt: np.ndarray, slot: int, labels: np.ndarray, points, m: int):
    """Rebuild the member list of ``slot`` from the first ``m`` entries of ``points``.

    Only the points whose label is ``slot`` are listed.
    """
    head[slot] = -1
    for t in range(m):
        p = points[t]
        if labels[p] == slot:
            nxt[p] = head[slot]
            head[slot] = p


@numba.njit(**NJIT_KWARGS)
def _gather_members(
    head: np.ndarray,
    nxt: np.ndarray,
    si: int,
    sj: int,
    i: int,
    j: int,
    members: np.ndarray,
    target: np.ndarray,
) -> int:
    """Write ``S``, the other members of the clusters ``sj`` and ``si``, into ``members``.

    ``target`` receives the group each belongs to in the current state (1 for
    ``sj``, 0 for ``si``; used by a merge). ``si == sj`` for a split. Returns ``|S|``.
    """
    m = 0
    p = head[sj]
    while p >= 0:
        if p != i and p != j:
            members[m] = p
            target[m] = 1
            m += 1
        p = nxt[p]
    if si != sj:
        p = head[si]
        while p >= 0:
            if p != i:
                members[m] = p
                target[m] = 0
                m += 1
            p = nxt[p]
    return m


@numba.njit(**NJIT_KWARGS)
def _accept_split(
    state: SweepState,
    sj: int,
    i: int,
    j: int,
    members: np.ndarray,
    m: int,
    side: np.ndarray,
    gcount: np.ndarray,
    gsum: np.ndarray,
    gsumsq: np.ndarray,
    gchol: np.ndarray,
    glogdet: np.ndarray,
    head: np.ndarray,
    nxt: np.ndarray,
) -> None:
    """Write an accepted split into ``state``: group 0 opens a new slot, group 1 keeps ``sj``."""
    labels = state.labels
    new = state.order[state.k[0]]
    open_slot(state, new)
    for g in range(2):
        slot = new if g == 0 else sj
        state.counts[slot] = gcount[g]
        state.sums[slot, :] = gsum[g]
        state.sumsq[slot, :, :] = gsumsq[g]
        state.chol[slot, :, :] = gchol[g]
        state.logdet[slot] = glogdet[g]
    labels[i] = new
    for t in range(m):
        if side[t] == 0:
            labels[members[t]] = new
    members[m] = i
    members[m + 1] = j
    _relist(head, nxt, new, labels, members, m + 2)
    _relist(head, nxt, sj, labels, members, m + 2)


@numba.njit(**NJIT_KWARGS)
def _accept_merge(
    state: SweepState,
    si: int,
    sj: int,
    i: int,
    j: int,
    members: np.ndarray,
    m: int,
    head: np.ndarray,
    nxt: np.ndarray,
) -> None:
    """Relabel an accepted merge into ``sj`` (whose statistics are written) and free ``si``."""
    labels = state.labels
    free_slot(state, si)
    labels[i] = sj
    for t in range(m):
        labels[members[t]] = sj
    members[m] = i
    members[m + 1] = j
    _relist(head, nxt, sj, labels, members, m + 2)
    head[si] = -1


@numba.njit(**NJIT_KWARGS)
def _split_merge_moves(
    rng: np.random.Generator,
    xc: np.ndarray,
    state: SweepState,
    params: NIWParams,
    n_moves: int,
    n_restricted_scans: int,
    ratio_power: float,
    proposal_weight: float,
    seat_const: np.ndarray,
    cluster_first: bool = False,
    selection_weight: float = 1.0,
) -> tuple[int, int, int, int]:
    """Run :func:`split_merge_moves` with hooks for the tests, a size table and a pair rule.

    ``seat_const`` is :func:`_seat_constants` up to some size (it is regrown
    when a move needs larger sizes); the sweep's own table (column 0 of
    ``by_size`` of :func:`~pymc_pcrp._kernels.scores.sweep_tables`, sizes up to
    ``N``) is the same thing, so :func:`~pymc_pcrp._kernels.chain.advance`
    passes it and a call computes no per-size constant.

    ``ratio_power`` is the power used in the prior ratio of the acceptance test
    and ``proposal_weight`` multiplies the log proposal probability there. The
    move is exact only with ``ratio_power == params.power`` and
    ``proposal_weight == 1``; other values exist so that the tests can show
    that they detect a wrong acceptance ratio.

    ``cluster_first`` changes how the ordered pair ``(i, j)`` is drawn: a
    cluster uniformly among the ``K`` occupied ones, ``i`` uniformly in it, then
    ``j`` uniformly among the other ``N - 1`` points, so that small clusters
    ("specks") are picked as often as large ones. The pair then has probability
    ``1 / (K n_{c(i)} (N - 1))``, which depends on the state, and the test
    multiplies in the ratio of the pair's probability from the proposed state
    to that from the current one (the reverse move uses the same ordered pair):
    ``K n_C / ((K + 1) n_0)`` for a split of ``C`` whose group 0 holds ``n_0``
    points, ``K n_A / ((K - 1)(n_A + n_B))`` for a merge of ``A`` (holding
    ``i``) and ``B``. ``selection_weight`` multiplies its log (1 is exact; 0
    exists for the tests). Not used by the step yet: its mixing is not measured.
    """
    n, d = xc.shape
    if n < 2 or n_moves <= 0:
        return 0, 0, 0, 0
    cap = state.counts.shape[0]
    labels = state.labels

    # Member lists of every slot: head[slot] -> nxt[point] -> ... -> -1.
    head = np.full(cap, -1, dtype=np.int64)
    nxt = np.full(n, -1, dtype=np.int64)
    for p in range(n - 1, -1, -1):
        nxt[p] = head[labels[p]]
        head[labels[p]] = p

    # Size-dependent predictive constants, computed on demand up to the largest
    # union of clusters seen so far (doubling), so that a call costs nothing in
    # proportion to N beyond the member lists.
    members = np.empty(n, dtype=np.int64)
    side = np.empty(n, dtype=np.int64)
    target = np.empty(n, dtype=np.int64)
    gcount = np.zeros(2, dtype=np.int64)
    gsum = np.zeros((2, d))
    gsumsq = np.zeros((2, d, d))
    gchol = np.zeros((2, d, d))
    glogdet = np.zeros(2)
    msum = np.zeros(d)
    msumsq = np.zeros((d, d))
    mchol = np.zeros((d, d))
    v = np.empty(d)
    y = np.empty(d)
    buf = np.empty((d, d))
    kappa0, nu0, logdet0 = params.kappa0, params.nu0, params.logdet0
    groups = (gcount, gsum, gsumsq, gchol, glogdet)

    n_split = 0
    n_split_acc = 0
    n_merge = 0
    n_merge_acc = 0
    for _ in range(n_moves):
        k_now = state.k[0]
        if cluster_first:
            slot = state.order[rng.integers(0, k_now)]
            i = head[slot]
            for _step in range(rng.integers(0, state.counts[slot])):
                i = nxt[i]
        else:
            i = rng.integers(0, n)
        j = rng.integers(0, n - 1)
        if j >= i:
            j += 1
        si = labels[i]
        sj = labels[j]
        is_split = si == sj

        m = _gather_members(head, nxt, si, sj, i, j, members, target)

        if m + 2 >= seat_const.shape[0]:
            size = min(n, max(m + 2, 2 * seat_const.shape[0]))
            seat_const = _seat_constants(size, d, params.power, kappa0, nu0)
        work = (params, seat_const, v, y, buf)

        # Launch: a uniformly random order of S (Fisher-Yates), then sequential
        # allocation from the two anchors, then the intermediate scans.
        _shuffle_prefix(rng, members, target, m)
        gcount[:] = 1
        for a in range(d):
            gsum[0, a] = xc[i, a]
            gsum[1, a] = xc[j, a]
            for b in range(d):
                gsumsq[0, a, b] = xc[i, a] * xc[i, b]
                gsumsq[1, a, b] = xc[j, a] * xc[j, b]
        for g in range(2):
            glogdet[g] = factorise(1, gsum[g], gsumsq[g], params, buf, gchol[g])
        if n_restricted_scans < 0:
            # SAMS: the sequential allocation itself is the proposal; it draws the
            # proposed split, or (merge) scores the current one.
            log_q = _sequential_allocation(
                rng, xc, members, m, side, target, not is_split, *groups, *work
            )
        else:
            _sequential_allocation(rng, xc, members, m, side, target, False, *groups, *work)
            for _scan in range(n_restricted_scans):
                _restricted_scan(rng, xc, members, m, side, target, False, *groups, *work)
            # Final scan: it draws the proposed split, or (merge) scores the current one.
            log_q = _restricted_scan(
                rng, xc, members, m, side, target, not is_split, *groups, *work
            )

        if is_split:
            n_split += 1
            n0 = gcount[0]
            n1 = gcount[1]
            # Fresh factors of the proposed clusters: exact ratio, no drift.
            for g in range(2):
                glogdet[g] = factorise(gcount[g], gsum[g], gsumsq[g], params, buf, gchol[g])
            log_a = (
                params.log_alpha
                + ratio_power * (math.lgamma(n0) + math.lgamma(n1) - math.lgamma(n0 + n1))
                + log_marginal_from_logdet(n0, glogdet[0], d, kappa0, nu0, logdet0)
                + log_marginal_from_logdet(n1, glogdet[1], d, kappa0, nu0, logdet0)
                - log_marginal_from_logdet(n0 + n1, state.logdet[sj], d, kappa0, nu0, logdet0)
                - proposal_weight * log_q
            )
            if cluster_first:
                log_a += selection_weight * (
                    math.log(k_now * (n0 + n1)) - math.log((k_now + 1) * n0)
                )
            if log_a >= 0.0 or math.log(rng.random()) < log_a:
                n_split_acc += 1
                _accept_split(state, sj, i, j, members, m, side, *groups, head, nxt)
        else:
            n_merge += 1
            ni = state.counts[si]
            nj = state.counts[sj]
            for a in range(d):
                msum[a] = state.sums[si, a] + state.sums[sj, a]
                for b in range(d):
                    msumsq[a, b] = state.sumsq[si, a, b] + state.sumsq[sj, a, b]
            mlogdet = factorise(ni + nj, msum, msumsq, params, buf, mchol)
            log_a = (
                -params.log_alpha
                + ratio_power * (math.lgamma(ni + nj) - math.lgamma(ni) - math.lgamma(nj))
                + log_marginal_from_logdet(ni + nj, mlogdet, d, kappa0, nu0, logdet0)
                - log_marginal_from_logdet(ni, state.logdet[si], d, kappa0, nu0, logdet0)
                - log_marginal_from_logdet(nj, state.logdet[sj], d, kappa0, nu0, logdet0)
                + proposal_weight * log_q
            )
            if cluster_first:
                log_a += selection_weight * (
                    math.log(k_now * ni) - math.log((k_now - 1) * (ni + nj))
                )
            if log_a >= 0.0 or math.log(rng.random()) < log_a:
                n_merge_acc += 1
                state.counts[sj] = ni + nj
                state.sums[sj, :] = msum
                state.sumsq[sj, :, :] = msumsq
                state.chol[sj, :, :] = mchol
                state.logdet[sj] = mlogdet
                _accept_merge(state, si, sj, i, j, members, m, head, nxt)
    return n_split, n_split_acc, n_merge, n_merge_acc


@numba.njit(**NJIT_KWARGS)
def split_merge_moves(
    rng: np.random.Generator,
    xc: np.ndarray,
    state: SweepState,
    params: NIWParams,
    n_moves: int,
    n_restricted_scans: int,
) -> tuple[int, int, int, int]:
    """Run ``n_moves`` restricted-Gibbs split-merge moves (Jain & Neal, 2004) in place.

    Each move draws two distinct points uniformly; if they share a cluster it
    proposes to split that cluster, otherwise to merge their two clusters, with
    the proposal built by restricted Gibbs scans over the other members of the
    cluster(s) involved. The Metropolis-Hastings test uses the exact pCRP prior
    ratio, the NIW marginal likelihood ratio and the restricted-Gibbs proposal
    probability (see the module docstring), so the move leaves
    ``p(z | X) ∝ alpha^K prod Gamma(n_k)^r prod m(X_k)`` invariant.

    Parameters
    ----------
    rng : numpy.random.Generator
        Source of randomness.
    xc : numpy.ndarray
        Data centred at the prior mean, shape ``(N, D)``; ``D`` may be zero
        (no likelihood, the pCRP prior is targeted).
    state : SweepState
        Current partition and cluster statistics, updated in place; it remains
        valid for :func:`~pymc_pcrp._kernels.sweep.gibbs_sweeps`.
    params : NIWParams
        Prior parameters, from :func:`~pymc_pcrp._kernels.state.make_params`.
    n_moves : int
        Number of moves to attempt.
    n_restricted_scans : int
        Intermediate restricted Gibbs scans that build the launch state of a
        move (``t`` of Jain & Neal; a few, e.g. 3 to 5, is typical). Zero is
        allowed: the launch state is then the random initial split.

    Returns
    -------
    tuple of int
        ``(n_split_proposed, n_split_accepted, n_merge_proposed,
        n_merge_accepted)``.
    """
    d = xc.shape[1]
    seat_const = _seat_constants(min(xc.shape[0], 16), d, params.power, params.kappa0, params.nu0)
    return _split_merge_moves(
        rng, xc, state, params, n_moves, n_restricted_scans, params.power, 1.0, seat_const
    )
