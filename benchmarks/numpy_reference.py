"""The pCRP collapsed Gibbs sampler in plain NumPy: a reference and a readable specification.

This is Algorithm 1 of Lu, Li & Dunson (2018) with the Normal-Inverse-Wishart
(NIW) likelihood integrated out, written for clarity: a Python loop over the
points, vectorised over the clusters, every predictive recomputed from the
clusters' sufficient statistics (no incremental Cholesky factors). The numba
kernel ``pymc_pcrp._kernels.sweep`` runs the same algorithm; ``check_against_kernel``
verifies that both give the same conditional log weights.

Model
-----
Labels ``z`` follow the powered Chinese restaurant process with concentration
``alpha`` and power ``r``; each cluster ``k`` has a mean and a covariance drawn
from the NIW prior ``Sigma_k ~ IW(nu0, Psi0)``, ``mu_k | Sigma_k ~ N(mu0, Sigma_k / kappa0)``,
and its points are ``N(mu_k, Sigma_k)``. With the cluster parameters integrated
out, the posterior of the partition is

    p(z | X)  ∝  alpha^K  prod_k Gamma(n_k)^r  prod_k m(X_k)

where ``n_k`` is the size of cluster ``k`` and ``m(X_k)`` the NIW marginal
likelihood of its points.

One sweep
---------
Visit the points in a fresh uniformly random order. For point ``i``:

1. remove ``x_i`` from its cluster (a cluster left empty disappears);
2. with ``n_k`` the sizes of the remaining clusters, weigh every occupied
   cluster and a new one:

       w_k    = n_k^r  * p(x_i | X_k)      (occupied cluster k; X_k without x_i)
       w_new  = alpha  * p(x_i)            (a new cluster: the prior predictive)

   These are the ratios of the joint above when ``x_i`` is added to cluster
   ``k`` (``Gamma(n_k + 1)^r / Gamma(n_k)^r = n_k^r``) or seated alone
   (``alpha Gamma(1)^r = alpha``), times the ratio of marginal likelihoods,
   which is the posterior predictive;
3. draw the new cluster of ``x_i`` with probabilities proportional to ``w``.

The posterior predictive of a cluster holding ``n`` points (``n = 0`` gives the
prior predictive) is a multivariate Student-t. With the data centred at the
prior mean (``xc = x - mu0``, so ``mu0 = 0``), ``s`` the sum of the cluster's
centred points and ``Q`` the sum of their outer products:

    kappa_n = kappa0 + n,      nu_n = nu0 + n,
    Psi_n   = Psi0 + Q - s s^T / kappa_n,
    mu_n    = s / kappa_n,
    df      = nu_n - D + 1,
    Sigma_n = Psi_n (kappa_n + 1) / (kappa_n df),

    log p(x | X_k) = log Gamma((df + D) / 2) - log Gamma(df / 2) - (D / 2) log(df pi)
                     - (1/2) log|Sigma_n| - ((df + D) / 2) log(1 + d^T Sigma_n^{-1} d / df),
    d = x - mu_n.

Run this file to check the reference against the kernel and time both::

    PYTHONPATH=. python benchmarks/numpy_reference.py
"""

from __future__ import annotations

import time

from pathlib import Path

import numpy as np

from scipy.special import gammaln


