"""PowerCRP with a random alpha: the exact normaliser, its gradient, and the fixed-alpha rule."""

import math

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
import scipy.integrate
import scipy.special
import scipy.stats

from enumeration import log_pcrp_prior_unnorm, set_partitions

import pymc_pcrp as pcrp

from pymc_pcrp._kernels.partitions import log_stirling_r_table
from pymc_pcrp.distributions.normaliser import (
    PCRPExpectedClusters,
    PCRPLogNormaliser,
    is_fixed,
    log_normaliser,
    prior_k_moments,
)


def full_log_normaliser(n, alpha, r):
    """``log Z_n`` from every column of the Stirling table: no truncation at all."""
    weights = np.arange(n + 1) * np.log(alpha) + log_stirling_r_table(n, r, n)[n]
    return float(scipy.special.logsumexp(weights))


SEED = sum(ord(c) for c in "test_pcrp_alpha")


@pytest.mark.parametrize(("n", "r"), [(6, 1.0), (6, 1.3), (5, 0.6), (6, 2.5)])
def test_random_alpha_logp_is_normalised_over_all_partitions(n, r):
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 2.0, 1.0)
        z = pcrp.PowerCRP("z", alpha=alpha, power=r, n=n)
    logp_z = model.compile_logp(vars=[z])
    for a in (0.2, 1.0, 3.7):
        point = {"alpha_log__": np.log(a)}
        log_z = scipy.special.logsumexp(
            [log_pcrp_prior_unnorm(labels, a, r) for labels in set_partitions(n)]
        )
        values = []
        for labels in set_partitions(n):
            value = logp_z({**point, "z": labels})
            assert value == pytest.approx(log_pcrp_prior_unnorm(labels, a, r) - log_z, abs=1e-10)
            values.append(value)
        assert scipy.special.logsumexp(values) == pytest.approx(0.0, abs=1e-12)


def test_constant_alpha_leaves_the_normaliser_out_and_data_alpha_keeps_it():
    labels = np.array([0, 1, 0, 2, 1])
    unnormalised = log_pcrp_prior_unnorm(labels, 2.0, 1.4)
    normalised = unnormalised - full_log_normaliser(5, 2.0, 1.4)
    for make_alpha, expected in (
        (lambda: 2.0, unnormalised),
        (
            lambda: pt.constant(4.0, dtype="float64") / 2.0,
            unnormalised,
        ),  # built from constants: fixed for good
        (lambda: pm.Data("a", 2.0), normalised),  # pm.set_data can change it
        (lambda: pm.Data("a", 4.0) / 2.0, normalised),
    ):
        with pm.Model() as model:
            z = pcrp.PowerCRP("z", alpha=make_alpha(), power=1.4, n=5)
        assert model.compile_logp(vars=[z])({"z": labels}) == pytest.approx(expected, rel=1e-12)


def test_alpha_as_a_function_of_a_random_variable():
    with pm.Model() as model:
        log_alpha = pm.Normal("log_alpha", 0.0, 1.0)
        z = pcrp.PowerCRP("z", alpha=pt.exp(log_alpha), power=1.5, n=4)
    labels = np.array([0, 0, 1, 0])
    got = model.compile_logp(vars=[z])({"log_alpha": 0.3, "z": labels})
    a = math.exp(0.3)
    assert got == pytest.approx(
        log_pcrp_prior_unnorm(labels, a, 1.5) - full_log_normaliser(4, a, 1.5), rel=1e-12
    )


def test_is_fixed():
    with pm.Model() as model:
        data = pm.Data("d", 1.0)
        a = pm.Gamma("a", 2.0, 1.0)
    assert is_fixed(pt.constant(1.0))
    assert is_fixed(data * 3.0)
    assert not is_fixed(a)
    assert not is_fixed(a * data)
    (a_value,) = model.replace_rvs_by_values([a])
    assert not is_fixed(a_value)
    assert not is_fixed(pt.dscalar("free"))


def test_power_built_from_random_variables_is_accepted():
    # a random power (tests/distributions/test_pcrp_power.py checks the density)
    with pm.Model() as model:
        r = pm.Gamma("r", 2.0, 1.0)
        pcrp.PowerCRP("z", alpha=pm.Gamma("a", 2.0, 1.0), power=1.0 + r, n=5)
    assert np.isfinite(model.compile_logp()(model.initial_point()))


