r"""The table family (binary, categorical, count and Gaussian columns), in NumPy.

Given its cluster, the cells of a row are independent; each column has a
conjugate prior, integrated out per cluster:

.. math::

    \text{categorical: } \theta \sim \mathrm{Dirichlet}(a_1, \dots, a_C),\;
        x \mid \theta \sim \mathrm{Categorical}(\theta) \quad
        (\text{binary: } C = 2,\ \mathrm{Beta}(a_1, a_0)); \\
    \text{counts: } \lambda \sim \mathrm{Gamma}(a, \text{rate } b),\;
        y \mid \lambda \sim \mathrm{Poisson}(\lambda); \\
    \text{Gaussian: } \sigma^2 \sim \mathrm{InvGamma}(a_0, b_0),\;
        \mu \mid \sigma^2 \sim \mathcal N(\mu_0, \sigma^2 / \kappa_0),\;
        x \sim \mathcal N(\mu, \sigma^2).

A missing cell is left out: it contributes nothing to its row's likelihood or
to its cluster's statistics (it is marginalised, which is exact when cells are
missing at random). A cluster's log marginal likelihood is the sum over
columns of the column's closed-form marginal of its observed cells.

This module is the reference the numba kernels
(:mod:`pymc_pcrp._kernels.table`) are tested against, and what
:class:`~pymc_pcrp.TableMixture` evaluates its log density with. The column
encoding is that of :class:`~pymc_pcrp.distributions.table.TableSpec`:
``kind`` per column (0 categorical, 1 counts, 2 Gaussian), ``nlev`` levels,
``conc`` the concatenated concentrations of the categorical columns and
``hyp[j]`` the column's prior row (``(0, 0, 0, 0)``, ``(a, b, 0, 0)`` or
``(kappa0, a0, b0, mu0)``).
"""

from __future__ import annotations

import numpy as np

from scipy.special import gammaln

__all__ = [
    "centred_values",
    "cluster_statistics",
    "column_concentrations",
    "column_log_marginals",
    "log_predictive",
    "row_statistics",
    "table_log_predictive",
    "table_loglik",
]

_LOG_2PI = float(np.log(2.0 * np.pi))


def column_concentrations(kind, nlev, conc) -> list[np.ndarray | None]:
    """Split ``conc`` into each categorical column's concentration vector."""
    out, start = [], 0
    for j in range(len(kind)):
        if kind[j] == 0:
            out.append(np.asarray(conc[start : start + nlev[j]], dtype=np.float64))
            start += int(nlev[j])
        else:
            out.append(None)
    return out


def column_log_marginals(values, mask, labels, kind, nlev, conc, hyp) -> np.ndarray:
    """Log marginal likelihood of each cluster and column, shape ``(K, D)``.

    ``values`` ``(N, D)`` holds level indices, counts or raw Gaussian values;
    ``mask`` ``(N, D)`` is true where a cell is observed; ``labels`` are
    integers (clusters taken in the order of ``numpy.unique``).
    """
    values = np.asarray(values, dtype=np.float64)
    mask = np.asarray(mask, dtype=bool)
    _, inverse = np.unique(np.asarray(labels), return_inverse=True)
    k = int(inverse.max()) + 1 if inverse.size else 0
    hyp = np.asarray(hyp, dtype=np.float64)
    concs = column_concentrations(kind, nlev, conc)
    out = np.zeros((k, values.shape[1]))
    for j in range(values.shape[1]):
        seen = mask[:, j]
        lab = inverse[seen]
        x = values[seen, j]
        n = np.bincount(lab, minlength=k).astype(np.float64)
        if kind[j] == 0:
            a = concs[j]
            counts = np.zeros((k, a.size))
            np.add.at(counts, (lab, x.astype(np.int64)), 1.0)
            out[:, j] = (
                gammaln(a.sum())
                - gammaln(n + a.sum())
                + np.sum(gammaln(counts + a) - gammaln(a), axis=1)
            )
        elif kind[j] == 1:
            a, b = hyp[j, 0], hyp[j, 1]
            s = np.bincount(lab, weights=x, minlength=k)
            log_fact = np.bincount(lab, weights=gammaln(x + 1.0), minlength=k)
            out[:, j] = (
                a * np.log(b) - gammaln(a) + gammaln(a + s) - (a + s) * np.log(b + n) - log_fact
            )
        else:
            kappa0, a0, b0, mu0 = hyp[j]
            xc = x - mu0
            s = np.bincount(lab, weights=xc, minlength=k)
            q = np.bincount(lab, weights=xc * xc, minlength=k)
            kappa_n = kappa0 + n
            a_n = a0 + 0.5 * n
            b_n = b0 + 0.5 * np.maximum(q - s * s / kappa_n, 0.0)
            out[:, j] = (
                gammaln(a_n)
                - gammaln(a0)
                + a0 * np.log(b0)
                - a_n * np.log(b_n)
                + 0.5 * np.log(kappa0 / kappa_n)
                - 0.5 * n * _LOG_2PI
            )
    return out


def table_loglik(values, mask, labels, kind, nlev, conc, hyp) -> float:
    """``log p(X | z)``: the sum of every cluster's and column's log marginal likelihood."""
    return float(np.sum(column_log_marginals(values, mask, labels, kind, nlev, conc, hyp)))


