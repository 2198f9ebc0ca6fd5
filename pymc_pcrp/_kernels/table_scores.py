"""Scores of a table row under a cluster, on plain arrays (numba).

The kernels of the table family (:mod:`pymc_pcrp._kernels.table`, whose
docstring describes the statistics and the scoring cache) read their
parameters' arrays once and hand them to these functions, so that scoring a row
under many clusters costs no reference counting per cluster:

* :func:`row_score`: a row's log posterior predictive under a cluster it is not in;
* :func:`row_loo_score`: the same under the cluster that holds it, the row left out;
* :func:`bounded_score`: :func:`row_score`, given up once it is surely below a cut
  (the table sweep's skipping, :mod:`pymc_pcrp._kernels.table_sweep`).

``cols = (cat_cols, count_cols, gauss_cols)`` lists the columns of each kind,
``coff`` and ``soff`` are the columns' offsets into the cache and the statistics,
``tot`` where the cache's sums over columns start.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from pymc_pcrp._kernels._config import NJIT_KWARGS

__all__ = [
    "HALF_LOG_2PI",
    "PRODUCT_CAP",
    "RISING_BY_PRODUCT",
    "bounded_score",
    "log_factorial",
    "log_rising",
    "row_loo_score",
    "row_score",
]

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
def log_rising(a, lgamma_a, x):
    """``lgamma(a + x) - lgamma(a)`` for a count ``x``, given ``lgamma_a = lgamma(a)``.

    Small counts multiply the ``x`` factors ``a (a + 1) ... (a + x - 1)`` and take
    one logarithm instead of a log-gamma.
    """
    if x == 0.0:
        return 0.0
    if x < RISING_BY_PRODUCT:
        prod = a
        for t in range(1, int(x)):
            prod *= a + t
        return math.log(prod)
    return math.lgamma(a + x) - lgamma_a


@numba.njit(inline="always", **NJIT_KWARGS)
def row_score(cache, slot, data, i, cols, coff, tot):
    """:func:`score` on plain arrays: ``cols = (cat_cols, count_cols, gauss_cols)``.

    Each kind of column in its own loop, with the cache's sums over columns (a
    missing cell takes its column's term back out) and one logarithm per product
    of count or Gaussian factors (see the module).
    """
    cat_cols, count_cols, gauss_cols = cols
    total = 0.0
    if cat_cols.shape[0] > 0:
        norm = cache[slot, tot]
        for j in cat_cols:
            x = data[i, j]
            if math.isnan(x):
                norm -= cache[slot, coff[j]]
            else:
                total += cache[slot, coff[j] + 1 + int(x)]
        total -= norm
    if count_cols.shape[0] > 0:
        total += cache[slot, tot + 1]
        acc = 0.0
        prod = 1.0
        for j in count_cols:
            x = data[i, j]
            c = coff[j]
            if math.isnan(x):
                total -= cache[slot, c + 2]
                continue
            total -= x * cache[slot, c + 3] + log_factorial(x)
            if x < RISING_BY_PRODUCT:
                a = cache[slot, c]
                for t in range(int(x)):
                    prod *= a + t
                if prod > PRODUCT_CAP:
                    acc += math.log(prod)
                    prod = 1.0
            else:
                acc += math.lgamma(cache[slot, c] + x) - cache[slot, c + 1]
        total += acc + math.log(prod)
    if gauss_cols.shape[0] > 0:
        const = cache[slot, tot + 2]
        power = cache[slot, tot + 3]
        if power > 0.0:  # one exponent: one logarithm of the product of the factors
            prod = 1.0
            acc = 0.0
            for j in gauss_cols:
                x = data[i, j]
                c = coff[j]
                if math.isnan(x):
                    const -= cache[slot, c]
                    continue
                t = x - cache[slot, c + 1]
                prod *= 1.0 + cache[slot, c + 2] * t * t
                if prod > PRODUCT_CAP:
                    acc += math.log(prod)
                    prod = 1.0
            total += const - power * (acc + math.log(prod))
        else:
            for j in gauss_cols:
                x = data[i, j]
                c = coff[j]
                if math.isnan(x):
                    const -= cache[slot, c]
                    continue
                t = x - cache[slot, c + 1]
                const -= cache[slot, c + 3] * math.log1p(cache[slot, c + 2] * t * t)
            total += const
    return total


@numba.njit(inline="always", **NJIT_KWARGS)
def row_loo_score(stats, cache, slot, data, i, cols, offsets, tables):
    """:func:`loo_score` on plain arrays (``cols`` as for :func:`row_score`).

    ``offsets = (soff, coff, tot, hyp)``, ``tables = (tab_id, logtab, gtab_id, gtab)``.
    """
    cat_cols, count_cols, gauss_cols = cols
    soff, coff, tot, hyp = offsets
    tab_id, logtab, gtab_id, gtab = tables
    total = 0.0
    for j in cat_cols:
        x = data[i, j]
        if math.isnan(x):
            continue
        o = soff[j]
        t = o + 1 + int(x)
        total += logtab[tab_id[t], int(stats[slot, t]) - 1]
        total -= logtab[tab_id[o], int(stats[slot, o]) - 1]
    for j in count_cols:
        x = data[i, j]
        if math.isnan(x):
            continue
        o, c = soff[j], coff[j]
        big_a = cache[slot, c] - x  # a + S without the row
        big_b = hyp[j, 1] + stats[slot, o] - 1.0
        log_b1 = math.log(big_b + 1.0)
        if x < RISING_BY_PRODUCT:
            rising = log_rising(big_a, 0.0, x)
        else:
            rising = cache[slot, c + 1] - math.lgamma(big_a)
        total += rising + big_a * (math.log(big_b) - log_b1) - x * log_b1 - log_factorial(x)
    if gauss_cols.shape[0] > 0:
        uniform = cache[slot, tot + 3] > 0.0
        log_rates = 0.0
        rates = 1.0
        log_factors = 0.0
        factors = 1.0
        for j in gauss_cols:
            x = data[i, j]
            if math.isnan(x):
                continue
            o = soff[j]
            m = stats[slot, o] - 1.0  # the column's cells without the row
            kappa_m = hyp[j, 0] + m
            s = stats[slot, o + 1] - x
            w = stats[slot, o + 2] - x * x - s * s / kappa_m
            b_m = hyp[j, 2] + 0.5 * (w if w > 0.0 else 0.0)
            t = x - s / kappa_m
            factor = 1.0 + kappa_m / (2.0 * b_m * (kappa_m + 1.0)) * t * t
            total += gtab[gtab_id[j], int(m)]
            rates *= b_m
            if rates > PRODUCT_CAP or rates < 1.0 / PRODUCT_CAP:
                log_rates += math.log(rates)
                rates = 1.0
            if uniform:
                factors *= factor
                if factors > PRODUCT_CAP:
                    log_factors += math.log(factors)
                    factors = 1.0
            else:
                total -= (hyp[j, 1] + 0.5 * m + 0.5) * math.log(factor)
        total -= 0.5 * (log_rates + math.log(rates))
        if uniform:  # every column's exponent without the row: the slot's minus 1/2
            power = cache[slot, tot + 3] - 0.5
            total -= power * (log_factors + math.log(factors))
    return total


@numba.njit(inline="always", **NJIT_KWARGS)
def bounded_score(cache, slot, data, i, cols, coff, tot, cut):
    """Row ``i``'s log predictive under ``slot``, or ``-inf`` once it is surely below ``cut``.

    Gaussian columns first (a bound without a logarithm, then the product's one
    logarithm), then categorical cells one at a time (each term at most 0), then
    the count columns, whose terms are at most 0 too.
    """
    cat_cols, count_cols, gauss_cols = cols
    total = 0.0
    if gauss_cols.shape[0] > 0:
        const = cache[slot, tot + 2]
        power = cache[slot, tot + 3]
        if power > 0.0:
            big_t = 0.0
            for j in gauss_cols:
                x = data[i, j]
                c = coff[j]
                if math.isnan(x):
                    const -= cache[slot, c]
                    continue
                t = x - cache[slot, c + 1]
                big_t += cache[slot, c + 2] * t * t
            if const - power * big_t / (1.0 + big_t) < cut:
                return -math.inf
            prod = 1.0
            acc = 0.0
            for j in gauss_cols:
                x = data[i, j]
                if math.isnan(x):
                    continue
                c = coff[j]
                t = x - cache[slot, c + 1]
                prod *= 1.0 + cache[slot, c + 2] * t * t
                if prod > PRODUCT_CAP:
                    acc += math.log(prod)
                    prod = 1.0
            total = const - power * (acc + math.log(prod))
        else:
            for j in gauss_cols:
                x = data[i, j]
                c = coff[j]
                if math.isnan(x):
                    const -= cache[slot, c]
                    continue
                t = x - cache[slot, c + 1]
                const -= cache[slot, c + 3] * math.log1p(cache[slot, c + 2] * t * t)
            total = const
        if total < cut:
            return -math.inf
    for j in cat_cols:
        x = data[i, j]
        if math.isnan(x):
            continue
        c = coff[j]
        total += cache[slot, c + 1 + int(x)] - cache[slot, c]
        if total < cut:
            return -math.inf
    if count_cols.shape[0] > 0:
        acc = 0.0
        prod = 1.0
        for j in count_cols:
            x = data[i, j]
            if math.isnan(x):
                continue
            c = coff[j]
            total += cache[slot, c + 2] - x * cache[slot, c + 3] - log_factorial(x)
            if x < RISING_BY_PRODUCT:
                a = cache[slot, c]
                for t in range(int(x)):
                    prod *= a + t
                if prod > PRODUCT_CAP:
                    acc += math.log(prod)
                    prod = 1.0
            else:
                acc += log_rising(cache[slot, c], cache[slot, c + 1], x)
        total += acc + math.log(prod)
        if total < cut:
            return -math.inf
    return total
