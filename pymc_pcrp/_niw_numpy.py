"""The NIW posterior and its Student-t predictives, in NumPy.

This is the one NumPy copy of the conjugate Normal-Inverse-Wishart algebra (design
notes, section 3); the numba kernels of the sampler keep their own incremental
version. :func:`niw_posterior` updates the prior with the points of one cluster;
:class:`PartitionPredictor` does the same for every cluster of a partition at once
and returns the clusters' Student-t posterior predictives plus the prior
predictive. The prediction density, the cluster prediction of new points, the
cross-validation of ``r``, the replicated data and the plots all build on these.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scipy.special import gammaln

from pymc_pcrp.distributions import NIWPrior

__all__ = [
    "PartitionPredictor",
    "Predictives",
    "assign",
    "check_prior",
    "niw_posterior",
    "prediction_weights",
]


def niw_posterior(
    x: np.ndarray, mu0: np.ndarray, kappa0: float, nu0: float, psi0: np.ndarray
) -> tuple[np.ndarray, float, float, np.ndarray]:
    """NIW posterior ``(mu_n, kappa_n, nu_n, psi_n)`` after the points ``x`` of shape ``(n, D)``."""
    n = x.shape[0]
    kappa_n, nu_n = kappa0 + n, nu0 + n
    if n == 0:
        return mu0.copy(), kappa_n, nu_n, psi0.copy()
    xbar = x.mean(axis=0)
    centred = x - xbar
    diff = xbar - mu0
    psi_n = psi0 + centred.T @ centred + (kappa0 * n / kappa_n) * np.outer(diff, diff)
    mu_n = (kappa0 * mu0 + n * xbar) / kappa_n
    return mu_n, kappa_n, nu_n, psi_n


@dataclass(frozen=True)
class Predictives:
    """Student-t predictives of the clusters of one partition plus the prior predictive."""

    sizes: np.ndarray  # (K,)
    loc: np.ndarray  # (K + 1, D), last row the prior predictive
    chol: np.ndarray  # (K + 1, D, D) lower Cholesky factors of the t scale matrices
    df: np.ndarray  # (K + 1,)

    def logpdf(self, points: np.ndarray) -> np.ndarray:
        """Log densities at ``points`` of shape ``(G, D)``, shape ``(K + 1, G)``."""
        d = points.shape[1]
        inverse = np.linalg.inv(self.chol)  # (K+1, D, D), small
        whitened = (
            points @ np.swapaxes(inverse, 1, 2)
            - np.einsum("kij,kj->ki", inverse, self.loc)[:, None, :]
        )  # (K+1, G, D): L_k^{-1} (x - loc_k)
        maha = np.sum(whitened**2, axis=2)  # (K+1, G)
        logdet = 2.0 * np.sum(np.log(np.diagonal(self.chol, axis1=1, axis2=2)), axis=1)
        df = self.df[:, None]
        const = (
            gammaln(0.5 * (self.df + d))
            - gammaln(0.5 * self.df)
            - 0.5 * d * np.log(self.df * np.pi)
            - 0.5 * logdet
        )
        return const[:, None] - 0.5 * (df + d) * np.log1p(maha / df)


class PartitionPredictor:
    """Builds the cluster predictives of any partition of one fixed data set."""

    def __init__(self, x: np.ndarray, prior: NIWPrior) -> None:
        self.prior = prior
        self.xc = x - prior.mu0  # centring on mu0 keeps the update formulas short
        self.outer = (self.xc[:, :, None] * self.xc[:, None, :]).reshape(len(x), -1)

    def __call__(self, labels: np.ndarray) -> Predictives:
        prior = self.prior
        d = prior.dim
        _, inverse = np.unique(labels, return_inverse=True)
        k = int(inverse.max()) + 1
        one_hot = np.zeros((k, len(labels)))
        one_hot[inverse, np.arange(len(labels))] = 1.0
        counts = one_hot.sum(axis=1)
        sums = one_hot @ self.xc  # (K, D), centred on mu0
        outer = (one_hot @ self.outer).reshape(k, d, d)
        kappa = np.append(prior.kappa0 + counts, prior.kappa0)
        nu = np.append(prior.nu0 + counts, prior.nu0)
        sums = np.vstack([sums, np.zeros(d)])
        outer = np.concatenate([outer, np.zeros((1, d, d))])
        # Psi_n = Psi0 + S + (kappa0 n / kappa_n)(xbar - mu0)(xbar - mu0)^T, written with
        # the sums of (x - mu0): Psi0 + sum (x - mu0)(x - mu0)^T - s s^T / kappa_n.
        psi = prior.psi0 + outer - sums[:, :, None] * sums[:, None, :] / kappa[:, None, None]
        df = nu - d + 1.0
        scale = psi * ((kappa + 1.0) / (kappa * df))[:, None, None]
        return Predictives(
            sizes=counts,
            loc=prior.mu0 + sums / kappa[:, None],
            chol=np.linalg.cholesky(scale),
            df=df,
        )


def prediction_weights(sizes: np.ndarray, power: float, alpha: float) -> np.ndarray:
    """Return the pCRP prediction-rule probabilities ``(n_1^r, ..., n_K^r, alpha) / total``."""
    raw = np.append(sizes**power, alpha)
    return raw / raw.sum()


def check_prior(prior, default_data: np.ndarray, dim: int) -> NIWPrior:
    """``prior``, or ``NIWPrior.from_data(default_data)`` if it is None, checked against ``dim``."""
    if prior is None:
        prior = NIWPrior.from_data(default_data)
    elif not isinstance(prior, NIWPrior):
        raise ValueError(
            f"Argument 'prior' must be a pymc_pcrp.NIWPrior or None, got {type(prior).__name__}."
        )
    if prior.dim != dim:
        raise ValueError(
            f"Argument 'prior' describes D = {prior.dim} dimensions but the data have D = {dim}."
        )
    return prior


def assign(
    predictor: PartitionPredictor,
    labels: np.ndarray,
    x_new: np.ndarray,
    power: float,
    alpha: float,
    allow_new: bool,
) -> np.ndarray:
    """Give each new point the cluster of ``labels`` that maximises ``n_k^r t_k(x)``.

    With ``allow_new``, a point whose new-cluster term ``alpha t_0(x)`` wins gets ``-1``.
    No input checks: the callers validate once and call this per draw.
    """
    values = np.unique(labels)
    pred = predictor(labels)
    score = pred.logpdf(x_new)
    score[:-1] += power * np.log(pred.sizes)[:, None]
    score[-1] += np.log(alpha)
    best = np.argmax(score if allow_new else score[:-1], axis=0)
    out = np.where(best < values.size, values[np.minimum(best, values.size - 1)], -1)
    return out.astype(np.int64)
