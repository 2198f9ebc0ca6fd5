"""PowerCRP: log density, support, validation and exact prior draws."""

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
import scipy.stats

from enumeration import log_pcrp_prior_unnorm, set_partitions

import pymc_pcrp as pcrp

from pymc_pcrp._kernels.partitions import log_prior_k

SEED = sum(ord(c) for c in "test_pcrp")


@pytest.mark.parametrize(("alpha", "r"), [(1.0, 1.0), (0.4, 1.5), (2.5, 2.0), (1.0, 0.5)])
def test_logp_is_unnormalised_joint_on_all_partitions(alpha, r):
    value = pt.lvector("z")
    logp = pm.logp(pcrp.PowerCRP.dist(alpha=alpha, power=r, n=6), value)
    fn = pm.compile([value], logp)
    for labels in set_partitions(6):
        assert fn(labels) == pytest.approx(log_pcrp_prior_unnorm(labels, alpha, r), rel=1e-12)


def test_logp_is_minus_inf_off_the_canonical_support():
    value = pt.lvector("z")
    fn = pm.compile([value], pm.logp(pcrp.PowerCRP.dist(alpha=1.0, power=1.5, n=4), value))
    for bad in ([1, 1, 0, 0], [0, 2, 1, 1], [0, 0, 2, 2], [0, -1, 0, 0], [0, 1, 2, 4]):
        assert fn(np.array(bad)) == -np.inf, bad
    assert np.isfinite(fn(np.array([0, 1, 0, 2])))


def test_model_logp_of_support_point():
    with pm.Model() as model:
        pcrp.PowerCRP("z", alpha=2.0, power=1.5, n=5)
    point = model.initial_point()
    np.testing.assert_array_equal(point["z"], np.zeros(5))
    expected = np.log(2.0) + 1.5 * np.log(24.0)
    assert model.compile_logp()(point) == pytest.approx(expected)


def test_n_clusters_deterministic_and_names():
    with pm.Model() as model:
        pcrp.PowerCRP("z", alpha=1.0, power=1.0, n=4)
    assert "n_clusters" in model.named_vars
    (count,) = model.replace_rvs_by_values([model["n_clusters"]])
    fn = model.compile_fn(count, inputs=model.value_vars)
    assert fn({"z": np.array([0, 1, 0, 2])}) == 3

    with pm.Model() as model2:
        pcrp.PowerCRP("a", alpha=1.0, power=1.0, n=4)
        pcrp.PowerCRP("b", alpha=1.0, power=1.0, n=3)
    names = {v.name for v in model2.deterministics}
    assert names == {"a_n_clusters", "b_n_clusters"}
    assert "n_clusters" not in model2.named_vars


@pytest.mark.parametrize(
    "labels",
    [
        [0, 1, 0, 2],
        [5, 5, 5, 5],
        [3, 1, 3, 0, 7],  # not canonical
        [-2, 4, -2, 9],  # negative: sorted fallback
        [0, 10**9, 10**9, 3],  # far beyond 4n: sorted fallback
        [0],
    ],
)
def test_num_distinct_op_counts_distinct_values(labels):
    x = np.asarray(labels, dtype=np.int32)
    assert pcrp.distributions.pcrp.num_distinct(x).eval() == len(set(labels))
    batch = np.stack([x, np.zeros_like(x)])
    out = pcrp.distributions.pcrp.num_distinct(batch).eval()
    np.testing.assert_array_equal(out, [len(set(labels)), 1])


def test_num_distinct_op_refuses_floats():
    with pytest.raises(TypeError, match="integer tensor"):
        pcrp.distributions.pcrp.num_distinct(pt.vector("x", dtype="float64"))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"alpha": 0.0, "power": 1.0, "n": 3}, "'alpha'.*> 0"),
        ({"alpha": -1.0, "power": 1.0, "n": 3}, "'alpha'.*> 0"),
        ({"alpha": np.nan, "power": 1.0, "n": 3}, "'alpha'"),
        ({"alpha": 1.0, "power": 0.0, "n": 3}, "'power'.*> 0"),
        ({"alpha": 1.0, "power": -2.0, "n": 3}, "'power'.*> 0"),
        ({"alpha": 1.0, "power": 1.0, "n": 0}, "'n'.*positive integer"),
        ({"alpha": 1.0, "power": 1.0, "n": 2.5}, "'n'.*positive integer"),
        ({"alpha": [1.0, 2.0], "power": 1.0, "n": 3}, "'alpha'.*scalar"),
    ],
)
def test_bad_arguments_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        pcrp.PowerCRP.dist(**kwargs)


def test_random_power_is_refused():
    # A random alpha is supported (tests/distributions/test_pcrp_alpha.py); power is not.
    with pm.Model():
        a = pm.Gamma("a", 2.0, 2.0)
        with pytest.raises(ValueError, match=r"'power'.*random variable.*normalising constant"):
            pcrp.PowerCRP("z", alpha=1.0, power=a, n=5)


def test_pm_data_alpha_is_allowed():
    with pm.Model() as model:
        alpha = pm.Data("alpha", 1.0)
        pcrp.PowerCRP("z", alpha=alpha, power=1.2, n=3)
    assert np.isfinite(model.compile_logp()(model.initial_point()))


@pytest.mark.parametrize(("alpha", "r"), [(1.0, 1.0), (1.0, 1.5), (3.0, 1.2)])
def test_prior_draws_match_exact_prior_on_k(alpha, r):
    n, draws = 30, 4000
    with pm.Model():
        pcrp.PowerCRP("z", alpha=alpha, power=r, n=n)
        prior = pm.sample_prior_predictive(draws=draws, random_seed=SEED)
    z = prior.prior["z"].values.reshape(draws, n)
    # draws are canonical label vectors
    for row in z[:50]:
        first = [int(np.flatnonzero(row == k)[0]) for k in range(row.max() + 1)]
        assert first == sorted(first)
    k = z.max(axis=1) + 1
    np.testing.assert_array_equal(prior.prior["n_clusters"].values.ravel(), k)
    p = np.exp(log_prior_k(n, alpha, r, n))
    observed = np.bincount(k, minlength=n + 1)
    keep = p * draws >= 5
    expected = np.r_[p[keep], p[~keep].sum()] * draws
    counts = np.r_[observed[keep], observed[~keep].sum()]
    chi2 = ((counts - expected) ** 2 / expected).sum()
    pval = scipy.stats.chi2.sf(chi2, df=len(counts) - 1)
    assert pval > 1e-3, (pval, counts, expected)
