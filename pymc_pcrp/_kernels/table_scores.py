"""The table family's cell arithmetic on plain arrays (numba): scores and updates.

The kernels of the table family (:mod:`pymc_pcrp._kernels.table`, whose
docstring describes the statistics and the scoring cache) read their
parameters' arrays once and hand them to these functions, so that scoring a row
under many clusters costs no reference counting per cluster:

* :func:`row_score`: a row's log posterior predictive under a cluster it is not in;
* :func:`row_loo_score`: the same under the cluster that holds it, the row left out;
* :func:`bounded_score`: :func:`row_score`, given up once it is surely below a cut
  (the table sweep's skipping, :mod:`pymc_pcrp._kernels.table_sweep`);
* the parts of these scores for each kind of column (``*_terms``), from which the
  table sweep composes them itself;
* :func:`shift_cells` and :func:`refresh_cells` (or, one kind of column at a time,
  the ``refresh_*`` functions): a row added to or taken out of a cluster's
  statistics, and the cluster's scoring cache recomputed from them.

The kinds of column are :data:`CATEGORICAL` (binary columns are two levels),
:data:`POISSON` and :data:`GAUSSIAN`; ``cat_cols``, ``count_cols`` and
``gauss_cols`` list the columns of each kind. A categorical cell, and a count
cell up to its column's largest tabulated count ``tmax``, is scored by one
lookup in the cache: its log predictive in the table at ``toff``, or its
leave-one-out log predictive in the table at ``loff``. ``coff`` and ``soff``
are the columns' offsets into the cache and the statistics, ``expo`` where the
cache holds the exponent all Gaussian columns of a cluster share (0 when they do
not share one).

Speed: the functions the sweep calls once per row or cluster take their arrays one
by one and are compiled as functions of their own, with ``range`` loops over the
columns. Handing them tuples of arrays, inlining them (``inline="always"``) or
iterating over an array of columns (``for j in cols``) each made numba count
references to the arrays at every call, which cost more than the cells' arithmetic
(the Gaussian sweep 1.6 to 1.8 times slower, a binary table's refresh 3 times).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from pymc_pcrp._kernels._config import NJIT_KWARGS

__all__ = [
    "CATEGORICAL",
    "COUNT_SCALARS",
    "GAUSSIAN",
    "GAUSSIAN_ENTRIES",
    "HALF_LOG_2PI",
    "POISSON",
    "PRODUCT_CAP",
    "bounded_score",
    "categorical_loo_terms",
    "categorical_terms",
    "cell_offsets",
    "count_loo_terms",
    "count_terms",
    "gaussian_loo_terms",
    "gaussian_row_terms",
    "gaussian_terms",
    "log_factorial",
    "lookup_terms",
    "refresh_categorical",
    "refresh_cells",
    "refresh_counts",
    "refresh_counts_of_row",
    "refresh_gaussian",
    "row_loo_score",
    "row_score",
    "shift_cells",
]

CATEGORICAL = 0
POISSON = 1
GAUSSIAN = 2
COUNT_SCALARS = 6  # a count column's cache entries before its tables
GAUSSIAN_ENTRIES = 6
HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
PRODUCT_CAP = 1e150  # a running product past this is logged and restarted
_SMALL_COUNT = 64  # counts below this read log(x!) from a table
_LOG_FACTORIAL = np.array([math.lgamma(x + 1.0) for x in range(_SMALL_COUNT)])


@numba.njit(inline="always", **NJIT_KWARGS)
def log_factorial(x):
    """``log(x!)`` of a count ``x`` (a float holding an integer)."""
    if x < _SMALL_COUNT:
        return _LOG_FACTORIAL[int(x)]
    return math.lgamma(x + 1.0)


@numba.njit(**NJIT_KWARGS)
def row_score(cache, slot, data, i, cat_cols, count_cols, gauss_cols, coff, toff, tmax, expo):
    """:func:`score` on plain arrays."""
    return bounded_score(
        cache, slot, data, i, cat_cols, count_cols, gauss_cols, coff, toff, tmax, expo, -math.inf
    )


@numba.njit(**NJIT_KWARGS)
def row_loo_score(
    stats, cache, slot, data, i, cat_cols, count_cols, gauss_cols, coff, loff, tmax, expo,
    soff, hyp, gtab_id, gtab,
):  # fmt: skip
    """:func:`loo_score` on plain arrays.

    Categorical and count cells read the cache's leave-one-out tables (at ``loff``).
    A Gaussian cell uses the rank-one identity of the diagonal family's sweep:
    without the row the rate is ``b' = b r``, ``r = 1 - h (kappa + 1) / (kappa - 1)
    (x - mean)^2`` (``h`` the cached scale factor; the cache holds the product), and
    the log predictive is ``c(m) + a_m log r - log(b) / 2`` with ``m = n - 1``, the
    cache holding ``c(m) - log(b) / 2``; one logarithm of the product of the ``r``
    when the exponents agree. A cell whose ``r`` is numerically near 0 is scored
    from the statistics (``soff``, ``hyp``, ``gtab_id``, ``gtab``) instead.
    """
    total = 0.0
    if cat_cols.shape[0] > 0:
        total = categorical_loo_terms(total, cache, slot, data, i, cat_cols, loff)
    if count_cols.shape[0] > 0:
        total = count_loo_terms(total, cache, slot, data, i, count_cols, coff, loff, tmax)
    if gauss_cols.shape[0] > 0:
        total = gaussian_loo_terms(
            total, stats, cache, slot, data, i, gauss_cols, coff, expo, soff, hyp, gtab_id, gtab
        )
    return total


# The parts of row_loo_score, each adding to the running ``total`` (so that the sum is
# taken in the same order however they are called). The table sweep calls them
# directly, and only for the kinds its table has.


@numba.njit(**NJIT_KWARGS)
def categorical_loo_terms(total, cache, slot, data, i, cat_cols, loff):
    """``total`` plus the categorical cells' log predictives, the row left out of ``slot``."""
    for jj in range(cat_cols.shape[0]):
        j = cat_cols[jj]
        x = data[i, j]
        if not math.isnan(x):
            total += cache[slot, loff[j] + int(x)]
    return total


