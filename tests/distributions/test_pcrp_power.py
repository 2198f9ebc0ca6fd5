"""A random power (and alpha): the normaliser at any r, the density, and PCRPHyper's pieces."""

import math

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
import scipy.special
import scipy.stats

from enumeration import set_partitions
from pymc.sampling.mcmc import assign_step_methods

import pymc_pcrp as pcrp

from pymc_pcrp._kernels import hyperprior as hp
from pymc_pcrp._kernels import normaliser as kn
from pymc_pcrp.distributions.normaliser import (
    PCRPLogNormaliser,
    certify_row,
    log_normaliser,
    prior_k_moments,
    prior_statistic_means,
    stirling_row_arrays,
)

SEED = sum(ord(c) for c in "test_pcrp_power")


def _brute_log_z(n, alpha, r):
    """log Z_n(alpha, r) summed over every set partition."""
    terms = []
    for z in set_partitions(n):
        sizes = np.bincount(z)
        terms.append(sizes.size * math.log(alpha) + r * scipy.special.gammaln(sizes).sum())
    return float(scipy.special.logsumexp(terms))


@pytest.mark.parametrize(("n", "alpha", "r"), [(1, 0.3, 2.0), (5, 1.0, 1.5), (7, 0.2, 0.6)])
def test_recursion_equals_brute_force(n, alpha, r):
    expected = _brute_log_z(n, alpha, r)
    assert log_normaliser(n, alpha, r, "recursion") == pytest.approx(expected, rel=1e-13)
    assert log_normaliser(n, alpha, r, "row") == pytest.approx(expected, rel=1e-13)


@pytest.mark.parametrize(
    ("n", "alpha", "r"), [(300, 2.5, 1.0), (500, 0.05, 1.3), (400, 40.0, 0.8), (2000, 1.0, 1.7)]
)
def test_recursion_equals_stirling_row(n, alpha, r):
    by_row = log_normaliser(n, alpha, r, "row")
    assert log_normaliser(n, alpha, r, "recursion") == pytest.approx(by_row, rel=1e-12)
    if r == 1.0:
        closed = math.lgamma(alpha + n) - math.lgamma(alpha)
        assert log_normaliser(n, alpha, r, "recursion") == pytest.approx(closed, rel=1e-12)


def _brute_means(n, alpha, r):
    """Prior means of K and T = sum_k log Gamma(n_k), summed over every set partition."""
    log_w, k, t = [], [], []
    for z in set_partitions(n):
        sizes = np.bincount(z)
        k.append(sizes.size)
        t.append(scipy.special.gammaln(sizes).sum())
        log_w.append(k[-1] * math.log(alpha) + r * t[-1])
    w = np.exp(np.array(log_w) - scipy.special.logsumexp(log_w))
    return float(w @ np.array(k)), float(w @ np.array(t))


