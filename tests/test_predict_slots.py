"""predict_slots: cluster probabilities of new observations for slot labels, any likelihood."""

import arviz as az
import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest

from scipy import stats
from scipy.special import logsumexp

import pymc_pcrp as pcrp

from pymc_pcrp.posterior.slot_prediction import predict_slots

K = 8


def _poisson_model(y, k=K):
    with pm.Model() as model:
        z = pcrp.PowerCRP("z", alpha=1.0, power=1.2, n=len(y), max_clusters=k)
        lam = pm.Gamma("lam", 2.0, 0.05, shape=k)
        pm.Poisson("y", lam[z], observed=y)
    return model


@pytest.fixture(scope="module")
def fitted():
    rng = np.random.default_rng(0)
    truth = np.repeat([0, 1, 2], 20)
    y = rng.poisson(np.array([2.0, 20.0, 60.0])[truth])
    model = _poisson_model(y)
    with model:
        idata = pm.sample(
            draws=200,
            tune=200,
            chains=1,
            random_seed=1,
            progressbar=False,
            compute_convergence_checks=False,
        )
    return model, idata, truth


def test_new_counts_join_the_cluster_of_their_rate_and_an_outlier_starts_one(fitted):
    model, idata, truth = fitted
    result = predict_slots(idata, model, [2, 20, 60, 400], point=truth, max_draws=100)
    assert result.probabilities.shape == (4, 4)
    np.testing.assert_allclose(result.probabilities.sum(axis=1), 1.0, atol=1e-12)
    for row in range(3):
        assert result.probabilities[row, row] > 0.9
    assert result.new_cluster[3] > 0.5
    assert np.array_equal(result.labels, [0, 1, 2, -1])
    assert result.n_draws == 100


def test_default_point_is_the_point_estimate(fitted):
    model, idata, _ = fitted
    result = predict_slots(idata, model, np.array([2, 60]), max_draws=20)
    best = pcrp.point_estimate(idata, var_name="z", random_seed=0).labels
    assert np.array_equal(result.training_labels, best)
    assert result.probabilities.shape == (2, np.unique(best).size + 1)


def _brute_force(z_draws, lam_draws, y_new, point, alpha=1.0, power=1.2, empty="mean"):
    """The prediction rule written out point by point, slot by slot, draw by draw.

    ``empty="sum"`` is a deliberately wrong variant: each empty slot weighted
    ``alpha`` instead of ``alpha / (K - k)``.
    """
    clusters = np.unique(point)
    total = np.zeros((len(y_new), clusters.size + 1))
    for z, lam in zip(z_draws, lam_draws, strict=True):
        for j, y in enumerate(y_new):
            logw, targets = [], []
            free = [s for s in range(lam.size) if not np.any(z == s)]
            for s in range(lam.size):
                members = np.flatnonzero(z == s)
                if members.size:
                    logw.append(power * np.log(members.size) + stats.poisson.logpmf(y, lam[s]))
                    targets.append([np.mean(point[members] == c) for c in clusters] + [0.0])
            if free:
                log_liks = [stats.poisson.logpmf(y, lam[s]) for s in free]
                scale = np.log(len(free)) if empty == "mean" else 0.0
                logw.append(np.log(alpha) + logsumexp(log_liks) - scale)
                targets.append([0.0] * clusters.size + [1.0])
            w = np.exp(np.array(logw) - logsumexp(logw))
            total[j] += w @ np.array(targets)
    return total / len(z_draws)


def test_agrees_with_a_brute_force_computation_on_three_draws():
    y = np.array([1, 2, 3, 30, 31, 80])
    model = _poisson_model(y, k=4)
    z = np.array([[[0, 0, 0, 1, 1, 2], [3, 3, 1, 2, 2, 2], [0, 0, 0, 0, 0, 0]]])
    lam = np.array([[[2.0, 30.0, 80.0, 5.0], [1.5, 3.0, 40.0, 2.5], [20.0, 7.0, 50.0, 90.0]]])
    idata = az.from_dict(posterior={"z": z, "lam": lam})
    point = np.array([0, 0, 0, 1, 1, 2])
    y_new = np.array([0, 2, 7, 29, 75, 300])
    result = predict_slots(idata, model, y_new, point=point)
    want = _brute_force(z[0], lam[0], y_new, point)
    np.testing.assert_allclose(result.probabilities, want, rtol=1e-10, atol=1e-12)
    # the third draw's three empty slots enter through the mean of their likelihoods
    one = predict_slots(idata.sel(draw=[2]), model, y_new, point=point)
    np.testing.assert_allclose(one.probabilities, _brute_force(z[0, 2:], lam[0, 2:], y_new, point))
    # ... which the comparison tells apart from weighting each empty slot alpha
    wrong = _brute_force(z[0], lam[0], y_new, point, empty="sum")
    assert np.abs(result.probabilities - wrong).max() > 0.01


