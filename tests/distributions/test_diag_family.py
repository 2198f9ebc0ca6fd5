"""``NIWPrior(covariance="diag")`` and ``NIWMixture`` with the diagonal family, end to end.

The prior's defaults and checks, the model's log density against the NumPy
reference, the step's ``log_joint`` against the model's log density, forward
draws, replicated data, and the clear refusal of what does not support the
family yet.
"""

import logging

import numpy as np
import pymc as pm
import pytest

from scipy.special import gammaln

import pymc_pcrp as pcrp

from pymc_pcrp.distributions._diag_numpy import diag_scale_marginal_loglik
from pymc_pcrp.distributions.niw import DiagNIWMixtureRV
from pymc_pcrp.distributions.niw_prior import DEFAULT_SCALE_FRACTIONS


def _data(n=40, d=3, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d)) * np.arange(1, d + 1)
    x[: n // 2] += 3.0
    return x


def test_from_data_defaults_of_the_diagonal_family():
    x = _data()
    prior = pcrp.NIWPrior.from_data(x, covariance="diag")
    assert prior.is_diagonal and prior.covariance == "diag"
    assert prior.nu0 == 3.0  # a0 = 3 / 2
    np.testing.assert_allclose(np.diag(prior.psi0), x.var(axis=0, ddof=1))
    np.testing.assert_allclose(prior.scale_grid, 3.0 * DEFAULT_SCALE_FRACTIONS)
    fixed = pcrp.NIWPrior.from_data(x, covariance="diag", scale=0.2)
    # prior mean of each variance: b0 / (a0 - 1) = psi0_jj / (nu0 - 2) = 0.2 var(X_j)
    np.testing.assert_allclose(np.diag(fixed.psi0) / (fixed.nu0 - 2.0), 0.2 * x.var(0, ddof=1))
    assert fixed.at_scale(2.0).covariance == "diag"
    assert not pcrp.NIWPrior.from_data(x).is_diagonal


def test_diagonal_prior_checks():
    with pytest.raises(ValueError, match="diagonal"):
        pcrp.NIWPrior(
            mu0=np.zeros(2), kappa0=1.0, nu0=3.0, psi0=[[1.0, 0.2], [0.2, 1.0]], covariance="diag"
        )
    with pytest.raises(ValueError, match="covariance"):
        pcrp.NIWPrior(mu0=np.zeros(2), kappa0=1.0, nu0=3.0, psi0=np.eye(2), covariance="tied")
    with pytest.raises(ValueError, match="nu0"):
        pcrp.NIWPrior(mu0=np.zeros(2), kappa0=1.0, nu0=-1.0, psi0=np.eye(2), covariance="diag")
    # nu0 may be below D - 1 for the diagonal family (each dimension is 1-D)
    pcrp.NIWPrior(mu0=np.zeros(5), kappa0=1.0, nu0=1.0, psi0=np.eye(5), covariance="diag")


@pytest.mark.parametrize("scale", ["learn", 0.3])
def test_model_log_density_matches_the_numpy_reference(scale):
    x = _data()
    prior = pcrp.NIWPrior.from_data(x, covariance="diag", scale=scale)
    labels = np.random.default_rng(1).integers(0, 3, size=len(x))
    with pm.Model() as model:
        z = pcrp.PowerCRP("z", alpha=1.5, power=1.2, n=len(x))
        obs = pcrp.NIWMixture("x", z=z, prior=prior, observed=x)
    assert isinstance(obs.owner.op, DiagNIWMixtureRV)
    logp = model.compile_logp(vars=[obs])({"z": labels})
    grid, log_w = prior.grid_arrays()
    ref = diag_scale_marginal_loglik(x - prior.mu0, labels, prior.kappa0, prior.nu0, prior.psi0,
                                     grid, log_w)  # fmt: skip
    assert abs(logp - ref) < 1e-9 * abs(ref)


def test_sampling_log_joint_equals_the_model_log_density_and_ppc_works():
    logging.getLogger("pymc").setLevel(logging.ERROR)
    x = _data(30, 2, seed=3)
    prior = pcrp.NIWPrior.from_data(x, covariance="diag")
    with pm.Model() as model:
        z = pcrp.PowerCRP("z", alpha=1.0, power=1.0, n=len(x))
        pcrp.NIWMixture("x", z=z, prior=prior, observed=x)
        idata = pm.sample(
            draws=30, tune=10, chains=1, random_seed=4, progressbar=False,
            compute_convergence_checks=False,
        )  # fmt: skip
    logp = model.compile_logp()
    labels = idata.posterior["z"].values[0]
    stats = idata.sample_stats["log_joint"].values[0]
    alpha_terms = [
        np.unique(lab).size * np.log(1.0) + np.sum(gammaln(np.bincount(lab)[np.bincount(lab) > 0]))
        for lab in labels[-3:]
    ]
    for lab, value, prior_part in zip(labels[-3:], stats[-3:], alpha_terms, strict=True):
        assert abs(logp({"z": lab}) - value) < 1e-9 * abs(value)
        assert np.isfinite(prior_part)
    assert np.all(idata.sample_stats["niw_scale"].values > 0)
    np.testing.assert_allclose(idata.sample_stats["niw_nu0"].values, prior.nu0)  # fixed here
    pp = pcrp.sample_posterior_predictive(idata, model, random_seed=0)
    reps = pp.posterior_predictive["x"].values
    assert reps.shape == (1, 30, 30, 2) and np.all(np.isfinite(reps))
    with pytest.raises(NotImplementedError, match="diag"):
        pcrp.predict(idata, x[:3], prior=prior, power=1.0, alpha=1.0)
    with pytest.raises(NotImplementedError, match="diag"):
        pcrp.posterior.log_likelihood(idata, model=model)


def test_forward_draws_have_diagonal_clusters():
    prior = pcrp.NIWPrior(
        mu0=np.zeros(3), kappa0=0.05, nu0=40.0, psi0=np.diag([40.0, 4.0, 0.4]), covariance="diag"
    )
    z = np.zeros(4000, dtype=np.int64)
    draw = pm.draw(pcrp.NIWMixture.dist(z=z, prior=prior), random_seed=2)
    assert draw.shape == (4000, 3)
    cov = np.cov(draw.T)
    # variances near psi0_jj / (nu0 - 2), correlations near zero
    np.testing.assert_allclose(np.diag(cov), [40 / 38, 4 / 38, 0.4 / 38], rtol=0.5)
    corr = cov / np.sqrt(np.outer(np.diag(cov), np.diag(cov)))
    assert np.all(np.abs(corr[np.triu_indices(3, 1)]) < 0.1)


def test_stored_prior_keeps_its_covariance_family():
    import arviz as az

    from pymc_pcrp._idata import (
        resolve_model_parameters,
        store_model_parameters,
        stored_model_parameters,
    )
    from pymc_pcrp.distributions._niw_numpy import check_prior

    x = _data()
    idata = az.from_dict(posterior={"z": np.zeros((1, 2, len(x)), dtype=np.int64)})
    prior = pcrp.NIWPrior.from_data(x, covariance="diag")
    store_model_parameters(idata, power=1.2, alpha=1.0, prior=prior)
    assert stored_model_parameters(idata)["prior"].covariance == "diag"
    # a diagonal fit read back is refused by the full family's predictive, not misread
    stored = resolve_model_parameters(idata, None, None, None)[2]
    with pytest.raises(NotImplementedError, match="diag"):
        check_prior(stored, x, 3)
    with pytest.raises(ValueError, match="covariance"):
        resolve_model_parameters(idata, None, None, pcrp.NIWPrior.from_data(x))
    full = az.from_dict(posterior={"z": np.zeros((1, 2, len(x)), dtype=np.int64)})
    store_model_parameters(full, power=1.2, alpha=1.0, prior=pcrp.NIWPrior.from_data(x))
    assert stored_model_parameters(full)["prior"].covariance == "full"


def test_build_model_and_fit_select_the_family_by_name():
    x = _data()
    model = pcrp.build_model(x, covariance="diag")
    assert isinstance(model["x"].owner.op, DiagNIWMixtureRV)
    assert not isinstance(pcrp.build_model(x)["x"].owner.op, DiagNIWMixtureRV)
    with pytest.raises(ValueError, match="covariance"):
        pcrp.build_model(x, prior=pcrp.NIWPrior.from_data(x), covariance="diag")