class NumpyPCRPGibbs:
    """State and sweep of the reference sampler.

    Parameters
    ----------
    xc : array (N, D)
        Data centred at the prior mean ``mu0``.
    labels : int array (N,)
        Initial labels, any non-negative integers below ``N + 1``.
    alpha, power : float
        pCRP concentration and power ``r``.
    kappa0, nu0 : float
        NIW prior strengths.
    psi0 : array (D, D)
        NIW prior scale matrix.
    rng : numpy.random.Generator

    Cluster ``k`` is summarised by ``counts[k]``, ``sums[k]`` (sum of its centred
    points) and ``sumsq[k]`` (sum of their outer products); ``labels[i]`` is the
    cluster of point ``i``. A new cluster takes the first unused label.
    """

    def __init__(self, xc, labels, alpha, power, kappa0, nu0, psi0, rng):
        self.xc = np.asarray(xc, dtype=np.float64)
        n, d = self.xc.shape
        self.d = d
        self.log_alpha = float(np.log(alpha))
        self.power = float(power)
        self.kappa0, self.nu0 = float(kappa0), float(nu0)
        self.psi0 = np.asarray(psi0, dtype=np.float64)
        self.rng = rng
        cap = n + 1  # at most N clusters, plus room for the one being opened
        self.labels = np.asarray(labels, dtype=np.int64).copy()
        self.counts = np.zeros(cap, dtype=np.int64)
        self.sums = np.zeros((cap, d))
        self.sumsq = np.zeros((cap, d, d))
        np.add.at(self.counts, self.labels, 1)
        np.add.at(self.sums, self.labels, self.xc)
        np.add.at(self.sumsq, self.labels, self.xc[:, :, None] * self.xc[:, None, :])
        self.free = [k for k in range(cap - 1, -1, -1) if self.counts[k] == 0]

    # -- sufficient statistics -------------------------------------------

    def remove(self, i: int) -> None:
        """Take point ``i`` out of its cluster."""
        x, k = self.xc[i], self.labels[i]
        self.counts[k] -= 1
        self.sums[k] -= x
        self.sumsq[k] -= np.outer(x, x)
        if self.counts[k] == 0:  # the cluster disappears; reset its sums exactly
            self.sums[k] = 0.0
            self.sumsq[k] = 0.0
            self.free.append(k)

    def add(self, i: int, k: int) -> None:
        """Put point ``i`` into cluster ``k``."""
        x = self.xc[i]
        self.counts[k] += 1
        self.sums[k] += x
        self.sumsq[k] += np.outer(x, x)
        self.labels[i] = k

    # -- the full conditional of one point -------------------------------

    def log_predictive(self, x, n, s, q) -> np.ndarray:
        """Log Student-t posterior predictive of ``x`` for clusters of sizes ``n``.

        ``n`` (K,), ``s`` (K, D) and ``q`` (K, D, D) are the clusters' counts,
        sums and sums of outer products; ``n = 0`` gives the prior predictive.
        """
        d = self.d
        kappa_n = self.kappa0 + n
        nu_n = self.nu0 + n
        df = nu_n - d + 1.0
        psi_n = self.psi0 + q - s[:, :, None] * s[:, None, :] / kappa_n[:, None, None]
        sigma_n = psi_n * ((kappa_n + 1.0) / (kappa_n * df))[:, None, None]
        delta = x - s / kappa_n[:, None]
        _, logdet = np.linalg.slogdet(sigma_n)
        maha = np.einsum("kd,kd->k", delta, np.linalg.solve(sigma_n, delta[:, :, None])[:, :, 0])
        return (
            gammaln(0.5 * (df + d))
            - gammaln(0.5 * df)
            - 0.5 * d * np.log(df * np.pi)
            - 0.5 * logdet
            - 0.5 * (df + d) * np.log1p(maha / df)
        )

    def log_weights(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """Candidates for point ``i`` and their unnormalised log weights.

        Returns ``(labels, logw)``: the occupied clusters' labels followed by
        ``-1`` for a new cluster. Point ``i`` must already have been removed.
        """
        occ = np.flatnonzero(self.counts)
        n = self.counts[occ].astype(np.float64)
        # occupied clusters and, last, an empty one (its predictive is the prior predictive)
        n_all = np.append(n, 0.0)
        s_all = np.concatenate([self.sums[occ], np.zeros((1, self.d))])
        q_all = np.concatenate([self.sumsq[occ], np.zeros((1, self.d, self.d))])
        log_pred = self.log_predictive(self.xc[i], n_all, s_all, q_all)
        log_prior = np.append(self.power * np.log(n), self.log_alpha)  # n_k^r ; alpha
        return np.append(occ, -1), log_prior + log_pred

    # -- the sweep --------------------------------------------------------

    def sweep(self) -> None:
        """One pass over all points in a random order (Algorithm 1)."""
        for i in self.rng.permutation(self.xc.shape[0]):
            self.remove(i)
            labels, logw = self.log_weights(i)
            w = np.exp(logw - logw.max())
            j = int(np.searchsorted(np.cumsum(w), self.rng.random() * w.sum(), side="right"))
            k = labels[min(j, len(labels) - 1)]
            if k < 0:
                k = self.free.pop()
            self.add(i, k)

    @property
    def n_clusters(self) -> int:
        """Number of occupied clusters."""
        return int(np.count_nonzero(self.counts))


def check_against_kernel(xc, labels, params, alpha, power, prior, points) -> float:
    """Largest |difference| between reference and kernel conditional log weights.

    ``labels`` must be canonical (``0..K-1``) so that the kernel's slots equal
    the labels. Each point of ``points`` is scored by both without being moved.
    Raises ``AssertionError`` if the candidate clusters differ.
    """
    import sys

    from pymc_pcrp._kernels.sweep import init_state

    # The plain remove-score-add kernel is test code (tests/kernel_reference.py).
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from kernel_reference import conditional_log_weights

    ref = NumpyPCRPGibbs(
        xc, labels, alpha, power, prior.kappa0, prior.nu0, prior.psi0, np.random.default_rng(0)
    )
    state = init_state(xc, labels, params)
    worst = 0.0
    for i in points:
        slots, kern = conditional_log_weights(xc, state, params, int(i))
        old = ref.labels[i]
        ref.remove(i)
        occ, logw = ref.log_weights(i)
        ref.add(i, old)
        a, b = np.argsort(slots), np.argsort(occ)
        if not np.array_equal(slots[a], occ[b]):
            raise AssertionError(f"point {i}: reference and kernel disagree on the clusters")
        worst = max(worst, float(np.max(np.abs(kern[a] - logw[b]))))
    return worst


def verify(n: int = 500, d: int = 2, seed: int = 0) -> float:
    """Check the reference against the kernel on three states; return the largest difference.

    States: the true clusters; a partition after two reference sweeps from ten
    random clusters (many clusters of mixed sizes); the true clusters with
    three points moved to singleton clusters (their removal empties a cluster).
    """
    from common import ALPHA, POWER, canonical, mixture_data

    import pymc_pcrp as pcrp

    from pymc_pcrp._kernels.sweep import make_params

    x, z = mixture_data(n, d, seed)
    prior = pcrp.NIWPrior.from_data(x)
    xc = np.ascontiguousarray(x - prior.mu0)
    params = make_params(ALPHA, POWER, prior.kappa0, prior.nu0, prior.psi0)
    rng = np.random.default_rng(seed)
    points = rng.choice(n, size=25, replace=False)

    mixed = NumpyPCRPGibbs(
        xc, rng.integers(0, 10, size=n), ALPHA, POWER, prior.kappa0, prior.nu0, prior.psi0, rng
    )
    mixed.sweep()
    mixed.sweep()
    singles = z.copy()
    singles[points[:3]] = z.max() + 1 + np.arange(3)
    worst = 0.0
    for labels, pts in (
        (z, points),
        (canonical(mixed.labels), points),
        (canonical(singles), points[:6]),
    ):
        worst = max(worst, check_against_kernel(xc, labels, params, ALPHA, POWER, prior, pts))
    return worst


def main() -> None:
    from common import ALPHA, POWER, mixture_data

    import pymc_pcrp as pcrp

    from pymc_pcrp._kernels.sweep import gibbs_sweeps, init_state, make_params, sweep_tables

    err = verify()
    print(f"reference vs kernel conditional log weights: max |diff| = {err:.2e}")
    x, z = mixture_data(2000, 2)
    prior = pcrp.NIWPrior.from_data(x)
    xc = np.ascontiguousarray(x - prior.mu0)
    ref = NumpyPCRPGibbs(
        xc, z, ALPHA, POWER, prior.kappa0, prior.nu0, prior.psi0, np.random.default_rng(1)
    )
    t0 = time.perf_counter()
    ref.sweep()
    t_ref = time.perf_counter() - t0
    params = make_params(ALPHA, POWER, prior.kappa0, prior.nu0, prior.psi0)
    tables = sweep_tables(xc, params)
    state = init_state(xc, z, params)
    rng = np.random.default_rng(1)
    gibbs_sweeps(rng, (xc, state, params, tables), 1)
    t0 = time.perf_counter()
    gibbs_sweeps(rng, (xc, state, params, tables), 100)
    t_kern = (time.perf_counter() - t0) / 100
    print(
        f"N=2000 D=2: reference {t_ref:.3f} s/sweep (K={ref.n_clusters}), "
        f"kernel {t_kern * 1e3:.3f} ms/sweep (K={int(state.k[0])}), ratio {t_ref / t_kern:.0f}x"
    )


if __name__ == "__main__":
    main()
