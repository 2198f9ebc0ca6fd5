r"""Informed split-merge: merges aimed at similar clusters, for the generic families, in numba.

The split-merge move of :mod:`pymc_pcrp._kernels.family_moves` draws its pair of
rows uniformly, so two clusters ``a`` and ``b`` are proposed for a merge with
probability about ``n_a n_b / N^2``. When a posterior hesitates between one
cluster and two for a pair of small, similar blocks (20-odd near-identical rows
of a table, say), such proposals are rare and the chain switches between the two
modes a few times per thousand sweeps. This move proposes merges where they have
a chance, and stays exact by counting its choices in the Metropolis-Hastings
ratio.

A proposal is a merge or a split with probability 1/2 each.

* **Merge.** Cluster ``a`` is uniform among the ``K`` clusters; ``b != a`` is
  drawn with probability ``w_ab / W_a``, ``W_a = sum_{c != a} w_ac``, where

  .. math::

     \log w_{ab} = \min\bigl(0,\; h(a \cup b) - h(a) - h(b)\bigr), \qquad
     h(c) = \log\alpha + r \log\Gamma(n_c) + \log m(c),

  the log posterior ratio of the merged state to the current one (``m`` is the
  family's block marginal likelihood); the weight is capped at 1, so that a pair
  whose merge gains more than the others cannot take every proposal. The two
  anchors are uniform in ``a`` and in ``b``, and the rest is the SAMS merge of
  the uniform move (the reverse split's sequential allocation).
* **Split.** Cluster ``c`` is uniform among the ``K``, and two distinct anchors
  are uniform in it; the rest is the SAMS split.

The probability of selecting a merge of ``{a, b}`` with its anchors is
``(1/2) (1/K) (w_ab/W_a + w_ab/W_b) / (n_a n_b)`` (``a`` first or ``b`` first:
the SAMS probability does not depend on which anchor is which), and of a split
of ``c`` with its anchors ``(1/2) (1/K) 2 / (n_c (n_c - 1))``. The ratio of the
reverse selection to the forward one enters the acceptance ratio, with the
reverse computed in the proposed state (``K - 1`` clusters after a merge, ``K +
1`` and the two new clusters' weights after a split). ``w`` is a function of
the state alone (symmetric in ``a`` and ``b``), so the move is a
Metropolis-Hastings move on the partition and leaves the posterior invariant.

Cost: a merge computes two rows of weights (``2 K`` block marginals of a union);
a split needs the two rows of its proposed clusters only when its acceptance
test is not already decided: every ``w / W`` is at most 1, which bounds the
reverse selection, and the test's uniform is drawn first (as :func:`accepts`
would draw it); when it fails even under the bound, the rows are not computed.
The ``h`` of the clusters and the weights of the pairs already scored are kept
across a batch of proposals until a move is accepted (most are not), so a batch
scores each pair of its clusters at most once.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from pymc_pcrp._kernels import moves
from pymc_pcrp._kernels._config import NJIT_KWARGS
from pymc_pcrp._kernels.draws import log_sum_exp
from pymc_pcrp._kernels.family_moves import (
    apply_merge,
    apply_split,
    block_weight,
    draw_choice,
    launch,
    sizes,
    union_into_group,
)
from pymc_pcrp._kernels.partitions import log_add

__all__ = ["informed_split_merge", "merge_selection", "split_selection"]

LOG_HALF = math.log(0.5)


@numba.njit(**NJIT_KWARGS)
def _slot_weights(state, params, h):
    """``h[slot]`` (the block weight of the module docstring) of every occupied slot."""
    for p in range(state.k[0]):
        slot = state.order[p]
        h[slot] = block_weight(state.sums, slot, state.counts[slot], params, params[1])


@numba.njit(**NJIT_KWARGS)
def _pair_weight(stats_a, n_a, h_a, stats_b, n_b, h_b, params, scratch):
    """``log w`` of merging the clusters summarised by the rows ``stats_a`` and ``stats_b``."""
    for s in range(scratch.shape[1]):
        scratch[0, s] = stats_a[s] + stats_b[s]
    merged = block_weight(scratch, 0, n_a + n_b, params, params[1])
    return min(0.0, merged - h_a - h_b)


@numba.njit(**NJIT_KWARGS)
def _cluster_row(state, h, pa, params, scratch, known, out):
    """``out[p] = log w(order[pa], order[p])`` (``-inf`` at ``pa``), kept in ``known``.

    ``known = (weights, valid)`` are ``K x K`` by position in ``order``, valid
    until the partition changes: a pair scored for one proposal is not scored
    again for the next.
    """
    weights, valid = known
    sa = state.order[pa]
    for p in range(state.k[0]):
        if p == pa:
            out[p] = -math.inf
        elif valid[pa, p]:
            out[p] = weights[pa, p]
        else:
            sc = state.order[p]
            w = _pair_weight(
                state.sums[sa],
                state.counts[sa],
                h[sa],
                state.sums[sc],
                state.counts[sc],
                h[sc],
                params,
                scratch,
            )
            weights[pa, p] = weights[p, pa] = w
            valid[pa, p] = valid[p, pa] = True
            out[p] = w


@numba.njit(**NJIT_KWARGS)
def _forget(state, h, params, known):
    """After an accepted move: the clusters' ``h`` again, no pair known; grow ``known``."""
    _slot_weights(state, params, h)
    k = state.k[0]
    if known[0].shape[0] < k:
        known = (np.empty((2 * k, 2 * k)), np.zeros((2 * k, 2 * k), dtype=np.bool_))
    known[1][:k, :k] = False
    return known


