"""The table family's Gibbs sweep, written out for speed, in numba.

The same full conditional as the generic :func:`~pymc_pcrp._kernels.family_moves.sweeps`
(weight ``n_k^r`` times each occupied cluster's posterior predictive, the row's
own cluster with the row left out, and ``alpha`` times the prior predictive for
a new one), computed the way the diagonal family's sweep
(:func:`~pymc_pcrp._kernels.diag_sweep.diag_sweeps`) computes it:

* the parameters' and the state's arrays are read once per call, not once per
  row or cluster, and handed one by one (no tuples) to the functions that score
  and update (numba counts references at every read of a structure's field and
  at every call that passes a tuple of arrays, which costs more than scoring a
  few cells);
* a row's scores are composed in the loop from the parts for each kind of column
  (:mod:`pymc_pcrp._kernels.table_scores`, ``*_terms``), each called only when the
  table has that kind: a categorical, binary or small count cell is one lookup in
  the cache, a Gaussian cell a factor of a product. The cells' cache entries are
  located once per row (``cell_offsets``), and a row whose count cells are all
  tabulated sums its count entries as the categorical ones (``lookup_terms``; a
  missing cell reads an entry that is 0, which leaves every sum unchanged);
* far clusters are bounded and skipped, with an exact draw. Each cell's log
  predictive of a categorical or count column is a log probability, so at most
  0; a Gaussian column's is at most its peak, and the columns' product of
  Student-t factors ``prod_j (1 + u_j)`` is at least ``1 + T``, ``T = sum_j u_j``,
  with ``log(1 + T) >= T / (1 + T)``. A cluster whose upper bound falls more
  than ``SKIP_NATS`` below the larger of the own cluster's and the new
  cluster's exact log weights is not scored further; the uniform of the draw
  then tells whether the skipped clusters can matter, and only then are they
  scored exactly (:func:`pymc_pcrp._kernels.diag_sweep.diag_sweeps` gives the
  argument that every option keeps exactly its conditional probability).

The state changes only when a row moves, as by the generic moves' ``move_row``
(written out here, with the arrays read once). The row scores are those of
:mod:`pymc_pcrp._kernels.table_scores`, on plain arrays;
:mod:`pymc_pcrp._kernels.table` registers this sweep as the table family's.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from pymc_pcrp._kernels._config import NJIT_KWARGS
from pymc_pcrp._kernels.draws import shuffle_in_place, sweep_order
from pymc_pcrp._kernels.scores import (
    SKIP_NATS,
    pick_option,
    scored_weights,
    skipped_stage,
    sweep_workspace,
)
from pymc_pcrp._kernels.slots import free_slot, open_slot
from pymc_pcrp._kernels.table_scores import (
    cell_offsets,
    count_loo_terms,
    count_terms,
    gaussian_loo_terms,
    gaussian_row_terms,
    lookup_terms,
    refresh_categorical,
    refresh_counts,
    refresh_counts_of_row,
    refresh_gaussian,
    row_score,
    shift_cells,
)

__all__ = ["table_sweeps"]


@numba.njit(**NJIT_KWARGS)
def table_sweeps(rng, chain, n_sweeps):
    """Run ``n_sweeps`` sweeps in place; return how many rows changed cluster.

    ``chain`` is ``(data, state, params, tables)`` as for
    :func:`~pymc_pcrp._kernels.family_moves.sweeps`. Each sweep visits the rows
    in a fresh uniformly random order and draws each row's cluster from its full
    conditional given the others; a singleton drawing a new cluster stays.
    """
    data, state, params, tables = chain
    n = data.shape[0]
    log_new, _, by_size = tables
    logw, skipped, wts, wsk, skip_weight = sweep_workspace(n, SKIP_NATS)
    labels, counts, stats, cache = state.labels, state.counts, state.sums, state.cache
    order, where, k_arr = state.order, state.where, state.k
    toff, loff, tmax = params.toff, params.loff, params.tmax
    cat_cols, count_cols, gauss_cols = params.cat_cols, params.count_cols, params.gauss_cols
    kind, soff, coff, expo, nlev = params.kind, params.soff, params.coff, params.expo, params.nlev
    hyp, tab_id, logtab = params.hyp, params.tab_id, params.logtab
    gtab_id, gtab, ltab_id, ltab = params.gtab_id, params.gtab, params.ltab_id, params.ltab
    n_cat, n_count = cat_cols.shape[0], count_cols.shape[0]
    zero = params.n_cache - 1  # an entry that stays 0
    cat_at, cat_loo = np.empty(n_cat, dtype=np.int64), np.empty(n_cat, dtype=np.int64)
    cnt_at, cnt_loo = np.empty(n_count, dtype=np.int64), np.empty(n_count, dtype=np.int64)
    n_gauss = gauss_cols.shape[0]
    xs, gc = np.empty(n_gauss), np.empty(n_gauss, dtype=np.int64)  # a row's values, offsets
    for jj in range(n_gauss):
        gc[jj] = coff[gauss_cols[jj]]
    perm = sweep_order(n)
    moved = 0
    for _ in range(n_sweeps):
        shuffle_in_place(rng, perm)
        for i in perm:
            old = labels[i]
            m = counts[old]
            k = k_arr[0]
            own_p = where[old]
            for jj in range(n_gauss):
                xs[jj] = data[i, gauss_cols[jj]]
            if n_cat > 0:  # where the row's categorical cells are scored
                cell_offsets(data, i, cat_cols, toff, loff, tmax, zero, cat_at, cat_loo)
            tabulated = False  # every count cell of the row read from its column's tables
            if n_count > 0:
                cell_offsets(data, i, count_cols, toff, loff, tmax, zero, cnt_at, cnt_loo)
                tabulated = True
                for jj in range(n_count):
                    if cnt_at[jj] < 0:
                        tabulated = False
            # 1. The own cluster with the row left out, and the new cluster, exactly.
            w_own = -math.inf
            if m > 1:  # row_loo_score, with only the kinds of column the table has
                lw = 0.0
                if n_cat > 0:
                    lw = lookup_terms(lw, cache, old, cat_loo, -math.inf)
                if tabulated:
                    lw = lookup_terms(lw, cache, old, cnt_loo, -math.inf)
                elif n_count > 0:
                    lw = count_loo_terms(lw, cache, old, data, i, count_cols, coff, loff, tmax)
                if gauss_cols.shape[0] > 0:
                    lw = gaussian_loo_terms(
                        lw, stats, cache, old, data, i, gauss_cols, coff, expo, soff, hyp, gtab_id,
                        gtab,
                    )  # fmt: skip
                w_own = by_size[m - 1, 0] + lw
            ref = max(w_own, log_new[i])
            floor = ref - SKIP_NATS
            # 2. The other clusters (bounded_score, composed here), abandoned once below the floor.
            n_skip = 0
            for p in range(k):
                if p == own_p:
                    logw[p] = w_own
                    continue
                slot = order[p]
                seat = by_size[counts[slot], 0]
                cut = floor - seat
                lw = 0.0
                if gauss_cols.shape[0] > 0:
                    power = cache[slot, expo]
                    lw = gaussian_row_terms(cache, slot, xs, gc, power, cut)
                    if lw < cut:
                        lw = -math.inf
                if n_cat > 0 and lw > -math.inf:
                    lw = lookup_terms(lw, cache, slot, cat_at, cut)
                if tabulated and lw > -math.inf:
                    lw = lookup_terms(lw, cache, slot, cnt_at, cut)
                elif n_count > 0 and lw > -math.inf:
                    lw = count_terms(lw, cache, slot, data, i, count_cols, coff, toff, tmax, cut)
                if lw == -math.inf:
                    skipped[n_skip] = p
                    n_skip += 1
                    logw[p] = -math.inf
                else:
                    logw[p] = seat + lw
            if log_new[i] < floor:
                skipped[n_skip] = k
                n_skip += 1
                logw[k] = -math.inf
            else:
                logw[k] = log_new[i]
            # 3. The exact draw (weights relative to the largest scored one).
            top, total = scored_weights(logw, wts, k + 1, ref)
            u = rng.random()
            a = total / (total + n_skip * skip_weight)
            in_scored = u < a
            target = u / a * total if in_scored else 0.0
            if not in_scored:  # the skipped options may matter: score them exactly
                big = 0.0
                for s_ in range(n_skip):
                    p = skipped[s_]
                    if p == k:
                        lw = log_new[i]
                    else:
                        slot = order[p]
                        lw = by_size[counts[slot], 0] + row_score(
                            cache, slot, data, i, cat_cols, count_cols, gauss_cols, coff, toff,
                            tmax, expo,
                        )  # fmt: skip
                    wsk[s_] = math.exp(lw - top)
                    big += wsk[s_]
                in_scored, target = skipped_stage(u, a, total, big)
            choice = pick_option(in_scored, target, wts, k + 1, wsk, skipped, n_skip)
            if choice == own_p or (choice == k and m == 1):
                continue  # stays (a singleton drawing a new cluster stays where it is)
            # 4. The move (family_moves.move_row): ``order[choice]`` is read before
            #    freeing a slot reorders ``order``.
            new = order[choice]
            if m == 1:
                free_slot(state, old)
            else:
                counts[old] -= 1
                shift_cells(stats, old, data, i, -1.0, kind, soff)
            if counts[new] == 0:
                open_slot(state, new)
            counts[new] += 1
            shift_cells(stats, new, data, i, 1.0, kind, soff)
            labels[i] = new
            for side in range(2 if m > 1 else 1):  # refresh_cells, kind by kind
                slot = new if side == 0 else old
                if cat_cols.shape[0] > 0:
                    refresh_categorical(
                        stats, cache, slot, cat_cols, soff, coff, nlev, tab_id, logtab
                    )
                if n_count > 0 and side == 0 and counts[new] == 1:  # just opened
                    refresh_counts(
                        stats, cache, slot, count_cols, soff, coff, tmax, hyp, ltab_id, ltab,
                        tab_id, logtab,
                    )  # fmt: skip
                elif n_count > 0:  # only the columns where the row has a count
                    refresh_counts_of_row(
                        stats, cache, slot, count_cols, soff, coff, tmax, hyp, ltab_id, ltab,
                        tab_id, logtab, data, i,
                    )  # fmt: skip
                if gauss_cols.shape[0] > 0:
                    refresh_gaussian(
                        stats, cache, slot, gauss_cols, soff, coff, expo, hyp, gtab_id, gtab
                    )
            moved += 1
    return moved
