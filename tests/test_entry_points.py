"""Every PyMC entry point on the README's model either works correctly or refuses clearly.

The model is the README's (a ``PowerCRP`` labels variable feeding an observed
``NIWMixture``, ``NIWPrior.from_data``), on the first 30 Old Faithful eruptions,
with ``alpha`` fixed and, where it matters, with ``alpha`` a random variable.
docs/entry_points.md lists the outcomes these tests check.
"""

import numpy as np
import pymc as pm
import pytest

from pymc.variational.opvi import ParametrizationError

import pymc_pcrp as pcrp

from pymc_pcrp import _entry_points, pymc_integration

N = 30
SAMPLE = {"draws": 20, "tune": 10, "chains": 2, "cores": 1, "progressbar": False}
REFUSED_PPC = "pymc_pcrp.sample_posterior_predictive"


def _data():
    return pcrp.datasets.load_old_faithful()[:N]


def _model(random_alpha: bool = False):
    X = _data()
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 2.0, 1.0) if random_alpha else 1.0
        z = pcrp.PowerCRP("z", alpha=alpha, power=1.1, n=N)
        pcrp.NIWMixture("x", z=z, prior=pcrp.NIWPrior.from_data(X), observed=X)
    return model


def _assert_intact(model) -> None:
    """The model still evaluates and lists each observed variable once."""
    assert [rv.name for rv in model.observed_RVs] == ["x"]
    value = model.compile_logp()(model.initial_point())
    assert np.isfinite(value)


@pytest.fixture(scope="module")
def fitted():
    model = _model()
    with model:
        idata = pm.sample(random_seed=1, compute_convergence_checks=False, **SAMPLE)
    return model, idata


@pytest.fixture(scope="module")
def fitted_random_alpha():
    model = _model(random_alpha=True)
    with model:
        idata = pm.sample(random_seed=2, compute_convergence_checks=False, **SAMPLE)
    return model, idata


def test_the_wrappers_are_installed_on_this_pymc():
    assert pm.sample_posterior_predictive.__wrapped__ is _entry_points.ORIGINAL_PPC
    assert pm.find_MAP.__wrapped__ is _entry_points.ORIGINAL_FIND_MAP
    assert pm.sampling.mcmc.assign_step_methods.__wrapped__ is _entry_points.ORIGINAL_ASSIGN
    assert pm.smc.kernels.SMC_KERNEL.__init__.__wrapped__ is _entry_points.ORIGINAL_SMC_INIT
    assert pymc_integration.install()  # idempotent: still PyMC's functions underneath
    assert pm.sample_posterior_predictive.__wrapped__ is _entry_points.ORIGINAL_PPC


# -- pm.sample_posterior_predictive ------------------------------------------------------------


@pytest.mark.parametrize("which", ["fixed alpha", "random alpha"])
def test_pm_posterior_predictive_draws_cluster_parameters_from_their_posterior(
    which, fitted, fitted_random_alpha
):
    model, idata = fitted if which == "fixed alpha" else fitted_random_alpha
    with model:
        pp = pm.sample_posterior_predictive(idata, random_seed=5)
        reference = pcrp.sample_posterior_predictive(idata, random_seed=5)
    np.testing.assert_array_equal(pp.posterior_predictive["x"], reference.posterior_predictive["x"])
    assert pp.posterior_predictive["x"].shape == (2, 20, N, 2)
    np.testing.assert_array_equal(pp.observed_data["x"], _data())
    _assert_intact(model)


def test_replicated_data_follow_the_posterior_not_the_prior(fitted):
    # Old Faithful's waiting times (column 1) lie within 43..96 minutes. Cluster parameters
    # drawn from their posterior reproduce that range; drawn from the NIW prior (PyMC's own
    # forward draw, the wrong answer) the replicated points scatter far beyond it.
    model, idata = fitted
    with model:
        pp = pm.sample_posterior_predictive(idata, random_seed=6)
    waiting = pp.posterior_predictive["x"].values[..., 1]
    assert 60 < np.median(waiting) < 85
    assert np.mean((waiting < 20) | (waiting > 120)) < 0.01


def test_pm_posterior_predictive_extends_the_inferencedata(fitted):
    model, idata = fitted
    copy = idata.copy()
    with model:
        out = pm.sample_posterior_predictive(copy, random_seed=5, extend_inferencedata=True)
    assert out is copy
    with model:
        reference = pcrp.sample_posterior_predictive(idata, random_seed=5)
    np.testing.assert_array_equal(
        copy.posterior_predictive["x"], reference.posterior_predictive["x"]
    )
    _assert_intact(model)


def test_pm_posterior_predictive_without_niw_draws_is_pymcs(fitted):
    model, idata = fitted
    with model:
        k = pm.sample_posterior_predictive(idata, var_names=["n_clusters"], progressbar=False)
        labels = pm.sample_posterior_predictive(
            idata, var_names=["z"], random_seed=3, progressbar=False
        )
    np.testing.assert_array_equal(
        k.posterior_predictive["n_clusters"], idata.posterior["n_clusters"]
    )
    # var_names=["z"] redraws the labels from the pCRP prior (PyMC's documented meaning)
    z = labels.posterior_predictive["z"].values.reshape(-1, N)
    assert z.dtype == np.int16 and z.min() == 0
    assert not np.array_equal(z, idata.posterior["z"].values.reshape(-1, N))
    _assert_intact(model)


