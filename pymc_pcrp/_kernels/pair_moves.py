"""Pair moves: carry two nearby points of one cluster to another cluster together.

A few outlying points that belong together (a pair inside a large cluster, or a
pair that would join a small cluster of its own) leave or enter a cluster only
through intermediate states that the posterior dislikes when single-site Gibbs
moves them one at a time, and a split-merge proposal from a uniformly drawn pair
almost never proposes exactly them. This move does (docs/mixing.md, "Next:
moving a pair of nearby points together").

One move
--------
1. An ordered pair ``(i, j)`` is drawn from a fixed distribution that does not
   look at the state: ``i`` with probability proportional to ``weights``, ``j``
   uniformly among the row ``neighbours[i]`` (:func:`pair_picks` builds them:
   outlying points weigh more, ``j`` is one of ``i``'s nearest neighbours).
   Nothing happens when ``i`` and ``j`` are in different clusters.
2. With both in cluster ``c``, the target ``t`` is drawn uniformly among the
   other occupied clusters and, when ``c`` holds more than the pair, a new
   cluster; the proposal moves both points to ``t``. The number of targets is
   the same from the proposed state (``K`` when ``c`` keeps points, ``K - 1``
   when the pair was alone), so the proposal is symmetric.
3. The Metropolis-Hastings test is the posterior ratio alone: the pCRP prior and
   NIW marginal likelihood terms ``log alpha + r log Gamma(n) + log m`` of ``c``
   without the pair and ``t`` with it, against both as they were (a block of no
   points contributes 0), as the change of each block's weight
   (:func:`grow_by_two`). Two Cholesky factorisations per move.

The chain kernels run ``plan[4][0]`` pair moves on average after each sweep's
split-merge proposals (:func:`~pymc_pcrp._kernels.chain.run_moves`), with the
tables :func:`pair_picks` builds once per data set; the step's default rate and
its limits are in :mod:`pymc_pcrp.sampler.options`. The move is checked
against exact enumeration in ``tests/_kernels/test_pair_moves.py``.
"""

import math

import numba
import numpy as np

from pymc_pcrp._kernels._config import NJIT_KWARGS
from pymc_pcrp._kernels.moves import accepts, block_log_weight
from pymc_pcrp._kernels.niw import LOG_PI
from pymc_pcrp._kernels.state import NIWParams, SweepState, factorise, grow_if_full, place_point

__all__ = ["grow_by_two", "no_pairs", "pair_moves", "pair_picks"]


