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

from pymc_pcrp.distributions._table_numpy import (
    centred_values,
    cluster_statistics,
    column_concentrations,
)

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
    hyp = np.asarray(hyp, dtype=np.float64)
    # per column (n, a, q): observed cells, level counts or sums, sums of squares (Gaussian
    # values centred at mu0, so that the update below has prior mean 0)
    stats = cluster_statistics(centred_values(values, kind, hyp), mask, index, k, kind, nlev)
    out = np.empty((n, d))
    for j, (n_obs, a, q) in enumerate(stats):
        if kind[j] == 0:
            theta = rng.gamma(concs[j][None, :] + a)  # Dirichlet, via normalised gammas
            cdf = np.cumsum(theta / theta.sum(axis=1, keepdims=True), axis=1)[index]
            u = rng.random(n)
            out[:, j] = np.minimum((u[:, None] >= cdf).sum(axis=1), int(nlev[j]) - 1)
        elif kind[j] == 1:
            lam = rng.gamma(hyp[j, 0] + a, 1.0 / (hyp[j, 1] + n_obs))
            out[:, j] = rng.poisson(lam[index])
        else:
            kappa0, a0, b0, mu0 = hyp[j]
            kappa_n = kappa0 + n_obs
            a_n = a0 + 0.5 * n_obs
            b_n = b0 + 0.5 * np.maximum(q - a * a / kappa_n, 0.0)
            var = b_n / rng.gamma(a_n)
            mu = rng.normal(a / kappa_n, np.sqrt(var / kappa_n))
            out[:, j] = mu0 + rng.normal(mu[index], np.sqrt(var[index]))
    return out