@pytest.mark.parametrize(
    ("kwargs", "reason"),
    [
        ({"var_names": ["z", "x"]}, "var_names mixes the NIWMixture data 'x' with 'z'"),
        ({"predictions": True}, "predictions"),
        ({"sample_dims": ["draw"]}, "sample_dims"),
        ({"return_inferencedata": False}, "return_inferencedata=False"),
    ],
)
def test_pm_posterior_predictive_refuses_what_it_cannot_do_exactly(fitted, kwargs, reason):
    model, idata = fitted
    with model, pytest.raises(NotImplementedError, match=REFUSED_PPC) as info:
        pm.sample_posterior_predictive(idata, **kwargs)
    assert reason in str(info.value)
    with model, pytest.raises(NotImplementedError, match="not the InferenceData"):
        pm.sample_posterior_predictive(idata.posterior)
    _assert_intact(model)


def test_prior_predictive_works_and_leaves_the_model_intact(fitted):
    model, _ = fitted
    with model:
        prior = pm.sample_prior_predictive(draws=10, random_seed=1)
    z = prior.prior["z"].values.reshape(-1, N)
    assert prior.prior_predictive["x"].shape == (1, 10, N, 2)
    np.testing.assert_array_equal(
        prior.prior["n_clusters"].values.ravel(), [len(np.unique(row)) for row in z]
    )
    _assert_intact(model)


def test_models_without_pcrp_variables_keep_pymcs_function():
    with pm.Model() as model:
        mu = pm.Normal("mu")
        pm.Normal("y", mu, 1.0, observed=np.zeros(3))
        prior = pm.sample_prior_predictive(draws=10, random_seed=1)
    prior.add_groups(posterior=prior.prior)
    with model:
        pp = pm.sample_posterior_predictive(prior, var_names=["y"], random_seed=1)
    assert pp.posterior_predictive["y"].shape == (1, 10, 3)


# -- pm.sample_smc, pm.find_MAP, pm.fit, external NUTS ----------------------------------------


def test_sample_smc_refuses_pcrp_labels(fitted):
    model, _ = fitted
    with model, pytest.raises(NotImplementedError, match=r"pm.sample_smc cannot sample .*'z'.*"):
        pm.sample_smc(draws=20, chains=1, cores=1, progressbar=False)
    _assert_intact(model)


def test_smc_kernels_still_work_without_pcrp_labels():
    with pm.Model() as model:
        pm.Normal("mu")
    kernel = pm.smc.kernels.IMH(draws=5, model=model, random_seed=1)
    assert kernel.draws == 5


def test_find_map_refuses_to_optimise_labels(fitted, fitted_random_alpha):
    for model, _ in (fitted, fitted_random_alpha):
        z = model["z"]
        with model:
            with pytest.raises(ValueError, match=r"cannot optimise the PowerCRP labels 'z'"):
                pm.find_MAP(progressbar=False)
            with pytest.raises(ValueError, match=r"pymc_pcrp.point_estimate\(idata\)"):
                pm.find_MAP(vars=[z], progressbar=False)
        _assert_intact(model)


def test_find_map_of_alpha_given_labels_is_the_conditional_mode(fitted_random_alpha):
    model, idata = fitted_random_alpha
    alpha = model["alpha"]
    labels = idata.posterior["z"].values[0, -1]
    with model:
        with pytest.warns(UserWarning, match="keeps the PowerCRP labels 'z' at their initial"):
            pm.find_MAP(vars=[alpha], progressbar=False)
        best = pm.find_MAP(vars=[alpha], start={"z": labels}, progressbar=False)
    np.testing.assert_array_equal(best["z"], labels)
    logp = model.compile_logp(jacobian=False)

    def at(a):
        return logp({"z": labels, "alpha_log__": np.log(a)})

    top = at(float(best["alpha"]))
    assert top >= at(float(best["alpha"]) * 1.02) and top >= at(float(best["alpha"]) / 1.02)


def test_fit_advi_is_refused_by_pymc(fitted):
    model, _ = fitted
    with model, pytest.raises(ParametrizationError, match=r"Discrete variables .* VI: z"):
        pm.fit(n=10, progressbar=False)


@pytest.mark.parametrize("sampler", ["numpyro", "nutpie", "blackjax"])
def test_external_nuts_samplers_are_refused_by_pymc(fitted_random_alpha, sampler):
    model, _ = fitted_random_alpha
    with model, pytest.raises(ValueError, match=r"NUTS alone\. It either has discrete variables"):
        pm.sample(nuts_sampler=sampler, draws=5, tune=5, chains=1, progressbar=False)


