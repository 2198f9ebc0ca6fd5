"""PowerCRP: log density, support, validation and exact prior draws."""

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
import scipy.special
import scipy.stats

from enumeration import log_pcrp_prior_unnorm, set_partitions

import pymc_pcrp as pcrp

from pymc_pcrp._kernels.partitions import log_prior_k
from pymc_pcrp.distributions.pcrp import PowerCRPRV, label_dtype, n_clusters_name, power_crp

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
        a = pcrp.PowerCRP("a", alpha=1.0, power=1.0, n=4)
        first = model2["n_clusters"]
        b = pcrp.PowerCRP("b", alpha=1.0, power=1.0, n=3)
    names = {v.name for v in model2.deterministics}
    # the first variable keeps its count's name (never renamed), the second gets its own
    assert names == {"n_clusters", "b_n_clusters"}
    assert model2["n_clusters"] is first and first.name == "n_clusters"
    assert n_clusters_name(model2, a) == "n_clusters"
    assert n_clusters_name(model2, b) == "b_n_clusters"


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


def test_random_power_is_accepted():
    # A random power is supported (tests/distributions/test_pcrp_power.py checks its density).
    with pm.Model() as model:
        a = pm.Gamma("a", 2.0, 2.0)
        pcrp.PowerCRP("z", alpha=1.0, power=a, n=5)
    assert np.isfinite(model.compile_logp()(model.initial_point()))


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


# -- label dtype: int16 up to 32,768 items, int32 above --------------------------------


@pytest.mark.parametrize(
    ("n", "dtype"),
    [(1, "int16"), (50, "int16"), (32768, "int16"), (32769, "int32"), (10**6, "int32")],
)
def test_label_dtype_is_the_smallest_signed_type_holding_every_label(n, dtype):
    assert label_dtype(n) == dtype
    assert pcrp.PowerCRP.dist(alpha=1.0, power=1.0, n=n).dtype == dtype
    with pm.Model() as model:
        z = pcrp.PowerCRP("z", alpha=1.0, power=1.0, n=n)
    assert z.dtype == dtype
    assert model.rvs_to_values[z].dtype == dtype
    assert model.initial_point()["z"].dtype == dtype
    # Every label 0..n-1 fits; the step method and pcrp's own checks see the op class.
    assert np.iinfo(dtype).max >= n - 1
    assert isinstance(z.owner.op, PowerCRPRV)
    assert pcrp.PCRPGibbs.competence(z, False) == pm.step_methods.compound.Competence.IDEAL


def test_label_dtype_falls_back_to_int32_for_a_non_constant_n():
    assert label_dtype(pt.lscalar("n")) == "int32"
    assert label_dtype(pt.constant(5, dtype="int64")) == "int16"
    assert power_crp(1.0, 1.0, pt.lscalar("n")).dtype == "int32"


def test_power_crp_op_keeps_int32_and_refuses_labels_that_do_not_fit():
    assert power_crp.dtype == "int32"
    assert power_crp(1.0, 1.0, 5).dtype == "int32"
    small = power_crp(1.0, 1.0, 5, dtype="int16")
    assert small.dtype == "int16" and isinstance(small.owner.op, PowerCRPRV)
    with pytest.raises(ValueError, match="int16 labels hold at most 32768 items"):
        power_crp(1.0, 1.0, 32769, dtype="int16")
    with pytest.raises(ValueError, match="signed integer"):
        PowerCRPRV(dtype="float64")


def test_int16_and_int32_prior_draws_agree():
    n = 30
    small = pcrp.PowerCRP.dist(alpha=1.3, power=1.2, n=n)
    large = power_crp(1.3, 1.2, n)
    assert (small.dtype, large.dtype) == ("int16", "int32")
    a = pm.draw(small, draws=20, random_seed=SEED)
    b = pm.draw(large, draws=20, random_seed=SEED)
    assert a.dtype == np.int16 and b.dtype == np.int32
    np.testing.assert_array_equal(a, b)
    # size= draws of the op are of its dtype too
    sized = pcrp.PowerCRP.dist(alpha=1.3, power=1.2, n=n, size=3)
    assert pm.draw(sized, random_seed=SEED).dtype == np.int16
    with pm.Model():
        pcrp.PowerCRP("z", alpha=1.3, power=1.2, n=n)
        prior = pm.sample_prior_predictive(draws=20, random_seed=SEED)
    z = prior.prior["z"].values
    assert z.dtype == np.int16
    np.testing.assert_array_equal(prior.prior["n_clusters"].values, z.max(axis=-1) + 1)


