r"""Where does the pCRP posterior stop keeping a true two-Gaussian split? (docs/model.md).

docs/model.md states a heuristic: for two Gaussian clusters with
proportions ``p``, the posterior at large N keeps the true split when
``G > (r - 1) H(p)`` and merges it when ``G < (r - 1) H(p)``, so that the
switch happens at ``r* = 1 + G / H`` whatever N, where

* ``G = 1/2 log det Sigma_total - sum_k p_k 1/2 log det Sigma_k`` (nats per point),
  with ``Sigma_total`` the covariance of the mixture;
* ``H = -sum_k p_k log p_k`` (nats per point).

This script measures the switch point in three ways and prints the numbers
beside four predictions (see ``docs/theory.md`` for the derivations):

* ``design``: ``1 + G / H``, the heuristic as stated;
* ``G/H``: where the log joint of the *true* partition alone crosses the
  one-block partition's, to first order in N;
* ``soft``: ``1 + (G - I) / H`` with ``I = I(Z; X) = H - H(Z | X)`` the mutual
  information between a point's component and its position: the value at the
  true responsibilities of the large-N variational formula below;
* ``r_inf``: the root in ``r`` of the large-N free energy of the two-block
  posterior, ``max_w [E H(w(.|x)) - r H(q_w) - sum_k q_k 1/2 log det Sigma_k(w)]
  + 1/2 log det Sigma_total``, over soft assignments ``w``; it is computed on a
  large sample by a fixed-point iteration (EM whose E-step weights are
  ``q_k^r`` instead of ``q_k``).

Measurements (each on data sets drawn with exactly ``round(p_k N)`` points per
component, NIW prior ``NIWPrior.from_data(X)``, ``alpha = 1``):

``threshold``
    (a) the exact log joint of the true two-block partition minus that of the
    one-block partition. The log joint ``K log alpha + r sum log Gamma(n_k) +
    sum log m(X_k)`` is linear in ``r``, so its sign change ``r_N`` is exact.
    (a') the same for the Bayes-classified partition (each point to its most
    probable component under the true parameters).
    (c) the posterior switch point ``r_post``: the ``r`` at which the total
    posterior mass of the two-block partitions around the true split equals the
    mass of the one-block partition. That mass is a sum over astronomically
    many partitions; it is estimated by thermodynamic integration from an
    independent-assignment distribution ``q(z) = prod_i w_i(z_i)`` (the true
    responsibilities) to the two-block posterior, along ``q^(1-t) p^t``, with a
    numba heat-bath sampler on two labels, then Newton steps in ``r`` using
    ``d/dr log mass = E[sum_k log Gamma(n_k)]``.
    Prints a table and writes ``docs/validation/theory_threshold.png``.
``chains``
    (b) the library's collapsed Gibbs sweep (``gibbs_sweeps``) started from the
    one-block and from the true two-block partition, at a grid of ``r``;
    prints where each chain is after the sweeps.
``spurious``
    the cost of a spurious block of ``m`` points (``m = 1, 2``) in data from a
    single Gaussian: ``-log`` of the posterior mass of all partitions made of one
    block of size ``m`` and the rest, relative to the one-block partition, by
    exact enumeration, beside ``(r - 1) m log(N / m)``.

``plot``
    merges the JSON files written by ``threshold --save`` into one table and one
    figure (``docs/validation/theory_threshold.png``).

Run from the repository root; ``docs/theory.md`` lists the exact commands behind
its numbers, e.g.::

    PYTHONPATH=. python validation/theory_r.py threshold --cases separated --seed 1 \
        --save th_separated.json --out ''
    PYTHONPATH=. python validation/theory_r.py plot th_separated.json
    PYTHONPATH=. python validation/theory_r.py chains --seed 2
    PYTHONPATH=. python validation/theory_r.py spurious --seed 3
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time

from dataclasses import dataclass
from pathlib import Path

import matplotlib
import numba
import numpy as np

from scipy.special import gammaln

import pymc_pcrp as pcrp

from pymc_pcrp._kernels.sweep import gibbs_sweeps, init_state, log_joint, make_params, sweep_tables

matplotlib.use("Agg")
import matplotlib.pyplot as plt

ALPHA = 1.0
D = 2


# -- the cases ---------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """Two Gaussian components in two dimensions with known parameters."""

    name: str
    p: tuple[float, float]
    means: tuple[tuple[float, float], tuple[float, float]]
    covs: tuple

    def _arrays(self):
        p = np.array(self.p)
        mus = [np.array(m, dtype=float) for m in self.means]
        covs = [np.array(c, dtype=float) for c in self.covs]
        return p, mus, covs

    def total_cov(self) -> np.ndarray:
        """Covariance of the mixture."""
        p, mus, covs = self._arrays()
        mu = sum(pk * m for pk, m in zip(p, mus, strict=True))
        return sum(
            pk * (c + np.outer(m - mu, m - mu)) for pk, c, m in zip(p, covs, mus, strict=True)
        )

    @property
    def g(self) -> float:
        """``G = 1/2 log det Sigma_total - sum_k p_k 1/2 log det Sigma_k``."""
        p, _, covs = self._arrays()
        inner = sum(pk * 0.5 * np.linalg.slogdet(c)[1] for pk, c in zip(p, covs, strict=True))
        return float(0.5 * np.linalg.slogdet(self.total_cov())[1] - inner)

    @property
    def h(self) -> float:
        """Entropy of the proportions, in nats."""
        p = np.array(self.p)
        return float(-np.sum(p * np.log(p)))

    def sizes(self, n: int) -> tuple[int, int]:
        """Exact component sizes for ``n`` points."""
        n1 = round(self.p[0] * n)
        return n1, n - n1

    def sample(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """``n`` points with exactly ``round(p_k n)`` from component ``k``; labels 0/1."""
        _, mus, covs = self._arrays()
        n1, n2 = self.sizes(n)
        x = np.vstack(
            [
                rng.multivariate_normal(mus[0], covs[0], size=n1),
                rng.multivariate_normal(mus[1], covs[1], size=n2),
            ]
        )
        z = np.repeat([0, 1], [n1, n2]).astype(np.int64)
        perm = rng.permutation(n)
        return x[perm], z[perm]

    def log_resp(self, x: np.ndarray) -> np.ndarray:
        """Log responsibilities of the two components under the true parameters."""
        p, mus, covs = self._arrays()
        lf = np.stack(
            [
                np.log(p[k]) + _log_normal(x, mus[k], covs[k])
                for k in range(2)  # components
            ],
            axis=1,
        )
        return lf - np.logaddexp(lf[:, 0], lf[:, 1])[:, None]

    def mutual_information(self, m: int, rng: np.random.Generator) -> tuple[float, float]:
        """``I(Z; X)`` and its Monte Carlo standard error from ``m`` draws."""
        x, _ = self.sample(m, rng)
        lw = self.log_resp(x)
        ent = -np.sum(np.exp(lw) * lw, axis=1)
        return self.h - float(ent.mean()), float(ent.std() / math.sqrt(m))


def _log_normal(x: np.ndarray, mu: np.ndarray, cov: np.ndarray) -> np.ndarray:
    chol = np.linalg.cholesky(cov)
    y = np.linalg.solve(chol, (x - mu).T)
    return (
        -0.5 * np.sum(y * y, axis=0)
        - np.sum(np.log(np.diag(chol)))
        - 0.5 * x.shape[1] * math.log(2 * math.pi)
    )


CASES = {
    "separated": Case(
        "separated", (0.5, 0.5), ((-3.0, 0.0), (3.0, 0.0)), (np.eye(2).tolist(), np.eye(2).tolist())
    ),
    "unequal": Case(
        "unequal",
        (0.7, 0.3),
        ((0.0, 0.0), (3.0, 2.0)),
        (((1.0, 0.3), (0.3, 0.5)), ((0.5, -0.2), (-0.2, 1.5))),
    ),
    "overlapping": Case(
        "overlapping",
        (0.5, 0.5),
        ((-1.5, 0.0), (1.5, 0.0)),
        (np.eye(2).tolist(), np.eye(2).tolist()),
    ),
}


# -- large-N predictions -----------------------------------------------------


def _weighted_fit(x, w):
    """Per-component proportions, means and covariances for soft assignments ``w``."""
    nk = w.sum(axis=0)
    mus = (w.T @ x) / nk[:, None]
    covs = []
    for k in range(w.shape[1]):
        xc = x - mus[k]
        covs.append((w[:, k, None] * xc).T @ xc / nk[k])
    return nk / len(x), mus, covs


def free_energy(x, w, r, logdet_total) -> float:
    """Per-point large-N log mass of the soft two-block profile ``w`` minus one block."""
    q, _, covs = _weighted_fit(x, w)
    ent = -np.mean(np.sum(w * np.log(np.clip(w, 1e-300, None)), axis=1))
    fit = sum(q[k] * 0.5 * np.linalg.slogdet(covs[k])[1] for k in range(2))
    return float(ent + r * np.sum(q * np.log(q)) - fit + 0.5 * logdet_total)


def tilted_em(x, w0, r, iters=2000, tol=1e-7):
    """Iterate the tilted EM (E-step weights ``q_k^r``) from ``w0`` to a fixed point."""
    w = w0
    for _ in range(iters):
        q, mus, covs = _weighted_fit(x, w)
        lf = np.stack([r * math.log(q[k]) + _log_normal(x, mus[k], covs[k]) for k in range(2)], 1)
        w_new = np.exp(lf - np.logaddexp(lf[:, 0], lf[:, 1])[:, None])
        if np.max(np.abs(w_new - w)) < tol:
            return w_new
        w = w_new
        if w.mean(axis=0).min() < 1e-4:
            break
    return w


def _entropy_rows(w) -> float:
    return float(-np.mean(np.sum(w * np.log(np.clip(w, 1e-300, None)), axis=1)))


def predictions(case: Case, m: int, rng: np.random.Generator) -> dict:
    """Every large-N prediction of the switch point for ``case``.

    ``r_inf`` solves ``max_w F(w, r) = 0`` on the split branch, by Newton steps
    (``d/dr max_w F = -H(q_w*)``, envelope theorem), the tilted EM warm-started
    from the previous fixed point. Sampling noise, ``O(m^-1/2)``, is reduced with
    a control variate: ``F`` at the true responsibilities has the known root
    ``soft``, so ``r_inf = soft + (root of max_w F - root of F(w_true))``, both
    roots on the same sample.
    """
    x, _ = case.sample(m, rng)
    w = np.exp(case.log_resp(x))
    logdet_total = float(np.linalg.slogdet(np.cov(x.T, bias=True))[1])
    mi, mi_se = case.mutual_information(m, rng)
    g, h = case.g, case.h
    soft = 1 + (g - mi) / h

    def f_and_h(w, r):
        q, _, covs = _weighted_fit(x, w)
        fit = sum(q[k] * 0.5 * np.linalg.slogdet(covs[k])[1] for k in range(2))
        hq = float(-np.sum(q * np.log(q)))
        return _entropy_rows(w) - r * hq - fit + 0.5 * logdet_total, hq

    f_true0, hq_true = f_and_h(w, 0.0)
    soft_sample = f_true0 / hq_true
    phi1 = f_and_h(tilted_em(x, w, 1.0), 1.0)[0]
    r = soft_sample
    for _ in range(30):
        w = tilted_em(x, w, r)
        if w.mean(axis=0).min() < 1e-3:
            raise RuntimeError("the split branch vanished before its free energy reached 0")
        f, hq = f_and_h(w, r)
        r += f / hq
        if abs(f) < 1e-10:
            break
    return {
        "G": g,
        "H": h,
        "I": mi,
        "I_se": mi_se,
        "design": 1 + g / h,
        "G/H": g / h,
        "soft": soft,
        "r_inf": soft + (r - soft_sample),
        "phi1": phi1,
    }


# -- exact log joints (a) ----------------------------------------------------


def prior_for(x: np.ndarray):
    """Centred data and (kappa0, nu0, psi0) of ``NIWPrior.from_data``."""
    prior = pcrp.NIWPrior.from_data(x)
    xc = np.ascontiguousarray(x - prior.mu0)
    return xc, prior


def split_parts(xc, labels, prior) -> tuple[float, float, int]:
    """``(S, L, K)`` with log joint ``K log alpha + r S + L`` (exact, via the kernel)."""
    params = make_params(ALPHA, 1.0, prior.kappa0, prior.nu0, prior.psi0)
    state = init_state(xc, labels, params)
    lj1 = float(log_joint(state, params, xc.shape[1]))
    counts = np.bincount(labels)
    s = float(np.sum(gammaln(counts[counts > 0])))
    k = int(np.sum(counts > 0))
    return s, lj1 - k * math.log(ALPHA) - s, k


def crossing(xc, labels, prior) -> float:
    """``r`` where the log joint of ``labels`` equals that of the one-block partition."""
    s2, l2, k2 = split_parts(xc, labels, prior)
    s1, l1, k1 = split_parts(xc, np.zeros(len(xc), dtype=np.int64), prior)
    # (k2 - k1) log alpha + r (s2 - s1) + (l2 - l1) = 0
    return -((k2 - k1) * math.log(ALPHA) + (l2 - l1)) / (s2 - s1)


# -- thermodynamic integration over two-block partitions (c) -----------------


@numba.njit(cache=True)
def _logm(n, s0, s1, q00, q01, q11, kappa0, nu0, p00, p01, p11, const0, lg_a, lg_b):
    """NIW log marginal likelihood of a block in D = 2 from its centred sums."""
    if n == 0:
        return 0.0
    kn = kappa0 + n
    a00 = p00 + q00 - s0 * s0 / kn
    a01 = p01 + q01 - s0 * s1 / kn
    a11 = p11 + q11 - s1 * s1 / kn
    det = a00 * a11 - a01 * a01
    nun = nu0 + n
    # -(n D / 2) log pi + log Gamma_2(nu_n / 2) - 0.5 nu_n log|Psi_n| + (D / 2) log(1 / kappa_n)
    # + const0, where const0 = -log Gamma_2(nu0 / 2) + 0.5 nu0 log|Psi0| + log kappa0;
    # log Gamma_2(a) = 0.5 log pi + lgamma(a) + lgamma(a - 1/2), tabulated per n.
    return (
        -n * math.log(math.pi)
        + 0.5 * math.log(math.pi)
        + lg_a[n]
        + lg_b[n]
        - 0.5 * nun * math.log(det)
        - math.log(kn)
        + const0
    )


@numba.njit(cache=True)
def _block_logm(stats, k, kappa0, nu0, psi, const0, lg_a, lg_b):
    return _logm(
        int(stats[k, 0]),
        stats[k, 1],
        stats[k, 2],
        stats[k, 3],
        stats[k, 4],
        stats[k, 5],
        kappa0,
        nu0,
        psi[0, 0],
        psi[0, 1],
        psi[1, 1],
        const0,
        lg_a,
        lg_b,
    )


@numba.njit(cache=True)
def _stats_from(xc, z):
    stats = np.zeros((2, 6))
    for i in range(xc.shape[0]):
        k = z[i]
        a, b = xc[i, 0], xc[i, 1]
        stats[k, 0] += 1
        stats[k, 1] += a
        stats[k, 2] += b
        stats[k, 3] += a * a
        stats[k, 4] += a * b
        stats[k, 5] += b * b
    return stats


@numba.njit(cache=True)
def _move(stats, k, x, sign):
    a, b = x[0], x[1]
    stats[k, 0] += sign
    stats[k, 1] += sign * a
    stats[k, 2] += sign * b
    stats[k, 3] += sign * a * a
    stats[k, 4] += sign * a * b
    stats[k, 5] += sign * b * b


@numba.njit(cache=True)
def _log_p(stats, r, log_alpha, kappa0, nu0, psi, const0, lg_a, lg_b, lg_n):
    """Log joint of a two-block state (both blocks non-empty)."""
    acc = 0.0
    for k in range(2):
        acc += log_alpha + r * lg_n[int(stats[k, 0])]
        acc += _block_logm(stats, k, kappa0, nu0, psi, const0, lg_a, lg_b)
    return acc


@numba.njit(cache=True)
def _ti_leg(
    seed, xc, logq, z, t_grid, burn, keep, r, log_alpha, kappa0, nu0, psi, const0, lg_a, lg_b, lg_n
):
    """Heat-bath sweeps on ``q^(1-t) p^t`` over two labels, for each ``t`` in turn.

    Returns, per ``t``: the mean and a batch-means variance of ``log p - log q``,
    the mean of ``S = sum_k log Gamma(n_k)`` (used at ``t = 1``) and the mean
    size of the smaller block. ``z`` is updated in place and carried from one
    ``t`` to the next. (numba supports the legacy ``np.random`` functions only.)
    """
    np.random.seed(seed)  # noqa: NPY002
    n = xc.shape[0]
    nt = t_grid.shape[0]
    mean = np.zeros(nt)
    var = np.zeros(nt)
    mean_s = np.zeros(nt)
    mean_minor = np.zeros(nt)
    nb = 10
    per = max(keep // nb, 1)
    stats = _stats_from(xc, z)
    for it in range(nt):
        t = t_grid[it]
        bsum = np.zeros(nb)
        bcnt = np.zeros(nb)
        acc_s = 0.0
        acc_minor = 0.0
        for sweep in range(burn + keep):
            stats = _stats_from(xc, z)  # no drift: recompute every sweep
            lm0 = _block_logm(stats, 0, kappa0, nu0, psi, const0, lg_a, lg_b)
            lm1 = _block_logm(stats, 1, kappa0, nu0, psi, const0, lg_a, lg_b)
            perm = np.random.permutation(n)  # noqa: NPY002
            for j in range(n):
                i = perm[j]
                a = z[i]
                b = 1 - a
                na = int(stats[a, 0])
                if na == 1:
                    continue
                nb_ = int(stats[b, 0])
                lma = lm0 if a == 0 else lm1
                lmb = lm1 if a == 0 else lm0
                _move(stats, a, xc[i], -1.0)
                _move(stats, b, xc[i], 1.0)
                lma_new = _block_logm(stats, a, kappa0, nu0, psi, const0, lg_a, lg_b)
                lmb_new = _block_logm(stats, b, kappa0, nu0, psi, const0, lg_a, lg_b)
                dp = (
                    r * (lg_n[na - 1] + lg_n[nb_ + 1] - lg_n[na] - lg_n[nb_])
                    + lma_new
                    + lmb_new
                    - lma
                    - lmb
                )
                dq = logq[i, b] - logq[i, a]
                delta = (1.0 - t) * dq + t * dp
                # Heat bath: flip with probability 1 / (1 + exp(-delta)).
                if delta >= 0:
                    flip = np.random.random() * (1.0 + math.exp(-delta)) < 1.0  # noqa: NPY002
                else:
                    e = math.exp(delta)
                    flip = np.random.random() * (1.0 + e) < e  # noqa: NPY002
                if flip:
                    z[i] = b
                    if a == 0:
                        lm0, lm1 = lma_new, lmb_new
                    else:
                        lm1, lm0 = lma_new, lmb_new
                else:
                    _move(stats, b, xc[i], -1.0)
                    _move(stats, a, xc[i], 1.0)
            if sweep >= burn:
                stats = _stats_from(xc, z)
                lp = _log_p(stats, r, log_alpha, kappa0, nu0, psi, const0, lg_a, lg_b, lg_n)
                lq = 0.0
                for i in range(n):
                    lq += logq[i, z[i]]
                b_i = min((sweep - burn) // per, nb - 1)
                bsum[b_i] += lp - lq
                bcnt[b_i] += 1
                acc_s += lg_n[int(stats[0, 0])] + lg_n[int(stats[1, 0])]
                acc_minor += min(stats[0, 0], stats[1, 0])
        means = bsum / bcnt
        mean[it] = bsum.sum() / bcnt.sum()
        var[it] = np.var(means) / nb * nb / (nb - 1)
        mean_s[it] = acc_s / keep
        mean_minor[it] = acc_minor / keep
    return mean, var, mean_s, mean_minor


def _tables(n, nu0):
    nun = nu0 + np.arange(n + 2)
    lg_a = gammaln(0.5 * nun)
    lg_b = gammaln(0.5 * nun - 0.5)
    lg_n = np.zeros(n + 2)
    lg_n[1:] = gammaln(np.arange(1, n + 2))
    return lg_a, lg_b, lg_n


def _const0(prior) -> float:
    nu0 = prior.nu0
    lmg0 = 0.5 * math.log(math.pi) + math.lgamma(0.5 * nu0) + math.lgamma(0.5 * nu0 - 0.5)
    return -lmg0 + 0.5 * nu0 * float(np.linalg.slogdet(prior.psi0)[1]) + math.log(prior.kappa0)


def log_two_block_mass(xc, prior, logq, r, seed, n_t=32, burn=40, keep=160):
    """Thermodynamic-integration estimate of ``log`` (two-block mass around the truth).

    Returns ``(log_mass, se, mean_S, minor)``: the estimate, its Monte Carlo
    standard error (batch means, summed over the grid with the trapezoid
    weights), the posterior mean of ``S = sum_k log Gamma(n_k)`` at ``t = 1`` and
    the mean size of the smaller block there (to tell whether the chain stayed
    near the true split).
    """
    n = xc.shape[0]
    rng = np.random.default_rng(seed)
    # An exact draw from q to start; t grid denser at both ends.
    z = (rng.random(n) < np.exp(logq[:, 1])).astype(np.int64)
    u = np.linspace(0.0, 1.0, n_t)
    t_grid = 0.5 - 0.5 * np.cos(np.pi * u)
    lg_a, lg_b, lg_n = _tables(n, prior.nu0)
    mean, var, mean_s, minor = _ti_leg(
        int(rng.integers(2**31)),
        xc,
        logq,
        z,
        t_grid,
        burn,
        keep,
        r,
        math.log(ALPHA),
        prior.kappa0,
        prior.nu0,
        prior.psi0,
        _const0(prior),
        lg_a,
        lg_b,
        lg_n,
    )
    wts = np.zeros(n_t)
    dt = np.diff(t_grid)
    wts[:-1] += 0.5 * dt
    wts[1:] += 0.5 * dt
    # log Z_0 = log q(both blocks non-empty) = 0 to within exp(-N).
    return float(wts @ mean), float(math.sqrt(wts**2 @ var)), float(mean_s[-1]), float(minor[-1])


def posterior_crossing(xc, prior, logq, r0, seed, newton=3, min_minor=0, **kw):
    """Newton iteration in ``r`` on log(two-block mass) - log(one-block mass).

    That difference ``D(r)`` is convex and decreasing in ``r`` (a log-sum-exp of
    functions linear in ``r``, minus a linear function, with slope
    ``E[S] - S_one < 0``), so Newton steps started where ``D > 0`` (pass the
    exact crossing of the true partition, which lies below the root) approach
    the root from the left and never visit an ``r`` at which the split is
    disfavoured. Returns ``(r, se_r, history)``, or ``r = nan`` when the
    two-block chain left the neighbourhood of the split (smaller block below
    ``min_minor`` points on average at ``t = 1``).
    """
    ones = np.zeros(len(xc), dtype=np.int64)
    s1, l1, _ = split_parts(xc, ones, prior)
    r = r0
    history = []
    se_r = float("nan")
    for j in range(newton):
        lm, se, mean_s, minor = log_two_block_mass(xc, prior, logq, r, seed + j, **kw)
        diff = lm - (math.log(ALPHA) + r * s1 + l1)
        slope = mean_s - s1
        history.append((r, diff, se, minor))
        if minor < min_minor:
            return float("nan"), se_r, history
        r = r - diff / slope
        se_r = se / abs(slope)
    return r, se_r, history


# -- (b) chains --------------------------------------------------------------


def run_chain(xc, prior, labels, r, sweeps, seed):
    """Library Gibbs sweeps from ``labels``; return per-sweep K and minority fraction."""
    params = make_params(ALPHA, r, prior.kappa0, prior.nu0, prior.psi0)
    tables = sweep_tables(xc, params)
    state = init_state(xc, labels.copy(), params)
    rng = np.random.default_rng(seed)
    ks = np.empty(sweeps, dtype=np.int64)
    second = np.empty(sweeps)
    n = len(xc)
    for s in range(sweeps):
        gibbs_sweeps(rng, (xc, state, params, tables), 1)
        counts = np.sort(state.counts[state.order[: state.k[0]]])[::-1]
        ks[s] = state.k[0]
        second[s] = counts[1] / n if len(counts) > 1 else 0.0
    return ks, second


# -- commands ----------------------------------------------------------------


def cmd_threshold(args) -> None:
    """Measure (a), (a') and (c) against N; print and plot them."""
    master = np.random.SeedSequence(args.seed)
    results = {}
    t_start = time.perf_counter()
    for name in args.cases:
        case = CASES[name]
        pred_rng = np.random.default_rng(master.spawn(1)[0])
        pred = predictions(case, args.pred_points, pred_rng)
        print(
            f"\n[{name}] p={case.p} means={case.means}\n"
            f"  G={pred['G']:.4f}  H={pred['H']:.4f}  I(Z;X)={pred['I']:.4f} "
            f"(+-{pred['I_se']:.4f})  large-N free energy at r=1: {pred['phi1']:.4f}\n"
            f"  predictions: design 1+G/H={pred['design']:.3f}  G/H={pred['G/H']:.3f}  "
            f"soft 1+(G-I)/H={pred['soft']:.3f}  r_inf={pred['r_inf']:.3f}",
            flush=True,
        )
        rows = []
        for n in args.sizes:
            true_r, bayes_r, post_r, post_se = [], [], [], []
            reps = args.reps if n <= args.ti_max_n else 0
            for rep in range(args.reps):
                rng = np.random.default_rng(master.spawn(1)[0])
                x, z = case.sample(n, rng)
                xc, prior = prior_for(x)
                lw = case.log_resp(x)
                true_r.append(crossing(xc, z, prior))
                bayes_r.append(crossing(xc, np.argmax(lw, axis=1).astype(np.int64), prior))
                if rep < min(reps, args.ti_reps):
                    r_hat, se, hist = posterior_crossing(
                        xc,
                        prior,
                        lw,
                        true_r[-1],
                        int(rng.integers(2**31)),
                        newton=args.newton,
                        min_minor=0.5 * min(case.p) * n,
                    )
                    if args.verbose:
                        print(f"    TI N={n} rep {rep}: (r, D, se, minor) {hist} -> {r_hat:.4f}")
                    post_r.append(r_hat)
                    post_se.append(se)
            row = {
                "n": n,
                "true": (float(np.mean(true_r)), float(np.std(true_r, ddof=1))),
                "bayes": (float(np.mean(bayes_r)), float(np.std(bayes_r, ddof=1))),
                "post": _mean_sd(post_r),
                "post_mc_se": float(np.nanmean(post_se)) if post_se else None,
                "n_post": int(np.sum(np.isfinite(post_r))),
                "n_post_tried": len(post_r),
            }
            rows.append(row)
            post = (
                f"{row['post'][0]:.4f} +- {row['post'][1]:.4f} "
                f"({row['n_post']}/{row['n_post_tried']}, MC se {row['post_mc_se']:.4f})"
                if row["post"]
                else "-"
            )
            print(
                f"  N={n:>6}: r_N true {row['true'][0]:.4f} +- {row['true'][1]:.4f}   "
                f"bayes {row['bayes'][0]:.4f} +- {row['bayes'][1]:.4f}   post {post}"
                f"   [{time.perf_counter() - t_start:.0f} s]",
                flush=True,
            )
        results[name] = {"pred": pred, "rows": rows, "p": list(case.p)}
    print_threshold_table(results, args.reps)
    if args.save:
        Path(args.save).write_text(json.dumps({"reps": args.reps, "results": results}, indent=1))
        print(f"\nwrote {args.save}")
    if args.out:
        plot_threshold(results, Path(args.out))
        print(f"wrote {args.out}")


def cmd_plot(args) -> None:
    """Merge saved ``threshold`` results, print one table and draw one figure."""
    results, reps = {}, None
    for path in args.results:
        saved = json.loads(Path(path).read_text())
        results.update(saved["results"])
        reps = saved["reps"]
    print_threshold_table(results, reps)
    plot_threshold(results, Path(args.out))
    print(f"\nwrote {args.out}")


def finite_n_true(pred, n):
    """Second-order prediction for (a): ``G/H - (5/2 + r/2) log N / (N H)`` at ``r = G/H``.

    The log joint difference of the true split is ``N (G_hat - r H) - (5/2 + r/2)
    log N + O(1)``: ``r/2 log N`` from Stirling's formula for the pCRP prior, and
    ``5/2 log N`` the Laplace (BIC) penalty of the second cluster's 5 free
    parameters in D = 2 (mean and covariance).
    """
    r = pred["G/H"]
    return r - (2.5 + 0.5 * r) * math.log(n) / (n * pred["H"])


def _mean_sd(values):
    values = [v for v in values if np.isfinite(v)]
    if not values:
        return None
    return float(np.mean(values)), float(np.std(values, ddof=1)) if len(values) > 1 else 0.0


def print_threshold_table(results, reps) -> None:
    """One table: every case and N, with the predictions on the case's line."""
    print(
        f"\nSwitch points r (mean +- sd over data sets; {reps} data sets per N for "
        "true/bayes, fewer for post as counted)"
    )
    print(
        f"{'case':>11} {'N':>6} {'r_N(true)':>15} {'pred':>6} {'r_N(bayes)':>15} {'r_post':>15}"
        f" {'design':>6} {'G/H':>6} {'soft':>6} {'r_inf':>6}"
    )
    for name, res in results.items():
        pred = res["pred"]
        for row in res["rows"]:
            post = f"{row['post'][0]:.3f}+-{row['post'][1]:.3f}" if row["post"] else "-"
            print(
                f"{name:>11} {row['n']:>6} "
                f"{row['true'][0]:>8.3f}+-{row['true'][1]:.3f} "
                f"{finite_n_true(pred, row['n']):>6.3f} "
                f"{row['bayes'][0]:>8.3f}+-{row['bayes'][1]:.3f} {post:>15}"
                f" {pred['design']:>6.3f} {pred['G/H']:>6.3f} {pred['soft']:>6.3f}"
                f" {pred['r_inf']:>6.3f}"
            )
    print(
        "pred = G/H - (5/2 + r/2) log N / (N H), the second-order prediction for r_N(true);"
        " design = 1 + G/H (the heuristic); soft = 1 + (G - I)/H; r_inf = large-N variational root"
    )


def plot_threshold(results, path: Path) -> None:
    """r_N against N per case (columns): full range above, a zoom below.

    Error bars are the standard deviation over data sets (not the standard
    error of the mean); the three series are shifted slightly along N to be legible.
    """
    ncol = len(results)
    fig, axes = plt.subplots(2, ncol, figsize=(4.3 * ncol, 6.4), squeeze=False)
    for col, (name, res) in enumerate(results.items()):
        pred, rows = res["pred"], res["rows"]
        ns = np.array([row["n"] for row in rows])
        grid = np.geomspace(ns.min() / 1.4, ns.max() * 1.4, 100)
        lows, highs = [], []
        for ax in axes[:, col]:
            for key, label, color, marker, shift in (
                ("true", "true partition (a)", "C0", "o", 0.92),
                ("bayes", "Bayes-classified partition (a')", "C2", "s", 1.0),
                ("post", "posterior mass, TI (c)", "C3", "D", 1.08),
            ):
                pts = np.array([(row["n"], *row[key]) for row in rows if row[key] is not None])
                if not len(pts):
                    continue
                ax.errorbar(
                    pts[:, 0] * shift,
                    pts[:, 1],
                    yerr=pts[:, 2],
                    color=color,
                    marker=marker,
                    ms=4,
                    label=label,
                    capsize=3,
                    lw=1,
                )
                lows.append(np.min(pts[:, 1] - pts[:, 2]))
                highs.append(np.max(pts[:, 1] + pts[:, 2]))
            ax.axhline(pred["design"], color="k", ls="--", lw=1, label="heuristic: 1 + G/H")
            ax.axhline(pred["G/H"], color="C0", ls=":", lw=1, label="G/H")
            ax.plot(
                grid,
                [finite_n_true(pred, n) for n in grid],
                color="C0",
                ls="-.",
                lw=0.8,
                label="G/H - (5/2 + r/2) log N / (N H)",
            )
            ax.axhline(pred["r_inf"], color="C3", ls="-", lw=1, label="large-N variational r_inf")
            ax.set_xscale("log")
            ax.set_xlim(grid[0], grid[-1])
            ax.set_xlabel("N")
            ax.set_ylabel("switch point r")
        lo = min(*lows, pred["G/H"], pred["r_inf"])
        hi = max(*highs, pred["G/H"], pred["r_inf"])
        pad = 0.08 * (hi - lo)
        axes[1, col].set_ylim(lo - pad, hi + pad)
        axes[0, col].set_ylim(min(lo - pad, 0.95 * pred["G/H"]), pred["design"] + 0.1)
        axes[0, col].set_title(
            f"{name}: p={tuple(res['p'])}, G={pred['G']:.3f}, H={pred['H']:.3f}", fontsize=9
        )
        axes[1, col].set_title("zoom", fontsize=8)
    axes[0, 0].legend(fontsize=6.5, loc="center right")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def cmd_chains(args) -> None:
    """(b): where chains started merged and split are after ``--sweeps`` sweeps."""
    master = np.random.SeedSequence(args.seed)
    print(
        f"(b) library Gibbs sweeps, {args.sweeps} sweeps per chain; per start: K at the end, "
        "fraction of the second half of the sweeps with K = 2, mean size of the second "
        "largest block / N over the second half"
    )
    for name in args.cases:
        case = CASES[name]
        pred = predictions(case, args.pred_points, np.random.default_rng(master.spawn(1)[0]))
        offsets = np.array([-0.15, -0.05, 0.05, 0.15, 0.5])
        grid = sorted({1.0, round(pred["design"], 3), *np.round(pred["r_inf"] + offsets, 3)})
        print(
            f"\n[{name}] r_inf={pred['r_inf']:.3f} design={pred['design']:.3f} "
            f"G/H={pred['G/H']:.3f}"
        )
        print(
            f"{'N':>6} {'r':>6} | {'merged: K_end':>13} {'P(K=2)':>6} {'2nd/N':>6} | "
            f"{'split: K_end':>12} {'P(K=2)':>6} {'2nd/N':>6} | {'s':>5}"
        )
        for n in args.sizes:
            rng = np.random.default_rng(master.spawn(1)[0])
            x, z = case.sample(n, rng)
            xc, prior = prior_for(x)
            for r in grid:
                t0 = time.perf_counter()
                out = []
                for start in (np.zeros(n, dtype=np.int64), z):
                    ks, second = run_chain(xc, prior, start, r, args.sweeps, rng.integers(2**31))
                    half = ks[args.sweeps // 2 :]
                    out.append(
                        (ks[-1], np.mean(half == 2), float(np.mean(second[args.sweeps // 2 :])))
                    )
                print(
                    f"{n:>6} {r:>6.3f} | {out[0][0]:>13} {out[0][1]:>6.2f} {out[0][2]:>6.3f} | "
                    f"{out[1][0]:>12} {out[1][1]:>6.2f} {out[1][2]:>6.3f} | "
                    f"{time.perf_counter() - t0:>5.1f}",
                    flush=True,
                )


@numba.njit(cache=True)
def _spurious_logsum(xc, m, r, log_alpha, kappa0, nu0, psi, const0, lg_a, lg_b, lg_n):
    """Log-sum over all blocks A of size m (1 or 2) of p({A, rest}) - p(one block)."""
    n = xc.shape[0]
    tot = _stats_from(xc, np.zeros(n, dtype=np.int64))
    full = log_alpha + r * lg_n[n] + _block_logm(tot, 0, kappa0, nu0, psi, const0, lg_a, lg_b)
    stats = np.zeros((2, 6))
    best = -np.inf
    acc = 0.0  # sum of exp(term - best)
    for i in range(n):
        js = i + 1 if m == 2 else i
        je = n if m == 2 else i + 1
        for j in range(js, je):
            stats[0, :] = tot[0, :]
            stats[1, :] = 0.0
            _move(stats, 0, xc[i], -1.0)
            _move(stats, 1, xc[i], 1.0)
            if m == 2:
                _move(stats, 0, xc[j], -1.0)
                _move(stats, 1, xc[j], 1.0)
            term = _log_p(stats, r, log_alpha, kappa0, nu0, psi, const0, lg_a, lg_b, lg_n) - full
            if term > best:
                acc = acc * math.exp(best - term) + 1.0
                best = term
            else:
                acc += math.exp(term - best)
    return best + math.log(acc)


def cmd_spurious(args) -> None:
    """Cost of a spurious block of size m in single-Gaussian data, by exact enumeration."""
    master = np.random.SeedSequence(args.seed)
    print(
        "Spurious block: cost = -log[ sum over blocks A of size m of p({A, rest}) / p(one block) ]"
        "\nin N points from one standard bivariate Gaussian (NIWPrior.from_data, alpha = 1),"
        "\nexact enumeration; 'slope' = change in cost per unit log N from the previous N"
    )
    print(
        f"{'m':>2} {'r':>4} {'N':>6} {'cost':>9} {'(r-1)m log(N/m)':>16} {'slope':>7} "
        f"{'(r-1)m':>7} {'prior part':>10}"
    )
    datasets = {}
    for n in args.sizes:
        rng = np.random.default_rng(master.spawn(1)[0])
        datasets[n] = rng.standard_normal((n, 2))
    for m in (1, 2):
        for r in args.powers:
            prev = None
            for n in args.sizes:
                xc, prior = prior_for(datasets[n])
                lg_a, lg_b, lg_n = _tables(n, prior.nu0)
                ls = _spurious_logsum(
                    xc,
                    m,
                    r,
                    math.log(ALPHA),
                    prior.kappa0,
                    prior.nu0,
                    prior.psi0,
                    _const0(prior),
                    lg_a,
                    lg_b,
                    lg_n,
                )
                cost = -ls
                # Prior mass alone: log[alpha C(N, m) Gamma(m)^r Gamma(N-m)^r / Gamma(N)^r].
                prior_part = -(
                    math.log(ALPHA)
                    + gammaln(n + 1)
                    - gammaln(m + 1)
                    - gammaln(n - m + 1)
                    + r * (gammaln(m) + gammaln(n - m) - gammaln(n))
                )
                slope = (
                    (cost - prev[1]) / math.log(n / prev[0]) if prev is not None else float("nan")
                )
                print(
                    f"{m:>2} {r:>4g} {n:>6} {cost:>9.2f} {(r - 1) * m * math.log(n / m):>16.2f} "
                    f"{slope:>7.3f} {(r - 1) * m:>7.2f} {prior_part:>10.2f}",
                    flush=True,
                )
                prev = (n, cost)


def main(argv=None) -> int:
    """Command-line entry point."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    th = sub.add_parser("threshold", help="(a) exact crossings and (c) posterior crossings")
    th.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    th.add_argument("--sizes", type=int, nargs="+", default=[500, 2000, 10000, 50000])
    th.add_argument("--reps", type=int, default=20, help="data sets per N for (a)")
    th.add_argument("--ti-reps", type=int, default=3, help="data sets per N for (c)")
    th.add_argument("--ti-max-n", type=int, default=10000, help="largest N for (c)")
    th.add_argument("--newton", type=int, default=3, help="Newton steps (TI runs) for (c)")
    th.add_argument("--verbose", action="store_true", help="print every Newton step of (c)")
    th.add_argument("--pred-points", type=int, default=200000)
    th.add_argument("--seed", type=int, default=1)
    th.add_argument("--out", default="docs/validation/theory_threshold.png", help="'' for none")
    th.add_argument("--save", default="", help="write the results as JSON here")
    pl = sub.add_parser("plot", help="merge saved threshold results into one table and figure")
    pl.add_argument("results", nargs="+", help="JSON files written by threshold --save")
    pl.add_argument("--out", default="docs/validation/theory_threshold.png")
    ch = sub.add_parser("chains", help="(b) chains from the merged and the split state")
    ch.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    ch.add_argument("--sizes", type=int, nargs="+", default=[500, 2000, 10000])
    ch.add_argument("--sweeps", type=int, default=400)
    ch.add_argument("--pred-points", type=int, default=200000)
    ch.add_argument("--seed", type=int, default=2)
    sp = sub.add_parser("spurious", help="cost of a spurious block of size m")
    sp.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 10000])
    sp.add_argument("--powers", type=float, nargs="+", default=[1.0, 1.5, 2.0])
    sp.add_argument("--seed", type=int, default=3)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    commands = {
        "threshold": cmd_threshold,
        "plot": cmd_plot,
        "chains": cmd_chains,
        "spurious": cmd_spurious,
    }
    commands[args.cmd](args)
    print(f"\ntotal {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
