"""NIWPrior and NIWMixture: log density against the reference, validation, draws."""

import math

import numpy as np
import pymc as pm
import pytest

from pymc.logprob.utils import ParameterValueError
from reference import niw_log_marginal, niw_log_marginal_exact_2d
from scipy.special import logsumexp

import pymc_pcrp as pcrp

SEED = sum(ord(c) for c in "test_niw")


def _prior(d, seed=SEED):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(d, d))
    return pcrp.NIWPrior(mu0=rng.normal(size=d), kappa0=0.7, nu0=d + 0.5, psi0=a @ a.T + np.eye(d))


@pytest.mark.parametrize("d", [1, 2, 3])
def test_model_logp_is_sum_of_block_marginals(d):
    rng = np.random.default_rng(SEED + d)
    n = 15
    x = rng.normal(size=(n, d)) * 2.0 + 10.0
    prior = _prior(d)
    observed = x[:, 0] if d == 1 else x
    with pm.Model() as model:
        z = pcrp.PowerCRP("z", alpha=1.0, power=1.0, n=n)
        pcrp.NIWMixture("x", z=z, prior=prior, observed=observed)
    logp_x = model.compile_fn(model.logp(vars=[model["x"]]), inputs=model.value_vars)
    for labels in ([0] * n, list(range(n)), rng.integers(0, 4, size=n)):
        labels = np.asarray(labels)
        expected = sum(
            niw_log_marginal(x[labels == k], prior.mu0, prior.kappa0, prior.nu0, prior.psi0)
            for k in np.unique(labels)
        )
        got = logp_x({"z": labels})
        assert got == pytest.approx(expected, rel=1e-9)


def test_logp_does_not_depend_on_label_names():
    rng = np.random.default_rng(SEED)
    x = rng.normal(size=(8, 2))
    dist = pcrp.NIWMixture.dist(z=np.array([0, 0, 1, 1, 2, 2, 0, 1]), prior=_prior(2))
    a = pm.logp(dist, x).eval()
    dist2 = pcrp.NIWMixture.dist(z=np.array([5, 5, 3, 3, 0, 0, 5, 3]), prior=_prior(2))
    b = pm.logp(dist2, x).eval()
    assert a == pytest.approx(b, rel=1e-12)


def test_forward_draws_have_the_data_shape():
    with pm.Model():
        z = pcrp.PowerCRP("z", alpha=1.0, power=1.5, n=20)
        pcrp.NIWMixture("x", z=z, prior=_prior(2), observed=np.zeros((20, 2)))
        prior = pm.sample_prior_predictive(draws=5, random_seed=SEED)
    draws = prior.prior_predictive["x"].values
    assert draws.shape == (1, 5, 20, 2)
    assert np.all(np.isfinite(draws))