@numba.njit(**NJIT_KWARGS)
def _state_row(state, h, stats_a, n_a, h_a, skip, params, scratch, out):
    """``out[p] = log w(a, order[p])`` for the state's clusters, ``-inf`` at slot ``skip``."""
    for p in range(state.k[0]):
        slot = state.order[p]
        if slot == skip:
            out[p] = -math.inf
        else:
            out[p] = _pair_weight(
                stats_a, n_a, h_a, state.sums[slot], state.counts[slot], h[slot], params, scratch
            )


@numba.njit(**NJIT_KWARGS)
def merge_selection(k, n_a, n_b, log_w_ab, log_total_a, log_total_b):
    """Log probability that a merge proposal of ``k`` clusters picks ``a``, ``b``, the anchors."""
    both = log_add(log_w_ab - log_total_a, log_w_ab - log_total_b)  # a first, or b first
    return LOG_HALF - math.log(k) + both - math.log(n_a) - math.log(n_b)


@numba.njit(**NJIT_KWARGS)
def split_selection(k, n_c):
    """Log probability that a split proposal of ``k`` clusters picks ``c`` and its anchors."""
    return LOG_HALF - math.log(k) + math.log(2.0) - math.log(n_c) - math.log(n_c - 1.0)


@numba.njit(**NJIT_KWARGS)
def _split_reverse(state, h, sc, groups, params, scratch, row):
    """Log probability of the merge that undoes a proposed split of slot ``sc`` (groups 0, 1)."""
    gcount, gstats, _ = groups
    k = state.k[0]
    h0 = block_weight(gstats, 0, gcount[0], params, params[1])
    h1 = block_weight(gstats, 1, gcount[1], params, params[1])
    w01 = _pair_weight(gstats[0], gcount[0], h0, gstats[1], gcount[1], h1, params, scratch)
    totals = np.empty(2)
    for g in range(2):
        _state_row(state, h, gstats[g], gcount[g], h0 if g == 0 else h1, sc, params, scratch, row)
        row[k] = w01  # the other new cluster
        totals[g] = log_sum_exp(row[: k + 1])
    return merge_selection(k + 1, gcount[0], gcount[1], w01, totals[0], totals[1])


