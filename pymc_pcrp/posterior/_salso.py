"""Kernels for posterior summaries of a partition: co-clustering counts and greedy search.

Everything here works on plain arrays; :mod:`pymc_pcrp.posterior.similarity` validates the
input and drives the search.

Label draws arrive as an ``(S, N)`` integer array with arbitrary label values;
:func:`dense_labels` renumbers each draw ``0, 1, ...`` by first appearance.

**Co-clustering counts.** :func:`accumulate_coclustering` adds a draw's pairs
cluster by cluster (``sum_k n_k^2 / 2`` scalar additions), which is cheap when a
draw has many small clusters. For a draw with few large clusters the caller
instead writes its one-hot indicator rows with :func:`one_hot_rows` and adds
``A^T A`` with a BLAS rank-k update; :func:`sum_squared_block_sizes` gives the
numbers to choose between the two.

**Search state.** A candidate clustering ``c`` is kept in *slots*
``0 .. kcap - 1``: ``c[i]`` is the slot of point ``i`` (``-1`` while the point is
unallocated) and ``sizes[k]`` the number of points in slot ``k``; a slot with size
zero is free. Both losses are scored by the change in the expected loss when one
point joins a slot, so a point is placed in ``O(kcap S)`` (VI) or ``O(N)``
(Binder) time.

*VI.* ``cnt[k, col[i, s]]`` is the number of points of slot ``k`` that share
point ``i``'s block in draw ``s``: ``col[i, s] = offset[s] + z_s[i]`` indexes one
column per (draw, block) pair, so ``cnt`` is all the contingency tables of ``c``
against the draws side by side. With ``f(n) = n log2 n`` and
``d(n) = f(n + 1) - f(n)``, ``N`` times the expected VI changes by
``d(sizes[k]) - (2 / S) sum_s d(cnt[k, col[i, s]])`` when point ``i`` joins slot
``k``, and by ``0`` when it opens a new slot.

*Binder.* With ``p`` the co-clustering matrix and costs ``a`` (separating a pair
the draws put together) and ``2 - a`` (joining a pair they separate), the loss
changes by ``sum_{j in k} (2 - a - 2 p_ij)`` when ``i`` joins slot ``k``.
"""

import numba
import numpy as np

from pymc_pcrp._kernels._config import NJIT_KWARGS
from pymc_pcrp._kernels.partitions import canonical_labels

__all__ = [
    "accumulate_coclustering",
    "binder_loss",
    "binder_place",
    "dense_labels",
    "finish_similarity",
    "one_hot_rows",
    "sum_squared_block_sizes",
    "vi_fill",
    "vi_loss",
    "vi_place",
    "vi_remove",
    "xlog2x_table",
]

# Scores closer than this count as a tie; a point only moves for a strict improvement,
# which guarantees that the sweeps terminate.
_TOL = 1e-9


@numba.njit(**NJIT_KWARGS)
def dense_labels(draws):
    """Renumber every row of ``draws`` ``0, 1, ...`` by order of first appearance.

    Labels in ``0 .. 4 N`` (the usual case) are renumbered by
    :func:`~pymc_pcrp._kernels.partitions.canonical_labels` in ``O(N)`` per row;
    other values go through a stable sort of the row.

    Parameters
    ----------
    draws : int64 array, shape (S, N)

    Returns
    -------
    dense : int64 array, shape (S, N)
    n_blocks : int64 array, shape (S,)
        Number of distinct labels in each row.
    """
    n_draws, n = draws.shape
    dense = np.empty((n_draws, n), dtype=np.int64)
    n_blocks = np.zeros(n_draws, dtype=np.int64)
    if n_draws == 0 or n == 0:
        return dense, n_blocks
    small = draws.min() >= 0 and draws.max() <= 4 * n
    if small:
        for s in range(n_draws):
            dense[s] = canonical_labels(draws[s])
            n_blocks[s] = dense[s].max() + 1
        return dense, n_blocks
    rank = np.empty(n, dtype=np.int64)
    first = np.empty(n, dtype=np.int64)
    for s in range(n_draws):
        row = draws[s]
        order = np.argsort(row, kind="mergesort")
        # rank[i]: index of row[i] among the sorted distinct values.
        r = -1
        for t in range(n):
            i = order[t]
            if t == 0 or row[i] != row[order[t - 1]]:
                r += 1
                first[r] = -1
            rank[i] = r
        k = 0
        for i in range(n):
            if first[rank[i]] < 0:
                first[rank[i]] = k
                k += 1
            dense[s, i] = first[rank[i]]
        n_blocks[s] = k
    return dense, n_blocks