def test_from_data_defaults():
    rng = np.random.default_rng(SEED)
    x = rng.normal(size=(200, 3)) * [1.0, 2.0, 3.0]
    prior = pcrp.NIWPrior.from_data(x)
    np.testing.assert_allclose(prior.mu0, x.mean(0))
    assert prior.kappa0 == 0.01
    # the default learns nu0: nu0 = D - 1 + exp(u), u on 20 points of [0.01, 3], equal
    # weights; chains start at the grid value nearest D + 2 = 5
    assert prior.learns_nu0
    np.testing.assert_allclose(prior.nu0_grid, 2.0 + np.exp(np.linspace(0.01, 3.0, 20)))
    np.testing.assert_allclose(prior.nu0_log_weights, -np.log(20.0))
    assert prior.nu0 == prior.nu0_grid[np.argmin(np.abs(prior.nu0_grid - 5.0))]
    # and the scale: psi0 is the base diag(var), s = (D + 2) c on the grid
    assert prior.learns_scale
    np.testing.assert_allclose(prior.psi0, np.diag(x.var(0, ddof=1)))
    c = prior.scale_grid / 5.0
    assert c.size == 91
    assert c[0] == pytest.approx(1e-4) and c[-1] == pytest.approx(3.0)
    np.testing.assert_allclose(np.diff(np.log10(c)), np.log10(3e4) / 90)  # ~20 per decade
    np.testing.assert_allclose(prior.scale_log_weights, -np.log(91.0))
    # a number gives the old fixed-scale prior exactly
    fixed = pcrp.NIWPrior.from_data(x, scale=0.1)
    assert not fixed.learns_scale
    np.testing.assert_array_equal(fixed.psi0, np.diag(0.1 * x.var(0, ddof=1)))
    one_d = pcrp.NIWPrior.from_data(x[:, 0])
    assert one_d.dim == 1 and one_d.psi0.shape == (1, 1)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"scale_grid": [0.1, -1.0]}, "'scale_grid'.*> 0"),
        ({"scale_grid": [0.1, np.inf]}, "'scale_grid'.*finite"),
        ({"scale_grid": []}, "'scale_grid'.*non-empty"),
        ({"scale_grid": [0.1, 0.1]}, "'scale_grid'.*repeat"),
        ({"scale_grid": [0.1, 1.0], "scale_log_weights": [0.0]}, "'scale_log_weights'.*shape"),
        ({"scale_grid": [0.1, 1.0], "scale_log_weights": [0.0, np.nan]}, "'scale_log_weights'"),
        ({"scale_log_weights": [0.0]}, "'scale_log_weights' needs a 'scale_grid'"),
        ({"nu0_grid": [1.0, 4.0]}, r"'nu0_grid'.*greater than D - 1"),
        ({"nu0_grid": [3.0, 5.0]}, r"'nu0' \(4.0\) must be one of the values of 'nu0_grid'"),
        ({"nu0_grid": [4.0, 4.0]}, "'nu0_grid'.*repeat"),
        ({"nu0_grid": [4.0, 6.0], "nu0_log_weights": [0.0]}, "'nu0_log_weights'.*shape"),
        ({"nu0_log_weights": [0.0]}, "'nu0_log_weights' needs a 'nu0_grid'"),
        ({"nu0_grid": [4.0, 6.0], "covariance": "diag"}, "'nu0_grid'.*covariance='full' only"),
    ],
)
def test_scale_grid_validation(kwargs, match):
    base = {"mu0": np.zeros(2), "kappa0": 1.0, "nu0": 4.0, "psi0": np.eye(2)}
    with pytest.raises(ValueError, match=match):
        pcrp.NIWPrior(**base, **kwargs)


def test_scale_validation_in_from_data():
    x = np.random.default_rng(SEED).normal(size=(10, 2))
    with pytest.raises(ValueError, match=r"'scale'.*'learn'"):
        pcrp.NIWPrior.from_data(x, scale="fixed")
    with pytest.raises(ValueError, match="'scale'"):
        pcrp.NIWPrior.from_data(x, scale=-0.1)
    # a learned nu0 needs the full family and a learned scale
    with pytest.raises(ValueError, match=r"'nu0'.*'learn'"):
        pcrp.NIWPrior.from_data(x, nu0="learn", scale=0.1)
    with pytest.raises(ValueError, match=r"'nu0'.*'learn'"):
        pcrp.NIWPrior.from_data(x, nu0="learned")
    assert not pcrp.NIWPrior.from_data(x, nu0=4.0).learns_nu0
    assert not pcrp.NIWPrior.from_data(x, covariance="diag").learns_nu0


