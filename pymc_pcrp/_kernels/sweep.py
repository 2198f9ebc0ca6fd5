"""The pCRP collapsed Gibbs sweep (Algorithm 1 of Lu, Li & Dunson, 2018) in numba.

Everything here works on plain arrays. The state of a sweep is a
:class:`~pymc_pcrp._kernels.state.SweepState` of per-cluster sufficient
statistics kept in *slots* (:mod:`pymc_pcrp._kernels.state`).

A point update costs ``O(K D^2)``: one triangular solve per occupied cluster to
score it, then one rank-one Cholesky update for the cluster it joins (and a
downdate for the one it left). The data must be centred at the prior mean
(see :mod:`pymc_pcrp._kernels.niw`).

The stationary distribution of the sweep is

    p(z | X) ∝ alpha^K prod_k Gamma(n_k)^r prod_k m(X_k)

(docs/model.md, the partition prior), because each update draws from the full conditional
of that joint.
"""

import math

import numba
import numpy as np

from pymc_pcrp._kernels._config import NJIT_KWARGS
from pymc_pcrp._kernels.draws import shuffle_in_place, sweep_order
from pymc_pcrp._kernels.niw import log_marginal_from_logdet
from pymc_pcrp._kernels.scores import (
    PARTIAL_ROWS,
    SKIP_NATS,
    below_cut,
    distance_limit,
    draw_with_skipped,
    forward_norm2,
    forward_norm2_capped,
    loo_log_weight,
    loo_lower_bound,
    sample_log_weights,
    sweep_tables,
    sweep_workspace,
    sync_eigen_bounds,
    sync_moments,
    sync_slot,
    widen_eigen_bounds,
)
from pymc_pcrp._kernels.state import (
    NIWParams,
    SweepState,
    grow_if_full,
    init_state,
    make_params,
    place_point,
)

__all__ = [
    "NIWParams",
    "SweepState",
    "gibbs_sweeps",
    "init_state",
    "log_joint",
    "make_params",
    "shuffle_in_place",
    "sweep_tables",
]


@numba.njit(**NJIT_KWARGS)
def _move_point(
    state: SweepState,
    xc: np.ndarray,
    i: int,
    old: int,
    slot: int,
    params: NIWParams,
    by_size: np.ndarray,
    caches: tuple,
    v: np.ndarray,
    buf: np.ndarray,
) -> None:
    """Move point ``i`` from ``old`` to ``slot``, keeping the caches in step.

    ``caches`` is ``(mean, inv_diag, const, inv_eig)`` of
    :func:`~pymc_pcrp._kernels.scores.sync_slot`. The eigenvalue bounds are
    widened in ``O(D)`` (:func:`widen_eigen_bounds`) rather than recomputed in
    ``O(D^3)``; a slot that opens gets exact ones.
    """
    d = xc.shape[1]
    inv_eig = caches[3]
    vv = place_point(state, xc, i, old, -1, params, v, buf)
    if state.counts[old] > 0:
        sync_moments(state, old, by_size, caches)
        if d > 2:
            widen_eigen_bounds(inv_eig, old, vv, -1.0)
    opened = state.counts[slot] == 0
    vv = place_point(state, xc, i, slot, 1, params, v, buf)
    sync_moments(state, slot, by_size, caches)
    if d > 2:
        if opened:
            sync_eigen_bounds(state, slot, inv_eig)
        else:
            widen_eigen_bounds(inv_eig, slot, vv, 1.0)
    state.labels[i] = slot


