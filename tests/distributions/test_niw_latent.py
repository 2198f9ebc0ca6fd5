"""A latent NIWMixture: values clustered by a PowerCRP, updated by NUTS; labels by PCRPGibbs."""

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
import scipy.integrate
import scipy.special
import scipy.stats

from enumeration import log_pcrp_prior_unnorm, set_partitions
from step_reference import built_steps

import pymc_pcrp as pcrp

from pymc_pcrp.distributions._niw_numpy import scale_marginal_grad, scale_marginal_loglik

SEED = sum(ord(c) for c in "test_niw_latent")
QUIET = {"progressbar": False, "compute_convergence_checks": False}


@pytest.mark.parametrize("learned", [False, True])
def test_gradient_in_the_values_matches_finite_differences(learned):
    rng = np.random.default_rng(SEED)
    x = rng.normal(size=(9, 3))
    z = np.array([0, 0, 1, 1, 1, 2, 0, 2, 2])
    base = np.array([[1.0, 0.3, 0.0], [0.3, 2.0, 0.1], [0.0, 0.1, 0.5]])
    grid, log_w = (np.array([0.1, 0.5, 1.0, 3.0]), np.log([0.1, 0.3, 0.4, 0.2]))
    if not learned:
        grid, log_w = np.array([0.7]), np.zeros(1)
    args = (z, 0.1, 5.0, base, grid, log_w)
    grad = scale_marginal_grad(x, *args)
    numeric = np.zeros_like(x)
    h = 1e-6
    for idx in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[idx] += h
        down[idx] -= h
        numeric[idx] = (scale_marginal_loglik(up, *args) - scale_marginal_loglik(down, *args)) / (
            2 * h
        )
    np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-6)


def test_pytensor_gradient_of_the_logp_is_the_numpy_gradient():
    rng = np.random.default_rng(SEED + 1)
    x0 = rng.normal(size=(6, 2))
    labels = np.array([0, 1, 0, 1, 1, 2])
    prior = pcrp.NIWPrior.from_data(rng.normal(size=(30, 2)))
    value = pt.dmatrix("value")
    dist = pcrp.NIWMixture.dist(z=labels, prior=prior)
    logp = pm.logp(dist, value)
    fn = pytensor.function([value], pt.grad(logp, value))
    grid, log_w = prior.grid_arrays()
    # the default prior learns nu0 too: the gradient of log sum_h v_h L_h is the
    # average of each nu0's gradient, weighted by the conditional of nu0
    args = (x0 - prior.mu0, labels, prior.kappa0)
    logs = prior.nu0_log_weights + np.array(
        [scale_marginal_loglik(*args, nu, prior.psi0, grid, log_w) for nu in prior.nu0_grid]
    )
    weights = np.exp(logs - scipy.special.logsumexp(logs))
    expected = sum(
        w * scale_marginal_grad(*args, nu, prior.psi0, grid, log_w)
        for w, nu in zip(weights, prior.nu0_grid, strict=True)
    )
    np.testing.assert_allclose(fn(x0), expected, rtol=1e-10, atol=1e-12)
    # and a finite difference of the log density agrees
    logp_fn = pytensor.function([value], logp)
    step = np.zeros_like(x0)
    step[2, 1] = 1e-6
    numeric = (logp_fn(x0 + step) - logp_fn(x0 - step)) / 2e-6
    assert numeric == pytest.approx(expected[2, 1], rel=1e-5)


def _hierarchical(y, sigma, prior, alpha=1.0, power=1.1):
    j = y.shape[0]
    with pm.Model() as model:
        z = pcrp.PowerCRP("z", alpha=alpha, power=power, n=j)
        theta = pcrp.NIWMixture("theta", z=z, prior=prior, shape=(j,))
        pm.Normal("y", mu=theta[:, None], sigma=sigma, observed=y)
    return model


def test_pm_sample_gives_the_values_to_nuts_and_the_labels_to_pcrpgibbs():
    rng = np.random.default_rng(SEED + 2)
    y = rng.normal(size=(8, 3)) + np.repeat([-3.0, 3.0], 4)[:, None]
    prior = pcrp.NIWPrior(mu0=np.zeros(1), kappa0=0.1, nu0=3.0, psi0=np.eye(1))
    model = _hierarchical(y, 1.0, prior)
    assert built_steps(model) == {("NUTS", ("theta",)), ("PCRPGibbs", ("z",))}
    with model:
        idata = pm.sample(draws=20, tune=20, chains=1, random_seed=SEED, **QUIET)
    assert idata.posterior["theta"].shape == (1, 20, 8)
    assert idata.posterior["z"].shape == (1, 20, 8)
    # one step of PCRPGibbs alone: its log joint is the labels' and values' terms at the point's
    # values and the new labels
    with model:
        step = pcrp.PCRPGibbs([model["z"]], rng=SEED)
    point = model.initial_point()
    point["theta"] = np.r_[np.full(4, -3.0), np.full(4, 3.0)] + rng.normal(0, 0.3, 8)
    logp = model.compile_logp(vars=[model["z"], model["theta"]])
    for _ in range(5):
        point, stats = step.step(point)
        assert stats[0]["log_joint"] == pytest.approx(logp(point), rel=1e-9)
        # two tight groups of values 6 apart: no cluster holds values of both
        labels = np.asarray(point["z"])
        assert not set(labels[:4]) & set(labels[4:])
        assert stats[0]["n_clusters"] == np.unique(labels).size