def test_model_logp_integrates_the_scale_out_exactly():
    # logp of the model = log p(z) + log sum_g w_g prod_k m(X_k | s_g P), against the
    # fixed-scale graph evaluated at every grid value
    rng = np.random.default_rng(SEED)
    x = rng.normal(size=(25, 2)) + 3.0 * rng.integers(0, 2, size=(25, 1))
    prior = pcrp.NIWPrior(
        mu0=np.ones(2),
        kappa0=0.2,
        nu0=3.5,
        psi0=np.array([[1.0, 0.3], [0.3, 0.5]]),
        scale_grid=[0.05, 0.4, 2.0],
        scale_log_weights=np.log([0.2, 0.5, 0.3]),
    )
    z0 = np.array([0, 1, 2] * 8 + [0])
    with pm.Model() as model:
        z = pcrp.PowerCRP("z", alpha=1.0, power=1.3, n=25)
        pcrp.NIWMixture("x", z=z, prior=prior, observed=x)
    total = model.compile_logp()({"z": z0})
    prior_z = model.compile_logp(vars=[model["z"]])({"z": z0})
    terms = []
    for s, w in zip(prior.scale_grid, prior.scale_log_weights, strict=True):
        with pm.Model() as fixed_model:
            zf = pcrp.PowerCRP("z", alpha=1.0, power=1.3, n=25)
            pcrp.NIWMixture("x", z=zf, prior=prior.at_scale(s), observed=x)
        terms.append(w + fixed_model.compile_logp(vars=[fixed_model["x"]])({"z": z0}))
    assert total == pytest.approx(prior_z + logsumexp(terms), rel=1e-11)
    # invalid labels are refused as in the fixed-scale graph
    assert model.compile_logp(vars=[model["x"]])({"z": np.full(25, 30)}) == -np.inf


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"kappa0": 0.0}, "'kappa0'.*> 0"),
        ({"kappa0": -1.0}, "'kappa0'.*> 0"),
        ({"nu0": 1.0}, "'nu0'.*greater than D - 1 = 1"),
        ({"nu0": 0.5}, "'nu0'.*greater than D - 1"),
        ({"psi0": np.array([[1.0, 2.0], [2.0, 1.0]])}, "'psi0'.*positive definite"),
        ({"psi0": np.array([[1.0, 0.5], [0.0, 1.0]])}, "'psi0'.*symmetric"),
        ({"psi0": np.eye(3)}, r"'psi0'.*shape \(2, 2\)"),
        ({"psi0": np.array([[np.nan, 0.0], [0.0, 1.0]])}, "'psi0'.*NaN"),
        ({"mu0": np.array([0.0, np.inf])}, "'mu0'.*finite"),
    ],
)
def test_bad_prior_is_refused(kwargs, match):
    args = {"mu0": np.zeros(2), "kappa0": 1.0, "nu0": 4.0, "psi0": np.eye(2)} | kwargs
    with pytest.raises(ValueError, match=match):
        pcrp.NIWPrior(**args)


def test_from_data_refuses_constant_columns():
    x = np.c_[np.arange(10.0), np.ones(10)]
    with pytest.raises(ValueError, match=r"'X' has constant column\(s\) \[1\]"):
        pcrp.NIWPrior.from_data(x)


@pytest.mark.parametrize(
    ("data", "match"),
    [
        (np.array([[0.0, 1.0], [np.nan, 2.0], [1.0, 1.0]]), "'observed'.*NaN or infinite.*row"),
        (np.array([[0.0, 1.0], [np.inf, 2.0], [1.0, 1.0]]), "'observed'.*NaN or infinite"),
        (np.zeros((3, 2, 1)), r"'observed' must have shape \(N,\) or \(N, D\)"),
        (np.zeros((4, 2)), "'observed' has N = 4 points but 'z' labels 3"),
        (np.zeros((3, 3)), "'observed' has D = 3 columns but 'prior' has dimension 2"),
    ],
)
def test_bad_observed_is_refused(data, match):
    with pm.Model():
        z = pcrp.PowerCRP("z", alpha=1.0, power=1.0, n=3)
        with pytest.raises(ValueError, match=match):
            pcrp.NIWMixture("x", z=z, prior=_prior(2), observed=data)


def test_bad_data_in_from_data_is_refused():
    with pytest.raises(ValueError, match="'X' contains 1 NaN"):
        pcrp.NIWPrior.from_data(np.array([[0.0, 1.0], [np.nan, 2.0], [1.0, 3.0]]))


def test_prior_must_be_an_niw_prior():
    with pytest.raises(TypeError, match="'prior' must be an NIWPrior"):
        pcrp.NIWMixture.dist(z=np.zeros(3, dtype=int), prior={"mu0": 0})


