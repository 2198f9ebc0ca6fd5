r"""The diagonal-covariance (Normal-Inverse-Gamma) cluster family, in NumPy.

Each cluster has a diagonal covariance; dimension ``j`` has its own conjugate
Normal-Inverse-Gamma prior, independent of the others. For data centred at the
prior mean,

.. math::

    \sigma_j^2 \sim \mathrm{InvGamma}(a_0, b_{0j}), \qquad
    \mu_j \mid \sigma_j^2 \sim \mathcal{N}(0, \sigma_j^2 / \kappa_0).

The family is stored with the parameters of the full family: ``nu0`` and a
*diagonal* ``psi0``, read as ``a_0 = nu0 / 2`` and ``b_{0j} = psi0_jj / 2``.
With these values dimension ``j`` is exactly the one-dimensional NIW model
``(kappa0, nu0, psi0_jj)``, so a cluster's marginal likelihood is the product
of ``D`` one-dimensional NIW marginals (docs/model.md). A learned scale
multiplies every ``b_{0j}`` by the same ``s``.

This module is the NumPy reference the numba kernels
(:mod:`pymc_pcrp._kernels.diag`) are tested against, and what
:class:`~pymc_pcrp.NIWMixture` evaluates its log density with.
"""

from __future__ import annotations

import numpy as np

from scipy.special import gammaln, logsumexp

__all__ = [
    "diag_cluster_stats",
    "diag_log_marginal",
    "diag_log_predictive",
    "diag_scale_marginal_loglik",
]

_LOG_2PI = float(np.log(2.0 * np.pi))


def diag_log_marginal(
    n: np.ndarray, w: np.ndarray, means: np.ndarray, kappa0: float, a0: float, b0: np.ndarray
) -> np.ndarray:
    """Log marginal likelihood of clusters of the diagonal family.

    Parameters
    ----------
    n : numpy.ndarray
        Sizes, shape ``(K,)`` (all ``>= 1``).
    w : numpy.ndarray
        Per-dimension scatter about the cluster mean, ``sum_i (x_ij - m_j)^2``, ``(K, D)``.
    means : numpy.ndarray
        Cluster means of the centred data, ``(K, D)``.
    kappa0, a0 : float
        Prior pseudo-count of the mean and inverse-gamma shape.
    b0 : numpy.ndarray
        Inverse-gamma rates ``(D,)``.

    Returns
    -------
    numpy.ndarray
        ``(K,)`` log marginals,
        ``sum_j [lgamma(a_n) - lgamma(a0) + a0 log b0_j - a_n log b_nj
        + log(kappa0 / kappa_n) / 2 - n log(2 pi) / 2]``.
    """
    n = np.asarray(n, dtype=np.float64)
    d = w.shape[1]
    kappa_n = kappa0 + n
    a_n = a0 + 0.5 * n
    b_n = b0 + 0.5 * (w + (kappa0 * n / kappa_n)[:, None] * means**2)
    return (
        d * (gammaln(a_n) - gammaln(a0) + 0.5 * np.log(kappa0 / kappa_n) - 0.5 * n * _LOG_2PI)
        + a0 * np.sum(np.log(b0))
        - a_n * np.sum(np.log(b_n), axis=1)
    )


def diag_cluster_stats(
    xc: np.ndarray, labels: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sizes, means and per-dimension scatter ``(n, means, w)`` of the occupied clusters.

    Clusters are taken in the order of their labels (empty labels dropped).
    """
    labels = np.asarray(labels)
    _, inverse = np.unique(labels, return_inverse=True)
    k = int(inverse.max()) + 1 if inverse.size else 0
    n = np.bincount(inverse, minlength=k)
    sums = np.zeros((k, xc.shape[1]))
    np.add.at(sums, inverse, xc)
    means = sums / n[:, None]
    w = np.zeros((k, xc.shape[1]))
    np.add.at(w, inverse, (xc - means[inverse]) ** 2)
    return n, means, w


def diag_scale_marginal_loglik(xc, labels, kappa0, nu0, base, grid, log_weights) -> float:
    """``log p(X | z)`` of the diagonal family with the scale integrated out.

    The log of ``sum_g w_g prod_k m(X_k | b0 = s_g base / 2)`` over the grid
    values ``s_g``, with ``log w_g`` in ``log_weights`` and ``a0 = nu0 / 2``;
    ``xc`` are the data centred at ``mu0`` and ``base`` is the diagonal of
    ``psi0`` (``(D,)`` or the matrix itself).
    """
    base = np.asarray(base, dtype=np.float64)
    if base.ndim == 2:
        base = np.diag(base)
    n, means, w = diag_cluster_stats(np.asarray(xc, dtype=np.float64), labels)
    out = np.empty(len(grid))
    for g, s in enumerate(np.asarray(grid, dtype=np.float64)):
        out[g] = log_weights[g] + float(
            np.sum(diag_log_marginal(n, w, means, kappa0, 0.5 * nu0, 0.5 * s * base))
        )
    return float(logsumexp(out))


def diag_log_predictive(
    x: np.ndarray, block: np.ndarray, kappa0: float, a0: float, b0: np.ndarray
) -> np.ndarray:
    """Log posterior predictive of points ``x`` given a cluster ``block`` (both centred).

    A product over dimensions of Student-t densities with ``2 a_n`` degrees of
    freedom, location ``S_j / kappa_n`` and squared scale
    ``b_nj (kappa_n + 1) / (a_n kappa_n)``. ``block`` may have no rows (the prior
    predictive).
    """
    x = np.atleast_2d(np.asarray(x, dtype=np.float64))
    block = np.asarray(block, dtype=np.float64).reshape(-1, x.shape[1])
    n = block.shape[0]
    kappa_n = kappa0 + n
    a_n = a0 + 0.5 * n
    s = block.sum(axis=0)
    q = (block**2).sum(axis=0)
    b_n = b0 + 0.5 * (q - s**2 / kappa_n)
    loc = s / kappa_n
    scale2 = b_n * (kappa_n + 1.0) / (a_n * kappa_n)
    df = 2.0 * a_n
    z2 = (x - loc) ** 2 / scale2
    per_dim = (
        gammaln(0.5 * (df + 1.0))
        - gammaln(0.5 * df)
        - 0.5 * np.log(df * np.pi * scale2)
        - 0.5 * (df + 1.0) * np.log1p(z2 / df)
    )
    return per_dim.sum(axis=1)
