"""Posterior predictive draws against the NIW Student-t predictive."""

import arviz as az
import numpy as np
import pymc as pm
import pytest
import scipy.stats

from reference import niw_posterior as reference_posterior

import pymc_pcrp as pcrp

SEED = sum(ord(c) for c in "test_predictive")


@pytest.mark.parametrize("learned", [False, True])
def test_replicates_follow_the_student_t_predictive(learned):
    # with a learned scale every draw replicates with its own s (here all at s = 5, far
    # from the base matrix, so using psi0 itself would fail the KS test)
    rng = np.random.default_rng(SEED)
    x = np.r_[rng.normal(size=10) - 5.0, rng.normal(size=12) * 2.0 + 5.0]
    labels = np.r_[np.zeros(10, dtype=int), np.ones(12, dtype=int)]
    grid = {"scale_grid": [0.2, 5.0]} if learned else {}
    prior = pcrp.NIWPrior(mu0=np.zeros(1), kappa0=0.5, nu0=3.0, psi0=np.eye(1), **grid)
    with pm.Model() as model:
        z = pcrp.PowerCRP("z", alpha=1.0, power=1.0, n=len(x))
        pcrp.NIWMixture("x", z=z, prior=prior, observed=x)
    idata = az.from_dict(
        posterior={"z": np.broadcast_to(labels, (2, 3000, len(x))).copy()},
        sample_stats={"niw_scale": np.full((2, 3000), 5.0)},
    )
    if learned:
        prior = prior.at_scale(5.0)
    pp = pcrp.sample_posterior_predictive(idata, model, random_seed=SEED)
    reps = pp.posterior_predictive["x"].values
    assert reps.shape == (2, 3000, len(x))
    for k, point in ((0, 0), (1, 15)):
        mu_n, kappa_n, nu_n, psi_n = reference_posterior(
            x[labels == k][:, None], prior.mu0, prior.kappa0, prior.nu0, prior.psi0
        )
        df = nu_n
        scale = np.sqrt(psi_n[0, 0] * (kappa_n + 1) / (kappa_n * df))
        sample = reps[:, :, point].ravel()
        pval = scipy.stats.kstest(sample, scipy.stats.t(df=df, loc=mu_n[0], scale=scale).cdf).pvalue
        assert pval > 1e-3


def test_same_seed_same_draws_and_extend():
    x = np.random.default_rng(0).normal(size=(6, 2))
    with pm.Model() as model:
        z = pcrp.PowerCRP("z", alpha=1.0, power=1.2, n=6)
        pcrp.NIWMixture("x", z=z, prior=pcrp.NIWPrior.from_data(x), observed=x)
    scale = pcrp.NIWPrior.from_data(x).scale_grid[50]
    idata = az.from_dict(
        posterior={"z": np.zeros((1, 4, 6), dtype=int)},
        sample_stats={
            "niw_scale": np.full((1, 4), scale),
            "niw_nu0": np.full((1, 4), pcrp.NIWPrior.from_data(x).nu0),
        },
    )
    a = pcrp.sample_posterior_predictive(idata, model, random_seed=3)
    b = pcrp.sample_posterior_predictive(idata, model, random_seed=3)
    np.testing.assert_array_equal(a.posterior_predictive["x"], b.posterior_predictive["x"])
    out = pcrp.sample_posterior_predictive(idata, model, random_seed=3, extend_inferencedata=True)
    assert out is idata and "posterior_predictive" in idata


def test_needs_an_niw_mixture():
    with pm.Model() as model:
        pcrp.PowerCRP("z", alpha=1.0, power=1.2, n=3)
    idata = az.from_dict(posterior={"z": np.zeros((1, 2, 3), dtype=int)})
    with pytest.raises(ValueError, match="no observed NIWMixture"):
        pcrp.sample_posterior_predictive(idata, model)
