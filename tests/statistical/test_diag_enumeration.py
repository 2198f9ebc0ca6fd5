"""The diagonal-covariance family through ``pm.sample`` against the exact posterior.

``NIWPrior(..., covariance="diag")``: for N = 5 and 6 points in D = 2 the exact
posterior over all partitions (52 and 203) is computed by brute force, each
cluster's marginal being the product over dimensions of one-dimensional NIW
marginals from tests/reference.py (an independent route: the sampler's kernels
and ``pymc_pcrp.distributions._diag_numpy`` are not used). Four chains of 40,000 draws of
the step's default move set (sweeps and SAMS split-merge proposals at the
default rate) must come within total variation 0.02 of it, with a fixed scale
and with a learned one (where the sampled scale's distribution is also
compared with its exact marginal posterior over the grid).
"""

import numpy as np
import pymc as pm
import pytest

from enumeration import ENUMERATION_SWEEPS_PER_DRAW, log_pcrp_prior_unnorm, set_partitions
from reference import niw_log_marginal
from scipy.special import logsumexp

import pymc_pcrp as pcrp

DRAWS = 40_000
CHAINS = 4
GRID = np.array([0.2, 1.0, 5.0])
LOG_W = np.log(np.array([0.3, 0.4, 0.3]))


def _data(n, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 2)) * np.array([1.0, 0.5])
    x[: n // 2, 0] += 2.5
    return x


def exact_diag_posterior(x, alpha, r, prior):
    """Exact ``p(z | X)`` and ``p(s | X)`` of the diagonal family, by enumeration."""
    grid, log_w = prior.grid_arrays()
    parts, rows = [], []
    for z in set_partitions(x.shape[0]):
        row = np.asarray(log_w, dtype=float) + log_pcrp_prior_unnorm(z, alpha, r)
        for g, s in enumerate(grid):
            for k in range(z.max() + 1):
                block = x[z == k]
                for j in range(x.shape[1]):
                    row[g] += niw_log_marginal(
                        block[:, j],
                        prior.mu0[j : j + 1],
                        prior.kappa0,
                        prior.nu0,
                        [[s * prior.psi0[j, j]]],
                    )
        parts.append(tuple(int(v) for v in z))
        rows.append(row)
    rows = np.array(rows)
    total = logsumexp(rows)
    return parts, np.exp(logsumexp(rows, axis=1) - total), np.exp(logsumexp(rows, axis=0) - total)


def _sample(x, prior, alpha, r, seed):
    with pm.Model():
        z = pcrp.PowerCRP("z", alpha=alpha, power=r, n=len(x))
        pcrp.NIWMixture("x", z=z, prior=prior, observed=x)
        return pm.sample(
            draws=DRAWS,
            tune=100,
            chains=CHAINS,
            cores=1,
            random_seed=seed,
            progressbar=False,
            compute_convergence_checks=False,
            pcrp_gibbs={"sweeps_per_draw": ENUMERATION_SWEEPS_PER_DRAW},
        )


@pytest.mark.parametrize(
    ("n", "alpha", "r", "learned"),
    [(5, 1.0, 1.0, False), (6, 0.5, 1.5, False), (5, 2.0, 2.0, True), (6, 1.0, 1.3, True)],
)
def test_diag_family_matches_exact_posterior(n, alpha, r, learned):
    seed = 100 * n + int(10 * r) + (7 if learned else 0)
    x = _data(n, seed)
    grid = {"scale_grid": GRID, "scale_log_weights": LOG_W} if learned else {}
    prior = pcrp.NIWPrior(
        mu0=x.mean(axis=0),
        kappa0=0.5,
        nu0=3.0,
        psi0=np.diag([0.8, 0.3]),
        covariance="diag",
        **grid,
    )
    parts, probs, probs_s = exact_diag_posterior(x, alpha, r, prior)
    idata = _sample(x, prior, alpha, r, seed)
    labels = idata.posterior["z"].values.reshape(-1, n)
    keys, counts = np.unique(labels, axis=0, return_counts=True)
    freq = {
        tuple(int(v) for v in k): c / labels.shape[0] for k, c in zip(keys, counts, strict=True)
    }
    assert set(freq) <= set(parts), "the sampler produced a non-canonical label vector"
    tv = 0.5 * np.abs(np.array([freq.get(p, 0.0) for p in parts]) - probs).sum()
    assert tv < 0.02, f"total variation {tv:.4f} between sampler and exact posterior"
    if learned:
        s = idata.sample_stats["niw_scale"].values.ravel()
        freq_s = np.array([np.mean(np.isclose(s, g)) for g in GRID])
        tv_s = 0.5 * np.abs(freq_s - probs_s).sum()
        assert tv_s < 0.02, f"total variation {tv_s:.4f} of the scale's marginal"
