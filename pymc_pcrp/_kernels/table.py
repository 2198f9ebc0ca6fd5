r"""The table family: clusters of rows whose columns are binary, categorical, counts or Gaussian.

Given its cluster, each cell of a row is independent, with its column's
conjugate prior integrated out (:mod:`pymc_pcrp.distributions._table_numpy`
states the model and is the NumPy reference of these kernels):

* ``CATEGORICAL`` (binary columns are two levels): Dirichlet-categorical,
  concentrations ``a_c``;
* ``POISSON``: Gamma(``a``, rate ``b``)-Poisson;
* ``GAUSSIAN``: Normal-Inverse-Gamma ``(kappa0, a0, b0)`` about the column's
  prior mean (the data are centred at it).

A missing cell (NaN) contributes nothing to its row's score or to its
cluster's statistics. Data are an ``(N, D)`` float array: a level index, a
count or a centred value per cell.

Per cluster and column the statistics (one row of ``stats``, additive in the
rows) are, from the column's offset ``soff[j]``: the number of observed cells,
then the level counts (categorical), or the sum and the sum of
``log y!`` (counts), or the sum and the sum of squares (Gaussian). The scoring
cache (from ``coff[j]``) holds what a row's log predictive needs, so that a
categorical, binary or (small) count cell costs one lookup and a Gaussian cell
one product:

* categorical: each level's log predictive probability, ``log(n_c + a_c) -
  log(n + sum_c a_c)``, then the same with one cell fewer (for a row's own
  cluster without it; 0 where the level's count is 0), differences of tables of
  ``log(m + a)``, ``m = 0..N``, built with the parameters;
* counts: ``A = a + S``, ``lgamma(A)``, ``A log(B / (B + 1))``, ``log(B + 1)``,
  ``log B`` and ``log(B - 1)`` (0 when ``n = 0``) with ``B = b + n`` (the
  predictive is negative binomial), then the log predictive of each count ``x =
  0..tmax[j]``, then the same with a row of count ``x`` left out (0 where ``x >
  S``); a larger count is scored from the scalars (:func:`count_tables`);
* Gaussian: the Student-t's constant, its location ``S / kappa_n``, ``kappa_n /
  (2 b_n (kappa_n + 1))``, the exponent ``a_n + 1/2``, and for a row left out
  the third entry times ``(kappa_n + 1) / (kappa_n - 1)`` and the constant with
  one cell fewer but the same rate (both 0 when ``n = 0``);

and, after the columns' entries (at ``params.expo``), the exponent every Gaussian
column of the cluster shares (no missing cell among the cluster's rows and one
``a0``; else 0), and last an entry that stays 0 (where the table sweep reads a
missing cell's score). With a shared exponent the Gaussian columns' Student-t
factors are multiplied and take one logarithm per cluster (as the diagonal
family's sweep does), not one per cell.

The moves are the generic ones of :mod:`pymc_pcrp._kernels.family_moves`,
which this module registers for :class:`TableParams`, with the sweep written out
for speed in :mod:`pymc_pcrp._kernels.table_sweep`; the row scores on plain arrays
are in :mod:`pymc_pcrp._kernels.table_scores`.
"""

from __future__ import annotations

import math

from typing import NamedTuple

import numba
import numpy as np
import scipy.special

from pymc_pcrp._kernels._config import NJIT_KWARGS
from pymc_pcrp._kernels.family_moves import FamilyOps, register_family
from pymc_pcrp._kernels.table_scores import (
    CATEGORICAL,
    COUNT_SCALARS,
    GAUSSIAN,
    GAUSSIAN_ENTRIES,
    HALF_LOG_2PI,
    POISSON,
    refresh_cells,
    row_loo_score,
    row_score,
    shift_cells,
)
from pymc_pcrp._kernels.table_sweep import table_sweeps

__all__ = [
    "CATEGORICAL",
    "DEFAULT_TABULATED",
    "GAUSSIAN",
    "MAX_LOG_TABLE",
    "MAX_TABULATED",
    "POISSON",
    "TableParams",
    "cell_layout",
    "count_tables",
    "loo_score",
    "loo_tables",
    "make_table_params",
    "refresh",
    "score",
    "score_slots",
    "shift",
    "table_tables",
]