@numba.njit(**NJIT_KWARGS)
def _reseat_by_removal(
    rng: np.random.Generator,
    xc: np.ndarray,
    i: int,
    state: SweepState,
    params: NIWParams,
    tables: tuple[np.ndarray, np.ndarray, np.ndarray],
    caches: tuple,
    logw: np.ndarray,
    y: np.ndarray,
    v: np.ndarray,
    buf: np.ndarray,
) -> int:
    """Re-seat point ``i`` the plain way: remove it, score every option, add it back.

    :func:`gibbs_sweeps` uses this when the leave-one-out formulas are
    numerically unsafe (the point carries almost all of its cluster's scatter).
    Returns 1 if the point changed cluster, else 0. ``caches`` as in :func:`_move_point`.
    """
    log_new, _, by_size = tables
    mean, inv_diag, const, _ = caches
    old = state.labels[i]
    place_point(state, xc, i, old, -1, params, v, buf)
    if state.counts[old] > 0:
        # Exact bounds: this path is rare, and the point is added back below.
        sync_slot(state, old, by_size, caches)
    k = state.k[0]
    for p in range(k):
        slot = state.order[p]
        m = state.counts[slot]
        u = forward_norm2(state.chol, slot, xc, i, mean, inv_diag, y)
        logw[p] = const[slot] + by_size[m, 1] * math.log(1.0 + u * by_size[m, 2])
    logw[k] = log_new[i]
    choice = sample_log_weights(rng, logw, k + 1)
    slot = state.order[choice]
    place_point(state, xc, i, slot, 1, params, v, buf)
    sync_slot(state, slot, by_size, caches)
    state.labels[i] = slot
    return 1 if slot != old else 0


