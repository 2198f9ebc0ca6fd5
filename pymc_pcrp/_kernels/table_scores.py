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
* :func:`shift_cells` and :func:`refresh_cells`: a row added to or taken out of a
  cluster's statistics, and the cluster's scoring cache recomputed from them.

The kinds of column are :data:`CATEGORICAL` (binary columns are two levels),
:data:`POISSON` and :data:`GAUSSIAN`.

``cols = (cat_cols, count_cols, gauss_cols)`` lists the columns of each kind,
``coff`` and ``soff`` are the columns' offsets into the cache and the statistics,
``expo`` where the cache holds the exponent all Gaussian columns of a cluster share
(0 when they do not share one).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from pymc_pcrp._kernels._config import NJIT_KWARGS

__all__ = [
    "CATEGORICAL",
    "GAUSSIAN",
    "HALF_LOG_2PI",
    "POISSON",
    "PRODUCT_CAP",
    "RISING_BY_PRODUCT",
    "bounded_score",
    "categorical_loo_terms",
    "categorical_terms",
    "count_loo_terms",
    "count_terms",
    "gaussian_loo_terms",
    "gaussian_terms",
    "log_factorial",
    "refresh_cells",
    "row_loo_score",
    "row_score",
    "shift_cells",
]

CATEGORICAL = 0
POISSON = 1
GAUSSIAN = 2
HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
PRODUCT_CAP = 1e150  # a running product past this is logged and restarted
_SMALL_COUNT = 64  # counts below this read log(x!) from a table
_LOG_FACTORIAL = np.array([math.lgamma(x + 1.0) for x in range(_SMALL_COUNT)])
RISING_BY_PRODUCT = 8  # log of a rising factorial of fewer factors: one logarithm


@numba.njit(inline="always", **NJIT_KWARGS)
def log_factorial(x):
    """``log(x!)`` of a count ``x`` (a float holding an integer)."""
    if x < _SMALL_COUNT:
        return _LOG_FACTORIAL[int(x)]
    return math.lgamma(x + 1.0)


@numba.njit(inline="always", **NJIT_KWARGS)
def row_score(cache, slot, data, i, cols, coff, expo):
    """:func:`score` on plain arrays: ``cols = (cat_cols, count_cols, gauss_cols)``."""
    return bounded_score(cache, slot, data, i, cols, coff, expo, -math.inf)


@numba.njit(inline="always", **NJIT_KWARGS)
def row_loo_score(stats, cache, slot, data, i, cols, offsets, tables):
    """:func:`loo_score` on plain arrays (``cols`` as for :func:`row_score`).

    ``offsets = (soff, coff, loff, expo, hyp)``, ``tables = (tab_id, logtab, gtab_id,
    gtab)``. Categorical and count cells read the cache's entries with one cell
    fewer. A Gaussian cell uses the rank-one identity of the diagonal family's
    sweep: without the row the rate is ``b' = b r``, ``r = 1 - h (kappa + 1) /
    (kappa - 1) (x - mean)^2`` (``h`` the cached scale factor), and the log
    predictive is ``c(m) + a_m log r - log(b) / 2`` with ``m = n - 1``, ``c(m)``
    the table ``gtab`` and ``-log(b) / 2`` the cached constant less ``c(n)``; one
    logarithm of the product of the ``r`` when the exponents agree. A cell whose
    ``r`` is numerically near 0 is scored from the statistics instead.
    """
    cat_cols, count_cols, gauss_cols = cols
    soff, coff, loff, expo, hyp = offsets
    _, _, gtab_id, gtab = tables
    total = 0.0
    if cat_cols.shape[0] > 0:
        total = categorical_loo_terms(total, cache, slot, data, i, cat_cols, loff)
    if count_cols.shape[0] > 0:
        total = count_loo_terms(total, cache, slot, data, i, count_cols, coff)
    if gauss_cols.shape[0] > 0:
        gauss = (soff, coff, hyp, gtab_id, gtab)
        total = gaussian_loo_terms(total, stats, cache, slot, data, i, gauss_cols, gauss, expo)
    return total


# The three kinds' parts of row_loo_score, each adding to the running ``total`` (so that
# the sum is taken in the same order however they are called). The table sweep calls
# them directly, and only for the kinds its table has: through row_loo_score, with
# every kind's arrays, a row's own-cluster score cost about as much as scoring two other
# clusters (most likely numba's reference counting of the arrays).


@numba.njit(inline="always", **NJIT_KWARGS)
def categorical_loo_terms(total, cache, slot, data, i, cat_cols, loff):
    """``total`` plus the categorical cells' log predictives, the row left out of ``slot``."""
    for j in cat_cols:
        x = data[i, j]
        if not math.isnan(x):
            total += cache[slot, loff[j] + 1 + int(x)] - cache[slot, loff[j]]
    return total


