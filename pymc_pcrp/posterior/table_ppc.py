"""Replicated tables: posterior predictive draws of a :class:`~pymc_pcrp.TableMixture`.

The sampler integrates each cluster's column parameters out, so the trace holds
none of them. PyMC's forward draw of the variable (its ``rng_fn``) would draw
them from their *prior* given the labels: right for a prior predictive check,
wrong for replicated data. Here, for each posterior draw, every cluster gets
its column parameters from their conjugate posterior given the cluster's
observed cells (a missing cell counts for nothing), and then every cell of
every row is replicated from them, missing cells included:

* categorical (binary: two levels): ``theta ~ Dirichlet(a + counts)``, a cell
  ``~ Categorical(theta)`` (its level's code);
* counts: ``lambda ~ Gamma(a + sum, rate b + n)``, a cell ``~ Poisson(lambda)``;
* Gaussian: ``sigma^2 ~ InvGamma(a_n, b_n)``, ``mu ~ N(mu_n, sigma^2 / kappa_n)``
  (the Normal-Inverse-Gamma update of ``(kappa0, a0, b0, mu0)`` by the observed
  cells), a cell ``~ N(mu, sigma^2)``.

Cells are in the table's encoding (:class:`~pymc_pcrp.distributions.table.TableSpec`):
level codes ``0..C-1``, counts, Gaussian values, as in ``observed_data``.
"""

from __future__ import annotations

import numpy as np

from pymc_pcrp.distributions._table_numpy import column_concentrations

__all__ = ["replicate_table"]


def replicate_table(
    rng: np.random.Generator,
    values: np.ndarray,
    mask: np.ndarray,
    labels: np.ndarray,
    kind: np.ndarray,
    nlev: np.ndarray,
    conc: np.ndarray,
    hyp: np.ndarray,
) -> np.ndarray:
    """Return one replicated table for one partition.

    Parameters
    ----------
    rng : numpy.random.Generator
    values : numpy.ndarray
        The encoded table, ``(N, D)`` (any value where ``mask`` is 0).
    mask : numpy.ndarray
        ``(N, D)``, nonzero where a cell is observed.
    labels : numpy.ndarray
        ``(N,)`` integer labels of the partition (any values).
    kind, nlev, conc, hyp : numpy.ndarray
        The column spec's arrays (:class:`~pymc_pcrp.distributions.table.TableSpec`).

    Returns
    -------
    numpy.ndarray
        ``(N, D)`` floats: every cell replicated given its row's cluster.
    """
    n, d = values.shape
    _, index = np.unique(np.asarray(labels), return_inverse=True)
    index = index.reshape(-1)
    k = int(index.max()) + 1 if n else 0
    concs = column_concentrations(kind, nlev, conc)
    observed = np.asarray(mask) != 0
    out = np.empty((n, d))
    for j in range(d):
        seen = observed[:, j]
        idx, x = index[seen], np.asarray(values[seen, j], dtype=np.float64)
        n_obs = np.bincount(idx, minlength=k).astype(np.float64)
        if kind[j] == 0:
            levels = int(nlev[j])
            counts = np.zeros((k, levels))
            np.add.at(counts, (idx, x.astype(np.int64)), 1.0)
            theta = rng.gamma(concs[j][None, :] + counts)  # Dirichlet, via normalised gammas
            cdf = np.cumsum(theta / theta.sum(axis=1, keepdims=True), axis=1)[index]
            u = rng.random(n)
            out[:, j] = np.minimum((u[:, None] >= cdf).sum(axis=1), levels - 1)
        elif kind[j] == 1:
            a, b = hyp[j, 0], hyp[j, 1]
            total = np.bincount(idx, weights=x, minlength=k)
            lam = rng.gamma(a + total, 1.0 / (b + n_obs))
            out[:, j] = rng.poisson(lam[index])
        else:
            kappa0, a0, b0, mu0 = hyp[j]
            total = np.bincount(idx, weights=x, minlength=k)
            mean = np.divide(total, n_obs, out=np.zeros(k), where=n_obs > 0)
            scatter = np.bincount(idx, weights=(x - mean[idx]) ** 2, minlength=k)
            kappa_n = kappa0 + n_obs
            mu_n = (kappa0 * mu0 + total) / kappa_n
            a_n = a0 + 0.5 * n_obs
            b_n = b0 + 0.5 * scatter + 0.5 * kappa0 * n_obs * (mean - mu0) ** 2 / kappa_n
            var = b_n / rng.gamma(a_n)
            mu = rng.normal(mu_n, np.sqrt(var / kappa_n))
            out[:, j] = rng.normal(mu[index], np.sqrt(var[index]))
    return out