@numba.njit(**NJIT_KWARGS)
def count_loo_terms(total, cache, slot, data, i, count_cols, coff, loff, tmax):
    """``total`` plus the count cells' log predictives, the row left out of ``slot``."""
    for jj in range(count_cols.shape[0]):
        j = count_cols[jj]
        x = data[i, j]
        if math.isnan(x):
            continue
        if x <= tmax[j]:
            total += cache[slot, loff[j] + int(x)]
        else:
            total += _count_tail_loo(cache, slot, coff[j], x)
    return total


@numba.njit(**NJIT_KWARGS)
def cell_offsets(data, i, cols, toff, loff, tmax, zero, at, loo_at):
    """Where row ``i``'s cells of ``cols`` (categorical or count columns) are scored.

    Into ``at[jj]`` the cache entry of the cell's log predictive (table ``toff``),
    into ``loo_at[jj]`` that of its leave-one-out log predictive (table ``loff``):
    ``zero``, an entry that is always 0, for a missing cell, and -1 for a count past
    its column's table. The table sweep finds them once per row, then sums them
    under each cluster (:func:`lookup_terms`).
    """
    for jj in range(cols.shape[0]):
        j = cols[jj]
        x = data[i, j]
        if math.isnan(x):
            at[jj] = zero
            loo_at[jj] = zero
        elif x <= tmax[j]:
            at[jj] = toff[j] + int(x)
            loo_at[jj] = loff[j] + int(x)
        else:
            at[jj] = -1
            loo_at[jj] = -1


@numba.njit(**NJIT_KWARGS)
def lookup_terms(total, cache, slot, at, cut):
    """``total`` plus the entries ``at`` of ``slot`` (:func:`cell_offsets`), or ``-inf``.

    ``-inf`` once the sum is below ``cut`` (each entry is a log probability, at most 0).
    """
    for jj in range(at.shape[0]):
        total += cache[slot, at[jj]]
        if total < cut:
            return -math.inf
    return total


@numba.njit(**NJIT_KWARGS)
def _count_tail_loo(cache, slot, c, x):
    """Score a count cell past its column's tables, the row left out (``c``: its offset)."""
    big_a = cache[slot, c] - x  # a + S without the row
    log_b = cache[slot, c + 4]  # log(B' + 1) with B' = B - 1
    rise = cache[slot, c + 1] - math.lgamma(big_a)
    return big_a * (cache[slot, c + 5] - log_b) - x * log_b - log_factorial(x) + rise


