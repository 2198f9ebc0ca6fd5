"""PCRPSlotGibbs: step assignment, the slot conditional, refusals, stats and warnings."""

import math

import numpy as np
import pymc as pm
import pytest
import scipy.stats

import pymc_pcrp as pcrp

from pymc_pcrp._kernels.slot_gibbs import slot_gibbs_sweep

SEED = sum(ord(c) for c in "test_pcrp_slots_step")
QUIET = {"progressbar": False, "compute_convergence_checks": False, "cores": 1}


def _poisson_model(y, k_max=4):
    with pm.Model() as model:
        z = pcrp.PowerCRP("z", alpha=1.0, power=1.2, n=len(y), max_clusters=k_max)
        lam = pm.Gamma("lam", 2.0, 0.5, shape=k_max)
        pm.Poisson("y", lam[z], observed=y)
    return model


def test_pm_sample_gives_the_labels_to_the_slot_step_and_the_rates_to_nuts():
    model = _poisson_model(np.array([0, 1, 9, 10, 11]))
    with model:
        _, selected = pm.sampling.mcmc.assign_step_methods(model)
    names = {cls.__name__: [v.name for v in vs] for cls, vs in selected.items()}
    assert names == {"PCRPSlotGibbs": ["z"], "NUTS": ["lam_log__"]}


def test_one_site_draws_follow_the_conditional_of_the_model():
    # the kernel's conditional of one point against differences of the model's log density
    y = np.array([0, 1, 9, 10, 11, 4])
    model = _poisson_model(y, k_max=4)
    with model:
        step = pcrp.PCRPSlotGibbs([model["z"]])
    point = model.initial_point()
    point["lam_log__"] = np.log([1.0, 10.0, 3.0, 5.0])
    base = np.array([0, 0, 1, 1, 1, 0], dtype=np.int16)  # slots 2 and 3 empty
    logp = model.compile_logp()
    i = 5
    exact = np.array([logp({**point, "z": np.where(np.arange(6) == i, s, base)}) for s in range(4)])
    exact = np.exp(exact - exact.max())
    exact /= exact.sum()
    loglik = step.likelihood.matrix(point)
    rng = np.random.default_rng(SEED)
    draws = np.empty(20_000, dtype=np.int64)
    for t in range(draws.size):
        labels = base.astype(np.int64)
        slot_gibbs_sweep(rng, labels, loglik, math.log(1.0), 1.2, np.array([i]))
        draws[t] = labels[i]
    observed = np.bincount(draws, minlength=4)
    assert scipy.stats.chisquare(observed, exact * draws.size).pvalue > 1e-3


def test_stats_are_the_model_log_density_and_the_number_of_clusters():
    y = np.array([0, 1, 9, 10, 11, 30, 31])
    model = _poisson_model(y)
    with model:
        idata = pm.sample(draws=20, tune=20, chains=1, random_seed=SEED, **QUIET)
    post = idata.posterior
    z = post["z"].values[0]
    k = np.array([len(np.unique(row)) for row in z])
    assert np.array_equal(idata.sample_stats["n_clusters"].values[0], k)
    assert np.array_equal(post["n_clusters"].values[0], k)
    # at the labels of draw t and the rates it was given: NUTS runs after it, so those of t - 1
    logp = model.compile_logp(jacobian=False)
    lam = post["lam"].values[0]
    want = [float(logp({"z": z[t], "lam_log__": np.log(lam[t - 1])})) for t in range(1, 20)]
    assert idata.sample_stats["log_joint"].values[0, 1:] == pytest.approx(want, rel=1e-10)


def test_same_seed_gives_the_same_draws():
    model = _poisson_model(np.array([0, 1, 9, 10, 11]))
    with model:
        a = pm.sample(draws=10, tune=10, chains=2, random_seed=SEED, **QUIET)
        b = pm.sample(draws=10, tune=10, chains=2, random_seed=SEED, **QUIET)
    assert np.array_equal(a.posterior["z"].values, b.posterior["z"].values)
    assert np.array_equal(a.posterior["lam"].values, b.posterior["lam"].values)


def test_a_chain_that_fills_every_slot_is_warned_about():
    y = np.repeat([0, 20, 60, 120], 5)
    model = _poisson_model(y, k_max=2)
    with model, pytest.warns(pcrp.MaxClustersWarning, match="all max_clusters=2 slots"):
        pm.sample(draws=5, tune=5, chains=1, random_seed=SEED, **QUIET)


def test_labels_outside_the_slots_are_refused_with_the_reason():
    model = _poisson_model(np.array([0, 1, 9, 10, 11]), k_max=3)
    with model:
        step = pcrp.PCRPSlotGibbs([model["z"]])
    point = model.initial_point()
    point["z"] = np.array([0, 1, 3, 0, 0], dtype=np.int16)
    with pytest.raises(ValueError, match=r"must be slots 0\.\.2 .* label 3 is at index 2"):
        step.step(point)