@pytest.mark.parametrize(
    ("n", "alpha", "r"),
    [
        (1, 0.5, 1.0),
        (10, 0.5, 1.0),
        (300, 2.5, 1.0),
        (40, 0.7, 1.3),
        (200, 5.0, 1.5),
        (30, 3.0, 0.5),
    ],
)
def test_normaliser_values(n, alpha, r):
    got = log_normaliser(n, alpha, r)
    assert got == pytest.approx(full_log_normaliser(n, alpha, r), rel=1e-12)
    a = pt.dscalar("a")
    op_value = pytensor.function([a], PCRPLogNormaliser(n)(a, r))(alpha)
    assert op_value == pytest.approx(got, rel=1e-14)
    if r == 1.0:
        closed = math.lgamma(alpha + n) - math.lgamma(alpha)
        assert got == pytest.approx(closed, rel=1e-12)
        mean, var = prior_k_moments(n, alpha, r)
        digamma = scipy.special.digamma
        polygamma = scipy.special.polygamma
        assert mean == pytest.approx(alpha * (digamma(alpha + n) - digamma(alpha)), rel=1e-10)
        # Var[K] = d E[K] / d log(alpha) for the CRP
        dmean = alpha * (
            digamma(alpha + n)
            - digamma(alpha)
            + alpha * (polygamma(1, alpha + n) - polygamma(1, alpha))
        )
        assert var == pytest.approx(dmean, rel=1e-9)


@pytest.mark.parametrize(("n", "r"), [(12, 1.0), (12, 1.6), (60, 1.2), (25, 0.7)])
@pytest.mark.parametrize("alpha", [0.05, 0.8, 6.0])
def test_normaliser_gradient(n, r, alpha):
    op = PCRPLogNormaliser(n)
    rng = np.random.default_rng(SEED)
    pytensor.gradient.verify_grad(
        lambda a: op(a, r), [np.array(alpha)], rng=rng, eps=1e-7, abs_tol=1e-4, rel_tol=1e-4
    )
    # and against a central difference of the function itself in log(alpha)
    a = pt.dscalar("a")
    grad = pytensor.function([a], pytensor.grad(op(a, r), a))(alpha)
    h = 1e-5
    fd = (
        log_normaliser(n, alpha * math.exp(h), r) - log_normaliser(n, alpha * math.exp(-h), r)
    ) / (2 * h)
    assert grad * alpha == pytest.approx(fd, rel=1e-7)
    assert grad * alpha == pytest.approx(prior_k_moments(n, alpha, r)[0], rel=1e-12)


def test_second_derivative_in_power_is_not_implemented():
    r = pt.dscalar("r")
    first = pytensor.grad(PCRPLogNormaliser(5, "recursion")(1.0, r), r)
    with pytest.raises(pytensor.gradient.NullTypeGradError):
        pytensor.grad(first, r)
    assert PCRPExpectedClusters(5) == PCRPExpectedClusters(5)
    assert PCRPLogNormaliser(5) != PCRPLogNormaliser(6)


def test_model_gradient_in_alpha_includes_the_normaliser():
    n, r = 8, 1.4
    labels = np.array([0, 1, 0, 0, 2, 1, 0, 0])
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 2.0, 1.0)
        pcrp.PowerCRP("z", alpha=alpha, power=r, n=n)
    logp = model.compile_logp()
    dlogp = model.compile_dlogp(vars=[alpha])
    for log_a in (-1.0, 0.5, 2.0):
        point = {"alpha_log__": np.array(log_a), "z": labels}
        h = 1e-6
        fd = (
            logp({**point, "alpha_log__": np.array(log_a + h)})
            - logp({**point, "alpha_log__": np.array(log_a - h)})
        ) / (2 * h)
        assert float(dlogp(point)[0]) == pytest.approx(fd, rel=1e-6, abs=1e-8)
        # d/dlog(alpha) of [Gamma(2, 1) log density + Jacobian] + K - E[K]
        a = math.exp(log_a)
        expected = (1.0 - a) + 1.0 + 3 - prior_k_moments(n, a, r)[0]
        assert float(dlogp(point)[0]) == pytest.approx(expected, rel=1e-9)


def test_op_returns_nan_outside_the_domain():
    a = pt.dscalar("a")
    f = pytensor.function([a], PCRPLogNormaliser(5)(a, 1.2))
    assert np.isnan(f(0.0))
    assert np.isnan(f(-1.0))
    assert np.isnan(f(np.inf))


def test_prior_draws_with_random_alpha_match_the_gamma_mixture():
    # Forward draws: alpha from its Gamma prior, then labels from the exact pCRP.
    n, r, draws = 20, 1.3, 4000
    with pm.Model():
        alpha = pm.Gamma("alpha", 2.0, 1.0)
        pcrp.PowerCRP("z", alpha=alpha, power=r, n=n)
        prior = pm.sample_prior_predictive(draws=draws, random_seed=SEED)
    k = prior.prior["n_clusters"].values.ravel()
    mixture, _ = scipy.integrate.quad_vec(
        lambda a: pcrp.prior.prior_num_clusters(n, a, r) * scipy.stats.gamma.pdf(a, 2.0),
        0,
        np.inf,
        epsabs=1e-12,
    )
    assert mixture.sum() == pytest.approx(1.0, abs=1e-8)
    observed = np.bincount(k, minlength=n + 1)
    keep = mixture * draws >= 5
    expected = np.r_[mixture[keep], mixture[~keep].sum()] * draws
    counts = np.r_[observed[keep], observed[~keep].sum()]
    pval = scipy.stats.chi2.sf(((counts - expected) ** 2 / expected).sum(), df=counts.size - 1)
    assert pval > 1e-3, (pval, counts, expected)