@numba.njit(**NJIT_KWARGS)
def _count_tail(cache, slot, c, x):
    """Score a count cell past its column's tables (``c``: the column's offset)."""
    rise = math.lgamma(cache[slot, c] + x) - cache[slot, c + 1]
    return cache[slot, c + 2] - x * cache[slot, c + 3] - log_factorial(x) + rise


@numba.njit(**NJIT_KWARGS)
def gaussian_loo_terms(
    total, stats, cache, slot, data, i, gauss_cols, coff, expo, soff, hyp, gtab_id, gtab
):
    """``total`` plus the Gaussian cells' log predictives, the row left out of ``slot``.

    ``soff``, ``hyp``, ``gtab_id`` and ``gtab`` are for a cell scored from the statistics.
    """
    uniform = cache[slot, expo] > 0.0
    acc = 0.0
    prod = 1.0
    for jj in range(gauss_cols.shape[0]):
        j = gauss_cols[jj]
        x = data[i, j]
        if math.isnan(x):
            continue
        c = coff[j]
        t = x - cache[slot, c + 1]
        r = 1.0 - t * t * cache[slot, c + 4]
        if not r > 1e-8:
            total += _gaussian_loo_from_stats(stats, slot, soff[j], x, hyp, j, gtab, gtab_id[j])
            continue
        total += cache[slot, c + 5]
        if uniform:
            prod *= r
            if prod < 1.0 / PRODUCT_CAP:
                acc += math.log(prod)
                prod = 1.0
        else:
            total += (cache[slot, c + 3] - 1.0) * math.log(r)
    if uniform:  # each column's exponent without the row: the slot's less 1
        total += (cache[slot, expo] - 1.0) * (acc + math.log(prod))
    return total


@numba.njit(**NJIT_KWARGS)
def _gaussian_loo_from_stats(stats, slot, o, x, hyp, j, gtab, row):
    """Return a Gaussian cell's leave-one-out log predictive from the statistics (safe path)."""
    kappa0, a0, b0 = hyp[j, 0], hyp[j, 1], hyp[j, 2]
    m = stats[slot, o] - 1.0
    kappa_m = kappa0 + m
    s = stats[slot, o + 1] - x
    w = stats[slot, o + 2] - x * x - s * s / kappa_m
    b_m = b0 + 0.5 * (w if w > 0.0 else 0.0)
    t = x - s / kappa_m
    factor = kappa_m / (2.0 * b_m * (kappa_m + 1.0)) * t * t
    const = gtab[row, int(m)]
    return const - 0.5 * math.log(b_m) - (a0 + 0.5 * m + 0.5) * math.log1p(factor)


@numba.njit(**NJIT_KWARGS)
def bounded_score(
    cache, slot, data, i, cat_cols, count_cols, gauss_cols, coff, toff, tmax, expo, cut
):
    """Row ``i``'s log predictive under ``slot``, or ``-inf`` once it is surely below ``cut``.

    Gaussian columns first (with a finite ``cut``, a bound without a logarithm
    before the product), then the categorical and the count cells one at a time
    (each term is a log probability, at most 0). ``cut = -inf`` scores the row
    exactly (:func:`row_score`).
    """
    total = 0.0
    if gauss_cols.shape[0] > 0:
        total = gaussian_terms(cache, slot, data, i, gauss_cols, coff, cache[slot, expo], cut)
        if total < cut:
            return -math.inf
    if cat_cols.shape[0] > 0:
        total = categorical_terms(total, cache, slot, data, i, cat_cols, toff, cut)
    if count_cols.shape[0] > 0 and total > -math.inf:
        total = count_terms(total, cache, slot, data, i, count_cols, coff, toff, tmax, cut)
    return total


@numba.njit(**NJIT_KWARGS)
def categorical_terms(total, cache, slot, data, i, cat_cols, toff, cut):
    """``total`` plus the categorical cells' log predictives, or ``-inf`` once below ``cut``.

    Each term is at most 0, so the running sum is compared with ``cut`` after every cell.
    """
    for jj in range(cat_cols.shape[0]):
        j = cat_cols[jj]
        x = data[i, j]
        if math.isnan(x):
            continue
        total += cache[slot, toff[j] + int(x)]
        if total < cut:
            return -math.inf
    return total


