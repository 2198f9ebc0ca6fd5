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

from scipy.special import gammaln, logsumexp, multigammaln

from pymc_pcrp.distributions.niw_prior import NIWPrior

__all__ = [
    "PartitionPredictor",
    "Predictives",
    "assign",
    "check_prior",
    "niw_posterior",
    "prediction_weights",
    "scale_log_posterior",
    "scale_marginal_loglik",
]


def _update(
    counts: np.ndarray,
    sums: np.ndarray,
    outer: np.ndarray,
    mu0: np.ndarray,
    kappa0: float,
    nu0: float,
    psi0: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Apply the conjugate NIW update to several clusters at once, from sums centred on ``mu0``.

    ``counts`` (K,), ``sums`` (K, D) and ``outer`` (K, D, D) hold, per cluster, the
    number of points, ``sum (x - mu0)`` and ``sum (x - mu0)(x - mu0)^T``. Returns
    ``(mu_n, kappa_n, nu_n, psi_n)`` stacked over the clusters. With ``s`` the sum,
    ``Psi0 + S + (kappa0 n / kappa_n)(xbar - mu0)(xbar - mu0)^T`` (``S`` the scatter
    about the cluster mean) equals ``Psi0 + sum (x - mu0)(x - mu0)^T - s s^T / kappa_n``.
    """
    kappa = kappa0 + counts
    nu = nu0 + counts
    psi = psi0 + outer - sums[:, :, None] * sums[:, None, :] / kappa[:, None, None]
    return mu0 + sums / kappa[:, None], kappa, nu, psi


def niw_posterior(
    x: np.ndarray, mu0: np.ndarray, kappa0: float, nu0: float, psi0: np.ndarray
) -> tuple[np.ndarray, float, float, np.ndarray]:
    """NIW posterior ``(mu_n, kappa_n, nu_n, psi_n)`` after the points ``x`` of shape ``(n, D)``."""
    xc = x - mu0
    mu_n, kappa_n, nu_n, psi_n = _update(
        np.array([x.shape[0]], dtype=np.float64),
        xc.sum(axis=0)[None],
        (xc.T @ xc)[None],
        mu0,
        kappa0,
        nu0,
        psi0,
    )
    return mu_n[0], float(kappa_n[0]), float(nu_n[0]), psi_n[0]


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

    def __call__(
        self, labels: np.ndarray, scale: float = 1.0, nu0: float | None = None
    ) -> Predictives:
        """Predictives of the clusters of ``labels`` with ``Psi_0 = scale * prior.psi0``.

        ``scale`` is the draw's NIW scale for a prior that learns it (the sample
        stat ``niw_scale``); for a fixed-scale prior leave it at 1. ``nu0`` is
        the draw's ``nu0`` for a prior that learns it (the stat ``niw_nu0``);
        None means the prior's own.
        """
        prior = self.prior
        d = prior.dim
        _, inverse = np.unique(labels, return_inverse=True)
        k = int(inverse.max()) + 1
        one_hot = np.zeros((k, len(labels)))
        one_hot[inverse, np.arange(len(labels))] = 1.0
        counts = one_hot.sum(axis=1)
        sums = one_hot @ self.xc  # (K, D), centred on mu0
        outer = (one_hot @ self.outer).reshape(k, d, d)
        # The clusters, then an empty cluster: its update is the prior itself.
        loc, kappa, nu, psi = _update(
            np.append(counts, 0.0),
            np.vstack([sums, np.zeros(d)]),
            np.concatenate([outer, np.zeros((1, d, d))]),
            prior.mu0,
            prior.kappa0,
            prior.nu0 if nu0 is None else nu0,
            scale * prior.psi0,
        )
        df = nu - d + 1.0
        scale = psi * ((kappa + 1.0) / (kappa * df))[:, None, None]
        return Predictives(
            sizes=counts,
            loc=loc,
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
    if prior.is_diagonal:
        raise NotImplementedError(
            "This function supports the full-covariance NIW family only; the prior has "
            "covariance='diag' (the diagonal family). pymc_pcrp.sample_posterior_predictive "
            "and the model's log density support it."
        )
    return prior


def assign(
    predictor: PartitionPredictor,
    labels: np.ndarray,
    x_new: np.ndarray,
    power: float,
    alpha: float,
    allow_new: bool,
    scale: float | None = None,
    nu0: float | None = None,
) -> np.ndarray:
    """Give each new point the cluster of ``labels`` that maximises ``n_k^r t_k(x)``.

    With ``allow_new``, a point whose new-cluster term ``alpha t_0(x)`` wins gets ``-1``.
    ``scale`` and ``nu0`` are the NIW scale (``Psi_0 = scale * psi0``) and ``nu0``
    of the draw ``labels`` comes from. If ``scale`` is None and the prior learns
    its scale (or ``nu0``), each ``t_k`` is averaged over the exact conditional
    ``p(s, nu0 | labels, X)`` on the grids (grid values of probability below
    ``1e-12`` left out); for a fixed-scale prior None means 1. No input checks:
    the callers validate once and call this per draw.
    """
    values = np.unique(labels)
    prior = predictor.prior
    if scale is not None or not (prior.learns_scale or prior.learns_nu0):
        pred = predictor(labels, 1.0 if scale is None else scale, nu0)
        score = pred.logpdf(x_new)
        sizes = pred.sizes
    else:
        grid, log_w = prior.grid_arrays()
        nu_grid, nu_log_w = prior.nu0_arrays()
        args = (predictor.xc, labels, prior.kappa0)
        log_post = np.stack(
            [
                v + scale_log_posterior(*args, nu, prior.psi0, grid, log_w)
                for nu, v in zip(nu_grid, nu_log_w, strict=True)
            ]
        )  # (H, G)
        log_post -= logsumexp(log_post)
        parts = []
        for h, g in zip(*np.nonzero(log_post > np.log(1e-12)), strict=True):
            pred = predictor(labels, grid[g], nu_grid[h])
            parts.append(log_post[h, g] + pred.logpdf(x_new))
        score = logsumexp(np.stack(parts), axis=0)
        sizes = pred.sizes
    score[:-1] += power * np.log(sizes)[:, None]
    score[-1] += np.log(alpha)
    best = np.argmax(score if allow_new else score[:-1], axis=0)
    out = np.where(best < values.size, values[np.minimum(best, values.size - 1)], -1)
    return out.astype(np.int64)


def scale_log_posterior(
    xc: np.ndarray,
    labels: np.ndarray,
    kappa0: float,
    nu0: float,
    base: np.ndarray,
    grid: np.ndarray,
    log_weights: np.ndarray,
) -> np.ndarray:
    """``log w_g + sum_k log m(X_k | s_g P)`` for each grid value ``s_g`` (unnormalised).

    ``xc`` are the data centred at ``mu0`` and ``base`` is ``P = L L^T``. A
    cluster with ``n`` points, mean ``m`` and scatter ``W`` about its mean has
    ``Psi_n = s P + W + c m m^T`` with ``c = kappa0 n / (kappa0 + n)``. With
    ``lambda_j``, ``V`` the eigen-decomposition of ``L^{-1} W L^{-T}`` and
    ``u = V^T L^{-1} m``,
    ``log|Psi_n| = log|P| + sum_j log(s + lambda_j) + log(1 + c sum_j u_j^2 / (s + lambda_j))``:
    the scatter is taken about each cluster's own mean and the rank-one mean
    term is never added to it, so a cluster far from ``mu0`` keeps its digits
    (the same arithmetic as the step's
    :func:`~pymc_pcrp._kernels.hyper.partition_log_joint_scaled`).
    ``O(N D^2 + K D^3 + G K D)`` time in all, and memory ``O(N D + K D^2)``.
    """
    xc = np.asarray(xc, dtype=np.float64)
    d = xc.shape[1]
    _, inv = np.unique(np.asarray(labels), return_inverse=True)
    k = int(inv.max()) + 1 if inv.size else 0
    counts = np.bincount(inv, minlength=k).astype(np.float64)
    sums = np.zeros((k, d))
    np.add.at(sums, inv, xc)
    means = sums / counts[:, None]
    chol = np.linalg.cholesky(np.asarray(base, dtype=np.float64))
    ym = np.linalg.solve(chol, means.T).T  # L^{-1} m
    linv = np.linalg.inv(chol)
    scatter = np.zeros((k, d, d))
    # Scatter of y_i = L^{-1} (x_i - m) per cluster, points sorted by cluster and
    # taken a block at a time: memory O(block D^2) beyond the data, not O(N D^2),
    # and no np.add.at.
    by_cluster = np.argsort(inv, kind="stable")
    block = max(1, (1 << 20) // max(d * d, 1))
    for start in range(0, by_cluster.size, block):
        rows = by_cluster[start : start + block]
        seg = inv[rows]
        yb = (xc[rows] - means[seg]) @ linv.T  # NumPy: see scale_marginal_grad
        firsts = np.flatnonzero(np.concatenate(([True], seg[1:] != seg[:-1])))
        scatter[seg[firsts]] += np.add.reduceat(yb[:, :, None] * yb[:, None, :], firsts, axis=0)
    eig, vecs = np.linalg.eigh(scatter)  # (K, D), (K, D, D)
    u2 = np.einsum("kij,ki->kj", vecs, ym) ** 2  # (K, D)
    kappa_n = kappa0 + counts
    nu_n = nu0 + counts
    weight = kappa0 * counts / kappa_n
    logdet_base = 2.0 * float(np.sum(np.log(np.diag(chol))))
    const = np.sum(
        -0.5 * counts * d * np.log(np.pi)
        + multigammaln(0.5 * nu_n, d)
        - multigammaln(0.5 * nu0, d)
        + 0.5 * d * np.log(kappa0 / kappa_n)
        - 0.5 * counts * logdet_base
    )
    s = np.asarray(grid, dtype=np.float64)
    shifted = s[:, None, None] + eig[None, :, :]  # (G, K, D)
    logdets = np.log(shifted).sum(axis=2) + np.log1p(
        weight[None, :] * (u2[None, :, :] / shifted).sum(axis=2)
    )  # (G, K)
    return (
        np.asarray(log_weights, dtype=np.float64)
        + const
        + 0.5 * k * nu0 * d * np.log(s)
        - 0.5 * logdets @ nu_n
    )


def scale_marginal_loglik(xc, labels, kappa0, nu0, base, grid, log_weights) -> float:
    """``log sum_g w_g prod_k m(X_k | s_g P)``: the log likelihood with the scale integrated out."""
    return float(logsumexp(scale_log_posterior(xc, labels, kappa0, nu0, base, grid, log_weights)))


def scale_marginal_grad(xc, labels, kappa0, nu0, base, grid, log_weights) -> np.ndarray:
    """Gradient in the data of :func:`scale_marginal_loglik`, shape ``(N, D)``.

    Only ``-nu_n / 2 log|Psi_n|`` of each cluster depends on the data, and
    ``d log|Psi_n| / d x_i = 2 Psi_n^{-1} (x_i - S / kappa_n)`` (data centred at
    ``mu0``, ``S`` the cluster's sum). With the scale integrated out the inverse is
    averaged over the scale's conditional ``pi_g`` given the labels and data:
    ``grad_i = -nu_n A (x_i - S / kappa_n)`` with
    ``A = sum_g pi_g (s_g P + B)^{-1}`` and ``B = Psi_n - s P``. Writing
    ``P = L L^T`` and ``L^{-1} B L^{-T} = V diag(mu) V^T``,
    ``A = L^{-T} V diag(sum_g pi_g / (s_g + mu)) V^T L^{-1}``: ``O(N D^2 + K D^3 +
    G K D)`` in all, like the log density itself. NumPy only: SciPy's triangular
    solve, called once per cluster, cost milliseconds per call on a loaded
    two-core machine (its BLAS threads waiting on each other).
    """
    xc = np.asarray(xc, dtype=np.float64)
    n, d = xc.shape
    if n == 0:
        return np.zeros((n, d))
    post = scale_log_posterior(xc, labels, kappa0, nu0, base, grid, log_weights)
    pi = np.exp(post - logsumexp(post))
    s = np.asarray(grid, dtype=np.float64)
    _, inv = np.unique(np.asarray(labels), return_inverse=True)
    k = int(inv.max()) + 1
    counts = np.bincount(inv, minlength=k).astype(np.float64)
    linv = np.linalg.inv(np.linalg.cholesky(np.asarray(base, dtype=np.float64)))
    y = xc @ linv.T  # whitened points L^{-1} x_i
    sums = np.zeros((k, d))
    np.add.at(sums, inv, y)
    kappa_n = kappa0 + counts
    out = np.empty((n, d))
    for c in range(k):
        rows = np.flatnonzero(inv == c)
        yc = y[rows]
        mean = sums[c] / counts[c]
        dev = yc - mean
        b = dev.T @ dev + (kappa0 * counts[c] / kappa_n[c]) * np.outer(mean, mean)
        mu, vecs = np.linalg.eigh(b)
        avg = (pi[:, None] / (s[:, None] + mu[None, :])).sum(axis=0)
        resid = yc - sums[c] / kappa_n[c]
        out[rows] = -(nu0 + counts[c]) * (((resid @ vecs) * avg) @ vecs.T)
    return out @ linv  # back from the whitened coordinates: L^{-T} applied to each row