@numba.njit(inline="always", **NJIT_KWARGS)
def count_loo_terms(total, cache, slot, data, i, count_cols, coff):
    """``total`` plus the count cells' log predictives, the row left out of ``slot``."""
    acc = 0.0
    prod = 1.0
    for j in count_cols:
        x = data[i, j]
        if math.isnan(x):
            continue
        c = coff[j]
        big_a = cache[slot, c] - x  # a + S without the row
        log_b = cache[slot, c + 4]  # log(B' + 1) with B' = B - 1
        total += big_a * (cache[slot, c + 5] - log_b) - x * log_b - log_factorial(x)
        if x < RISING_BY_PRODUCT:
            for t in range(int(x)):
                prod *= big_a + t
            if prod > PRODUCT_CAP:
                acc += math.log(prod)
                prod = 1.0
        else:
            acc += cache[slot, c + 1] - math.lgamma(big_a)
    return total + (acc + math.log(prod))


@numba.njit(inline="always", **NJIT_KWARGS)
def gaussian_loo_terms(total, stats, cache, slot, data, i, gauss_cols, gauss, expo):
    """``total`` plus the Gaussian cells' log predictives, the row left out of ``slot``.

    ``gauss = (soff, coff, hyp, gtab_id, gtab)``.
    """
    soff, coff, hyp, gtab_id, gtab = gauss
    uniform = cache[slot, expo] > 0.0
    acc = 0.0
    prod = 1.0
    for j in gauss_cols:
        x = data[i, j]
        if math.isnan(x):
            continue
        o, c = soff[j], coff[j]
        n = stats[slot, o]
        m = int(n) - 1  # the column's cells without the row
        kappa = hyp[j, 0] + n
        t = x - cache[slot, c + 1]
        r = 1.0 - t * t * cache[slot, c + 2] * (kappa + 1.0) / (kappa - 1.0)
        if not r > 1e-8:
            total += _gaussian_loo_from_stats(stats, slot, o, x, hyp[j], gtab[gtab_id[j], m])
            continue
        total += gtab[gtab_id[j], m] + cache[slot, c] - gtab[gtab_id[j], m + 1]
        if uniform:
            prod *= r
            if prod < 1.0 / PRODUCT_CAP:
                acc += math.log(prod)
                prod = 1.0
        else:
            total += (hyp[j, 1] + 0.5 * m) * math.log(r)
    if uniform:  # each column's exponent without the row: the slot's less 1
        total += (cache[slot, expo] - 1.0) * (acc + math.log(prod))
    return total


@numba.njit(**NJIT_KWARGS)
def _gaussian_loo_from_stats(stats, slot, o, x, prior, const):
    """Return a Gaussian cell's leave-one-out log predictive from the statistics (safe path)."""
    kappa0, a0, b0 = prior[0], prior[1], prior[2]
    m = stats[slot, o] - 1.0
    kappa_m = kappa0 + m
    s = stats[slot, o + 1] - x
    w = stats[slot, o + 2] - x * x - s * s / kappa_m
    b_m = b0 + 0.5 * (w if w > 0.0 else 0.0)
    t = x - s / kappa_m
    factor = kappa_m / (2.0 * b_m * (kappa_m + 1.0)) * t * t
    return const - 0.5 * math.log(b_m) - (a0 + 0.5 * m + 0.5) * math.log1p(factor)


@numba.njit(inline="always", **NJIT_KWARGS)
def bounded_score(cache, slot, data, i, cols, coff, expo, cut):
    """Row ``i``'s log predictive under ``slot``, or ``-inf`` once it is surely below ``cut``.

    Each kind of column in its own loop, and one logarithm per product of count or
    Gaussian factors. Gaussian columns come first (with a finite ``cut``, a bound
    without a logarithm before the product), then categorical cells one at a time
    (each term at most 0), then the count columns, whose terms are at most 0 too.
    ``cut = -inf`` scores the row exactly (:func:`row_score`).
    """
    cat_cols, count_cols, gauss_cols = cols
    total = 0.0
    if gauss_cols.shape[0] > 0:
        total = gaussian_terms(cache, slot, data, i, gauss_cols, coff, cache[slot, expo], cut)
        if total < cut:
            return -math.inf
    if cat_cols.shape[0] > 0:
        total = categorical_terms(total, cache, slot, data, i, cat_cols, coff, cut)
    if count_cols.shape[0] > 0 and total > -math.inf:
        total += count_terms(cache, slot, data, i, count_cols, coff)
        if total < cut:
            return -math.inf
    return total


@numba.njit(inline="always", **NJIT_KWARGS)
def categorical_terms(total, cache, slot, data, i, cat_cols, coff, cut):
    """``total`` plus the categorical cells' log predictives, or ``-inf`` once below ``cut``.

    Each term is at most 0, so the running sum is compared with ``cut`` after every cell.
    """
    for j in cat_cols:
        x = data[i, j]
        if math.isnan(x):
            continue
        c = coff[j]
        total += cache[slot, c + 1 + int(x)] - cache[slot, c]
        if total < cut:
            return -math.inf
    return total


