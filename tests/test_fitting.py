"""fit / build_model / label_draws / observed_points."""

import arviz as az
import numpy as np
import pandas as pd
import pytest

import pymc_pcrp as pcrp


@pytest.fixture(scope="module")
def small_idata():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.normal(-5, 1, (30, 2)), rng.normal(5, 1, (30, 2))])
    # 2 chains x 60 draws cannot reach a bulk ESS of 200; fit says so.
    with pytest.warns(pcrp.ConvergenceWarning, match="bulk ESS"):
        idata = pcrp.fit(x, power=1.2, draws=60, tune=40, chains=2, random_seed=3)
    return x, idata


def test_fit_returns_labels_data_and_stats(small_idata):
    x, idata = small_idata
    z = pcrp.posterior.label_draws(idata)
    assert z.shape == (2, 60, 60)
    np.testing.assert_array_equal(pcrp.posterior.observed_points(idata), x)
    k = idata.posterior["n_clusters"].values
    np.testing.assert_array_equal(k, z.max(axis=-1) + 1)
    assert "log_joint" in idata.sample_stats
    # Two clusters 10 sd apart: after burn-in the posterior is K = 2, split correctly
    # (a draw may still hold a point alone now and then; the point estimate does not).
    assert np.mean(k == 2) > 0.9
    best = pcrp.point_estimate(idata).labels
    assert len(set(best[:30])) == 1 and len(set(best[30:])) == 1 and best[0] != best[-1]


def test_fit_is_reproducible(small_idata):
    x, idata = small_idata
    again = pcrp.fit(
        x, power=1.2, draws=60, tune=40, chains=2, random_seed=3, compute_convergence_checks=False
    )
    np.testing.assert_array_equal(
        pcrp.posterior.label_draws(idata), pcrp.posterior.label_draws(again)
    )


def test_build_model_dims_and_validation():
    model = pcrp.build_model(np.arange(10.0), power=1.5)
    assert model.named_vars_to_dims["z"] == ("obs_id",)
    assert model.named_vars_to_dims["x"] == ("obs_id", "feature")
    with pytest.raises(ValueError, match="'X'"):
        pcrp.build_model(np.array([1.0, np.nan]))
    with pytest.raises(ValueError, match="'power'"):
        pcrp.build_model(np.arange(3.0), power=0.0)
    with pytest.raises(ValueError, match="'alpha'"):
        pcrp.build_model(np.arange(3.0), alpha=-1.0)
    with pytest.raises(ValueError, match="'prior'"):
        pcrp.build_model(np.arange(3.0), prior={"kappa0": 1})


def test_label_draws_errors(small_idata):
    _, idata = small_idata
    with pytest.raises(ValueError, match="var_name"):
        pcrp.posterior.label_draws(idata, "nope")
    with pytest.raises(ValueError, match="not a label vector"):
        pcrp.posterior.label_draws(idata, "n_clusters")
    bare = idata.copy()
    del bare.posterior["z"]
    with pytest.raises(ValueError, match="var_names"):
        pcrp.posterior.label_draws(bare)


def test_fit_stores_power_alpha_and_prior_in_constant_data(small_idata, tmp_path):
    x, idata = small_idata
    prior = pcrp.NIWPrior.from_data(x)
    cd = idata.constant_data
    assert float(cd["power"]) == 1.2 and float(cd["alpha"]) == 1.0
    assert cd["mu0"].dims == ("feature",) and cd["psi0"].dims == ("feature", "feature_bis")
    np.testing.assert_array_equal(cd["mu0"].values, prior.mu0)
    np.testing.assert_array_equal(cd["psi0"].values, prior.psi0)
    assert (float(cd["kappa0"]), float(cd["nu0"])) == (prior.kappa0, prior.nu0)
    path = tmp_path / "idata.nc"
    idata.to_netcdf(str(path))
    stored = pcrp.posterior.prediction.resolve_model_parameters(
        az.from_netcdf(str(path)), None, None, None
    )
    assert stored[:2] == (1.2, 1.0)
    np.testing.assert_array_equal(stored[2].psi0, prior.psi0)
    # the default prior learns nu0: its grid and weights come back, and every draw's nu0
    # (the stat niw_nu0) is a grid value
    np.testing.assert_array_equal(stored[2].nu0_grid, prior.nu0_grid)
    np.testing.assert_array_equal(stored[2].nu0_log_weights, prior.nu0_log_weights)
    assert cd["nu0_grid"].dims == ("niw_nu0_grid",)
    drawn = idata.sample_stats["niw_nu0"].values
    assert np.isin(drawn, prior.nu0_grid).all()
    # a draw off the grid means another prior was sampled: refused
    other = idata.copy()
    other.sample_stats["niw_nu0"] = other.sample_stats["niw_nu0"] + 0.5
    with pytest.raises(ValueError, match="'niw_nu0' values are not on the prior's nu0 grid"):
        pcrp.predict(other, x[:2])


def test_an_explicit_prior_and_alpha_are_stored():
    x = np.random.default_rng(1).normal(size=(12, 2))
    prior = pcrp.NIWPrior(mu0=[1.0, -1.0], kappa0=0.5, nu0=5.0, psi0=[[2.0, 0.3], [0.3, 1.0]])
    idata = pcrp.fit(
        x, power=1.3, alpha=0.4, prior=prior, draws=5, tune=2, chains=1, random_seed=0,
        compute_convergence_checks=False,
    )  # fmt: skip
    cd = idata.constant_data
    assert float(cd["alpha"]) == 0.4 and float(cd["power"]) == 1.3
    np.testing.assert_array_equal(cd["mu0"].values, [1.0, -1.0])
    np.testing.assert_array_equal(cd["psi0"].values, [[2.0, 0.3], [0.3, 1.0]])
    assert (float(cd["kappa0"]), float(cd["nu0"])) == (0.5, 5.0)


def test_dataframe_labels_become_coords():
    rng = np.random.default_rng(2)
    frame = pd.DataFrame(
        rng.normal(size=(15, 2)),
        columns=["duration", "waiting"],
        index=pd.Index([f"day {i}" for i in range(15)], name="day"),
    )
    idata = pcrp.fit(
        frame, power=1.1, draws=5, tune=2, chains=1, random_seed=0,
        compute_convergence_checks=False,
    )  # fmt: skip
    for group in (idata.posterior["z"], idata.observed_data["x"]):
        assert list(group["obs_id"].values) == list(frame.index)
    assert list(idata.observed_data["feature"].values) == ["duration", "waiting"]
    assert list(idata.constant_data["feature_bis"].values) == ["duration", "waiting"]
    np.testing.assert_array_equal(idata.observed_data["x"].values, frame.to_numpy())
    series = pd.Series(rng.normal(size=9), index=np.arange(100, 109), name="height")
    one = pcrp.fit(
        series, power=1.1, draws=5, tune=2, chains=1, random_seed=0,
        compute_convergence_checks=False,
    )  # fmt: skip
    assert one.observed_data["x"].shape == (9, 1)
    assert list(one.observed_data["obs_id"].values) == list(range(100, 109))
    assert list(one.observed_data["feature"].values) == ["height"]
    model = pcrp.build_model(pd.DataFrame({0: [1.0, 2.0, 4.0], "b": [0.0, 1.0, 3.0]}))
    assert list(model.coords["feature"]) == ["0", "b"]  # mixed labels become strings