@numba.njit(**NJIT_KWARGS)
def accumulate_coclustering(dense, n_blocks, out):
    """Add, for every draw, one to ``out[i, j]`` (``i <= j``) when ``i`` and ``j`` share a block.

    Only the upper triangle (diagonal included) is written; see
    :func:`finish_similarity`. Each draw costs ``O(N + sum_b n_b^2 / 2)`` with no
    memory beyond ``O(N)`` scratch.
    """
    n_draws, n = dense.shape
    start = np.empty(n + 1, dtype=np.int64)
    fill = np.empty(n, dtype=np.int64)
    members = np.empty(n, dtype=np.int64)
    for s in range(n_draws):
        k = n_blocks[s]
        start[: k + 1] = 0
        for i in range(n):
            start[dense[s, i] + 1] += 1
        for b in range(k):
            start[b + 1] += start[b]
        fill[:k] = start[:k]
        # Counting sort: the members of each block end up in increasing index order.
        for i in range(n):
            b = dense[s, i]
            members[fill[b]] = i
            fill[b] += 1
        for b in range(k):
            lo = start[b]
            hi = start[b + 1]
            for u in range(lo, hi):
                row = out[members[u]]
                for v in range(u, hi):
                    row[members[v]] += 1


@numba.njit(**NJIT_KWARGS)
def sum_squared_block_sizes(dense, n_blocks):
    """Return ``sum_b n_b^2`` for every draw (``n_b`` the size of block ``b``)."""
    n_draws, n = dense.shape
    result = np.zeros(n_draws, dtype=np.int64)
    counts = np.zeros(n, dtype=np.int64)
    for s in range(n_draws):
        k = n_blocks[s]
        counts[:k] = 0
        for i in range(n):
            counts[dense[s, i]] += 1
        total = 0
        for b in range(k):
            total += counts[b] * counts[b]
        result[s] = total
    return result


@numba.njit(**NJIT_KWARGS)
def one_hot_rows(dense, n_blocks, out):
    """Set ``out[offset_s + b, i] = 1`` when point ``i`` is in block ``b`` of draw ``s``.

    ``out`` has shape ``(sum(n_blocks), N)`` and must be zero on entry;
    ``offset_s`` is the number of blocks of the draws before ``s``.
    """
    n_draws, n = dense.shape
    offset = 0
    for s in range(n_draws):
        for i in range(n):
            out[offset + dense[s, i], i] = 1
        offset += n_blocks[s]


@numba.njit(**NJIT_KWARGS)
def finish_similarity(out, scale):
    """Multiply the upper triangle by ``scale`` and copy it into the lower triangle."""
    n = out.shape[0]
    for i in range(n):
        for j in range(i, n):
            v = out[i, j] * scale
            out[i, j] = v
            out[j, i] = v


@numba.njit(**NJIT_KWARGS)
def xlog2x_table(n):
    """Return ``f[m] = m log2 m`` for ``m = 0 .. n + 1`` (with ``f[0] = 0``)."""
    f = np.zeros(n + 2, dtype=np.float64)
    for m in range(2, n + 2):
        f[m] = m * np.log2(m)
    return f


@numba.njit(**NJIT_KWARGS)
def _choose(scores, sizes, old, kcap):
    """Pick the slot for a point from its join ``scores`` (a new slot scores ``0``).

    ``old`` is the point's slot before it was taken out (``-1`` if unallocated);
    the point stays there unless another option is better by more than ``_TOL``.
    Among other options, the lowest score wins, and ties go to the lowest slot,
    with opening a new slot last.
    """
    free = -1
    if old >= 0 and sizes[old] == 0:
        free = old  # a singleton may "stay" by reopening its own slot
    else:
        for k in range(kcap):
            if sizes[k] == 0:
                free = k
                break
    best = -1
    best_score = np.inf
    if old >= 0:
        best = old
        best_score = 0.0 if sizes[old] == 0 else scores[old]
    for k in range(kcap):
        if sizes[k] > 0 and k != old and scores[k] < best_score - _TOL:
            best = k
            best_score = scores[k]
    if free >= 0 and free != old and 0.0 < best_score - _TOL:
        best = free
    return best