def table_log_predictive(x, x_mask, block, block_mask, kind, nlev, conc, hyp) -> np.ndarray:
    """Log posterior predictive of rows ``x`` given a cluster's rows ``block``.

    The difference of log marginals, ``log m(block + x_i) - log m(block)``, row
    by row; ``block`` may have no rows (the prior predictive). Missing cells of
    ``x`` (``x_mask`` false) contribute nothing.
    """
    x = np.atleast_2d(np.asarray(x, dtype=np.float64))
    x_mask = np.atleast_2d(np.asarray(x_mask, dtype=bool))
    block = np.asarray(block, dtype=np.float64).reshape(-1, x.shape[1])
    block_mask = np.asarray(block_mask, dtype=bool).reshape(-1, x.shape[1])
    args = (kind, nlev, conc, hyp)
    m = block.shape[0]
    base = 0.0
    if m:
        base = table_loglik(block, block_mask, np.zeros(m, dtype=np.int64), *args)
    out = np.empty(x.shape[0])
    labels = np.zeros(m + 1, dtype=np.int64)
    for i in range(x.shape[0]):
        vals = np.vstack([block, x[i]])
        seen = np.vstack([block_mask, x_mask[i]])
        out[i] = table_loglik(vals, seen, labels, *args) - base
    return out


def cluster_statistics(values, mask, index, n_clusters, kind, nlev) -> list[tuple]:
    """Each column's sufficient statistics of clusters ``0..n_clusters-1`` (rows' ``index``).

    Per column a tuple ``(n, a, q)`` of arrays over the clusters: ``n`` the
    number of observed cells; ``a`` the level counts ``(K, nlev)`` of a
    categorical column, the sum of the counts of a count column, the sum of a
    Gaussian column's values centred at ``mu0`` (``q``: their sum of squares);
    ``q`` is None for the other kinds. Gaussian values must already be centred
    (:func:`centred_values`).
    """
    values = np.asarray(values, dtype=np.float64)
    mask = np.asarray(mask, dtype=bool)
    index = np.asarray(index, dtype=np.int64)
    out = []
    for j in range(values.shape[1]):
        seen = mask[:, j]
        lab, x = index[seen], values[seen, j]
        n = np.bincount(lab, minlength=n_clusters).astype(np.float64)
        if kind[j] == 0:
            counts = np.zeros((n_clusters, int(nlev[j])))
            np.add.at(counts, (lab, x.astype(np.int64)), 1.0)
            out.append((n, counts, None))
        elif kind[j] == 1:
            out.append((n, np.bincount(lab, weights=x, minlength=n_clusters), None))
        else:
            s = np.bincount(lab, weights=x, minlength=n_clusters)
            out.append((n, s, np.bincount(lab, weights=x * x, minlength=n_clusters)))
    return out


def centred_values(values, kind, hyp) -> np.ndarray:
    """``values`` with each Gaussian column centred at its prior mean ``mu0``."""
    values = np.array(values, dtype=np.float64)
    gaussian = np.asarray(kind) == 2
    values[:, gaussian] -= np.asarray(hyp, dtype=np.float64)[gaussian, 3]
    return values


def row_statistics(values, mask, kind, nlev) -> list[tuple]:
    """Return the statistics of :func:`cluster_statistics` of each row alone (one per row)."""
    n = np.asarray(values).shape[0]
    return cluster_statistics(values, mask, np.arange(n), n, kind, nlev)


def log_predictive(stats, values, mask, kind, nlev, conc, hyp, *, paired=False) -> np.ndarray:
    """Log posterior predictive of rows ``values`` under clusters with statistics ``stats``.

    ``stats`` as :func:`cluster_statistics` returns them (Gaussian values
    centred); a cluster with zero counts gives the prior predictive. Returns
    shape ``(K, M)``: cluster ``k`` and row ``m``; with ``paired`` the
    statistics have one entry per row and the result, shape ``(M,)``, is each
    row under its own statistics. Missing cells (``mask`` false) contribute
    nothing. It equals :func:`table_log_predictive` (a difference of marginals).
    """
    values = np.asarray(values, dtype=np.float64)
    mask = np.asarray(mask, dtype=bool)
    hyp = np.asarray(hyp, dtype=np.float64)
    concs = column_concentrations(kind, nlev, conc)
    m = values.shape[0]
    shape = (m,) if paired else (len(stats[0][0]) if stats else 0, m)
    out = np.zeros(shape)
    rows = np.arange(m)
    for j, (n, a, q) in enumerate(stats):
        seen = mask[:, j]
        x = np.where(seen, values[:, j], 0.0)
        n_ = n if paired else n[:, None]
        if kind[j] == 0:
            level = x.astype(np.int64)
            c = a[rows, level] if paired else a[:, level]
            term = np.log(c + concs[j][level]) - np.log(n_ + concs[j].sum())
        elif kind[j] == 1:
            post_a = hyp[j, 0] + (a if paired else a[:, None])
            post_b = hyp[j, 1] + n_
            term = (
                gammaln(post_a + x)
                - gammaln(post_a)
                - gammaln(x + 1.0)
                + post_a * np.log(post_b / (post_b + 1.0))
                - x * np.log(post_b + 1.0)
            )
        else:
            kappa0, a0, b0, _ = hyp[j]
            s_ = a if paired else a[:, None]
            q_ = q if paired else q[:, None]
            kappa_n = kappa0 + n_
            a_n = a0 + 0.5 * n_
            b_n = b0 + 0.5 * np.maximum(q_ - s_ * s_ / kappa_n, 0.0)
            scale2 = b_n * (kappa_n + 1.0) / (a_n * kappa_n)
            df = 2.0 * a_n
            term = (
                gammaln(0.5 * (df + 1.0))
                - gammaln(0.5 * df)
                - 0.5 * np.log(df * np.pi * scale2)
                - 0.5 * (df + 1.0) * np.log1p((x - s_ / kappa_n) ** 2 / (df * scale2))
            )
        out += np.where(seen, term, 0.0)
    return out