def test_a_full_draw_gives_no_new_cluster():
    y = np.array([1, 30])
    model = _poisson_model(y, k=2)
    idata = az.from_dict(posterior={"z": np.array([[[0, 1]]]), "lam": np.array([[[1.0, 30.0]]])})
    result = predict_slots(idata, model, [1000], point=np.array([0, 1]))
    assert result.new_cluster[0] == 0.0
    np.testing.assert_allclose(result.probabilities.sum(), 1.0)


def test_a_normal_likelihood_with_a_shared_scale_works():
    y = np.array([-5.0, -5.2, 5.1, 4.9])
    with pm.Model() as model:
        z = pcrp.PowerCRP("z", alpha=1.0, power=1.0, n=4, max_clusters=3)
        mu = pm.Normal("mu", 0.0, 10.0, shape=3)
        sigma = pm.HalfNormal("sigma")
        pm.Normal("y", mu[z], sigma, observed=y)
    post = {
        "z": np.array([[[0, 0, 1, 1]]]),
        "mu": np.array([[[-5.0, 5.0, 0.0]]]),
        "sigma": np.array([[0.5]]),
    }
    result = predict_slots(
        az.from_dict(posterior=post), model, [-5.0, 5.0], point=np.array([0, 0, 1, 1])
    )
    assert np.array_equal(result.labels, [0, 1])
    logw = np.log(2.0) + stats.norm.logpdf(-5.0, [-5.0, 5.0], 0.5)
    new = stats.norm.logpdf(-5.0, 0.0, 0.5)
    full = np.r_[logw, new]
    np.testing.assert_allclose(result.probabilities[0], np.exp(full - logsumexp(full)))


def test_a_multivariate_normal_per_row_works():
    y = np.array([[0.0, 0.0], [0.0, 0.1], [5.0, 5.0], [5.0, 5.1]])
    with pm.Model() as model:
        z = pcrp.PowerCRP("z", alpha=1.0, power=1.0, n=4, max_clusters=3)
        mu = pm.Normal("mu", 0.0, 10.0, shape=(3, 2))
        pm.MvNormal("y", mu[z], np.eye(2), observed=y)
    post = {"z": np.array([[[0, 0, 1, 1]]]), "mu": np.array([[[[0.0, 0], [5, 5], [20, 20]]]])}
    result = predict_slots(
        az.from_dict(posterior=post),
        model,
        [[0.0, 0.0], [5.0, 5.0], [20.0, 20.0]],
        point=np.array([0, 0, 1, 1]),
    )
    assert np.array_equal(result.labels, [0, 1, -1])
    with pytest.raises(ValueError, match=r"Argument 'y_new' must have shape \(M, 2\)"):
        predict_slots(az.from_dict(posterior=post), model, [[0.0, 0.0, 1.0]])


def _fake_posterior(n, k, **extra):
    post = {"z": np.zeros((1, 1, n), dtype=np.int64), **extra}
    return az.from_dict(posterior=post)


def test_a_likelihood_with_covariates_is_refused_naming_the_variable():
    x = np.linspace(0.0, 1.0, 5)
    with pm.Model() as model:
        z = pcrp.PowerCRP("z", alpha=1.0, power=1.2, n=5, max_clusters=3)
        a = pm.Normal("a", shape=3)
        b = pm.Normal("b", shape=3)
        pm.Poisson("counts", pt.exp(a[z] + b[z] * x), observed=np.arange(5))
    idata = _fake_posterior(5, 3, a=np.zeros((1, 1, 3)), b=np.zeros((1, 1, 3)))
    with pytest.raises(ValueError, match=r"new rows of 'counts'.*length-N inputs"):
        predict_slots(idata, model, [1, 2])


def test_a_likelihood_with_per_point_variables_is_refused():
    with pm.Model() as model:
        z = pcrp.PowerCRP("z", alpha=1.0, power=1.2, n=4, max_clusters=3)
        lam = pm.Gamma("lam", 2.0, 0.5, shape=3)
        eps = pm.Gamma("eps", 5.0, 5.0, shape=4)
        pm.Poisson("y", lam[z] * eps, observed=np.arange(4))
    idata = _fake_posterior(4, 3, lam=np.ones((1, 1, 3)), eps=np.ones((1, 1, 4)))
    with pytest.raises(ValueError, match=r"new rows of 'y'.*length-N inputs"):
        predict_slots(idata, model, [1])