def test_one_d_observed_needs_one_d_prior():
    with pm.Model():
        z = pcrp.PowerCRP("z", alpha=1.0, power=1.0, n=3)
        with pytest.raises(ValueError, match="D = 1 columns but 'prior' has dimension 2"):
            pcrp.NIWMixture("x", z=z, prior=_prior(2), observed=np.zeros(3))
    with pytest.raises(ValueError, match="1-D observed data need a 1-D prior"):
        pcrp.NIWMixture.dist(z=np.zeros(3, dtype=int), prior=_prior(2), shape=(3,))


@pytest.mark.parametrize("learned", [True, False], ids=["learned scale", "fixed scale"])
@pytest.mark.parametrize("case", ["identical points, tiny psi0", "clusters 1e7 apart"])
def test_logp_keeps_its_digits_in_ill_conditioned_cases(case, learned):
    """The model's log density against exact rational arithmetic.

    Issue 13's two cases: sums of outer products lose ~14 digits there, and the
    log density was off by several nats before it took each cluster's scatter
    about its own mean.
    """
    rng = np.random.default_rng(31)
    if case == "clusters 1e7 apart":
        x = rng.normal(size=(60, 2))
        x[:30] += 5e6
        x[30:] -= 5e6
        c = 1.0
    else:
        x = np.empty((200, 2))
        x[:100] = [0.7, -1.3]
        x[100:] = rng.normal(size=(100, 2)) + 4.0
        c = 1e-12
    labels = np.repeat([0, 1], x.shape[0] // 2)
    kappa0, nu0 = 0.01, 4.0
    grid = np.array([0.5, 1.0, 2.0]) if learned else np.array([1.0])
    prior = pcrp.NIWPrior(
        mu0=np.zeros(2), kappa0=kappa0, nu0=nu0, psi0=c * np.eye(2),
        scale_grid=grid if learned else None,
        scale_log_weights=np.log(np.full(3, 1 / 3)) if learned else None,
    )  # fmt: skip
    with pm.Model() as model:
        z = pcrp.PowerCRP("z", alpha=1.0, power=1.0, n=x.shape[0])
        pcrp.NIWMixture("x", z=z, prior=prior, observed=x)
    logp = model.compile_logp()({"z": labels})

    def loglik(scale):
        return sum(niw_log_marginal_exact_2d(x[labels == k], kappa0, nu0, scale) for k in (0, 1))

    exact = sum(math.lgamma(n) for n in np.bincount(labels)) + logsumexp(
        [math.log(1 / grid.size) + loglik(c * g) for g in grid]
    )
    assert logp == pytest.approx(exact, rel=1e-9, abs=1e-7)


@pytest.mark.parametrize("labels", [[0, 0, 5, 1, 1], [0, -1, 0, 1, 1]])
def test_labels_outside_0_to_n_minus_1_are_refused_with_the_reason(labels):
    x = np.random.default_rng(7).normal(size=(5, 2))
    prior = pcrp.NIWPrior.from_data(x)
    reason = r"label -?\d+ at point \d, outside 0\.\.4.*integers in 0\.\.N-1"
    with pytest.raises(ValueError, match=reason):
        pcrp.NIWMixture.dist(z=np.array(labels), prior=prior)
    with pm.Model(), pytest.raises(ValueError, match=reason):
        pcrp.NIWMixture("x", z=pm.Data("z", np.array(labels)), prior=prior, observed=x)
    # labels that become invalid later (pm.set_data): the log density names the reason
    with pm.Model() as model:
        z = pm.Data("z", np.array([0, 0, 2, 1, 1]))
        rv = pcrp.NIWMixture("x", z=z, prior=prior, observed=x)
    assert np.isfinite(model.compile_logp()({}))
    with model:
        pm.set_data({"z": np.array(labels)})
    with pytest.raises(ParameterValueError, match=r"labels z must be integers in 0\.\.N-1"):
        pm.logp(rv, x).eval()