def pair_picks(x: np.ndarray, n_neighbours: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(cumulative weights, neighbours)``: the fixed pair distribution of the move.

    Point ``i`` weighs ``0.5 / N + 0.5 d(i) / sum d``, with ``d(i)`` the distance
    to its ``n_neighbours``-th nearest neighbour (outlying points are drawn more
    often, every point at least half as often as uniformly); ``neighbours[i]``
    lists its ``n_neighbours`` nearest other points, nearest first. ``O(N^2 D)``
    time in blocks of rows, for data sets of up to a few thousand points (the
    step's default turns the move off above
    :data:`~pymc_pcrp.sampler.options.PAIR_MOVES_MAX_N`).
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim == 1:
        x = x[:, None]
    n = x.shape[0]
    m = min(n_neighbours, n - 1)
    if m < 1:
        raise ValueError("pair moves need at least two points")
    neighbours = np.empty((n, m), dtype=np.int64)
    dist = np.empty(n)
    sq = np.einsum("ij,ij->i", x, x)
    for start in range(0, n, 512):
        rows = slice(start, min(n, start + 512))
        d2 = sq[rows, None] + sq[None, :] - 2.0 * x[rows] @ x.T
        d2[np.arange(d2.shape[0]), np.arange(rows.start, rows.stop)] = np.inf  # not itself
        near = np.argpartition(d2, m - 1, axis=1)[:, :m]  # the m nearest, in any order
        near_d2 = np.take_along_axis(d2, near, axis=1)
        order = np.argsort(near_d2, axis=1, kind="stable")
        neighbours[rows] = np.take_along_axis(near, order, axis=1)
        dist[rows] = np.sqrt(np.maximum(np.take_along_axis(near_d2, order[:, -1:], 1)[:, 0], 0.0))
    total = dist.sum()
    share = dist / total if total > 0 else np.full(n, 1.0 / n)
    return np.cumsum(0.5 / n + 0.5 * share), neighbours


def no_pairs() -> tuple[float, tuple[np.ndarray, np.ndarray], np.ndarray]:
    """Return the ``pairs`` entry of a chain kernel's plan that runs no pair move.

    Placeholder tables of the types :func:`pair_picks` returns (one point, never
    read at rate 0), so that a plan with and without pair moves compiles to the
    same kernel.
    """
    return 0.0, (np.zeros(1), np.zeros((1, 1), dtype=np.int64)), np.zeros(2, dtype=np.int64)


@numba.njit(**NJIT_KWARGS)
def _pair_stats(xc, i, j, base_sums, base_sumsq, sign, has_base, s, q) -> None:
    """``s, q`` = the base block's sums plus ``sign`` times those of points ``i`` and ``j``."""
    d = xc.shape[1]
    for a in range(d):
        s[a] = (base_sums[a] if has_base else 0.0) + sign * (xc[i, a] + xc[j, a])
        for b in range(d):
            pair = xc[i, a] * xc[i, b] + xc[j, a] * xc[j, b]
            q[a, b] = (base_sumsq[a, b] if has_base else 0.0) + sign * pair


@numba.njit(**NJIT_KWARGS)
def grow_by_two(
    params: NIWParams, power: float, n: int, logdet_n: float, logdet_grown: float, d: int
) -> float:
    """Change of :func:`~pymc_pcrp._kernels.moves.block_log_weight` when a block gains two points.

    ``block_log_weight(n + 2, logdet_grown) - block_log_weight(n, logdet_n)`` for a
    block of ``n`` points with ``log|Psi_n| = logdet_n`` that becomes one of
    ``n + 2`` points with ``log|Psi_{n+2}| = logdet_grown``, without the log-gamma
    functions of either: ``Gamma(n + 2) / Gamma(n) = n (n + 1)`` and
    ``Gamma_D(a + 1) / Gamma_D(a) = prod_j (a - j / 2)``, so the difference costs
    ``D + 2`` logarithms instead of ``2 D + 2`` log-gamma functions per block.
    ``n = 0`` (a new block) falls back to the whole weight of the block of two.
    """
    if n == 0:
        return block_log_weight(params, power, 2, logdet_grown, d)
    nu_n = params.nu0 + n
    kappa_n = params.kappa0 + n
    acc = power * math.log(n * (n + 1.0)) - d * LOG_PI
    acc += 0.5 * d * math.log(kappa_n / (kappa_n + 2.0))
    for j in range(d):
        acc += math.log(0.5 * (nu_n - j))
    return acc + 0.5 * nu_n * logdet_n - 0.5 * (nu_n + 2.0) * logdet_grown


@numba.njit(**NJIT_KWARGS)
def pair_moves(
    rng: np.random.Generator,
    xc: np.ndarray,
    state: SweepState,
    params: NIWParams,
    n_moves: int,
    picks: tuple,
) -> tuple[int, int, int, int]:
    """Run ``n_moves`` pair moves in place; return their counts.

    ``picks`` is ``(cumulative weights, neighbours)`` of :func:`pair_picks`. Returns
    ``(to a new cluster proposed, accepted, to an existing cluster proposed, accepted)``.
    """
    cum, neighbours = picks
    n, d = xc.shape
    m = neighbours.shape[1]
    buf = np.empty((d, d))
    chol = np.empty((d, d))
    s = np.empty(d)
    q = np.empty((d, d))
    v = np.empty(d)
    new_prop = new_acc = old_prop = old_acc = 0
    total = cum[n - 1]
    for _ in range(n_moves):
        i = min(int(np.searchsorted(cum, rng.random() * total, side="right")), n - 1)
        j = neighbours[i, rng.integers(0, m)]
        c = state.labels[i]
        if state.labels[j] != c:
            continue
        k = state.k[0]
        nc = state.counts[c]
        n_targets = (k - 1) + (1 if nc > 2 else 0)
        if n_targets == 0:
            continue
        p = rng.integers(0, n_targets)
        to_new = p == k - 1
        if to_new:
            t = state.order[k]  # the first free slot
            nt = 0
        else:
            if p >= state.where[c]:
                p += 1  # skip c itself
            t = state.order[p]
            nt = state.counts[t]
        ld_c = 0.0
        if nc > 2:
            _pair_stats(xc, i, j, state.sums[c], state.sumsq[c], -1.0, True, s, q)
            ld_c = factorise(nc - 2, s, q, params, buf, chol)
        _pair_stats(xc, i, j, state.sums[t], state.sumsq[t], 1.0, nt > 0, s, q)
        ld_t = factorise(nt + 2, s, q, params, buf, chol)
        ld_t_old = state.logdet[t] if nt > 0 else 0.0
        # t gains the pair, c loses it: the two blocks' weight changes (grow_by_two)
        log_a = grow_by_two(params, params.power, nt, ld_t_old, ld_t, d) - grow_by_two(
            params, params.power, nc - 2, ld_c, state.logdet[c], d
        )
        if to_new:
            new_prop += 1
        else:
            old_prop += 1
        if not accepts(rng, log_a):
            continue
        if to_new:
            new_acc += 1
        else:
            old_acc += 1
        for point in (i, j):
            place_point(state, xc, point, c, -1, params, v, buf)
            place_point(state, xc, point, t, 1, params, v, buf)
            state.labels[point] = t
        if to_new:
            grow_if_full(state)
    return new_prop, new_acc, old_prop, old_acc