@numba.njit(**NJIT_KWARGS)
def count_terms(total, cache, slot, data, i, count_cols, coff, toff, tmax, cut):
    """``total`` plus the count cells' log predictives, or ``-inf`` once below ``cut``.

    Counts up to ``tmax`` read their column's table; each term is at most 0.
    """
    for jj in range(count_cols.shape[0]):
        j = count_cols[jj]
        x = data[i, j]
        if math.isnan(x):
            continue
        if x <= tmax[j]:
            total += cache[slot, toff[j] + int(x)]
        else:
            total += _count_tail(cache, slot, coff[j], x)
        if total < cut:
            return -math.inf
    return total


@numba.njit(**NJIT_KWARGS)
def gaussian_terms(cache, slot, data, i, gauss_cols, coff, power, cut):
    """Sum the Gaussian cells' log predictives (``-inf`` once their bound is below ``cut``).

    ``power > 0`` is the exponent every Gaussian column of the cluster shares (one
    logarithm of the product of the Student-t factors), else each cell has its own.
    """
    if power > 0.0:
        # The constants and T = sum_j u_j first: with a finite cut, const - power T /
        # (1 + T) bounds the terms from above, and a row below the cut is abandoned
        # before the product of the Student-t factors and its logarithm.
        const = 0.0
        big_t = 0.0
        for jj in range(gauss_cols.shape[0]):
            j = gauss_cols[jj]
            x = data[i, j]
            if math.isnan(x):
                continue
            c = coff[j]
            t = x - cache[slot, c + 1]
            const += cache[slot, c]
            big_t += cache[slot, c + 2] * t * t
        if cut > -math.inf and const - power * big_t / (1.0 + big_t) < cut:
            return -math.inf
        prod = 1.0
        acc = 0.0
        for jj in range(gauss_cols.shape[0]):
            j = gauss_cols[jj]
            x = data[i, j]
            if math.isnan(x):
                continue
            c = coff[j]
            t = x - cache[slot, c + 1]
            prod *= 1.0 + cache[slot, c + 2] * t * t
            if prod > PRODUCT_CAP:
                acc += math.log(prod)
                prod = 1.0
        return const - power * (acc + math.log(prod))
    total = 0.0
    for jj in range(gauss_cols.shape[0]):
        j = gauss_cols[jj]
        x = data[i, j]
        if math.isnan(x):
            continue
        c = coff[j]
        t = x - cache[slot, c + 1]
        total += cache[slot, c] - cache[slot, c + 3] * math.log1p(cache[slot, c + 2] * t * t)
    return total


@numba.njit(**NJIT_KWARGS)
def gaussian_row_terms(cache, slot, xs, gc, power, cut):
    """:func:`gaussian_terms` from the row's Gaussian values and their cache offsets.

    ``xs[jj]`` is the row's value in column ``gauss_cols[jj]``, ``gc[jj]`` that column's
    ``coff``: the table sweep copies them once per row (one load fewer per cell and
    cluster). ``cut`` is finite.
    """
    if power > 0.0:
        const = 0.0
        big_t = 0.0
        for jj in range(xs.shape[0]):
            x = xs[jj]
            if math.isnan(x):
                continue
            c = gc[jj]
            t = x - cache[slot, c + 1]
            const += cache[slot, c]
            big_t += cache[slot, c + 2] * t * t
        if const - power * big_t / (1.0 + big_t) < cut:
            return -math.inf
        prod = 1.0
        acc = 0.0
        for jj in range(xs.shape[0]):
            x = xs[jj]
            if math.isnan(x):
                continue
            c = gc[jj]
            t = x - cache[slot, c + 1]
            prod *= 1.0 + cache[slot, c + 2] * t * t
            if prod > PRODUCT_CAP:
                acc += math.log(prod)
                prod = 1.0
        return const - power * (acc + math.log(prod))
    total = 0.0
    for jj in range(xs.shape[0]):
        x = xs[jj]
        if math.isnan(x):
            continue
        c = gc[jj]
        t = x - cache[slot, c + 1]
        total += cache[slot, c] - cache[slot, c + 3] * math.log1p(cache[slot, c + 2] * t * t)
    return total


@numba.njit(**NJIT_KWARGS)
def shift_cells(stats, slot, data, i, sign, kind, soff):
    """Add (``sign = 1``) or take out (``-1``) row ``i`` from the statistics of ``slot``."""
    for j in range(data.shape[1]):
        x = data[i, j]
        if math.isnan(x):
            continue
        o = soff[j]
        stats[slot, o] += sign
        if kind[j] == CATEGORICAL:
            stats[slot, o + 1 + int(x)] += sign
        elif kind[j] == POISSON:
            stats[slot, o + 1] += sign * x
            stats[slot, o + 2] += sign * log_factorial(x)
        else:
            stats[slot, o + 1] += sign * x
            stats[slot, o + 2] += sign * x * x