MAX_TABULATED = 40  # the largest count a cluster's cache tabulates
DEFAULT_TABULATED = 15  # without the data: counts up to this
MAX_LOG_TABLE = 1 << 20  # entries of a table of log rising factorials


class TableParams(NamedTuple):
    """Fixed parameters of a table-family sweep: the pCRP prior and each column's prior.

    ``kind``, ``soff``, ``coff`` and ``nlev`` are per column (kind, offsets into
    the statistics and the cache, number of levels); ``cat_cols``,
    ``count_cols`` and ``gauss_cols`` list the columns of each kind, and ``expo``
    is where the cache holds the Gaussian columns' shared exponent (see the module);
    ``gtab[gtab_id[j], m]`` is the part of a Gaussian column's log predictive
    constant that depends on its number of cells ``m`` only, ``lgamma(a_m +
    1/2) - lgamma(a_m) - log(2 pi) / 2 - log((kappa_m + 1) / kappa_m) / 2``;
    ``conc`` holds each
    categorical level's concentration at its statistic's offset; ``hyp[j]`` is
    ``(sum of concentrations, 0, 0)``, ``(a, b, 0)`` or ``(kappa0, a0, b0)``.
    ``logtab[u, m] = log(m + v_u)`` for ``m = 0..N + 1`` and each distinct value
    ``v_u`` among the concentrations, their sums and the count columns' rates
    ``b``, and ``tab_id`` the row of a categorical statistic (a level's
    concentration, or at a column's count of observed cells their sum) or, at a
    count column's count of cells, of its ``b``: categorical and count caches are
    then lookups, with no logarithm. A categorical or count cell is scored by a
    lookup in the cache's table of log predictives at ``toff[j]``, up to the value
    ``tmax[j]``, or of leave-one-out log predictives at ``loff[j]``; ``ltab`` and
    ``ltab_id`` are the count columns' tables of :func:`count_tables`.
    """

    log_alpha: float
    power: float
    kind: np.ndarray
    soff: np.ndarray
    coff: np.ndarray
    nlev: np.ndarray
    conc: np.ndarray
    hyp: np.ndarray
    n_stats: int
    n_cache: int
    tab_id: np.ndarray
    logtab: np.ndarray
    cat_cols: np.ndarray
    count_cols: np.ndarray
    gauss_cols: np.ndarray
    expo: int
    gtab_id: np.ndarray
    gtab: np.ndarray
    toff: np.ndarray
    tmax: np.ndarray
    loff: np.ndarray
    ltab_id: np.ndarray
    ltab: np.ndarray


