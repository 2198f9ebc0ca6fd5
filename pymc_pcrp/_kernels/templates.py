"""Template jumps: an independence proposal built from partitions remembered during tuning.

On some data sets the posterior has a few families of states that no local move
crosses (breast cancer at r = 1.3: two divisions of the same three large clusters
that differ on some forty points, docs/mixing.md, "Template jumps"). The tuning
tournament of restarts often meets more than one of them. This module turns such
remembered partitions ("templates") into a fixed proposal that puts a chain
straight into any of the families, and makes the Metropolis-Hastings test exact.

The proposal
------------
A template ``T`` with clusters ``1..K_T`` gives every point ``p`` a categorical
distribution over those clusters: the Gibbs conditional of ``p`` given the other
points of ``T`` (:func:`template_log_weights`), i.e. ``n_{t,-p}^r m(x_p | X_{t,-p})``
for a cluster ``t`` and ``alpha m(x_p)`` for the cluster ``p`` is alone in.
A proposal picks one of the ``M`` templates uniformly and draws every point's
cluster independently from its row (:func:`draw_from_template`). It never looks at
the chain's state, so it is an independence proposal:

    accept z' with probability min(1, pi(z') q(z) / (pi(z) q(z'))),

where ``q`` is the probability of the proposed *partition*: the mean over templates
of the sum, over every one-to-one assignment of the partition's blocks to the
template's clusters, of the product of the points' weights (a permanent, computed
by dynamic programming over subsets of the template's clusters in
:func:`log_partition_probability`, so at most :data:`MAX_TEMPLATE_CLUSTERS` clusters
per template). A partition with more blocks than a template has clusters has
probability zero under it; from a state no template can produce the move is always
rejected, which keeps detailed balance.

``pi`` is the posterior of the partition given the chain's current hyperparameters
(``alpha``, ``r``, and the NIW scale and ``nu0`` when they are learned): the move
is one more conditional update inside the step, as the sweeps are.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from pymc_pcrp._kernels._config import NJIT_KWARGS
from pymc_pcrp._kernels.log_joint import cluster_scatter, mean_weight, n_blocks
from pymc_pcrp._kernels.niw import cholesky_lower, log_det_chol, log_multigamma
from pymc_pcrp._kernels.partitions import _log_add

__all__ = [
    "MAX_TEMPLATE_CLUSTERS",
    "draw_from_template",
    "log_partition_probability",
    "log_proposal_probability",
    "template_log_weights",
]

# The permanent costs O(2^K K) per evaluation: templates with more clusters are not used.
MAX_TEMPLATE_CLUSTERS = 10

_LOG_PI = math.log(math.pi)


@numba.njit(**NJIT_KWARGS)
def _log_ratio(kappa: float, nu: float, logdet_without: float, logdet_with: float, d: int) -> float:
    """``log m(X + x) - log m(X)`` for a block with posterior ``(kappa, nu, Psi)`` without ``x``."""
    return (
        log_multigamma(0.5 * (nu + 1.0), d)
        - log_multigamma(0.5 * nu, d)
        - 0.5 * d * _LOG_PI
        + 0.5 * d * math.log(kappa / (kappa + 1.0))
        + 0.5 * nu * logdet_without
        - 0.5 * (nu + 1.0) * logdet_with
    )


@numba.njit(**NJIT_KWARGS)
def _solve_lower(chol: np.ndarray, b: np.ndarray, out: np.ndarray) -> float:
    """Solve ``L y = b`` into ``out`` and return ``y^T y`` (``= b^T (L L^T)^{-1} b``)."""
    d = b.shape[0]
    acc = 0.0
    for i in range(d):
        t = b[i]
        for j in range(i):
            t -= chol[i, j] * out[j]
        out[i] = t / chol[i, i]
        acc += out[i] * out[i]
    return acc


@numba.njit(**NJIT_KWARGS)
def template_log_weights(
    xc: np.ndarray,
    labels: np.ndarray,
    log_alpha: float,
    power: float,
    kappa0: float,
    nu0: float,
    psi0: np.ndarray,
    chol0: np.ndarray,
) -> np.ndarray:
    """Each point's normalised log Gibbs conditional over a template's clusters, ``(N, K)``.

    ``labels`` are the template's canonical labels and ``xc`` the data centred at
    the prior mean. Row ``p`` holds ``log q_p(t)``: proportional to
    ``r log n_{t,-p} + log m(x_p | X_{t,-p})`` for a cluster ``t`` with other points
    and ``log alpha + log m(x_p)`` for the cluster that holds ``p`` alone. The
    leave-one-out terms use the determinant lemma on the cluster's own factor:
    ``Psi_{-p} = Psi - kappa_n / (kappa_n - 1) v v^T`` with ``v`` the point minus the
    posterior mean. ``O(N K D^2 + K D^3)``.
    """
    n, d = xc.shape
    k = n_blocks(labels)
    sizes, means, w = cluster_scatter(xc, labels, k)
    chols = np.empty((k, d, d))
    logdets = np.empty(k)
    post_means = np.empty((k, d))
    a = np.empty((d, d))
    for c in range(k):
        wt = mean_weight(kappa0, sizes[c])
        for i in range(d):
            for j in range(d):
                a[i, j] = psi0[i, j] + w[c, i, j] + wt * means[c, i] * means[c, j]
        if not cholesky_lower(a, chols[c]):
            raise FloatingPointError("posterior scale matrix is not positive definite")
        logdets[c] = log_det_chol(chols[c])
        for i in range(d):
            post_means[c, i] = sizes[c] * means[c, i] / (kappa0 + sizes[c])
    logdet0 = log_det_chol(chol0)
    out = np.empty((n, k))
    v = np.empty(d)
    y = np.empty(d)
    for p in range(n):
        own = labels[p]
        top = -np.inf
        for c in range(k):
            kappa_n = kappa0 + sizes[c]
            nu_n = nu0 + sizes[c]
            for i in range(d):
                v[i] = xc[p, i] - post_means[c, i]
            q = _solve_lower(chols[c], v, y)
            if c != own:
                logdet_with = logdets[c] + math.log1p(kappa_n / (kappa_n + 1.0) * q)
                value = power * math.log(sizes[c]) + _log_ratio(
                    kappa_n, nu_n, logdets[c], logdet_with, d
                )
            elif sizes[c] == 1:  # alone: weighed as a new cluster
                for i in range(d):
                    v[i] = xc[p, i]
                q0 = _solve_lower(chol0, v, y)
                logdet_with = logdet0 + math.log1p(kappa0 / (kappa0 + 1.0) * q0)
                value = log_alpha + _log_ratio(kappa0, nu0, logdet0, logdet_with, d)
            else:
                logdet_without = logdets[c] + math.log1p(-kappa_n / (kappa_n - 1.0) * q)
                value = power * math.log(sizes[c] - 1) + _log_ratio(
                    kappa_n - 1.0, nu_n - 1.0, logdet_without, logdets[c], d
                )
            out[p, c] = value
            if value > top:
                top = value
        total = 0.0
        for c in range(k):
            total += math.exp(out[p, c] - top)
        norm = top + math.log(total)
        for c in range(k):
            out[p, c] -= norm
    return out


@numba.njit(**NJIT_KWARGS)
def draw_from_template(rng: np.random.Generator, log_weights: np.ndarray, out: np.ndarray) -> None:
    """Draw every point's template cluster from its row of ``log_weights`` into ``out``."""
    n, k = log_weights.shape
    for p in range(n):
        u = rng.random()
        acc = 0.0
        chosen = k - 1
        for c in range(k):
            acc += math.exp(log_weights[p, c])
            if u < acc:
                chosen = c
                break
        out[p] = chosen