@numba.njit(**NJIT_KWARGS)
def vi_remove(points, c, sizes, cnt, col):
    """Take ``points`` out of their slots (they become unallocated, ``c = -1``)."""
    n_draws = col.shape[1]
    for t in range(points.shape[0]):
        i = points[t]
        k = c[i]
        if k < 0:
            continue
        sizes[k] -= 1
        row = cnt[k]
        for s in range(n_draws):
            row[col[i, s]] -= 1
        c[i] = -1


@numba.njit(**NJIT_KWARGS)
def vi_fill(c, sizes, cnt, col):
    """Rebuild ``sizes`` and ``cnt`` from the slots ``c`` (``-1`` entries are skipped)."""
    n, n_draws = col.shape
    sizes[:] = 0
    cnt[:, :] = 0
    for i in range(n):
        k = c[i]
        if k < 0:
            continue
        sizes[k] += 1
        row = cnt[k]
        for s in range(n_draws):
            row[col[i, s]] += 1


@numba.njit(**NJIT_KWARGS)
def vi_place(order, c, sizes, cnt, col, df):
    """Greedily (re)place each point of ``order``, in turn, to minimise the expected VI.

    ``df[m] = f(m + 1) - f(m)``. A point that is allocated is first taken out of
    its slot. Returns the number of points that ended in a different slot (newly
    allocated points count).
    """
    kcap = sizes.shape[0]
    n_draws = col.shape[1]
    two_over_s = 2.0 / n_draws
    scores = np.zeros(kcap, dtype=np.float64)
    changed = 0
    for t in range(order.shape[0]):
        i = order[t]
        old = c[i]
        cols = col[i]
        if old >= 0:
            sizes[old] -= 1
            row = cnt[old]
            for s in range(n_draws):
                row[cols[s]] -= 1
        for k in range(kcap):
            nk = sizes[k]
            if nk == 0:
                continue
            row = cnt[k]
            acc = 0.0
            for s in range(n_draws):
                acc += df[row[cols[s]]]
            scores[k] = df[nk] - two_over_s * acc
        new = _choose(scores, sizes, old, kcap)
        sizes[new] += 1
        row = cnt[new]
        for s in range(n_draws):
            row[cols[s]] += 1
        c[i] = new
        if new != old:
            changed += 1
    return changed


@numba.njit(**NJIT_KWARGS)
def vi_loss(sizes, cnt, f, n_draws, draws_term, n):
    """Return the expected VI (bits) of the clustering held in ``sizes``/``cnt``.

    ``draws_term`` is ``(1 / S) sum_s sum_b f(|block b of draw s|)``, which does not
    depend on the clustering.
    """
    a = 0.0
    for k in range(sizes.shape[0]):
        a += f[sizes[k]]
    b = 0.0
    for k in range(cnt.shape[0]):
        if sizes[k] == 0:
            continue
        row = cnt[k]
        for t in range(row.shape[0]):
            b += f[row[t]]
    return (a + draws_term - 2.0 * b / n_draws) / n


@numba.njit(**NJIT_KWARGS)
def binder_place(order, c, sizes, psm, a):
    """Greedily (re)place each point of ``order`` to minimise the expected Binder loss.

    Same contract as :func:`vi_place`; ``psm`` is the full symmetric co-clustering
    matrix and ``a`` the cost of separating a pair that a draw puts together.
    """
    kcap = sizes.shape[0]
    n = c.shape[0]
    join_cost = 2.0 - a
    scores = np.zeros(kcap, dtype=np.float64)
    changed = 0
    for t in range(order.shape[0]):
        i = order[t]
        old = c[i]
        if old >= 0:
            sizes[old] -= 1
            c[i] = -1
        scores[:] = 0.0
        row = psm[i]
        for j in range(n):
            k = c[j]
            if k >= 0:
                scores[k] += join_cost - 2.0 * row[j]
        new = _choose(scores, sizes, old, kcap)
        sizes[new] += 1
        c[i] = new
        if new != old:
            changed += 1
    return changed


@numba.njit(**NJIT_KWARGS)
def binder_loss(c, psm, a):
    """Return the expected Binder loss of ``c`` (see the module docstring)."""
    n = c.shape[0]
    total = 0.0
    for i in range(n):
        row = psm[i]
        ci = c[i]
        for j in range(i + 1, n):
            p = row[j]
            if ci == c[j]:
                total += (2.0 - a) * (1.0 - p)
            else:
                total += a * p
    return total