@numba.njit(**NJIT_KWARGS)
def refresh_cells(stats, cache, slot, layout, tables):
    """Recompute the scoring cache of ``slot`` from its statistics.

    ``layout = (soff, coff, nlev, tmax, hyp, cols, expo)``, ``cols = (cat_cols,
    count_cols, gauss_cols)``, and ``tables = (tab_id, logtab, gtab_id, gtab, ltab_id,
    ltab)`` (see :mod:`pymc_pcrp._kernels.table` for the cache): the ``refresh_*``
    function of each kind of column the table has.
    """
    soff, coff, nlev, tmax, hyp, cols, expo = layout
    cat_cols, count_cols, gauss_cols = cols
    tab_id, logtab, gtab_id, gtab, ltab_id, ltab = tables
    if cat_cols.shape[0] > 0:
        refresh_categorical(stats, cache, slot, cat_cols, soff, coff, nlev, tab_id, logtab)
    if count_cols.shape[0] > 0:
        refresh_counts(
            stats, cache, slot, count_cols, soff, coff, tmax, hyp, ltab_id, ltab, tab_id, logtab
        )
    if gauss_cols.shape[0] > 0:
        refresh_gaussian(stats, cache, slot, gauss_cols, soff, coff, expo, hyp, gtab_id, gtab)


@numba.njit(**NJIT_KWARGS)
def refresh_categorical(stats, cache, slot, cat_cols, soff, coff, nlev, tab_id, logtab):
    """Refresh the categorical columns' cache (each level's log probability, and without a cell)."""
    for jj in range(cat_cols.shape[0]):
        j = cat_cols[jj]
        o, c = soff[j], coff[j]
        n_all = int(stats[slot, o])
        log_n = logtab[tab_id[o], n_all]
        log_m = logtab[tab_id[o], n_all - 1] if n_all > 0 else 0.0
        levels = nlev[j]
        for lvl in range(levels):
            t = o + 1 + lvl
            m = int(stats[slot, t])
            cache[slot, c + lvl] = logtab[tab_id[t], m] - log_n
            cache[slot, c + levels + lvl] = logtab[tab_id[t], m - 1] - log_m if m > 0 else 0.0


@numba.njit(**NJIT_KWARGS)
def refresh_counts(
    stats, cache, slot, count_cols, soff, coff, tmax, hyp, ltab_id, ltab, tab_id, logtab
):
    """Refresh the count columns' cache (:func:`_refresh_count_column`)."""
    for jj in range(count_cols.shape[0]):
        j = count_cols[jj]
        o = soff[j]
        _refresh_count_column(
            cache, slot, coff[j], stats[slot, o], stats[slot, o + 1], hyp[j, 0], hyp[j, 1],
            tmax[j], ltab, ltab_id[j], logtab, tab_id[o],
        )  # fmt: skip


@numba.njit(**NJIT_KWARGS)
def refresh_counts_of_row(
    stats, cache, slot, count_cols, soff, coff, tmax, hyp, ltab_id, ltab, tab_id, logtab, data, i
):
    """:func:`refresh_counts` after row ``i`` moved in or out of ``slot``, whose cache was current.

    A column where the row's cell is missing keeps its statistics, so its cache
    (a function of them alone) is left as it is: the same values a refresh would
    write. Not for a slot just opened, whose cache may be stale.
    """
    for jj in range(count_cols.shape[0]):
        j = count_cols[jj]
        if math.isnan(data[i, j]):
            continue
        o = soff[j]
        _refresh_count_column(
            cache, slot, coff[j], stats[slot, o], stats[slot, o + 1], hyp[j, 0], hyp[j, 1],
            tmax[j], ltab, ltab_id[j], logtab, tab_id[o],
        )  # fmt: skip