@numba.njit(**NJIT_KWARGS)
def log_partition_probability(log_weights: np.ndarray, labels: np.ndarray) -> float:
    """Log probability that one template's proposal yields the partition ``labels``.

    ``labels`` are canonical (blocks ``0..B-1``). The probability sums, over every
    one-to-one map of the ``B`` blocks to the template's ``K`` clusters, the product
    of the points' weights: a permanent, computed exactly by dynamic programming
    over the subsets of clusters already used (``O(2^K K)`` after ``O(N K)``).
    ``-inf`` when ``B > K``.
    """
    n, k = log_weights.shape
    b = n_blocks(labels)
    if b > k:
        return -np.inf
    block = np.zeros((b, k))
    for p in range(n):
        for c in range(k):
            block[labels[p], c] += log_weights[p, c]
    size = 1 << k
    f = np.full(size, -np.inf)
    f[0] = 0.0
    result = -np.inf
    for subset in range(size):
        value = f[subset]
        if value == -np.inf:
            continue
        used = 0
        rest = subset
        while rest:
            used += rest & 1
            rest >>= 1
        if used == b:
            result = _log_add(result, value)
            continue
        for c in range(k):
            if not (subset >> c) & 1:
                nxt = subset | (1 << c)
                f[nxt] = _log_add(f[nxt], value + block[used, c])
    return result


def log_proposal_probability(templates: list[np.ndarray], labels: np.ndarray) -> float:
    """Log probability of the partition ``labels`` under the equal mixture of ``templates``."""
    values = np.array([log_partition_probability(t, labels) for t in templates])
    top = values.max()
    if top == -np.inf:
        return -np.inf
    return float(top + np.log(np.mean(np.exp(values - top))))