@numba.njit(**NJIT_KWARGS)
def informed_split_merge(rng, chain, n_moves, n_scans):
    """Run ``n_moves`` informed split-merge proposals in place; return the four counts.

    ``chain = (data, state, params, tables)`` as for the generic family's sweep;
    ``n_scans`` as for :func:`pymc_pcrp._kernels.family_moves.split_merge`
    (``-1``: sequential allocation alone). Returns ``(splits proposed, accepted,
    merges proposed, accepted)``.
    """
    data, state, params, tables = chain
    power = params[1]
    if data.shape[0] < 2 or n_moves <= 0:
        return 0, 0, 0, 0
    seat_w = np.ascontiguousarray(tables[2][:, 0])
    head, nxt, members, side, target = moves.move_workspace(state)
    n_stats, n_cache = sizes(params)
    groups = (np.zeros(2, dtype=np.int64), np.zeros((2, n_stats)), np.zeros((2, n_cache)))
    gcount, gstats, _ = groups
    work = (params, seat_w)
    cap = state.counts.shape[0]
    h = np.zeros(cap)
    row = np.empty(cap + 1)
    scratch = np.empty((1, n_stats))
    known = (np.empty((1, 1)), np.zeros((1, 1), dtype=np.bool_))
    known = _forget(state, h, params, known)
    n_split = n_split_acc = n_merge = n_merge_acc = 0
    for _ in range(n_moves):
        k = state.k[0]
        if rng.random() < 0.5:  # merge
            if k < 2:
                continue
            pa = rng.integers(0, k)
            _cluster_row(state, h, pa, params, scratch, known, row)
            total_a = log_sum_exp(row[:k])
            pb = draw_choice(rng, row, k)
            si, sj = state.order[pa], state.order[pb]
            na, nb = state.counts[si], state.counts[sj]
            i = moves.nth_member(head, nxt, si, rng.integers(0, na), -1)
            j = moves.nth_member(head, nxt, sj, rng.integers(0, nb), -1)
            w_ab = known[0][pa, pb]
            _cluster_row(state, h, pb, params, scratch, known, row)
            total_b = log_sum_exp(row[:k])
            m = moves.gather_members(head, nxt, si, sj, i, j, members, target)
            seats = (members, m, side, target)
            union_into_group(state, si, sj, groups, params)
            base = block_weight(gstats, 0, gcount[0], params, power) - h[si] - h[sj]
            base += split_selection(k - 1, na + nb)
            base -= merge_selection(k, na, nb, w_ab, total_a, total_b)
            proposal = (i, j, seats, True, n_scans, (base, 1.0))
            log_q, log_u = launch(rng, data, proposal, groups, work)
            n_merge += 1
            if moves.merge_accepted(rng, log_q, log_u, base, 1.0):
                n_merge_acc += 1
                apply_merge(state, si, sj, i, j, seats, (head, nxt), groups, params)
                known = _forget(state, h, params, known)
        else:  # split
            sc = state.order[rng.integers(0, k)]
            nc = state.counts[sc]
            if nc < 2:
                continue
            i = moves.nth_member(head, nxt, sc, rng.integers(0, nc), -1)
            j = moves.nth_member(head, nxt, sc, rng.integers(0, nc - 1), i)
            m = moves.gather_members(head, nxt, sc, sc, i, j, members, target)
            seats = (members, m, side, target)
            log_q, _ = launch(rng, data, (i, j, seats, False, n_scans, (0.0, 0.0)), groups, work)
            n_split += 1
            gain = (
                block_weight(gstats, 0, gcount[0], params, power)
                + block_weight(gstats, 1, gcount[1], params, power)
                - h[sc]
                - log_q
                - split_selection(k, nc)
            )
            # every w / W <= 1: the reverse merge's selection is at most this
            top = LOG_HALF - math.log(k + 1.0) + math.log(2.0)
            top -= math.log(gcount[0]) + math.log(gcount[1])
            if gain + top >= 0.0:
                accepted = moves.accepts(
                    rng, gain + _split_reverse(state, h, sc, groups, params, scratch, row)
                )
            else:  # the uniform accepts() would draw, drawn before the rows are computed
                log_u = math.log(rng.random())
                accepted = log_u < gain + top and log_u < gain + _split_reverse(
                    state, h, sc, groups, params, scratch, row
                )
            if accepted:
                n_split_acc += 1
                apply_split(state, sc, i, j, seats, (head, nxt), groups)
                known = _forget(state, h, params, known)
    return n_split, n_split_acc, n_merge, n_merge_acc
