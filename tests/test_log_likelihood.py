"""The pointwise log-likelihood behind az.loo / az.waic / az.compare (pymc_pcrp.posterior)."""

import warnings

import arviz as az
import numpy as np
import pandas as pd
import pymc as pm
import pytest
import scipy.special

from enumeration import log_pcrp_prior_unnorm, set_partitions
from reference import niw_log_marginal, niw_log_predictive

import pymc_pcrp as pcrp

from pymc_pcrp.distributions._niw_numpy import PartitionPredictor, prediction_weights
from pymc_pcrp.posterior import log_likelihood, pointwise_log_likelihood

SEED = sum(ord(c) for c in "test_log_likelihood")
QUIET = {"progressbar": False, "compute_convergence_checks": False}


def _two_blobs(n, seed=SEED, gap=4.0):
    rng = np.random.default_rng(seed)
    return np.r_[rng.normal(size=(n // 2, 2)), rng.normal(size=(n - n // 2, 2)) + gap]


def _direct(x, labels, prior, alpha, power, scale):
    """Leave x_i out, then mix the other clusters' Student-t predictives by the pCRP rule."""
    n = len(x)
    psi = scale * prior.psi0
    out = np.empty(n)
    for i in range(n):
        others = np.delete(np.arange(n), i)
        terms, norm = [], alpha
        for k in np.unique(labels[others]):
            members = others[labels[others] == k]
            terms.append(
                power * np.log(len(members))
                + niw_log_predictive(x[i], x[members], prior.mu0, prior.kappa0, prior.nu0, psi)
            )
            norm += len(members) ** power
        empty = x[:0]
        terms.append(
            np.log(alpha) + niw_log_predictive(x[i], empty, prior.mu0, prior.kappa0, prior.nu0, psi)
        )
        out[i] = scipy.special.logsumexp(terms) - np.log(norm)
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_pointwise_term_equals_the_leave_one_out_prediction_rule(seed):
    rng = np.random.default_rng(seed)
    x = _two_blobs(14, seed=seed)
    prior = pcrp.NIWPrior.from_data(x)
    n_draws = 5
    labels = rng.integers(0, 4, size=(n_draws, 14)) * 3  # labels need not be 0..K-1
    labels[0, 0] = 99  # a point alone in its cluster
    labels[1] = 0  # one cluster
    labels[2] = np.arange(14)  # all singletons
    alpha = rng.uniform(0.2, 3.0, n_draws)
    power = rng.uniform(0.8, 2.0, n_draws)
    # includes the smallest grid value: tight clusters, large Mahalanobis distances
    scales = prior.scale_grid[[0, 10, 45, 70, 90]]
    got = pointwise_log_likelihood(
        x, labels, prior, alpha=alpha, power=power, scales=scales, nu0s=prior.nu0
    )
    for s in range(n_draws):
        want = _direct(x, labels[s], prior, alpha[s], power[s], scales[s])
        np.testing.assert_allclose(got[s], want, rtol=1e-10, atol=1e-10)


def test_pointwise_term_of_a_fixed_scale_prior_and_1d_data():
    rng = np.random.default_rng(SEED)
    x = np.r_[rng.normal(size=7), rng.normal(size=6) + 5.0]
    prior = pcrp.NIWPrior.from_data(x, scale=0.2)
    labels = rng.integers(0, 3, size=(2, 13))
    got = pointwise_log_likelihood(x, labels, prior, alpha=0.5, power=1.3)
    for s in range(2):
        want = _direct(x[:, None], labels[s], prior, 0.5, 1.3, 1.0)
        np.testing.assert_allclose(got[s], want, rtol=1e-10)


def test_pointwise_term_is_the_mixture_of_the_package_prediction_rule():
    """Same quantity through PartitionPredictor (the code behind predict) on x_-i."""
    rng = np.random.default_rng(SEED + 1)
    x = _two_blobs(10)
    prior = pcrp.NIWPrior.from_data(x)
    z = rng.integers(0, 3, size=10)
    s = prior.scale_grid[50]
    got = pointwise_log_likelihood(x, z, prior, alpha=1.5, power=1.2, scales=[s], nu0s=prior.nu0)[0]
    for i in range(10):
        keep = np.delete(np.arange(10), i)
        pred = PartitionPredictor(x[keep], prior)(z[keep], s)
        w = prediction_weights(pred.sizes, 1.2, 1.5)
        want = scipy.special.logsumexp(np.log(w) + pred.logpdf(x[i : i + 1])[:, 0])
        assert got[i] == pytest.approx(want, rel=1e-10)


def _exact_loo_by_enumeration(x, alpha, r, prior):
    """log p(x_i | x_-i) of the N-point model and the PSIS identity with the exact posterior."""
    n = len(x)
    grid, log_w = prior.scale_grid, prior.scale_log_weights
    partitions = list(set_partitions(n))
    log_joint = np.empty((len(partitions), grid.size))  # log p(z, s, X), unnormalised
    log_without = np.empty((n, len(partitions), grid.size))  # x_i integrated out
    for p, z in enumerate(partitions):
        for g, s in enumerate(grid):
            psi = s * prior.psi0
            base = log_pcrp_prior_unnorm(z, alpha, r) + log_w[g]
            blocks = [np.flatnonzero(z == k) for k in range(z.max() + 1)]
            full = [niw_log_marginal(x[b], prior.mu0, prior.kappa0, prior.nu0, psi) for b in blocks]
            log_joint[p, g] = base + sum(full)
            for i in range(n):
                own = z[i]
                rest = blocks[own][blocks[own] != i]
                drop = niw_log_marginal(x[rest], prior.mu0, prior.kappa0, prior.nu0, psi)
                log_without[i, p, g] = base + sum(full) - full[own] + drop
    exact = scipy.special.logsumexp(log_joint) - scipy.special.logsumexp(
        log_without.reshape(n, -1), axis=1
    )
    # The identity p(x_i | x_-i) = 1 / E_post[1 / p(x_i | x_-i, z_-i, s)], over the exact posterior.
    post = log_joint - scipy.special.logsumexp(log_joint)
    labels = np.repeat(np.array(partitions), grid.size, axis=0)
    scales = np.tile(grid, len(partitions))
    ell = pointwise_log_likelihood(
        x, labels, prior, alpha=alpha, power=r, scales=scales, nu0s=prior.nu0
    )
    identity = -scipy.special.logsumexp(post.reshape(-1)[:, None] - ell, axis=0)
    return exact, identity


@pytest.mark.parametrize(("alpha", "r"), [(1.0, 1.0), (0.7, 1.6), (2.0, 0.8)])
def test_importance_identity_gives_exact_leave_one_out_density(alpha, r):
    """With exact posterior weights, the PSIS identity on ell is exactly log p(x_i | x_-i)."""
    rng = np.random.default_rng(SEED)
    x = np.r_[rng.normal(size=(3, 2)), rng.normal(size=(3, 2)) + 3.0]
    base = pcrp.NIWPrior.from_data(x)
    prior = pcrp.NIWPrior(
        mu0=base.mu0,
        kappa0=base.kappa0,
        nu0=base.nu0,
        psi0=base.psi0,
        scale_grid=base.scale_grid[[20, 50, 80]],
        scale_log_weights=np.log([0.2, 0.5, 0.3]),
    )
    exact, identity = _exact_loo_by_enumeration(x, alpha, r, prior)
    np.testing.assert_allclose(identity, exact, rtol=0, atol=1e-10)


def test_fit_idata_kwargs_log_likelihood_gives_one_term_per_point():
    x = _two_blobs(24)
    index = pd.Index([f"p{i}" for i in range(24)], name="sample")
    frame = pd.DataFrame(x, index=index, columns=["a", "b"])
    idata = pcrp.fit(
        frame,
        power=1.2,
        draws=150,
        tune=50,
        chains=2,
        random_seed=SEED,
        idata_kwargs={"log_likelihood": True},
        **QUIET,
    )
    group = idata.log_likelihood["x"]
    assert group.dims == ("chain", "draw", "obs_id")
    assert group.shape == (2, 150, 24)
    assert list(group.coords["obs_id"].values) == list(index)
    direct = log_likelihood(idata, extend_inferencedata=False)["x"]
    np.testing.assert_array_equal(group.values, direct.values)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # Pareto k warnings on a short run
        loo = az.loo(idata)
        waic = az.waic(idata)
    assert loo.n_data_points == 24
    assert np.isfinite(loo.elpd_loo) and np.isfinite(waic.elpd_waic)


def _random_alpha_model(x, power=1.3):
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 2.0, 1.0)
        z = pcrp.PowerCRP("z", alpha=alpha, power=power, n=len(x))
        pcrp.NIWMixture("x", z=z, prior=pcrp.NIWPrior.from_data(x), observed=x)
    return model


def test_pm_sample_and_compute_log_likelihood_use_each_draws_alpha():
    x = _two_blobs(16)
    model = _random_alpha_model(x)
    with model:
        idata = pm.sample(
            draws=60,
            tune=30,
            chains=2,
            random_seed=SEED,
            idata_kwargs={"log_likelihood": True},
            **QUIET,
        )
    assert idata.log_likelihood["x"].shape == (2, 60, 16)
    want = log_likelihood(idata, alpha="alpha", power=1.3, extend_inferencedata=False)["x"]
    np.testing.assert_array_equal(idata.log_likelihood["x"].values, want.values)
    assert np.unique(idata.posterior["alpha"].values).size > 1  # alpha did vary
    # and the term does use it: a fixed alpha gives other values
    bare = idata.copy()  # without the record, whose alpha is random
    del bare.constant_data
    fixed = log_likelihood(
        bare, alpha=1.0, power=1.3, prior=pcrp.NIWPrior.from_data(x), extend_inferencedata=False
    )["x"]
    assert not np.allclose(fixed.values, want.values)

    del idata.log_likelihood
    with model:
        pm.compute_log_likelihood(idata, progressbar=False)
    np.testing.assert_array_equal(idata.log_likelihood["x"].values, want.values)
    dataset = pm.compute_log_likelihood(
        idata, model=model, extend_inferencedata=False, progressbar=False
    )
    np.testing.assert_array_equal(dataset["x"].values, want.values)


def test_other_observed_variables_are_left_to_pymc():
    x = _two_blobs(12)
    y = np.random.default_rng(SEED).normal(size=5)
    with pm.Model() as model:
        z = pcrp.PowerCRP("z", alpha=1.0, power=1.1, n=len(x))
        pcrp.NIWMixture("x", z=z, prior=pcrp.NIWPrior.from_data(x), observed=x)
        mu = pm.Normal("mu")
        pm.Normal("y", mu, 1.0, observed=y)
        idata = pm.sample(draws=40, tune=20, chains=1, random_seed=SEED, **QUIET)
        pm.compute_log_likelihood(idata, progressbar=False)
    assert idata.log_likelihood["x"].shape == (1, 40, 12)
    mu_draws = idata.posterior["mu"].values
    want_y = -0.5 * np.log(2 * np.pi) - 0.5 * (y - mu_draws[..., None]) ** 2
    np.testing.assert_allclose(idata.log_likelihood["y"].values, want_y, rtol=1e-10)
    with model:
        only_y = pm.compute_log_likelihood(
            idata, var_names=["y"], extend_inferencedata=False, progressbar=False
        )
    assert list(only_y.data_vars) == ["y"]


def test_pm_compute_log_likelihood_refuses_instead_of_storing_a_total():
    """Without the draws' NIW scale there is no pointwise term: a clear error, no total."""
    x = _two_blobs(12)
    model = _random_alpha_model(x)
    with model:
        idata = pm.sample(draws=20, tune=10, chains=1, random_seed=SEED, **QUIET)
    del idata.sample_stats
    with model, pytest.raises(ValueError, match=r"pymc_pcrp\.posterior\.log_likelihood"):
        pm.compute_log_likelihood(idata, progressbar=False)
    assert "log_likelihood" not in idata.groups()


def test_argument_errors():
    x = _two_blobs(12)
    model = _random_alpha_model(x)
    with model:
        idata = pm.sample(draws=10, tune=5, chains=1, random_seed=SEED, **QUIET)
    with pytest.raises(ValueError, match=r"'beta' of idata.posterior, which holds no such"):
        log_likelihood(idata, alpha="beta", power=1.3)
    with pytest.raises(ValueError, match=r"'power' = 1.1 conflicts with the power = 1.3"):
        log_likelihood(idata, power=1.1)
    with pytest.raises(ValueError, match="'alpha' = 1 conflicts with the record: the posterior"):
        log_likelihood(idata, alpha=1.0)
    with pytest.raises(TypeError, match="'alpha' is the PyMC variable 'alpha', not a number"):
        log_likelihood(idata, alpha=model["alpha"])
    bare = idata.copy()
    del bare.constant_data
    with pytest.raises(ValueError, match=r"Argument\(s\) 'power', 'prior' required"):
        log_likelihood(bare, alpha="alpha")
    with pytest.raises(ValueError, match="are read from 'model'"):
        log_likelihood(idata, model=model, power=1.3)
    prior = pcrp.NIWPrior.from_data(x)
    with pytest.raises(ValueError, match="Argument 'scales' is required"):
        pointwise_log_likelihood(x, np.zeros((1, 12), dtype=int), prior, alpha=1.0, power=1.0)
    with pytest.raises(ValueError, match=r"must have shape \(12, 2\)"):
        pointwise_log_likelihood(
            x[:5], np.zeros((1, 12), dtype=int), prior, alpha=1.0, power=1.0, scales=[1.0]
        )


def _refit_densities(x, i, prior, r, alpha, seed, sample):
    """Refit without x_i; return log p(x_i | x_-i) of the N - 1 model and of the N-point model.

    The N-point model's conditional weighs each refit draw by c(z) = sum_k n_k^r + alpha, the
    factor by which marginalising z_i out of the N-point pCRP prior differs from the
    (N - 1)-point prior; for r = 1 it is constant and the two agree.
    """
    keep = np.delete(np.arange(len(x)), i)
    idata = pcrp.fit(x[keep], power=r, alpha=alpha, prior=prior, random_seed=seed, **sample)
    labels = idata.posterior["z"].values.reshape(-1, len(keep))
    scales = idata.sample_stats["niw_scale"].values.reshape(-1)
    nu0s = idata.sample_stats["niw_nu0"].values.reshape(-1)  # the default prior learns nu0
    predictor = PartitionPredictor(x[keep], prior)
    log_p = np.empty(len(labels))
    log_c = np.empty(len(labels))
    for d, (z, s, nu0) in enumerate(zip(labels, scales, nu0s, strict=True)):
        pred = predictor(z, s, nu0)
        weights = prediction_weights(pred.sizes, r, alpha)
        terms = np.log(weights) + pred.logpdf(x[i : i + 1])[:, 0]
        top = terms.max()
        log_p[d] = top + np.log(np.exp(terms - top).sum())
        log_c[d] = np.log(np.sum(pred.sizes**r) + alpha)
    refit = scipy.special.logsumexp(log_p) - np.log(len(labels))
    conditional = scipy.special.logsumexp(log_p + log_c) - scipy.special.logsumexp(log_c)
    return refit, conditional


def test_psis_loo_matches_brute_force_refits():
    """az.loo on the pointwise term against N refits, each without one point (N = 40, 2-D).

    Measured when written (seeds below): PSIS elpd -140.39 (SE 6.5), refits -140.36 (N - 1
    model) and -140.36 (N-point conditional); largest per-point gap 0.007 nats, even at the
    11 points whose Pareto k exceeded 0.7. The tolerances leave room for Monte Carlo error.
    The refits now run two chains instead of four (the test took 171 s in CI with four,
    85 s alone with two): on 2026-11-28 PSIS gave -140.53, the refits -140.54 and -140.53,
    and the largest per-point gap was 0.014 nats. With the chains' own scouting
    (2026-12-02, other draws) one outlying point, of Pareto k above 0.7, differed by
    0.065 nats and every other by less than 0.04: the per-point tolerance is 0.1 nats, and
    the total, which a wrong pointwise term would move by far more, stays within 0.25.
    """
    x = _two_blobs(40, seed=0)
    r, alpha = 1.2, 1.0
    prior = pcrp.NIWPrior.from_data(x)
    # Ten sweeps per draw, as when the figures above were measured (the automatic rule
    # now thins tiny data by 30: this test took 173 s with it and 119 s with 10, warm
    # cache, 2026-11-27).
    sample = {"draws": 1000, "tune": 500, "chains": 4, "sweeps_per_draw": 10, **QUIET}
    idata = pcrp.fit(
        x,
        power=r,
        alpha=alpha,
        prior=prior,
        random_seed=1,
        idata_kwargs={"log_likelihood": True},
        **sample,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the Pareto k warning
        loo = az.loo(idata, pointwise=True)
    refit_sample = {**sample, "chains": 2}
    refits = np.array(
        [_refit_densities(x, i, prior, r, alpha, 100 + i, refit_sample) for i in range(len(x))]
    )
    psis = loo.loo_i.values
    for exact in refits.T:  # the N - 1 model's refits, then the N-point model's conditional
        assert np.max(np.abs(psis - exact)) < 0.1
        assert abs(loo.elpd_loo - exact.sum()) < min(0.25, 0.1 * loo.se)


def test_blocks_of_draws_give_the_same_terms(monkeypatch):
    """Draws are processed in blocks padded to the block's largest K; any block size agrees."""
    rng = np.random.default_rng(SEED + 2)
    x = _two_blobs(15)
    prior = pcrp.NIWPrior.from_data(x)
    labels = rng.integers(0, rng.integers(1, 8, size=(9, 1)), size=(9, 15))
    scales = prior.scale_grid[rng.integers(0, 91, size=9)]
    whole = pointwise_log_likelihood(
        x, labels, prior, alpha=0.9, power=1.4, scales=scales, nu0s=prior.nu0
    )
    monkeypatch.setattr(pcrp.posterior.pointwise, "_BLOCK_ELEMENTS", 1)
    single = pointwise_log_likelihood(
        x, labels, prior, alpha=0.9, power=1.4, scales=scales, nu0s=prior.nu0
    )
    np.testing.assert_allclose(single, whole, rtol=1e-12)
    for s in range(9):
        np.testing.assert_allclose(
            whole[s], _direct(x, labels[s], prior, 0.9, 1.4, scales[s]), rtol=1e-10
        )


def test_labels_that_are_not_a_pcrp_variable_are_refused():
    x = _two_blobs(8)
    with pm.Model() as model:
        z = pm.Categorical("z", p=np.full(3, 1 / 3), shape=8)
        pcrp.NIWMixture("x", z=z, prior=pcrp.NIWPrior.from_data(x, scale=0.1), observed=x)
    labels = np.random.default_rng(SEED).integers(0, 3, size=(1, 5, 8))
    idata = az.from_dict(posterior={"z": labels}, observed_data={"x": x})
    with model, pytest.raises(ValueError, match="must be a PowerCRP variable") as info:
        pm.compute_log_likelihood(idata, progressbar=False)
    assert "pymc_pcrp.posterior.log_likelihood" in str(info.value)
