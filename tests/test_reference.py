"""Self-consistency checks of the slow reference implementations in tests/."""

import math

import numpy as np
import pytest
import scipy.special
import scipy.stats

from enumeration import exact_posterior, log_pcrp_prior_unnorm, set_partitions
from reference import (
    gibbs_conditional,
    log_pcrp_joint,
    niw_log_marginal,
    niw_log_predictive,
    niw_posterior,
)

MU0_2D = np.array([0.5, -1.0])
PSI0_2D = np.array([[2.0, 0.3], [0.3, 1.0]])


def data_2d(n, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, 2)) * [1.5, 0.7] + [1.0, -0.5]


# ---------------------------------------------------------------- NIW reference


def test_posterior_of_no_points_is_the_prior():
    mu_n, kappa_n, nu_n, psi_n = niw_posterior(np.empty((0, 2)), MU0_2D, 0.5, 4.0, PSI0_2D)
    np.testing.assert_array_equal(mu_n, MU0_2D)
    np.testing.assert_array_equal(psi_n, PSI0_2D)
    assert (kappa_n, nu_n) == (0.5, 4.0)
    assert niw_log_marginal(np.empty((0, 2)), MU0_2D, 0.5, 4.0, PSI0_2D) == 0.0


def test_posterior_updates_compose():
    X = data_2d(7)
    whole = niw_posterior(X, MU0_2D, 0.5, 4.0, PSI0_2D)
    mu3, kappa3, nu3, psi3 = niw_posterior(X[:3], MU0_2D, 0.5, 4.0, PSI0_2D)
    in_two_steps = niw_posterior(X[3:], mu3, kappa3, nu3, psi3)
    for a, b in zip(whole, in_two_steps, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12)


@pytest.mark.parametrize("n", [0, 1, 5])
def test_predictive_is_ratio_of_marginals(n):
    X = data_2d(n + 1, seed=n)
    x, rest = X[-1], X[:-1]
    hyper = (MU0_2D, 0.5, 4.0, PSI0_2D)
    chain = niw_log_marginal(X, *hyper) - niw_log_marginal(rest, *hyper)
    assert math.isclose(niw_log_predictive(x, rest, *hyper), chain, rel_tol=1e-10)


@pytest.mark.parametrize("n", [0, 1, 6])
def test_predictive_1d_is_student_t(n):
    rng = np.random.default_rng(n)
    X = rng.normal(2.0, 0.5, size=n)
    x = 1.7
    mu0, kappa0, nu0, psi0 = 1.0, 0.3, 3.0, 0.8
    # 1-D Normal-Inverse-Gamma update, written independently of niw_posterior.
    kappa_n, nu_n = kappa0 + n, nu0 + n
    xbar = X.mean() if n else 0.0
    mu_n = (kappa0 * mu0 + X.sum()) / kappa_n
    psi_n = psi0 + np.sum((X - xbar) ** 2) + kappa0 * n / kappa_n * (xbar - mu0) ** 2
    scale = math.sqrt(psi_n * (kappa_n + 1) / (kappa_n * nu_n))
    expected = scipy.stats.t(df=nu_n, loc=mu_n, scale=scale).logpdf(x)
    got = niw_log_predictive([x], X[:, None], [mu0], kappa0, nu0, [[psi0]])
    assert math.isclose(got, expected, rel_tol=1e-12)


# ---------------------------------------------------------- Gibbs conditionals


@pytest.mark.parametrize("r", [1.0, 1.7])
@pytest.mark.parametrize("i", [0, 3, 5])
def test_gibbs_conditional_matches_joint_ratios(i, r):
    X = data_2d(6, seed=3)
    labels = np.array([4, 4, 1, 2, 1, 9])  # point 3 and point 5 are singletons
    alpha = 0.8
    hyper = (MU0_2D, 0.5, 4.0, PSI0_2D)
    clusters, probs = gibbs_conditional(i, labels, X, alpha, r, *hyper)
    others = [labels[j] for j in range(len(labels)) if j != i]
    assert clusters == list(dict.fromkeys(int(k) for k in others))
    assert len(probs) == len(clusters) + 1
    assert math.isclose(probs.sum(), 1.0, rel_tol=1e-12)

    log_joint = []
    for k in [*clusters, max(labels) + 1]:
        moved = labels.copy()
        moved[i] = k
        log_joint.append(log_pcrp_joint(moved, X, alpha, r, *hyper))
    log_joint = np.array(log_joint)
    expected = np.exp(log_joint - scipy.special.logsumexp(log_joint))
    np.testing.assert_allclose(probs, expected, rtol=1e-10)


# ------------------------------------------------------------ enumeration helpers


def test_set_partitions_counts_are_bell_numbers():
    bell = [1, 1, 2, 5, 15, 52, 203, 877]
    for n, expected in enumerate(bell):
        parts = list(set_partitions(n))
        assert len(parts) == expected
        assert len({tuple(z) for z in parts}) == expected
        for z in parts:
            assert z.dtype == np.int64 and len(z) == n
            if n:
                # Canonical: each label is at most one more than all earlier ones.
                assert z[0] == 0
                assert np.all(z[1:] <= np.maximum.accumulate(z)[:-1] + 1)


def test_log_pcrp_prior_unnorm_values():
    alpha, r = 0.7, 1.8
    z = np.array([0, 0, 1, 0, 2, 1])  # sizes 3, 2, 1
    expected = 3 * math.log(alpha) + r * (math.lgamma(3) + math.lgamma(2) + math.lgamma(1))
    assert math.isclose(log_pcrp_prior_unnorm(z, alpha, r), expected, rel_tol=1e-14)


def test_exact_posterior_is_normalised_and_consistent():
    X = data_2d(4, seed=8)
    hyper = (MU0_2D, 0.5, 4.0, PSI0_2D)
    partitions, probs = exact_posterior(X, 1.2, 1.5, *hyper)
    assert len(partitions) == 15
    assert math.isclose(probs.sum(), 1.0, rel_tol=1e-12)
    a, b = partitions.index((0, 0, 1, 1)), partitions.index((0, 1, 2, 3))
    ratio = log_pcrp_joint(np.array(partitions[a]), X, 1.2, 1.5, *hyper) - log_pcrp_joint(
        np.array(partitions[b]), X, 1.2, 1.5, *hyper
    )
    assert math.isclose(math.log(probs[a] / probs[b]), ratio, rel_tol=1e-10)