@numba.njit(**NJIT_KWARGS)
def _grow_caches(cap: int, caches: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Copy the sweep's per-slot caches into arrays of ``cap`` slots (after a growth)."""
    mean, inv_diag, const, inv_eig = caches
    old = const.shape[0]
    d = mean.shape[1]
    new_mean = np.empty((cap, d))
    new_inv_diag = np.empty((cap, d))
    new_const = np.empty(cap)
    new_inv_eig = np.empty((cap, 2))
    new_mean[:old] = mean
    new_inv_diag[:old] = inv_diag
    new_const[:old] = const
    new_inv_eig[:old] = inv_eig
    return new_mean, new_inv_diag, new_const, new_inv_eig


@numba.njit(**NJIT_KWARGS)
def _sweep_pass(
    rng: np.random.Generator,
    chain: tuple,
    caches: tuple,
    work: tuple,
    perm: np.ndarray,
    start: int,
) -> tuple[int, int]:
    """Update the points ``perm[start:]`` in turn; return the moves and where the pass stopped.

    ``chain`` is as in :func:`gibbs_sweeps`, ``caches`` is ``(mean, inv_diag,
    const, inv_eig)`` of :func:`~pymc_pcrp._kernels.scores.sync_slot` and ``work``
    is ``(logw, skipped, skipped_u, skipped_w, skip_weight, y, v, buf)``. The pass
    stops after the point ``perm[stop - 1]`` when a new cluster takes the state's
    last free slot and the state grows: the caller then grows the caches and
    resumes at ``stop``. Otherwise ``stop`` is ``len(perm)``.
    """
    # Performance note: the common path of the loop below touches arrays only by
    # indexing locals. Taking a view (``xc[i]``) or passing arrays to a helper
    # costs numba atomic reference counting on every call, which measured about
    # three times the arithmetic itself at D = 2; hence the written-out draw, and
    # the distances from forward_norm2, which numba inlines. Helpers that take
    # arrays run only on the less common paths (a move, a draw that needs the
    # skipped clusters); the scalar bound functions are free.
    xc, state, params, tables = chain
    d = xc.shape[1]
    log_new, _, by_size = tables
    mean, inv_diag, const, inv_eig = caches
    logw, skipped, skipped_u, skipped_w, skip_weight, y, v, buf = work
    labels, n_occupied = state.labels, state.k
    chol, counts, order, logdet = state.chol, state.counts, state.order, state.logdet
    kappa0 = params.kappa0
    moved = 0
    # The arrays the loop reads are never reassigned inside it (reassigned on the
    # rare growth branch, they made the whole sweep about 8% slower at D = 2), and
    # the loop is not nested in the ``while`` that resumes a pass after a growth
    # (that cost about 9% at D = 2): a growth ends the pass instead.
    for step in range(start, perm.shape[0]):
        i = perm[step]
        old = labels[i]
        k = n_occupied[0]
        m = counts[old]
        # 1. The own cluster, left out by the leave-one-out formulas
        #    (loo_log_weight). Only its cheap lower bound (loo_lower_bound)
        #    is taken here; the logarithms wait until they are needed. For
        #    D > 2 the triangular solve waits too: the bound then uses the
        #    bracket of the distance from the Euclidean one (sync_slot).
        low_own = -math.inf
        own_a = 0.0
        own_e = 0.0
        own_u = 0.0
        own_c = 0.0
        own_b = 0.0
        exact_own = True
        if m > 1:
            slot = old
            own_c = (kappa0 + m) * by_size[m - 1, 3]
            own_a = by_size[m - 1, 0] - 0.5 * logdet[slot]
            own_e = by_size[m - 1, 1]
            own_b = by_size[m - 1, 2]
            if d > 2:
                dist2 = 0.0
                for a in range(d):
                    ta = xc[i, a] - mean[slot, a]
                    dist2 += ta * ta
                u_hi = dist2 * inv_eig[slot, 1]
                if 1.0 - own_c * u_hi > 1e-10:
                    u_lo = dist2 * inv_eig[slot, 0]
                    low_own = loo_lower_bound(own_a, own_e, own_b, own_c, u_lo, u_hi)
                    exact_own = False
            if exact_own:
                u = forward_norm2(chol, slot, xc, i, mean, inv_diag, y)
                shrink = 1.0 - own_c * u
                if not shrink > 1e-10:
                    # Leave-one-out numerically unsafe: remove the point instead.
                    moved += _reseat_by_removal(
                        rng,
                        xc,
                        i,
                        state,
                        params,
                        tables,
                        (mean, inv_diag, const, inv_eig),
                        logw,
                        y,
                        v,
                        buf,
                    )
                    if grow_if_full(state):
                        return moved, step + 1
                    continue
                own_u = u
                low_own = loo_lower_bound(own_a, own_e, own_b, own_c, u, u)
        # 2. Every other cluster and the new one: bounded first, scored only if
        #    the bound comes within skip_nats of a lower bound on the top.
        ref = low_own if low_own > log_new[i] else log_new[i]
        cut = ref - SKIP_NATS
        top = -math.inf  # largest exact log weight among the scored others
        n_skipped = 0
        for p in range(k):
            slot = order[p]
            if slot == old:
                logw[p] = -math.inf  # filled in below if needed
                continue
            m = counts[slot]
            e = by_size[m, 1]
            bm = by_size[m, 2]
            if d > 2:
                dist2 = 0.0
                for a in range(d):
                    ta = xc[i, a] - mean[slot, a]
                    dist2 += ta * ta
                tb = dist2 * inv_eig[slot, 0] * bm
                if below_cut(const[slot], e, tb, cut):
                    logw[p] = -math.inf
                    skipped[n_skipped] = p
                    skipped_u[n_skipped] = -1.0  # distance not computed
                    n_skipped += 1
                    continue
            if d > PARTIAL_ROWS:
                # the solve stops once a partial distance rules the cluster out
                limit = distance_limit(const[slot], e, bm, cut)
                u = forward_norm2_capped(chol, slot, xc, i, mean, inv_diag, y, limit)
                if u < 0.0:
                    logw[p] = -math.inf
                    skipped[n_skipped] = p
                    skipped_u[n_skipped] = -1.0  # distance not computed
                    n_skipped += 1
                    continue
            else:
                u = forward_norm2(chol, slot, xc, i, mean, inv_diag, y)
            tb = u * bm
            if below_cut(const[slot], e, tb, cut):
                logw[p] = -math.inf
                skipped[n_skipped] = p
                skipped_u[n_skipped] = u
                n_skipped += 1
                continue
            lw = const[slot] + e * math.log(1.0 + tb)
            logw[p] = lw
            if lw > top:
                top = lw
        if log_new[i] < cut:
            logw[k] = -math.inf
            skipped[n_skipped] = k
            skipped_u[n_skipped] = -2.0  # the new cluster: log weight known
            n_skipped += 1
        else:
            logw[k] = log_new[i]
            if log_new[i] > top:
                top = log_new[i]
        uniform = rng.random()
        if top == -math.inf:
            # 3a. Only the own cluster is left: every other weight is below
            #     exp(-skip_nats) of its weight, so the point stays with
            #     probability at least 1 / (1 + bound): no logarithm needed.
            bound = n_skipped * skip_weight
            if uniform * (1.0 + bound) < 1.0:
                continue
            if not exact_own:
                # 1 - c u >= 1 - c u_hi > 1e-10: the leave-one-out formula is safe.
                own_u = forward_norm2(chol, old, xc, i, mean, inv_diag, y)
            for j in range(k + 1):
                logw[j] = 0.0
            logw[state.where[old]] = 1.0
            total = 1.0
            top = loo_log_weight(own_a, own_e, own_b, own_c, own_u)
        else:
            # 3b. Weights relative to the top; skipped clusters weigh 0.
            if counts[old] > 1:  # a singleton's own cluster is not an option
                if not exact_own:
                    own_u = forward_norm2(chol, old, xc, i, mean, inv_diag, y)
                lw_own = loo_log_weight(own_a, own_e, own_b, own_c, own_u)
                logw[state.where[old]] = lw_own
                if lw_own > top:
                    top = lw_own
            total = 0.0
            for j in range(k + 1):
                lw = logw[j]
                w = math.exp(lw - top) if lw > -math.inf else 0.0
                logw[j] = w
                total += w
            bound = n_skipped * skip_weight
        # 4. The draw (sample_log_weights inlined, new cluster last).
        target = uniform * (total + bound)
        if n_skipped == 0 or target < total:
            acc = 0.0
            choice = k
            for j in range(k):
                acc += logw[j]
                if target < acc:
                    choice = j
                    break
        else:
            choice = draw_with_skipped(
                uniform,
                total,
                bound,
                top,
                logw,
                k,
                skipped,
                skipped_u,
                n_skipped,
                log_new[i],
                xc,
                i,
                state,
                by_size,
                mean,
                inv_diag,
                const,
                y,
                skipped_w,
            )
        if order[choice] == old or (choice == k and counts[old] == 1):
            continue
        moved += 1
        # Read the target before removing: closing an emptied slot reorders
        # ``order``. For ``choice == k`` the point is not a singleton, so
        # nothing closes and ``order[k]`` stays the first free slot.
        slot = order[choice]
        caches = (mean, inv_diag, const, inv_eig)
        _move_point(state, xc, i, old, slot, params, by_size, caches, v, buf)
        if choice == k and grow_if_full(state):
            # The new cluster took the last free slot: double the capacity.
            return moved, step + 1
    return moved, perm.shape[0]


@numba.njit(**NJIT_KWARGS)
def gibbs_sweeps(rng: np.random.Generator, chain: tuple, n_sweeps: int) -> int:
    """Run ``n_sweeps`` sweeps of Algorithm 1 in place; return how many moves changed a cluster.

    ``chain`` is ``(xc, state, params, tables)``: the centred data, the
    :class:`SweepState` (updated in place), the :class:`NIWParams` and
    :func:`sweep_tables` of the same ``xc`` and ``params``. Each sweep visits
    the points in a fresh uniformly random order and draws each point's
    cluster from its full conditional given the others: weight ``n_k^r`` times
    the posterior predictive for every occupied cluster ``k`` (sizes and
    statistics *without* the point), ``alpha`` times the prior predictive for a
    new cluster.

    The point is scored against its own cluster without being taken out of it:
    removing one point changes ``Psi_n`` by a rank-one term, so by the matrix
    determinant lemma and the Sherman-Morrison formula the leave-one-out
    determinant and Mahalanobis distance follow from the in-cluster distance
    ``u`` alone (``|Psi_{n-1}| = |Psi_n| (1 - c u)`` and
    ``u_{-} = c^2 u / (1 - c u)`` with ``c = kappa_n / kappa_{n-1}``). The state
    therefore changes only when a point actually moves, which at equilibrium
    is rare. A singleton's own cluster is not an option (removing the point
    empties it); choosing a new cluster leaves it where it is.

    Far clusters are bounded instead of scored, and the draw stays exact. A
    cluster's log weight is ``c_k + e_k log(1 + b_k u)`` with ``e_k < 0``, and a
    lower bound on ``log(1 + t)`` read off the float's exponent and mantissa
    (:func:`~pymc_pcrp._kernels.scores.log1p_lower_bound`, within 0.026 nats)
    gives an upper bound without a logarithm (for ``D > 2`` a
    lower bound on ``u`` from the Euclidean distance, see :func:`sync_slot`,
    first saves the triangular solve too, and for ``D > 4`` the solve stops once
    the partial distance of its first rows is already beyond the cluster's
    limit, :func:`~pymc_pcrp._kernels.scores.forward_norm2_capped`; a solve
    that runs to the end is the full one, bit for bit, so the draws are those of
    the full solve). The reference is a lower bound on
    the largest weight: the larger of the new cluster's log weight and a
    logarithm-free lower bound on the own cluster's (:func:`loo_lower_bound`).
    An option (another cluster, or the new one) whose upper bound is more than
    ``skip_nats`` (:data:`~pymc_pcrp._kernels.scores.SKIP_NATS`) below the
    reference is skipped: its weight is below ``exp(-skip_nats)`` of the top.
    The draw is then made among the scored
    options from a uniform ``v`` rescaled to ``v (S + bound)``, with ``S``
    their total weight and ``bound`` the number of skipped options times
    ``exp(-skip_nats)``; only when ``v`` falls in the top fraction
    ``bound / (S + bound)`` (about ``2.5e-3`` per skipped option) are the
    skipped options scored exactly and the draw completed by
    :func:`draw_with_skipped`. When everything but the own cluster is
    skipped, which for well separated clusters is most updates, the point stays with
    probability ``1 / (1 + bound)`` without a single logarithm or
    exponential. The chosen cluster has exactly the full conditional
    distribution; ``skip_nats`` only trades work between the branches.
    """
    xc, state, _, tables = chain
    n, d = xc.shape
    by_size = tables[2]
    cap = state.counts.shape[0]
    # Per-slot caches, filled for a slot when it is occupied (below, or when a
    # point opens it) and read only then, so np.empty. They have the state's
    # capacity and grow with it (_grow_caches) when a new cluster fills it.
    caches = (np.empty((cap, d)), np.empty((cap, d)), np.empty(cap), np.empty((cap, 2)))
    for p in range(state.k[0]):
        sync_slot(state, state.order[p], by_size, caches)
    work = (*sweep_workspace(n, SKIP_NATS), np.empty(d), np.empty(d), np.empty((d, d)))
    perm = sweep_order(n)
    n_visit = perm.shape[0]
    moved = 0
    for sweep_index in range(n_sweeps):
        shuffle_in_place(rng, perm)
        # A pass ends early when a new cluster takes the state's last free slot and the
        # state grows; the next pass takes the grown caches and goes on with the next point.
        start = 0
        while start < n_visit:
            found, start = _sweep_pass(rng, chain, caches, work, perm, start)
            moved += found
            if start < n_visit:
                caches = _grow_caches(state.counts.shape[0], caches)
        if d > 2 and sweep_index < n_sweeps - 1:
            # Exact eigenvalue bounds again, before the widened ones grow loose (not
            # after the last sweep: the caches are this call's own, and the next call
            # computes them afresh).
            for p in range(state.k[0]):
                sync_eigen_bounds(state, state.order[p], caches[3])
    return moved


@numba.njit(**NJIT_KWARGS)
def log_joint(state: SweepState, params: NIWParams, d: int) -> float:
    """``K log alpha + r sum_k log Gamma(n_k) + sum_k log m(X_k)``.

    This is the log joint density of labels and data up to the pCRP
    normaliser ``-log Z_N(alpha, r)``; it equals PyMC's model log density.
    """
    acc = 0.0
    for p in range(state.k[0]):
        slot = state.order[p]
        n = state.counts[slot]
        acc += params.log_alpha + params.power * math.lgamma(n)
        acc += log_marginal_from_logdet(
            n, state.logdet[slot], d, params.kappa0, params.nu0, params.logdet0
        )
    return acc
