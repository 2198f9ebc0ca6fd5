"""Slow, direct NumPy/SciPy references for the Normal-Inverse-Wishart model.

Written straight from the formulas of docs/model.md (Murphy 2007) without any attempt at
speed, so that the optimised kernels can be compared against them.
"""

import math

from fractions import Fraction

import numpy as np
import scipy.special
import scipy.stats


def _as_points(X, D):
    X = np.asarray(X, dtype=float)
    return X.reshape(-1, D)


def niw_posterior(X, mu0, kappa0, nu0, psi0):
    """NIW posterior parameters (mu_n, kappa_n, nu_n, psi_n) after the rows of X."""
    mu0 = np.asarray(mu0, dtype=float).reshape(-1)
    psi0 = np.asarray(psi0, dtype=float).reshape(mu0.size, mu0.size)
    D = mu0.size
    X = _as_points(X, D)
    n = X.shape[0]
    kappa_n = kappa0 + n
    nu_n = nu0 + n
    if n == 0:
        return mu0.copy(), float(kappa_n), float(nu_n), psi0.copy()
    xbar = X.mean(axis=0)
    S = np.zeros((D, D))
    for x in X:
        d = x - xbar
        S += np.outer(d, d)
    mu_n = (kappa0 * mu0 + n * xbar) / kappa_n
    diff = xbar - mu0
    psi_n = psi0 + S + (kappa0 * n / kappa_n) * np.outer(diff, diff)
    return mu_n, float(kappa_n), float(nu_n), psi_n


def niw_log_marginal(X, mu0, kappa0, nu0, psi0):
    """Log marginal likelihood log m(X) of a block under the NIW prior."""
    mu0 = np.asarray(mu0, dtype=float).reshape(-1)
    psi0 = np.asarray(psi0, dtype=float).reshape(mu0.size, mu0.size)
    D = mu0.size
    X = _as_points(X, D)
    n = X.shape[0]
    _, kappa_n, nu_n, psi_n = niw_posterior(X, mu0, kappa0, nu0, psi0)
    sign0, logdet0 = np.linalg.slogdet(psi0)
    sign_n, logdet_n = np.linalg.slogdet(psi_n)
    assert sign0 > 0 and sign_n > 0
    return float(
        -(n * D / 2.0) * np.log(np.pi)
        + scipy.special.multigammaln(nu_n / 2.0, D)
        - scipy.special.multigammaln(nu0 / 2.0, D)
        + (nu0 / 2.0) * logdet0
        - (nu_n / 2.0) * logdet_n
        + (D / 2.0) * np.log(kappa0 / kappa_n)
    )


def niw_log_predictive(x, X, mu0, kappa0, nu0, psi0):
    """Log posterior predictive density of one point x given the rows of X."""
    mu0 = np.asarray(mu0, dtype=float).reshape(-1)
    D = mu0.size
    mu_n, kappa_n, nu_n, psi_n = niw_posterior(X, mu0, kappa0, nu0, psi0)
    df = nu_n - D + 1
    shape = psi_n * (kappa_n + 1) / (kappa_n * df)
    dist = scipy.stats.multivariate_t(loc=mu_n, shape=shape, df=df)
    return float(dist.logpdf(np.asarray(x, dtype=float).reshape(D)))


def log_pcrp_joint(labels, X, alpha, r, mu0, kappa0, nu0, psi0):
    """log alpha^K prod Gamma(n_k)^r + sum_k log m(X_k), unnormalised."""
    labels = np.asarray(labels)
    X = np.asarray(X, dtype=float)
    total = 0.0
    for k in np.unique(labels):
        members = X[labels == k]
        total += np.log(alpha) + r * scipy.special.gammaln(len(members))
        total += niw_log_marginal(members, mu0, kappa0, nu0, psi0)
    return float(total)


def gibbs_conditional(i, labels, X, alpha, r, mu0, kappa0, nu0, psi0):
    """Full conditional of point i in Algorithm 1 (collapsed Gibbs for the pCRP).

    Returns (cluster_labels, probs): the labels (taken from ``labels``) of the
    clusters that remain non-empty once i is removed, in order of first
    appearance among the other points, and the normalised probabilities of
    joining each of them followed by the probability of opening a new cluster.
    """
    labels = np.asarray(labels)
    X = np.asarray(X, dtype=float)
    others = np.array([j for j in range(len(labels)) if j != i], dtype=int)
    cluster_labels = []
    for j in others:
        if labels[j] not in cluster_labels:
            cluster_labels.append(labels[j])
    log_w = []
    for k in cluster_labels:
        members = [j for j in others if labels[j] == k]
        log_w.append(
            r * np.log(len(members)) + niw_log_predictive(X[i], X[members], mu0, kappa0, nu0, psi0)
        )
    empty = X[:0]
    log_w.append(np.log(alpha) + niw_log_predictive(X[i], empty, mu0, kappa0, nu0, psi0))
    log_w = np.array(log_w)
    probs = np.exp(log_w - scipy.special.logsumexp(log_w))
    return [int(k) for k in cluster_labels], probs


def niw_log_marginal_exact_2d(points, kappa0, nu0, c=1.0):
    """NIW log marginal (psi0 = c I, mu0 = 0, D = 2) with Psi_n in exact rationals."""
    pts = [[Fraction(float(v)) for v in p] for p in points]
    n = len(pts)
    k0 = Fraction(kappa0)
    s = [sum(p[a] for p in pts) for a in range(2)]
    q = [[sum(p[a] * p[b] for p in pts) for b in range(2)] for a in range(2)]
    psi = [
        [(Fraction(c) if a == b else 0) + q[a][b] - s[a] * s[b] / (k0 + n) for b in range(2)]
        for a in range(2)
    ]
    det = psi[0][0] * psi[1][1] - psi[0][1] * psi[1][0]
    logdet = math.log(det.numerator) - math.log(det.denominator)
    kappa_n, nu_n = kappa0 + n, nu0 + n
    return (
        -n * math.log(math.pi)
        + scipy.special.multigammaln(0.5 * nu_n, 2)
        - scipy.special.multigammaln(0.5 * nu0, 2)
        + 0.5 * nu0 * 2 * math.log(c)
        - 0.5 * nu_n * logdet
        + math.log(kappa0 / kappa_n)
    )
