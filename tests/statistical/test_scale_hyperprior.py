"""The learned NIW scale through ``pm.sample`` against exact enumeration of (z, s).

With ``Psi_0 = s P`` and ``s`` on a grid, the exact posterior of the partition is
``p(z | X) ∝ alpha^K prod Gamma(n_k)^r sum_g w_g prod_k m(X_k | s_g P)`` and that of
``s`` is the sum over partitions of the joint (``tests/enumeration.py``,
``exact_posterior_scaled``, block marginals computed from scratch). The sampler's
partition frequencies and the frequencies of its ``niw_scale`` stat must both be
within total variation 0.02 of them, as in test_exact_enumeration.py. The default
prior of ``NIWPrior.from_data`` (91 grid values) is used for one case, with ``nu0``
fixed at ``D + 2`` (the learned ``nu0`` has its own test, test_nu0_hyperprior.py), a
coarse grid with unequal weights for the others.
"""

import numpy as np
import pytest

from enumeration import exact_posterior_scaled, sample_niw_model, two_groups

import pymc_pcrp as pcrp

DRAWS = 40_000
CHAINS = 4


def _coarse_prior(d):
    grid = np.array([0.01, 0.05, 0.2, 0.5, 1.0, 2.0, 5.0, 20.0])
    log_w = np.log(np.array([1.0, 1.0, 2.0, 1.0, 3.0, 1.0, 1.0, 2.0]))
    return pcrp.NIWPrior(
        mu0=np.zeros(d),
        kappa0=0.5,
        nu0=d + 1.0,
        psi0=0.5 * np.eye(d),
        scale_grid=grid,
        scale_log_weights=log_w,
    )


def _sample(x, prior, alpha, r, seed, split_merge=0):
    idata = sample_niw_model(x, prior, alpha, r, seed, split_merge, DRAWS, CHAINS)
    labels = idata.posterior["z"].values.reshape(-1, len(x))
    scales = idata.sample_stats["niw_scale"].values.reshape(-1)
    return labels, scales


@pytest.mark.parametrize(
    ("n", "d", "alpha", "r", "default_prior", "split_merge"),
    [
        (5, 1, 1.0, 1.0, True, 0),
        (6, 1, 0.5, 1.5, False, 0),
        (5, 2, 2.0, 2.0, False, 0),
        (6, 2, 1.0, 1.0, False, 3),
    ],
)
def test_partition_and_scale_frequencies_match_exact_posterior(
    n, d, alpha, r, default_prior, split_merge
):
    seed = 31 + 1000 * n + 100 * d + int(10 * r)
    x = two_groups(n, d, seed)
    prior = pcrp.NIWPrior.from_data(x, nu0=d + 2.0) if default_prior else _coarse_prior(d)
    grid, log_w = prior.grid_arrays()
    partitions, pz, ps = exact_posterior_scaled(
        x, alpha, r, prior.mu0, prior.kappa0, prior.nu0, prior.psi0, grid, log_w
    )
    labels, scales = _sample(x, prior, alpha, r, seed, split_merge)
    keys, counts = np.unique(labels, axis=0, return_counts=True)
    freq = {
        tuple(int(v) for v in k): c / labels.shape[0] for k, c in zip(keys, counts, strict=True)
    }
    assert set(freq) <= set(partitions), "the sampler produced a non-canonical label vector"
    tv_z = 0.5 * np.abs(np.array([freq.get(p, 0.0) for p in partitions]) - pz).sum()
    index = np.abs(np.log(scales)[:, None] - np.log(grid)[None, :]).argmin(axis=1)
    np.testing.assert_allclose(grid[index], scales, rtol=1e-12)  # every draw is a grid value
    s_freq = np.bincount(index, minlength=grid.size) / scales.size
    tv_s = 0.5 * np.abs(s_freq - ps).sum()
    print(f"n={n} d={d} alpha={alpha} r={r} sm={split_merge}: TV(z) {tv_z:.4f}, TV(s) {tv_s:.4f}")
    assert tv_z < 0.02, f"total variation {tv_z:.4f} between sampled and exact p(z | X)"
    assert tv_s < 0.02, f"total variation {tv_s:.4f} between sampled and exact p(s | X)"
