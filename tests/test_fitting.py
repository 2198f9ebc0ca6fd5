"""fit / build_model / label_draws / observed_points."""

import numpy as np
import pytest

import pymc_pcrp as pcrp


@pytest.fixture(scope="module")
def small_idata():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.normal(-5, 1, (30, 2)), rng.normal(5, 1, (30, 2))])
    return x, pcrp.fit(x, power=1.2, draws=60, tune=40, chains=2, random_seed=3)


def test_fit_returns_labels_data_and_stats(small_idata):
    x, idata = small_idata
    z = pcrp.posterior.label_draws(idata)
    assert z.shape == (2, 60, 60)
    np.testing.assert_array_equal(pcrp.posterior.observed_points(idata), x)
    k = idata.posterior["n_clusters"].values
    np.testing.assert_array_equal(k, z.max(axis=-1) + 1)
    assert "log_joint" in idata.sample_stats
    # Two clusters 10 sd apart: after burn-in the posterior is K = 2, split correctly.
    assert np.mean(k == 2) > 0.9
    last = z[0, -1]
    assert len(set(last[:30])) == 1 and len(set(last[30:])) == 1 and last[0] != last[-1]


def test_fit_is_reproducible(small_idata):
    x, idata = small_idata
    again = pcrp.fit(x, power=1.2, draws=60, tune=40, chains=2, random_seed=3)
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