def test_several_rows_per_unit_labelled_latents_and_potentials_are_refused():
    unit = np.array([0, 0, 1, 1, 2, 2])
    with pm.Model() as per_unit:
        z = pcrp.PowerCRP("z", alpha=1.0, power=1.2, n=3, max_clusters=3)
        lam = pm.Gamma("lam", 2.0, 0.5, shape=3)
        pm.Poisson("sales", lam[z[unit]], observed=np.arange(6))
    idata = _fake_posterior(3, 3, lam=np.ones((1, 1, 3)))
    with pytest.raises(ValueError, match=r"new rows of 'sales'.*several rows per clustered unit"):
        predict_slots(idata, per_unit, [1])
    with pm.Model() as latent:
        z = pcrp.PowerCRP("z", alpha=1.0, power=1.2, n=3, max_clusters=3)
        mu = pm.Normal("mu", shape=3)
        u = pm.Normal("u", mu[z], 1.0)
        pm.Poisson("y", pt.exp(u), observed=np.arange(3))
    with pytest.raises(ValueError, match=r"unobserved variable\(s\) \['u'\]"):
        predict_slots(idata, latent, [1])
    with pm.Model() as potential:
        z = pcrp.PowerCRP("z", alpha=1.0, power=1.2, n=3, max_clusters=3)
        lam = pm.Gamma("lam", 2.0, 0.5, shape=3)
        pm.Poisson("y", lam[z], observed=np.arange(3))
        pm.Potential("penalty", -pt.sum(z))
    with pytest.raises(ValueError, match=r"the pm\.Potential 'penalty' depends on the labels 'z'"):
        predict_slots(idata, potential, [1])


def test_bad_inputs_are_refused(fitted):
    model, idata, _ = fitted
    with pytest.raises(ValueError, match="Argument 'y_new' must be a vector"):
        predict_slots(idata, model, [[1, 2]])
    with pytest.raises(ValueError, match="non-integer values"):
        predict_slots(idata, model, [1.5])
    with pytest.raises(ValueError, match="Argument 'labels' is 'w'"):
        predict_slots(idata, model, [1], labels="w")
    with pm.Model() as plain:
        pm.Normal("y", observed=np.zeros(3))
    with pytest.raises(ValueError, match="the model has none"):
        predict_slots(idata, plain, [1])


def test_prior_draws_bring_the_new_cluster_to_its_exact_value():
    y = np.array([1, 2, 30, 31])
    with pm.Model() as model:
        z = pcrp.PowerCRP("z", alpha=1.0, power=1.2, n=4, max_clusters=4)
        lam = pm.Gamma("lam", 2.0, 0.1, shape=4)
        pm.Poisson("y", lam[z], observed=y)
    # the empty slots 2 and 3 hold small rates, far from where the new values lie
    post = {"z": np.array([[[0, 0, 1, 1]]]), "lam": np.array([[[1.5, 30.0, 3.0, 8.0]]])}
    idata = az.from_dict(posterior=post)
    y_new = np.array([45, 48, 52])
    point = np.array([0, 0, 1, 1])
    # exact: the Gamma(2, 0.1) prior predictive of a new cluster is a negative binomial
    log_w = np.c_[
        1.2 * np.log(2.0) + stats.poisson.logpmf(y_new[:, None], [1.5, 30.0]),
        stats.nbinom.logpmf(y_new, 2, 0.1 / 1.1),
    ]
    exact = np.exp(log_w - logsumexp(log_w, axis=1, keepdims=True))
    assert np.all((exact[:, -1] > 0.2) & (exact[:, -1] < 0.999))
    plain = predict_slots(idata, model, y_new, point=point)
    assert np.abs(plain.new_cluster - exact[:, -1]).max() > 0.2
    fresh = predict_slots(idata, model, y_new, point=point, prior_draws=2000, random_seed=3)
    np.testing.assert_allclose(fresh.probabilities, exact, atol=0.05)
    again = predict_slots(idata, model, y_new, point=point, prior_draws=2000, random_seed=3)
    np.testing.assert_array_equal(again.probabilities, fresh.probabilities)
    with pytest.raises(ValueError, match="Argument 'prior_draws' must be an integer >= 0"):
        predict_slots(idata, model, y_new, point=point, prior_draws=-1)