def test_labels_feeding_the_values_likelihood_directly_are_refused():
    prior = pcrp.NIWPrior(mu0=np.zeros(1), kappa0=0.1, nu0=3.0, psi0=np.eye(1))
    with pm.Model():
        z = pcrp.PowerCRP("z", alpha=1.0, power=1.1, n=4)
        theta = pcrp.NIWMixture("theta", z=z, prior=prior, shape=(4,))
        pm.Normal("y", mu=theta + z, sigma=1.0, observed=np.zeros(4))
        with pytest.raises(ValueError, match=r"feed the model term 'y'"):
            pcrp.PCRPGibbs([z])


def _log_marginal_1d(yk, tau2, mu0, kappa0, nu0, psi0):
    """log p(ybar_k) for a block, with theta_j = mu + N(0, s2), ybar_j = theta_j + N(0, tau2).

    Given s2 the block is Gaussian with covariance (s2 + tau2) I + (s2 / kappa0) 11^T;
    s2 ~ InvGamma(nu0 / 2, psi0 / 2) (the 1-D inverse Wishart) is integrated by quadrature.
    """
    m = yk.size
    dev = yk - mu0

    def log_integrand(t):
        s2 = np.exp(t)
        cov = (s2 + tau2) * np.eye(m) + (s2 / kappa0) * np.ones((m, m))
        log_n = scipy.stats.multivariate_normal.logpdf(dev, cov=cov)
        log_ig = scipy.stats.invgamma.logpdf(s2, a=nu0 / 2, scale=psi0 / 2)
        return log_n + log_ig + t

    ts = np.linspace(-12, 8, 801)
    peak = max(log_integrand(t) for t in ts)
    value, _ = scipy.integrate.quad(
        lambda t: np.exp(log_integrand(t) - peak), -25, 12, limit=400, points=[0.0]
    )
    return peak + np.log(value)


def test_latent_partition_posterior_matches_quadrature():
    # 4 groups, one observation each with known noise: p(z | y) by enumeration of the 15
    # partitions, each block's marginal over (mu, s2) by quadrature; pm.sample alternates
    # NUTS on theta and PCRPGibbs on z and must reach the same marginal of z.
    y = np.array([-2.0, -1.6, 1.5, 2.1])
    sigma, alpha, r = 0.5, 1.0, 1.3
    mu0, kappa0, nu0, psi0 = 0.0, 0.2, 3.0, 1.0
    prior = pcrp.NIWPrior(mu0=np.array([mu0]), kappa0=kappa0, nu0=nu0, psi0=np.eye(1) * psi0)
    parts, log_p = [], []
    for labels in set_partitions(len(y)):
        value = log_pcrp_prior_unnorm(labels, alpha, r)
        for k in range(labels.max() + 1):
            value += _log_marginal_1d(y[labels == k], sigma**2, mu0, kappa0, nu0, psi0)
        parts.append(tuple(int(v) for v in labels))
        log_p.append(value)
    exact = np.exp(np.array(log_p) - scipy.special.logsumexp(log_p))
    model = _hierarchical(y[:, None], sigma, prior, alpha=alpha, power=r)
    with model:
        idata = pm.sample(
            draws=3000,
            tune=300,
            chains=4,
            cores=1,
            random_seed=SEED,
            target_accept=0.9,
            **QUIET,
        )
    draws = idata.posterior["z"].values.reshape(-1, len(y))
    keys, counts = np.unique(draws, axis=0, return_counts=True)
    freq = {tuple(int(v) for v in k): c / draws.shape[0] for k, c in zip(keys, counts, strict=True)}
    empirical = np.array([freq.get(p, 0.0) for p in parts])
    tv = 0.5 * np.abs(empirical - exact).sum()
    print(f"total variation {tv:.4f}")
    assert tv < 0.03, f"total variation {tv:.4f}; exact {np.round(exact, 3)}"


def test_three_types_of_groups_are_recovered():
    # 40 groups of 5 noisy observations; group means from 3 well-separated types
    rng = np.random.default_rng(SEED + 3)
    types = np.array([-4.0, 0.0, 4.0])
    true = rng.integers(0, 3, 40)
    theta = types[true] + rng.normal(0, 0.5, 40)
    y = theta[:, None] + rng.normal(0, 1.0, (40, 5))
    prior = pcrp.NIWPrior(mu0=np.zeros(1), kappa0=0.05, nu0=3.0, psi0=np.eye(1) * 0.5)
    with _hierarchical(y, 1.0, prior):
        idata = pm.sample(draws=300, tune=300, chains=2, cores=1, random_seed=SEED, **QUIET)
    estimate = pcrp.point_estimate(idata).labels
    assert pcrp.metrics.normalized_mutual_info(true, estimate) > 0.85
    mean = idata.posterior["theta"].mean(("chain", "draw")).values
    assert np.abs(mean - theta).mean() < 0.5


def test_posterior_predictive_draws_the_observations_given_the_latent_values():
    rng = np.random.default_rng(SEED + 4)
    y = rng.normal(size=(6, 2)) + np.repeat([-3.0, 3.0], 3)[:, None]
    prior = pcrp.NIWPrior(mu0=np.zeros(1), kappa0=0.1, nu0=3.0, psi0=np.eye(1))
    with _hierarchical(y, 0.01, prior) as model:
        idata = pm.sample(draws=10, tune=10, chains=1, random_seed=SEED, **QUIET)
        pp = pm.sample_posterior_predictive(idata, random_seed=SEED, progressbar=False)
        # y given each draw's theta (sigma = 0.01): the replicated data sit on the draws
        theta = idata.posterior["theta"].values
        replicated = pp.posterior_predictive["y"].values
        np.testing.assert_allclose(replicated, np.repeat(theta[..., None], 2, axis=-1), atol=0.1)
        with pytest.raises(NotImplementedError, match="latent NIWMixture 'theta'"):
            pm.sample_posterior_predictive(idata, var_names=["theta"], progressbar=False)
        assert np.isfinite(model.compile_logp()(model.initial_point()))  # the model is intact