# -- step methods ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make_step",
    [
        lambda m: pm.Metropolis([m["z"]]),
        lambda m: pm.Metropolis(),
        lambda m: [pm.Slice([m["z"]])],
        lambda m: pm.BinaryGibbsMetropolis([m["z"]]),
    ],
    ids=["Metropolis(z)", "Metropolis()", "Slice(z)", "BinaryGibbsMetropolis(z)"],
)
def test_generic_steps_on_labels_are_refused(fitted, make_step):
    model, _ = fitted
    with model:
        step = make_step(model)
        with pytest.raises(ValueError, match=r"cannot update the PowerCRP labels 'z'. Only"):
            pm.sample(step=step, **SAMPLE)
    _assert_intact(model)


def test_categorical_gibbs_refuses_labels_itself(fitted):
    model, _ = fitted
    with model, pytest.raises(ValueError, match="must be categorical or binary"):
        pm.CategoricalGibbsMetropolis([model["z"]])


def test_other_steps_for_alpha_leave_the_labels_to_pcrp_gibbs(fitted_random_alpha):
    model, _ = fitted_random_alpha
    with model:
        idata = pm.sample(
            step=[pm.Metropolis([model["alpha"]])],
            random_seed=4,
            compute_convergence_checks=False,
            **SAMPLE,
        )
        explicit = pm.sample(
            step=[pcrp.PCRPGibbs([model["z"]]), pm.Slice([model["alpha"]])],
            random_seed=4,
            compute_convergence_checks=False,
            **SAMPLE,
        )
    for out in (idata, explicit):
        assert "log_joint" in out.sample_stats  # PCRPGibbs ran on the labels
        assert out.posterior["n_clusters"].values.max() > 1
        assert np.all(out.posterior["alpha"].values > 0)


# -- pm.set_data -------------------------------------------------------------------------------


def test_set_data_with_another_length_is_refused_with_how_to_rebuild():
    X = _data()
    with pm.Model():
        data = pm.Data("X", X)
        z = pcrp.PowerCRP("z", alpha=1.0, power=1.1, n=N)
        pcrp.NIWMixture("x", z=z, prior=pcrp.NIWPrior.from_data(X), observed=data)
        idata = pm.sample(random_seed=1, compute_convergence_checks=False, **SAMPLE)
        pm.set_data({"X": X[:20]})
        with pytest.raises(ValueError, match=r"have 20 rows but 'z' labels 30 .*build_model"):
            pm.sample(random_seed=1, **SAMPLE)
        with pytest.raises(ValueError, match=r"have 20 rows but 'z' labels 30 .*X.shape\[0\]"):
            pm.sample_posterior_predictive(idata)
        # the same length is fine: the replicated data follow the new values
        pm.set_data({"X": X[::-1]})
        pp = pm.sample_posterior_predictive(idata, random_seed=1)
    assert pp.posterior_predictive["x"].shape == (2, 20, N, 2)


def test_labels_of_length_x_shape_follow_set_data():
    X = pcrp.datasets.load_old_faithful()
    first, second = X[:N], X[N : N + 20]
    # a fixed scale: the int32 labels then use the kernel the int32 test of PowerCRP compiles
    prior = pcrp.NIWPrior.from_data(first, scale=0.1)
    with pm.Model() as model:
        data = pm.Data("X", first)
        z = pcrp.PowerCRP("z", alpha=1.0, power=1.1, n=data.shape[0])
        pcrp.NIWMixture("x", z=z, prior=prior, observed=data)
        before = pm.sample(random_seed=1, compute_convergence_checks=False, **SAMPLE)
        pm.set_data({"X": second})
        after = pm.sample(random_seed=1, compute_convergence_checks=False, **SAMPLE)
        pp = pm.sample_posterior_predictive(after, random_seed=1)
        with pytest.raises(ValueError, match=r"posterior labels 'z' are for 30 points .* 20 rows"):
            pm.sample_posterior_predictive(before)
    assert before.posterior["z"].shape == (2, 20, N)
    assert after.posterior["z"].shape == (2, 20, 20)
    assert pp.posterior_predictive["x"].shape == (2, 20, 20, 2)
    _assert_intact(model)
    # the resized model samples exactly what a model built on the new data samples
    with pm.Model():
        z = pcrp.PowerCRP("z", alpha=1.0, power=1.1, n=20)
        pcrp.NIWMixture("x", z=z, prior=prior, observed=second)
        fresh = pm.sample(random_seed=1, compute_convergence_checks=False, **SAMPLE)
    np.testing.assert_array_equal(after.posterior["z"].values, fresh.posterior["z"].values)
    np.testing.assert_allclose(
        after.sample_stats["log_joint"].values, fresh.sample_stats["log_joint"].values
    )


def test_random_alpha_needs_a_fixed_number_of_points():
    with pm.Model():
        data = pm.Data("X", _data())
        alpha = pm.Gamma("alpha", 2.0, 1.0)
        with pytest.raises(ValueError, match=r"random 'alpha' needs a fixed number of items"):
            pcrp.PowerCRP("z", alpha=alpha, power=1.1, n=data.shape[0])


def test_set_data_on_the_readme_model_is_refused_by_pymc(fitted):
    model, _ = fitted
    with model, pytest.raises(TypeError, match=r"must be a `SharedVariable`"):
        pm.set_data({"x": _data()[:10]})