@numba.njit(inline="always", **NJIT_KWARGS)
def gaussian_terms(cache, slot, data, i, gauss_cols, coff, power, cut):
    """Sum the Gaussian cells' log predictives (``-inf`` once their bound is below ``cut``).

    ``power > 0`` is the exponent every Gaussian column of the cluster shares (one
    logarithm of the product of the Student-t factors), else each cell has its own.
    """
    if power > 0.0:
        # One pass: the constants, the product of the Student-t factors and T = sum_j u_j.
        # With a finite cut, const - power T / (1 + T) bounds the terms from above, and a
        # row below the cut is abandoned before the product's logarithm.
        const = 0.0
        prod = 1.0
        acc = 0.0
        big_t = 0.0
        for j in gauss_cols:
            x = data[i, j]
            if math.isnan(x):
                continue
            c = coff[j]
            t = x - cache[slot, c + 1]
            u = cache[slot, c + 2] * t * t
            const += cache[slot, c]
            big_t += u
            prod *= 1.0 + u
            if prod > PRODUCT_CAP:
                acc += math.log(prod)
                prod = 1.0
        if cut > -math.inf and const - power * big_t / (1.0 + big_t) < cut:
            return -math.inf
        return const - power * (acc + math.log(prod))
    total = 0.0
    for j in gauss_cols:
        x = data[i, j]
        if math.isnan(x):
            continue
        c = coff[j]
        t = x - cache[slot, c + 1]
        total += cache[slot, c] - cache[slot, c + 3] * math.log1p(cache[slot, c + 2] * t * t)
    return total


@numba.njit(inline="always", **NJIT_KWARGS)
def count_terms(cache, slot, data, i, count_cols, coff):
    """Sum the count cells' log predictives (negative binomial), one log for small counts."""
    total = 0.0
    acc = 0.0
    prod = 1.0
    for j in count_cols:
        x = data[i, j]
        if math.isnan(x):
            continue
        c = coff[j]
        total += cache[slot, c + 2] - x * cache[slot, c + 3] - log_factorial(x)
        if x < RISING_BY_PRODUCT:  # lgamma(A + x) - lgamma(A) as a product
            a = cache[slot, c]
            for t in range(int(x)):
                prod *= a + t
            if prod > PRODUCT_CAP:
                acc += math.log(prod)
                prod = 1.0
        else:
            acc += math.lgamma(cache[slot, c] + x) - cache[slot, c + 1]
    return total + acc + math.log(prod)


@numba.njit(inline="always", **NJIT_KWARGS)
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
            stats[slot, o + 2] += sign * math.lgamma(x + 1.0)
        else:
            stats[slot, o + 1] += sign * x
            stats[slot, o + 2] += sign * x * x


@numba.njit(inline="always", **NJIT_KWARGS)
def refresh_cells(stats, cache, slot, layout, tables):
    """Recompute the scoring cache of ``slot`` from its statistics.

    ``layout = (kind, soff, coff, nlev, loff, hyp, cols, expo)`` and ``tables = (tab_id,
    logtab, gtab_id, gtab)`` (see :mod:`pymc_pcrp._kernels.table` for the cache).
    """
    kind, soff, coff, nlev, loff, hyp, cols, expo = layout
    tab_id, logtab, gtab_id, gtab = tables
    for j in range(kind.shape[0]):
        o, c = soff[j], coff[j]
        n = stats[slot, o]
        if kind[j] == CATEGORICAL:
            lo = loff[j]
            for t in range(o, o + 1 + nlev[j]):  # the column's cells, then each level's
                m = int(stats[slot, t])
                cache[slot, c + t - o] = logtab[tab_id[t], m]
                cache[slot, lo + t - o] = logtab[tab_id[t], m - 1] if m > 0 else 0.0
        elif kind[j] == POISSON:
            big_a = hyp[j, 0] + stats[slot, o + 1]
            big_b = hyp[j, 1] + n
            cache[slot, c] = big_a
            cache[slot, c + 1] = math.lgamma(big_a)
            log_b = math.log(big_b)
            cache[slot, c + 3] = math.log(big_b + 1.0)
            cache[slot, c + 2] = big_a * (log_b - cache[slot, c + 3])
            cache[slot, c + 4] = log_b
            cache[slot, c + 5] = math.log(big_b - 1.0) if n > 0.0 else 0.0
        else:
            kappa_n = hyp[j, 0] + n
            a_n = hyp[j, 1] + 0.5 * n
            s = stats[slot, o + 1]
            w = stats[slot, o + 2] - s * s / kappa_n
            b_n = hyp[j, 2] + 0.5 * (w if w > 0.0 else 0.0)
            cache[slot, c] = gtab[gtab_id[j], int(n)] - 0.5 * math.log(b_n)
            cache[slot, c + 1] = s / kappa_n
            cache[slot, c + 2] = kappa_n / (2.0 * b_n * (kappa_n + 1.0))
            cache[slot, c + 3] = a_n + 0.5
    _refresh_exponent(cache, slot, cols[2], coff, expo)


@numba.njit(inline="always", **NJIT_KWARGS)
def _refresh_exponent(cache, slot, gauss_cols, coff, expo):
    """Store the exponent every Gaussian column of ``slot`` shares (0 when they differ)."""
    power = 0.0
    for j in gauss_cols:
        c = coff[j]
        if power == 0.0:
            power = cache[slot, c + 3]
        elif cache[slot, c + 3] != power:
            power = -1.0
    cache[slot, expo] = power if power > 0.0 else 0.0