@pytest.mark.parametrize("free_alpha", [False, True])
def test_int16_and_int32_logp_agree(free_alpha):
    n = 6
    # A free alpha (not fixed data) takes the normalised branch of PowerCRP.logp.
    a = pt.dscalar("a")
    alpha = a if free_alpha else 0.7
    small = pcrp.PowerCRP.dist(alpha=alpha, power=1.4, n=n)
    large = power_crp(alpha, 1.4, n)
    assert (small.dtype, large.dtype) == ("int16", "int32")
    z16 = pt.vector("z16", dtype="int16")
    z32 = pt.vector("z32", dtype="int32")
    inputs = [z16, z32, *([a] if free_alpha else [])]
    fn = pm.compile(inputs, [pm.logp(small, z16), pm.logp(large, z32)])
    extra = [1.5] if free_alpha else []
    for labels in set_partitions(n):
        lp16, lp32 = fn(np.array(labels, "int16"), np.array(labels, "int32"), *extra)
        assert lp16 == lp32, labels
        if not free_alpha:
            assert lp16 == pytest.approx(log_pcrp_prior_unnorm(labels, 0.7, 1.4), rel=1e-12)
    for bad in ([1, 0, 0, 0, 0, 0], [0, 2, 1, 1, 0, 0], [0, 1, 2, 6, 0, 0], [0, -1, 0, 0, 0, 0]):
        lp16, lp32 = fn(np.array(bad, "int16"), np.array(bad, "int32"), *extra)
        assert lp16 == lp32 == -np.inf, bad


def test_model_logp_and_n_clusters_with_int16_labels_match_int32():
    """The model's density (pCRP + NIWMixture) and n_clusters are the same for both dtypes."""
    rng = np.random.default_rng(SEED)
    x = np.r_[rng.normal(-3.0, 1.0, (6, 2)), rng.normal(3.0, 1.0, (6, 2))]
    prior = pcrp.NIWPrior.from_data(x)
    labels = np.array([0, 0, 1, 0, 0, 0, 2, 2, 2, 1, 2, 2])
    with pm.Model() as model:
        z = pcrp.PowerCRP("z", alpha=1.0, power=1.3, n=len(x))
        pcrp.NIWMixture("x", z=z, prior=prior, observed=x)
    assert z.dtype == "int16"
    lp16 = model.compile_logp()({"z": labels.astype(np.int16)})
    (count,) = model.replace_rvs_by_values([model["n_clusters"]])
    assert model.compile_fn(count, inputs=model.value_vars)({"z": labels.astype(np.int16)}) == 3
    # The same terms built on int32 labels.
    z32 = pt.vector("z32", dtype="int32")
    niw = pcrp.NIWMixture.dist(z=z32, prior=prior)
    terms = pm.logp(power_crp(1.0, 1.3, len(x)), z32) + pm.logp(niw, x).sum()
    lp32 = pm.compile([z32], terms)(labels.astype(np.int32))
    assert lp16 == pytest.approx(lp32, rel=1e-12)
    assert np.isfinite(lp16)