def test_a_likelihood_over_all_points_at_once_is_refused():
    y = np.array([0.1, 0.3, 2.0, 2.2])
    with pm.Model():
        z = pcrp.PowerCRP("z", alpha=1.0, power=1.0, n=4, max_clusters=3)
        mu = pm.Normal("mu", 0.0, 3.0, shape=3)
        pm.MvNormal("y", mu=mu[z], cov=np.eye(4), observed=y)
        with pytest.raises(ValueError, match="log density of 'y' is one number for all points"):
            pcrp.PCRPSlotGibbs([z])


def test_a_point_that_depends_on_another_points_label_is_refused():
    y = np.array([0.1, 0.3, 2.0, 2.2])
    with pm.Model():
        z = pcrp.PowerCRP("z", alpha=1.0, power=1.0, n=4, max_clusters=3)
        mu = pm.Normal("mu", 0.0, 3.0, shape=3)
        pm.Normal("y", mu=mu[z][::-1], sigma=1.0, observed=y)
        with pytest.raises(ValueError, match="'y' depends on the labels of other points"):
            pcrp.PCRPSlotGibbs([z])


def test_a_potential_of_the_labels_is_refused():
    with pm.Model():
        z = pcrp.PowerCRP("z", alpha=1.0, power=1.0, n=4, max_clusters=3)
        mu = pm.Normal("mu", 0.0, 3.0, shape=3)
        pm.Normal("y", mu=mu[z], sigma=1.0, observed=np.zeros(4))
        pm.Potential("pen", -(z**2).sum())
        with pytest.raises(ValueError, match=r"'pen' is a pm\.Potential"):
            pcrp.PCRPSlotGibbs([z])


def test_sampling_state_round_trip_resets_the_chain():
    model = _poisson_model(np.array([0, 1, 9, 10, 11]))
    with model:
        step = pcrp.PCRPSlotGibbs([model["z"]], rng=SEED)
    state = step.sampling_state
    point = model.initial_point()
    first, _ = step.step(point)
    step.stop_tuning()
    step.sampling_state = state
    assert step.tune is True
    again, _ = step.step(point)
    assert np.array_equal(first["z"], again["z"])


def test_several_columns_per_point_are_summed_into_one_row():
    y = np.array([[0.1, 0.2], [0.3, 0.1], [2.0, 2.1], [2.2, 1.9]])
    with pm.Model() as model:
        z = pcrp.PowerCRP("z", alpha=1.0, power=1.0, n=4, max_clusters=3)
        mu = pm.Normal("mu", 0.0, 3.0, shape=(3, 2))
        pm.Normal("y", mu=mu[z], sigma=1.0, observed=y)
        step = pcrp.PCRPSlotGibbs([z])
    point = model.initial_point()
    point["mu"] = np.array([[0.0, 0.0], [2.0, 2.0], [5.0, -1.0]])
    want = np.array(
        [[scipy.stats.norm.logpdf(y[i], point["mu"][s]).sum() for i in range(4)] for s in range(3)]
    )
    assert step.likelihood.matrix(point) == pytest.approx(want, rel=1e-12)


def test_sweeps_per_draw_must_be_a_positive_integer():
    model = _poisson_model(np.array([0, 1, 9, 10, 11]))
    with model, pytest.raises(ValueError, match="'sweeps_per_draw' must be an integer >= 1"):
        pcrp.PCRPSlotGibbs([model["z"]], sweeps_per_draw=0)


def _grouped(index_labels_first):
    unit = np.repeat(np.arange(4), 3)  # 4 clustered units, 3 rows each
    y = np.array([0, 1, 0, 2, 1, 1, 9, 12, 10, 11, 8, 10])
    with pm.Model() as model:
        z = pcrp.PowerCRP("z", alpha=1.0, power=1.2, n=4, max_clusters=3)
        lam = pm.Gamma("lam", 2.0, 0.5, shape=3)
        rate = lam[z[unit]] if index_labels_first else lam[z][unit]
        pm.Poisson("y", rate, observed=y)
    return model, unit, y


def test_several_rows_per_unit_are_summed_by_unit():
    model, unit, y = _grouped(True)
    with model:
        step = pcrp.PCRPSlotGibbs([model["z"]])
    point = model.initial_point()
    point["lam_log__"] = np.log([1.0, 10.0, 3.0])
    rows = scipy.stats.poisson.logpmf(y[None, :], np.array([1.0, 10.0, 3.0])[:, None])
    want = np.stack([np.bincount(unit, weights=r) for r in rows])
    assert step.likelihood.matrix(point) == pytest.approx(want, rel=1e-12)


def test_rows_indexed_after_the_labels_are_refused_with_the_fix():
    model, _, _ = _grouped(False)
    with model, pytest.raises(ValueError, match=r"index the labels by .* lam\[z\[unit\]\]"):
        pcrp.PCRPSlotGibbs([model["z"]])