def make_table_params(
    alpha: float, power: float, kind, nlev, conc, hyp, n_rows: int, data=None
) -> TableParams:
    """Build :class:`TableParams` from per-column kinds, level counts and priors.

    ``n_rows`` is ``N`` (the largest count the lookup tables need); ``conc``
    holds the concentrations of the categorical columns' levels, one column
    after another; ``hyp[j]`` the column's prior row (see the class; a fourth
    entry, the Gaussian prior mean, is ignored: the data are centred). ``data``,
    the encoded table (NaN missing), sizes the count columns' tables of log
    predictives (:func:`count_tables`); any data can be scored with the result.
    """
    kind = np.ascontiguousarray(kind, dtype=np.int64)
    nlev = np.ascontiguousarray(nlev, dtype=np.int64)
    d = kind.shape[0]
    hyp = np.ascontiguousarray(np.asarray(hyp, dtype=np.float64).reshape(d, -1)[:, :3])
    tmax, ltab_id, ltab = count_tables(kind, hyp, n_rows, data)
    soff = np.zeros(d, dtype=np.int64)
    coff = np.zeros(d, dtype=np.int64)
    toff = np.zeros(d, dtype=np.int64)
    n_stats = n_cache = 0
    for j in range(d):
        soff[j], coff[j] = n_stats, n_cache
        if kind[j] == CATEGORICAL:
            n_stats += 1 + nlev[j]
            toff[j], tmax[j] = n_cache, nlev[j] - 1
            n_cache += 2 * nlev[j]
        elif kind[j] == POISSON:
            n_stats += 3
            toff[j] = n_cache + COUNT_SCALARS
            n_cache += COUNT_SCALARS + 2 * (tmax[j] + 1)
        else:
            n_stats += 3
            n_cache += GAUSSIAN_ENTRIES
    expo = n_cache
    n_cache += 2  # the shared exponent, then an entry that stays 0 (a missing cell's score)
    flat = np.asarray(conc, dtype=np.float64)
    per_stat = np.zeros(n_stats)
    start = 0
    for j in range(d):
        if kind[j] == CATEGORICAL:
            a = flat[start : start + nlev[j]]
            start += nlev[j]
            per_stat[soff[j] + 1 : soff[j] + 1 + nlev[j]] = a
            hyp[j, 0] = a.sum()
    values, tab_id = [], np.zeros(n_stats, dtype=np.int64)
    for j in range(d):
        if kind[j] == POISSON:  # the rate b: log(B - 1), log B, log(B + 1) at B = b + n
            if float(hyp[j, 1]) not in values:
                values.append(float(hyp[j, 1]))
            tab_id[soff[j]] = values.index(float(hyp[j, 1]))
        if kind[j] != CATEGORICAL:
            continue
        for t in range(soff[j], soff[j] + 1 + nlev[j]):
            v = hyp[j, 0] if t == soff[j] else per_stat[t]
            if v not in values:
                values.append(v)
            tab_id[t] = values.index(v)
    m = np.arange(int(n_rows) + 1, dtype=np.float64)
    m2 = np.arange(int(n_rows) + 2, dtype=np.float64)
    logtab = np.log(m2[None, :] + np.asarray(values, dtype=np.float64)[:, None])
    pairs, gtab_id = [], np.zeros(d, dtype=np.int64)
    for j in range(d):
        if kind[j] == GAUSSIAN:
            pair = (float(hyp[j, 0]), float(hyp[j, 1]))
            if pair not in pairs:
                pairs.append(pair)
            gtab_id[j] = pairs.index(pair)
    gtab = np.zeros((max(len(pairs), 1), m.size))
    for u, (kappa0, a0) in enumerate(pairs):
        a_m, kappa_m = a0 + 0.5 * m, kappa0 + m
        gtab[u] = (
            scipy.special.gammaln(a_m + 0.5)
            - scipy.special.gammaln(a_m)
            - HALF_LOG_2PI
            - 0.5 * np.log((kappa_m + 1.0) / kappa_m)
        )
    return TableParams(
        math.log(alpha),
        float(power),
        kind,
        soff,
        coff,
        nlev,
        per_stat,
        hyp,
        n_stats,
        n_cache,
        tab_id,
        np.ascontiguousarray(logtab.reshape(len(values), m2.size)),
        np.flatnonzero(kind == CATEGORICAL).astype(np.int64),
        np.flatnonzero(kind == POISSON).astype(np.int64),
        np.flatnonzero(kind == GAUSSIAN).astype(np.int64),
        expo,
        gtab_id,
        gtab,
        toff,
        tmax,
        toff + tmax + 1,
        ltab_id,
        ltab,
    )