def _two_groups(n):
    rng = np.random.default_rng(SEED)
    return np.r_[rng.normal(-4.0, 1.0, n // 2), rng.normal(4.0, 1.0, n - n // 2)]


def test_pm_sample_stores_int16_labels_for_small_n():
    with pcrp.build_model(_two_groups(50), power=1.2):
        idata = pm.sample(
            draws=5,
            tune=2,
            chains=1,
            random_seed=SEED,
            progressbar=False,
            compute_convergence_checks=False,
        )
    z = idata.posterior["z"]
    assert z.dtype == np.int16 and z.shape == (1, 5, 50)
    np.testing.assert_array_equal(idata.posterior["n_clusters"].values, z.values.max(axis=-1) + 1)


def test_pm_sample_stores_int32_labels_above_32768_items():
    n = 40000
    with pm.Model():
        pcrp.PowerCRP("z", alpha=1.0, power=1.0, n=n)
        idata = pm.sample(
            draws=2,
            tune=0,
            chains=1,
            random_seed=SEED,
            progressbar=False,
            compute_convergence_checks=False,
        )
    z = idata.posterior["z"]
    assert z.dtype == np.int32 and z.shape == (1, 2, n)
    np.testing.assert_array_equal(idata.posterior["n_clusters"].values, z.values.max(axis=-1) + 1)


def _log_z_by_enumeration(n, alpha, r):
    """log Z_n(alpha, r) as the log-sum over every set partition of n items."""
    terms = [log_pcrp_prior_unnorm(labels, alpha, r) for labels in set_partitions(n)]
    return float(scipy.special.logsumexp(terms))


@pytest.mark.parametrize("changed", [{"alpha": 2.0}, {"power": 1.8}, {"alpha": 2.0, "power": 1.8}])
def test_pm_data_alpha_or_power_keeps_the_normaliser_when_set_data_changes_it(changed):
    n = 6
    labels = np.array([0, 0, 1, 0, 2, 1])
    with pm.Model() as model:
        alpha = pm.Data("alpha", 0.5) if "alpha" in changed else 0.5
        power = pm.Data("power", 1.3) if "power" in changed else 1.3
        pcrp.PowerCRP("z", alpha=alpha, power=power, n=n)
    logp = model.compile_logp()
    point = {"z": labels.astype(model["z"].dtype)}
    before = logp(point)
    with model:
        pm.set_data(changed)
    after = logp(point)

    def exact(alpha, r):
        return log_pcrp_prior_unnorm(labels, alpha, r) - _log_z_by_enumeration(n, alpha, r)

    new = {"alpha": 0.5, "power": 1.3, **changed}
    assert before == pytest.approx(exact(0.5, 1.3), rel=1e-12)
    want = exact(new["alpha"], new["power"]) - exact(0.5, 1.3)
    assert after - before == pytest.approx(want, rel=1e-10)
    # the case: alpha from 0.5 to 2 moves the logp by far less than K log(4)
    if changed == {"alpha": 2.0}:
        assert abs(want - 3 * np.log(4.0)) > 1.0


def test_pm_data_alpha_with_a_resizable_n_keeps_the_normaliser():
    x = np.zeros((5, 1))
    with pm.Model() as model:
        data = pm.Data("X", x)
        alpha = pm.Data("alpha", 0.5)
        pcrp.PowerCRP("z", alpha=alpha, power=1.2, n=data.shape[0])
    logp = model.compile_logp()
    labels = np.array([0, 1, 0, 0, 2], dtype=model["z"].dtype)
    want = log_pcrp_prior_unnorm(labels, 0.5, 1.2) - _log_z_by_enumeration(5, 0.5, 1.2)
    assert logp({"z": labels}) == pytest.approx(want, rel=1e-12)
    with model:
        pm.set_data({"X": np.zeros((4, 1)), "alpha": 2.0})
    labels = labels[:4]
    want = log_pcrp_prior_unnorm(labels, 2.0, 1.2) - _log_z_by_enumeration(4, 2.0, 1.2)
    assert logp({"z": labels}) == pytest.approx(want, rel=1e-12)


def test_constant_alpha_and_power_leave_the_normaliser_out():
    with pm.Model() as model:
        pcrp.PowerCRP("z", alpha=pt.constant(0.5) * 2.0, power=1.3, n=6)
    labels = np.array([0, 0, 1, 0, 2, 1], dtype=model["z"].dtype)
    want = log_pcrp_prior_unnorm(labels, 1.0, 1.3)
    assert model.compile_logp()({"z": labels}) == pytest.approx(want, rel=1e-12)
