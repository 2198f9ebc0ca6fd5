"""Brute-force enumeration of set partitions, for exact checks on tiny problems."""

import numpy as np
import pymc as pm
import scipy.special

from reference import niw_log_marginal

import pymc_pcrp as pcrp

#: Gibbs sweeps per kept draw in the tests that compare ``pm.sample`` with exact
#: enumeration. They check that the move set leaves the posterior invariant, which
#: does not depend on the thinning; the automatic rule would thin tiny data by 30
#: sweeps, three times the sweeps these tests were sized for at 10 (the rule's value
#: on tiny data until the digits needed more, 2026-11-26).
ENUMERATION_SWEEPS_PER_DRAW = 10


def set_partitions(n):
    """Yield every set partition of range(n) as a canonical int64 label array.

    Canonical means blocks are numbered 0, 1, ... in order of first appearance
    (restricted growth strings); there are Bell(n) of them.
    """
    labels = np.zeros(n, dtype=np.int64)

    def extend(i, n_blocks):
        if i == n:
            yield labels.copy()
            return
        for k in range(n_blocks + 1):
            labels[i] = k
            yield from extend(i + 1, max(n_blocks, k + 1))

    yield from extend(0, 0)


def log_pcrp_prior_unnorm(labels, alpha, r):
    """K log(alpha) + r sum_k log Gamma(n_k) for a label vector."""
    sizes = np.bincount(np.asarray(labels, dtype=np.int64))
    sizes = sizes[sizes > 0]
    return float(len(sizes) * np.log(alpha) + r * np.sum(scipy.special.gammaln(sizes)))


def exact_posterior(X, alpha, r, mu0, kappa0, nu0, psi0):
    """Exact pCRP-NIW posterior over all partitions of the rows of X.

    Returns (partitions, probs): a list of canonical label tuples and their
    normalised posterior probabilities, p(z | X) proportional to
    alpha^K prod Gamma(n_k)^r prod_k m(X_k).
    """
    X = np.asarray(X, dtype=float)
    if X.ndim == 1:
        X = X[:, None]
    partitions = []
    log_p = []
    for z in set_partitions(len(X)):
        value = log_pcrp_prior_unnorm(z, alpha, r)
        for k in range(z.max() + 1 if len(z) else 0):
            value += niw_log_marginal(X[z == k], mu0, kappa0, nu0, psi0)
        partitions.append(tuple(int(v) for v in z))
        log_p.append(value)
    log_p = np.array(log_p)
    log_p -= scipy.special.logsumexp(log_p)
    probs = np.exp(log_p)
    assert abs(scipy.special.logsumexp(log_p)) < 1e-12
    return partitions, probs


def exact_posterior_scaled(X, alpha, r, mu0, kappa0, nu0, base, grid, log_weights):
    """Exact posterior of (z, s) with Psi_0 = s * base and s on a grid with log weights.

    Returns (partitions, probs_z, probs_s): the marginal posterior of the partition,
    p(z | X) ∝ alpha^K prod Gamma(n_k)^r sum_g w_g prod_k m(X_k | s_g base), and the
    marginal posterior of s over the grid. Each block's marginal is computed from
    scratch with niw_log_marginal (no eigenvalue shortcut).
    """
    X = np.asarray(X, dtype=float)
    if X.ndim == 1:
        X = X[:, None]
    grid = np.asarray(grid, dtype=float)
    log_weights = np.asarray(log_weights, dtype=float)
    partitions = []
    log_joint = []  # (partitions, G)
    for z in set_partitions(len(X)):
        row = log_weights + log_pcrp_prior_unnorm(z, alpha, r)
        for g, s in enumerate(grid):
            for k in range(z.max() + 1):
                row[g] += niw_log_marginal(X[z == k], mu0, kappa0, nu0, s * np.asarray(base))
        partitions.append(tuple(int(v) for v in z))
        log_joint.append(row)
    log_joint = np.array(log_joint)
    log_joint -= scipy.special.logsumexp(log_joint)
    joint = np.exp(log_joint)
    return partitions, joint.sum(axis=1), joint.sum(axis=0)


def exact_posterior_hyper(X, alpha, r, mu0, kappa0, base, grid, log_weights, nu0s, nu_log_weights):
    """Exact posterior of (z, s, nu0) with Psi_0 = s * base, s and nu0 on grids.

    Returns (partitions, probs_z, probs_s, probs_nu0): the marginal posteriors of
    the partition, of s over its grid and of nu0 over its grid, from
    p(z, s_g, nu_h | X) ∝ alpha^K prod Gamma(n_k)^r w_g v_h prod_k m(X_k | s_g base, nu_h),
    each block's marginal computed from scratch with niw_log_marginal.
    """
    X = np.asarray(X, dtype=float)
    if X.ndim == 1:
        X = X[:, None]
    grid = np.asarray(grid, dtype=float)
    nu0s = np.asarray(nu0s, dtype=float)
    prior = np.asarray(log_weights, dtype=float)[:, None] + np.asarray(nu_log_weights)[None, :]
    partitions = []
    log_joint = []  # (partitions, G, H)
    for z in set_partitions(len(X)):
        table = prior + log_pcrp_prior_unnorm(z, alpha, r)
        for g, s in enumerate(grid):
            for h, nu0 in enumerate(nu0s):
                for k in range(z.max() + 1):
                    table[g, h] += niw_log_marginal(X[z == k], mu0, kappa0, nu0, s * base)
        partitions.append(tuple(int(v) for v in z))
        log_joint.append(table)
    log_joint = np.array(log_joint)
    joint = np.exp(log_joint - scipy.special.logsumexp(log_joint))
    return partitions, joint.sum(axis=(1, 2)), joint.sum(axis=(0, 2)), joint.sum(axis=(0, 1))


def two_groups(n, d, seed):
    """``n`` standard normal points in ``d`` dimensions, the first half shifted by 2.5."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    x[: n // 2] += 2.5
    return x[:, 0] if d == 1 else x


def sample_niw_model(x, prior, alpha, r, seed, split_merge=0, draws=40_000, chains=4):
    """``pm.sample`` of ``PowerCRP`` labels of ``x`` under an ``NIWMixture`` with ``prior``.

    Thinned by :data:`ENUMERATION_SWEEPS_PER_DRAW`; returns the InferenceData.
    """
    with pm.Model():
        z = pcrp.PowerCRP("z", alpha=alpha, power=r, n=len(x))
        pcrp.NIWMixture("x", z=z, prior=prior, observed=x)
        return pm.sample(
            draws=draws,
            tune=100,
            chains=chains,
            cores=1,
            random_seed=seed,
            progressbar=False,
            compute_convergence_checks=False,
            pcrp_gibbs={"split_merge": split_merge, "sweeps_per_draw": ENUMERATION_SWEEPS_PER_DRAW},
        )