@numba.njit(**NJIT_KWARGS)
def refresh_gaussian(stats, cache, slot, gauss_cols, soff, coff, expo, hyp, gtab_id, gtab):
    """Refresh the Gaussian columns' cache and their shared exponent (see the module)."""
    for jj in range(gauss_cols.shape[0]):
        j = gauss_cols[jj]
        o, c = soff[j], coff[j]
        n = stats[slot, o]
        kappa_n = hyp[j, 0] + n
        a_n = hyp[j, 1] + 0.5 * n
        s = stats[slot, o + 1]
        w = stats[slot, o + 2] - s * s / kappa_n
        b_n = hyp[j, 2] + 0.5 * (w if w > 0.0 else 0.0)
        g = gtab_id[j]
        cache[slot, c] = gtab[g, int(n)] - 0.5 * math.log(b_n)
        cache[slot, c + 1] = s / kappa_n
        cache[slot, c + 2] = kappa_n / (2.0 * b_n * (kappa_n + 1.0))
        cache[slot, c + 3] = a_n + 0.5
        if n >= 1.0:  # the leave-one-out factor and constant (see row_loo_score)
            cache[slot, c + 4] = cache[slot, c + 2] * (kappa_n + 1.0) / (kappa_n - 1.0)
            cache[slot, c + 5] = gtab[g, int(n) - 1] + cache[slot, c] - gtab[g, int(n)]
        else:
            cache[slot, c + 4] = 0.0
            cache[slot, c + 5] = 0.0
    _refresh_exponent(cache, slot, gauss_cols, coff, expo)


@numba.njit(**NJIT_KWARGS)
def _refresh_count_column(cache, slot, c, n, s, a, b, top, ltab, row, logtab, b_row):
    """Refresh a count column's cache: its scalars, then its two tables of log predictives.

    ``ltab[row, m] = lgamma(a + m)`` and ``logtab[b_row, m] = log(b + m)`` (past their
    ends the functions are taken); ``top`` the largest tabulated count. The rising
    factorials ``A (A + 1) ... (A + x - 1)`` and, without the row, ``(A - x) ... (A -
    1)`` are differences of two entries, each table entry independent of the others.
    """
    big_a = a + s
    n_int, s_int = int(n), int(s)
    if n_int + 1 < logtab.shape[1]:  # log(B - 1), log B, log(B + 1), B = b + n
        log_b, log_b1 = logtab[b_row, n_int], logtab[b_row, n_int + 1]
        log_bm = logtab[b_row, n_int - 1] if n_int > 0 else 0.0
    else:
        big_b = b + n
        log_b, log_b1, log_bm = math.log(big_b), math.log(big_b + 1.0), math.log(big_b - 1.0)
    const = big_a * (log_b - log_b1)
    fast = s_int + top < ltab.shape[1]
    lg_a = ltab[row, s_int] if fast else math.lgamma(big_a)
    cache[slot, c] = big_a
    cache[slot, c + 1] = lg_a
    cache[slot, c + 2] = const
    cache[slot, c + 3] = log_b1
    cache[slot, c + 4] = log_b
    cache[slot, c + 5] = log_bm
    base = c + COUNT_SCALARS
    loo = base + top + 1
    last = min(top, s_int) if n_int > 0 else -1  # a row's count is at most S
    if fast and top < _SMALL_COUNT:  # lookups only, and loops without branches
        for x in range(top + 1):
            rise = ltab[row, s_int + x] - lg_a
            cache[slot, base + x] = const + rise - _LOG_FACTORIAL[x] - x * log_b1
        for x in range(last + 1):  # the row of count x left out: A' = A - x, B' = B - 1
            rise = lg_a - ltab[row, s_int - x]
            lp = (big_a - x) * (log_bm - log_b) + rise - _LOG_FACTORIAL[x] - x * log_b
            cache[slot, loo + x] = lp
    else:
        for x in range(top + 1):
            rise = math.lgamma(big_a + x) - lg_a
            cache[slot, base + x] = const + rise - log_factorial(x) - x * log_b1
        for x in range(last + 1):
            rise = lg_a - math.lgamma(big_a - x)
            lp = (big_a - x) * (log_bm - log_b) + rise - log_factorial(x) - x * log_b
            cache[slot, loo + x] = lp
    for x in range(last + 1, top + 1):
        cache[slot, loo + x] = 0.0


@numba.njit(**NJIT_KWARGS)
def _refresh_exponent(cache, slot, gauss_cols, coff, expo):
    """Store the exponent every Gaussian column of ``slot`` shares (0 when they differ)."""
    power = 0.0
    for jj in range(gauss_cols.shape[0]):
        j = gauss_cols[jj]
        c = coff[j]
        if power == 0.0:
            power = cache[slot, c + 3]
        elif cache[slot, c + 3] != power:
            power = -1.0
    cache[slot, expo] = power if power > 0.0 else 0.0
