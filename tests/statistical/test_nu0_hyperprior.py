"""A learned ``nu0`` (and scale) through ``pm.sample`` against exact enumeration of (z, s, nu0).

With ``Psi_0 = s P``, ``s`` on a grid and ``nu0`` on a grid (independent
priors), the exact posterior of the partition is ``p(z | X) ∝ alpha^K prod
Gamma(n_k)^r sum_{g,h} w_g v_h prod_k m(X_k | s_g P, nu_h)``; those of ``s`` and
of ``nu0`` are sums of the joint over partitions (``tests/enumeration.py``,
``exact_posterior_hyper``, block marginals from scratch). The frequencies of
the sampler's partitions and of its ``niw_scale`` and ``niw_nu0`` stats must
each be within total variation 0.02 of them, as in test_scale_hyperprior.py.
"""

import numpy as np
import pytest

from enumeration import exact_posterior_hyper, sample_niw_model, two_groups

import pymc_pcrp as pcrp

DRAWS = 40_000
CHAINS = 4


def _prior(d):
    nu0s = d - 1.0 + np.array([0.3, 1.0, 3.0, 12.0])
    return pcrp.NIWPrior(
        mu0=np.zeros(d),
        kappa0=0.5,
        nu0=float(nu0s[1]),
        psi0=0.5 * np.eye(d),
        scale_grid=np.array([0.01, 0.1, 0.5, 1.0, 3.0, 20.0]),
        scale_log_weights=np.log(np.array([1.0, 2.0, 1.0, 3.0, 1.0, 2.0])),
        nu0_grid=nu0s,
        nu0_log_weights=np.log(np.array([1.0, 3.0, 1.0, 2.0])),
    )


def _frequencies(values, grid):
    index = np.abs(values[:, None] - grid[None, :]).argmin(axis=1)
    np.testing.assert_allclose(grid[index], values, rtol=1e-12)  # every draw is a grid value
    return np.bincount(index, minlength=grid.size) / values.size


@pytest.mark.parametrize(
    ("n", "d", "alpha", "r", "split_merge"),
    [(5, 1, 1.0, 1.0, 0), (6, 2, 0.5, 1.5, 0), (6, 2, 1.0, 1.0, 3)],
)
def test_partition_scale_and_nu0_frequencies_match_exact_posterior(n, d, alpha, r, split_merge):
    seed = 57 + 1000 * n + 100 * d + int(10 * r) + split_merge
    x = two_groups(n, d, seed)
    prior = _prior(d)
    grid, log_w = prior.grid_arrays()
    nu0s, nu_log_w = prior.nu0_arrays()
    partitions, pz, ps, pnu = exact_posterior_hyper(
        x, alpha, r, prior.mu0, prior.kappa0, prior.psi0, grid, log_w, nu0s, nu_log_w
    )
    idata = sample_niw_model(x, prior, alpha, r, seed, split_merge, DRAWS, CHAINS)
    labels = idata.posterior["z"].values.reshape(-1, len(x))
    keys, counts = np.unique(labels, axis=0, return_counts=True)
    freq = {tuple(int(v) for v in k): c / len(labels) for k, c in zip(keys, counts, strict=True)}
    assert set(freq) <= set(partitions), "the sampler produced a non-canonical label vector"
    tv_z = 0.5 * np.abs(np.array([freq.get(p, 0.0) for p in partitions]) - pz).sum()
    stats = idata.sample_stats
    tv_s = 0.5 * np.abs(_frequencies(stats["niw_scale"].values.ravel(), grid) - ps).sum()
    tv_nu = 0.5 * np.abs(_frequencies(stats["niw_nu0"].values.ravel(), nu0s) - pnu).sum()
    print(f"n={n} d={d} r={r} sm={split_merge}: TV z {tv_z:.4f}, s {tv_s:.4f}, nu0 {tv_nu:.4f}")
    assert tv_z < 0.02, f"total variation {tv_z:.4f} between sampled and exact p(z | X)"
    assert tv_s < 0.02, f"total variation {tv_s:.4f} between sampled and exact p(s | X)"
    assert tv_nu < 0.02, f"total variation {tv_nu:.4f} between sampled and exact p(nu0 | X)"