def count_tables(kind, hyp, n_rows, data=None):
    """``(tmax, ltab_id, ltab)``: how far each count column's cache tabulates its scores.

    ``tmax[j]`` is the largest count whose log predictive (and leave-one-out log
    predictive) a cluster's cache holds: the column's largest count in ``data``,
    at most :data:`MAX_TABULATED` (without data, :data:`DEFAULT_TABULATED`); larger
    counts are scored from the cache's scalars. ``ltab[ltab_id[j], m] = lgamma(a +
    m)`` for the column's prior shape ``a`` and ``m`` up to the column's total count
    and ``tmax`` (at most :data:`MAX_LOG_TABLE` entries; past the end a cluster's
    refresh takes log-gamma functions), so that a table entry's rising factorial is
    a difference of two lookups.
    """
    d = kind.shape[0]
    tmax = np.zeros(d, dtype=np.int64)
    shapes, ltab_id, sizes = [], np.zeros(d, dtype=np.int64), []
    for j in np.flatnonzero(kind == POISSON):
        if data is None:
            top, total = DEFAULT_TABULATED, DEFAULT_TABULATED * n_rows
        else:
            column = np.asarray(data, dtype=np.float64)[:, j]
            column = column[~np.isnan(column)]
            top = int(column.max()) if column.size else 0
            total = int(column.sum()) if column.size else 0
        tmax[j] = min(top, MAX_TABULATED)
        a = float(hyp[j, 0])
        if a not in shapes:
            shapes.append(a)
            sizes.append(0)
        ltab_id[j] = shapes.index(a)
        sizes[ltab_id[j]] = max(sizes[ltab_id[j]], min(total + tmax[j] + 1, MAX_LOG_TABLE))
    m = np.arange(max(sizes, default=1), dtype=np.float64)
    a = np.asarray(shapes or [1.0], dtype=np.float64)[:, None]
    ltab = scipy.special.gammaln(a + m[None, :])
    return tmax, ltab_id, np.ascontiguousarray(ltab)


@numba.njit(inline="always", **NJIT_KWARGS)
def shift(stats, slot, data, i, sign, params):
    """Add (``sign = 1``) or take out (``-1``) row ``i`` from the statistics of ``slot``."""
    shift_cells(stats, slot, data, i, sign, params.kind, params.soff)


@numba.njit(inline="always", **NJIT_KWARGS)
def refresh(stats, cache, slot, params):
    """Recompute the scoring cache of ``slot`` from its statistics (see the module)."""
    refresh_cells(stats, cache, slot, cell_layout(params), loo_tables(params))


@numba.njit(inline="always", **NJIT_KWARGS)
def cell_layout(params):
    """``(soff, coff, nlev, tmax, hyp, cols, expo)``: where each column's entries are."""
    cols = (params.cat_cols, params.count_cols, params.gauss_cols)
    return (params.soff, params.coff, params.nlev, params.tmax, params.hyp, cols, params.expo)


@numba.njit(inline="always", **NJIT_KWARGS)
def loo_tables(params):
    """``(tab_id, logtab, gtab_id, gtab, ltab_id, ltab)``: the lookup tables of the cache."""
    return (params.tab_id, params.logtab, params.gtab_id, params.gtab, params.ltab_id, params.ltab)


@numba.njit(inline="always", **NJIT_KWARGS)
def score(cache, slot, data, i, params):
    """Log posterior predictive of row ``i`` under the cluster of ``slot`` (observed cells)."""
    return row_score(
        cache, slot, data, i, params.cat_cols, params.count_cols, params.gauss_cols, params.coff,
        params.toff, params.tmax, params.expo,
    )  # fmt: skip


@numba.njit(**NJIT_KWARGS)
def score_slots(stats, cache, order, k, own, data, i, params, out):
    """Log predictive of row ``i`` under each slot ``order[p]``, ``p < k``, into ``out[p]``.

    The row's own slot ``own`` is scored with the row left out (:func:`loo_score`).
    The parameters' arrays are read once per row, not once per slot.
    """
    cat_cols, count_cols, gauss_cols = params.cat_cols, params.count_cols, params.gauss_cols
    coff, toff, loff, tmax, expo = params.coff, params.toff, params.loff, params.tmax, params.expo
    soff, hyp, gtab_id, gtab = params.soff, params.hyp, params.gtab_id, params.gtab
    for p in range(k):
        slot = order[p]
        if slot == own:
            out[p] = row_loo_score(
                stats, cache, slot, data, i, cat_cols, count_cols, gauss_cols, coff, loff, tmax,
                expo, soff, hyp, gtab_id, gtab,
            )  # fmt: skip
        else:
            out[p] = row_score(
                cache, slot, data, i, cat_cols, count_cols, gauss_cols, coff, toff, tmax, expo
            )