@pytest.mark.parametrize(("n", "alpha", "r"), [(1, 0.3, 2.0), (6, 1.0, 1.5), (8, 0.2, 0.6)])
def test_prior_means_of_k_and_t_equal_brute_force(n, alpha, r):
    mean_k, mean_t = _brute_means(n, alpha, r)
    got_k, got_t = prior_statistic_means(n, alpha, r)
    assert got_k == pytest.approx(mean_k, rel=1e-12)
    assert got_t == pytest.approx(mean_t, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize(("n", "alpha", "r"), [(300, 2.5, 1.0), (2000, 1.0, 1.3)])
def test_prior_mean_of_k_by_recursion_equals_the_stirling_row(n, alpha, r):
    assert prior_statistic_means(n, alpha, r)[0] == pytest.approx(
        prior_k_moments(n, alpha, r)[0], rel=1e-11
    )


@pytest.mark.parametrize("method", ["row", "recursion"])
@pytest.mark.parametrize(("n", "alpha", "r"), [(7, 0.4, 1.7), (200, 1.5, 1.1)])
def test_log_normaliser_gradient_equals_finite_differences(method, n, alpha, r):
    a, p = pt.dscalar("a"), pt.dscalar("p")
    log_z = PCRPLogNormaliser(n, method)(a, p)
    grad_a, grad_p = (g.eval({a: alpha, p: r}) for g in pytensor.grad(log_z, [a, p]))
    h = 1e-6
    fd_a = (log_normaliser(n, alpha + h, r) - log_normaliser(n, alpha - h, r)) / (2 * h)
    fd_p = (log_normaliser(n, alpha, r + h) - log_normaliser(n, alpha, r - h)) / (2 * h)
    assert grad_a == pytest.approx(fd_a, rel=1e-6)
    assert grad_p == pytest.approx(fd_p, rel=1e-6)
    # and exactly the prior means that the derivatives are
    mean_k, mean_t = prior_statistic_means(n, alpha, r)
    assert grad_a == pytest.approx(mean_k / alpha, rel=1e-11)
    assert grad_p == pytest.approx(mean_t, rel=1e-12)


def test_model_gradient_in_a_random_power():
    # d logp / d u for r = 0.8 + 1.2 sigmoid(u): (T(z) - E[T]) dr/du + Jacobian term
    n, labels = 6, np.array([0, 0, 0, 1, 1, 2], dtype="int16")
    with pm.Model() as model:
        r = pm.Uniform("r", 0.8, 2.0)
        pcrp.PowerCRP("z", alpha=0.7, power=r, n=n)
    dlogp = model.compile_dlogp(vars=[r])
    logp = model.compile_logp()
    for u in (-1.0, 0.3, 1.5):
        point = {"z": labels, "r_interval__": u}
        h = 1e-6
        fd = (logp({**point, "r_interval__": u + h}) - logp({**point, "r_interval__": u - h})) / (
            2 * h
        )
        assert float(dlogp(point)[0]) == pytest.approx(fd, rel=1e-6)


def test_unknown_method_is_refused():
    with pytest.raises(ValueError, match="method"):
        log_normaliser(5, 1.0, 1.0, "fast")
    with pytest.raises(ValueError, match="method"):
        PCRPLogNormaliser(5, "fast")


def test_row_kernel_certifies_only_with_enough_columns():
    n, r = 400, 1.2
    certify_row(n, r, math.log(0.5))
    row, bound = stirling_row_arrays(n, r)
    value, ok = kn.row_log_normaliser(row, bound, math.log(0.5), 50.0)
    assert ok
    assert value == pytest.approx(log_normaliser(n, 0.5, r, "recursion"), rel=1e-12)
    # a huge alpha needs columns the row does not have yet
    _, ok = kn.row_log_normaliser(row, bound, math.log(1e6), 50.0)
    assert not ok
    certify_row(n, r, math.log(1e6))
    row, bound = stirling_row_arrays(n, r)
    value, ok = kn.row_log_normaliser(row, bound, math.log(1e6), 50.0)
    assert ok
    assert value == pytest.approx(log_normaliser(n, 1e6, r, "recursion"), rel=1e-12)


def test_label_statistics_kernel():
    labels = np.array([0, 1, 1, 0, 2, 1, 1], dtype=np.int16)
    k, t = hp.label_statistics(labels)
    assert k == 3
    assert t == pytest.approx(math.lgamma(2) + math.lgamma(4) + math.lgamma(1))


@pytest.mark.parametrize(
    ("code", "lower", "upper", "u", "expected"),
    [
        (hp.IDENTITY, 0.0, 0.0, 0.7, 0.7),
        (hp.LOG, 0.0, 0.0, -1.5, math.exp(-1.5)),
        (hp.INTERVAL, 0.8, 2.0, 0.3, 0.8 + 1.2 / (1 + math.exp(-0.3))),
        (hp.INTERVAL, 0.8, 2.0, -40.0, 0.8),
        (hp.LOWER, 0.5, 0.0, 0.2, 0.5 + math.exp(0.2)),
    ],
)
def test_backward_transforms(code, lower, upper, u, expected):
    assert hp.backward(code, u, lower, upper) == pytest.approx(expected, rel=1e-14)


def test_random_power_logp_includes_the_exact_normaliser():
    n = 5
    with pm.Model() as model:
        r = pm.Uniform("r", 0.8, 2.0)
        z = pcrp.PowerCRP("z", alpha=0.7, power=r, n=n)
    logp = model.compile_logp(vars=[z])
    for labels in ([0, 0, 1, 1, 2], [0, 1, 2, 3, 4], [0, 0, 0, 0, 0]):
        for r_value in (0.9, 1.4, 1.95):
            u = math.log((r_value - 0.8) / (2.0 - r_value))
            got = logp({"z": np.array(labels, dtype="int16"), "r_interval__": u})
            sizes = np.bincount(labels)
            expected = (
                sizes.size * math.log(0.7)
                + r_value * scipy.special.gammaln(sizes).sum()
                - _brute_log_z(n, 0.7, r_value)
            )
            assert got == pytest.approx(expected, rel=1e-12)


def test_both_random_normalise_over_partitions():
    # exp(logp) summed over all partitions is one for any (alpha, r)
    n = 6
    with pm.Model() as model:
        a = pm.Gamma("a", 2.0, 1.0)
        r = pm.Uniform("r", 0.5, 2.5)
        z = pcrp.PowerCRP("z", alpha=a, power=r, n=n)
    logp = model.compile_logp(vars=[z])
    for a_value, r_value in ((0.3, 0.7), (2.0, 2.2)):
        point = {
            "a_log__": math.log(a_value),
            "r_interval__": math.log((r_value - 0.5) / (2.5 - r_value)),
        }
        total = scipy.special.logsumexp(
            [logp({**point, "z": np.asarray(zz, dtype="int16")}) for zz in set_partitions(n)]
        )
        assert total == pytest.approx(0.0, abs=1e-12)


def _model(alpha, power, n=12):
    rng = np.random.default_rng(SEED)
    x = np.r_[rng.normal(size=(n // 2, 2)), rng.normal(size=(n - n // 2, 2)) + 4]
    with pm.Model() as model:
        z = pcrp.PowerCRP("z", alpha=alpha(), power=power(), n=n)
        pcrp.NIWMixture("x", z=z, prior=pcrp.NIWPrior.from_data(x), observed=x)
    return model


def test_pm_sample_assigns_pcrp_hyper_to_alpha_and_power():
    with pm.Model() as model:
        a = pm.Gamma("alpha", 2.0, 1.0)
        r = pm.Uniform("r", 0.8, 2.0)
        pcrp.PowerCRP("z", alpha=a, power=r, n=8)
        other = pm.Normal("other", 0.0, 1.0)  # unrelated: NUTS keeps it
        pm.Normal("y", other, 1.0, observed=0.3)
    _, selected = assign_step_methods(model)
    values = model.rvs_to_values
    assert selected[pcrp.PCRPHyper] == [values[model["alpha"]], values[model["r"]]]
    assert selected[pm.NUTS] == [values[model["other"]]]
    assert selected[pcrp.PCRPGibbs] == [values[model["z"]]]


def test_prior_parameters_of_alpha_are_not_claimed():
    # the scale of alpha's prior feeds the PowerCRP only through alpha: NUTS keeps it
    # (alpha itself goes to the labels' step, which owns it: fixed power)
    with pm.Model() as model:
        b = pm.HalfNormal("b", 1.0)
        a = pm.Gamma("alpha", 2.0, b)
        pcrp.PowerCRP("z", alpha=a, power=1.2, n=8)
    _, selected = assign_step_methods(model)
    assert model.rvs_to_values[model["b"]] not in selected.get(pcrp.PCRPHyper, [])
    assert model.rvs_to_values[model["b"]] not in selected.get(pcrp.PCRPGibbs, [])
    assert model.rvs_to_values[model["alpha"]] in selected[pcrp.PCRPGibbs]


@pytest.mark.parametrize(
    ("alpha", "power", "fast"),
    [
        (lambda: pm.Gamma("alpha", 2.0, 1.0), lambda: 1.3, True),
        (lambda: 1.0, lambda: pm.Uniform("r", 0.8, 2.0), True),
        (lambda: pt.exp(pm.Normal("log_alpha", 0.0, 1.0)), lambda: 1.3, False),
        (lambda: pm.Gamma("alpha", 2.0, pm.HalfNormal("b", 1.0)), lambda: 1.3, True),
    ],
    ids=["gamma-alpha", "uniform-r", "expression", "hierarchical"],
)
def test_hyper_step_paths_and_data_independence(alpha, power, fast):
    model = _model(alpha, power)
    name = next(v.name for v in model.free_RVs if v.name in ("alpha", "r", "log_alpha"))
    step = pcrp.PCRPHyper([model[name]], model=model, rng=SEED)
    assert (step.target.surrogate is not None) == fast
    point = model.initial_point()
    point["z"] = np.array([0] * 6 + [1] * 6, dtype="int16")
    value_name = model.rvs_to_values[model[name]].name
    values = []
    for _ in range(30):
        point, stats = step.step(point)
        values.append(float(point[value_name]))
        assert stats[0]["hyper_evals"] >= 2
    assert len(set(values)) > 5  # it moves
    assert np.all(np.isfinite(values))


def test_surrogate_is_a_close_interpolation_of_the_prior_term():
    model = _model(lambda: pm.Gamma("alpha", 2.0, 1.0), lambda: 1.3)
    step = pcrp.PCRPHyper([model["alpha"]], model=model, rng=SEED)
    sur = step.target.surrogate
    for u in (-3.0, -0.4, 0.0, 1.1, 2.5):
        exact = 2.0 * u - math.exp(u)  # Gamma(2, 1) log density of exp(u) plus the Jacobian u
        approx = hp.interpolate(u, sur.q_lo, sur.q_step, sur.q_values)
        # the interpolation error of a grid of step h is below h^2 max|g''| / 8
        assert approx - exact == pytest.approx(
            sur.q_values[0] - (2.0 * sur.q_lo - math.exp(sur.q_lo)), abs=sur.q_step**2 * 2
        )


def test_hyper_step_with_observed_labels_is_a_plain_slice_sampler():
    # observed labels: the PowerCRP term (with its normaliser) is compiled like any other term
    labels = np.array([0, 0, 1, 0, 2, 1], dtype="int16")
    with pm.Model() as model:
        a = pm.Gamma("alpha", 2.0, 1.0)
        pcrp.PowerCRP("z", alpha=a, power=1.2, n=6, observed=labels)
    _, selected = assign_step_methods(model)
    assert selected == {pcrp.PCRPHyper: [model.rvs_to_values[a]]}
    step = pcrp.PCRPHyper([a], model=model, rng=SEED)
    assert step.target.terms == [] and step.target.surrogate is None
    exact = step._conditional(model.initial_point(), [])
    for u in (-1.0, 0.0, 1.5):
        alpha = math.exp(u)
        expected = (
            scipy.stats.gamma(2.0).logpdf(alpha)
            + u
            + 3 * u
            + 1.2 * scipy.special.gammaln([3, 2, 1]).sum()
            - _brute_log_z(6, alpha, 1.2)
        )
        assert exact(u) == pytest.approx(expected, rel=1e-10)


@pytest.mark.parametrize("which", ["alpha", "r"])
@pytest.mark.parametrize("both_random", [False, True])
def test_fast_kernel_density_equals_the_exact_conditional(which, both_random):
    # The numba kernel's target minus its surrogate plus the exact prior term must be the
    # exact conditional (general path), for each configuration of random parameters.
    n = 9
    random_alpha = which == "alpha" or both_random
    random_r = which == "r" or both_random
    with pm.Model() as model:
        a = pm.Gamma("alpha", 2.0, 1.0) if random_alpha else 0.8
        r = pm.Uniform("r", 0.8, 2.0) if random_r else 1.4
        pcrp.PowerCRP("z", alpha=a, power=r, n=n)
    step = pcrp.PCRPHyper([model[which]], model=model, rng=SEED)
    assert step.target.surrogate is not None
    point = model.initial_point()
    point["z"] = np.array([0, 0, 1, 1, 1, 0, 2, 1, 1], dtype="int16")
    if random_r and which == "alpha":
        point["r_interval__"] = np.asarray(0.7)
    if random_alpha and which == "r":
        point["alpha_log__"] = np.asarray(-0.4)
    exact = step._conditional(point, [hp.label_statistics(point["z"])])
    sur = step.target.surrogate
    for u in (-2.0, -0.3, 0.5, 1.7):
        _, (g, _, _), fpar, ipar, row, bound = step._kernel_inputs(point, u)
        missed = np.array([-np.inf])
        value = hp.backward(sur.code, u, sur.lower, sur.upper)
        h = hp.pcrp_log_conditional(
            value,
            sur.is_power,
            bool(ipar[hp.I_USE_ROW]),
            fpar[hp.F_OTHER],
            *hp.label_statistics(point["z"]),
            n,
            row,
            bound,
            fpar[hp.F_NATS],
            missed,
        )
        assert h + g == pytest.approx(exact(u), rel=1e-10, abs=1e-10)


def test_gibbs_tables_follow_a_changing_alpha_with_a_learned_scale():
    # PCRPGibbs shifts the new-cluster weights in place for a new alpha (learned NIW scale)
    # and rewrites the per-size table for a new power: they must equal a fresh computation.
    from pymc_pcrp._kernels.hyper import new_cluster_log_weights
    from pymc_pcrp._kernels.scores import sweep_tables

    rng = np.random.default_rng(SEED)
    x = np.r_[rng.normal(size=(20, 2)), rng.normal(size=(20, 2)) + 4]
    with pm.Model() as model:
        a = pm.Gamma("alpha", 2.0, 1.0)
        r = pm.Uniform("r", 0.8, 2.0)
        z = pcrp.PowerCRP("z", alpha=a, power=r, n=len(x))
        pcrp.NIWMixture("x", z=z, prior=pcrp.NIWPrior.from_data(x), observed=x)
    steps = [
        pcrp.PCRPHyper([a], model=model, rng=1),
        pcrp.PCRPHyper([r], model=model, rng=2),
        pcrp.PCRPGibbs([z], model=model, rng=3),
    ]
    gibbs = steps[2]
    point = model.initial_point()
    seen = set()
    for _ in range(40):
        for step in steps:
            point, _ = step.step(point)
        inputs = gibbs.inputs.cache.inputs
        assert inputs.scale is not None
        seen.add(inputs.params.log_alpha)
        # the tables hold the chain's current nu0 (the default prior learns it)
        params = inputs.params._replace(nu0=float(inputs.scale.nu0s[inputs.scale.current[2]]))
        expected = np.empty(len(x))
        new_cluster_log_weights(inputs.scale, params, inputs.tables[1][0], expected)
        np.testing.assert_allclose(inputs.tables[0], expected, rtol=1e-12, atol=1e-12)
        fresh = sweep_tables(inputs.xc, params)
        np.testing.assert_allclose(inputs.tables[2], fresh[2], rtol=1e-12, atol=1e-12)
    assert len(seen) > 20  # alpha changed at (almost) every draw