@numba.njit(inline="always", **NJIT_KWARGS)
def loo_score(stats, cache, slot, data, i, params):
    """Log predictive of row ``i``, which ``slot`` holds, under ``slot`` without the row.

    Read from the cache's leave-one-out entries (and, for a Gaussian cell whose
    rate would be numerically near 0 without the row, from the statistics); neither
    is changed.
    """
    return row_loo_score(
        stats, cache, slot, data, i, params.cat_cols, params.count_cols, params.gauss_cols,
        params.coff, params.loff, params.tmax, params.expo, params.soff, params.hyp,
        params.gtab_id, params.gtab,
    )  # fmt: skip


@numba.njit(**NJIT_KWARGS)
def block_log_marginal(stats, slot, params):
    """Log marginal likelihood of the rows summarised in ``slot`` (columns with no cell: 0)."""
    kind, soff, hyp = params.kind, params.soff, params.hyp
    total = 0.0
    for j in range(kind.shape[0]):
        o = soff[j]
        n = stats[slot, o]
        if n <= 0.0:
            continue
        if kind[j] == CATEGORICAL:
            total += math.lgamma(hyp[j, 0]) - math.lgamma(n + hyp[j, 0])
            for lvl in range(params.nlev[j]):
                a = params.conc[o + 1 + lvl]
                total += math.lgamma(stats[slot, o + 1 + lvl] + a) - math.lgamma(a)
        elif kind[j] == POISSON:
            a, b = hyp[j, 0], hyp[j, 1]
            s = stats[slot, o + 1]
            total += (
                a * math.log(b)
                - math.lgamma(a)
                + math.lgamma(a + s)
                - (a + s) * math.log(b + n)
                - stats[slot, o + 2]
            )
        else:
            kappa0, a0, b0 = hyp[j, 0], hyp[j, 1], hyp[j, 2]
            kappa_n = kappa0 + n
            a_n = a0 + 0.5 * n
            s = stats[slot, o + 1]
            w = stats[slot, o + 2] - s * s / kappa_n
            b_n = b0 + 0.5 * (w if w > 0.0 else 0.0)
            total += (
                math.lgamma(a_n)
                - math.lgamma(a0)
                + a0 * math.log(b0)
                - a_n * math.log(b_n)
                + 0.5 * math.log(kappa0 / kappa_n)
                - n * HALF_LOG_2PI
            )
    return total


@numba.njit(**NJIT_KWARGS)
def sizes(params):
    """``(S, T)``: statistics and cache entries per slot."""
    return params.n_stats, params.n_cache


@numba.njit(**NJIT_KWARGS)
def with_log_alpha(params, log_alpha):
    """``params`` with another ``log_alpha``."""
    return TableParams(
        log_alpha,
        params.power,
        params.kind,
        params.soff,
        params.coff,
        params.nlev,
        params.conc,
        params.hyp,
        params.n_stats,
        params.n_cache,
        params.tab_id,
        params.logtab,
        params.cat_cols,
        params.count_cols,
        params.gauss_cols,
        params.expo,
        params.gtab_id,
        params.gtab,
        params.toff,
        params.tmax,
        params.loff,
        params.ltab_id,
        params.ltab,
    )


@numba.njit(**NJIT_KWARGS)
def table_tables(data, params):
    """``(log_new, pred_const, by_size)`` of the generic sweep.

    Each row's ``log alpha + log prior predictive``, zero size constants and
    ``by_size[n, 0] = r log n`` for ``n = 0..N`` (0 at ``n = 0``), the layout of
    :func:`~pymc_pcrp._kernels.scores.sweep_tables`.
    """
    n = data.shape[0]
    stats = np.zeros((1, params.n_stats))
    cache = np.zeros((1, params.n_cache))
    refresh(stats, cache, 0, params)
    log_new = np.empty(n)
    for i in range(n):
        log_new[i] = params.log_alpha + score(cache, 0, data, i, params)
    pred_const = np.zeros(n + 1)
    by_size = np.zeros((n + 1, 1))
    for m in range(1, n + 1):
        by_size[m, 0] = params.power * math.log(m)
    return log_new, pred_const, by_size


register_family(
    TableParams,
    FamilyOps(
        shift, refresh, score, score_slots, block_log_marginal, sizes, with_log_alpha, table_sweeps
    ),
)
