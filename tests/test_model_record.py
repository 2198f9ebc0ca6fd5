"""One record of the model: pm.sample and fit record power, alpha and the NIW prior alike.

predict, predictive_density and log_likelihood read that record; a random alpha
or power is used draw by draw; conflicting, symbolic or missing values are
refused. Also the checks predict makes of what it is given (columns by name,
rows far outside the fitted data, NaN in the stored data).
"""

import warnings

import arviz as az
import numpy as np
import pandas as pd
import pymc as pm
import pytensor.tensor as pt
import pytest
import xarray as xr

import pymc_pcrp as pcrp

from pymc_pcrp.posterior.prediction import predict, predictive_density

SEED = sum(ord(c) for c in "test_model_record")
SAMPLE = {"draws": 10, "tune": 10, "chains": 2, "progressbar": False}
QUIET = {**SAMPLE, "compute_convergence_checks": False}
RECORD = ["power", "alpha", "mu0", "kappa0", "nu0", "psi0"]


def _data(n=24):
    rng = np.random.default_rng(SEED)
    return np.r_[
        rng.normal([-3.0, 0.0], 1.0, (n // 2, 2)), rng.normal([3.0, 1.0], 1.0, (n // 2, 2))
    ]


def _hand_model(x, alpha, power, prior):
    with pm.Model() as model:
        z = pcrp.PowerCRP("z", alpha=alpha, power=power, n=len(x))
        pcrp.NIWMixture("x", z=z, prior=prior, observed=x)
    return model


def test_pm_sample_records_what_fit_records():
    x = _data()
    prior = pcrp.NIWPrior.from_data(x)
    fitted = pcrp.fit(x, power=1.2, alpha=0.7, prior=prior, random_seed=SEED, **QUIET)
    with _hand_model(x, 0.7, 1.2, prior):
        sampled = pm.sample(random_seed=SEED + 1, **QUIET)
    ours, theirs = sampled.constant_data, fitted.constant_data
    assert ours.attrs == theirs.attrs
    xr.testing.assert_identical(ours, theirs)
    assert ours.attrs["pcrp_parameters"].startswith("power, alpha, mu0")
    # the same draws give the same probabilities whichever of the two records they carry
    new = x[:5] + 0.3
    with_fit_record = sampled.copy()
    with_fit_record.constant_data = theirs
    got = predict(sampled, new)
    np.testing.assert_array_equal(got.probabilities, predict(with_fit_record, new).probabilities)
    explicit = predict(sampled, new, power=1.2, alpha=0.7, prior=prior)
    np.testing.assert_array_equal(got.probabilities, explicit.probabilities)


def _one_draw(idata, chain, draw):
    """The InferenceData of one posterior draw, without a record."""
    return az.from_dict(
        posterior={"z": idata.posterior["z"].values[chain, draw][None, None]},
        observed_data={"x": idata.observed_data["x"].values},
        sample_stats={
            name: idata.sample_stats[name].values[chain, draw][None, None]
            for name in ("niw_scale", "niw_nu0")
        },
    )


@pytest.mark.parametrize("which", ["alpha", "power", "both", "expression"])
def test_predict_uses_every_draws_random_alpha_and_power(which):
    x = _data()
    prior = pcrp.NIWPrior.from_data(x)
    with pm.Model() as model:
        if which == "expression":
            log_alpha = pm.Normal("log_alpha", 0.0, 0.5)
            alpha = pt.exp(log_alpha)
        else:
            alpha = pm.Gamma("alpha", 2.0, 2.0) if which in ("alpha", "both") else 0.7
        power = pm.Uniform("r", 0.9, 1.6) if which in ("power", "both") else 1.2
        z = pcrp.PowerCRP("z", alpha=alpha, power=power, n=len(x))
        pcrp.NIWMixture("x", z=z, prior=prior, observed=x)
        idata = pm.sample(random_seed=SEED + 2, **QUIET)
    attrs = idata.constant_data.attrs
    alpha_name = {"alpha": "alpha", "both": "alpha", "expression": "pcrp_alpha"}.get(which)
    power_name = "r" if which in ("power", "both") else None
    assert attrs.get("pcrp_alpha_draws") == alpha_name
    assert attrs.get("pcrp_power_draws") == power_name
    if which == "expression":
        np.testing.assert_allclose(
            idata.posterior["pcrp_alpha"], np.exp(idata.posterior["log_alpha"]), rtol=1e-12
        )
    alphas = idata.posterior[alpha_name].values if alpha_name else np.full((2, 10), 0.7)
    powers = idata.posterior[power_name].values if power_name else np.full((2, 10), 1.2)
    assert np.unique(alphas).size > 1 or np.unique(powers).size > 1

    new = np.array([[-3.0, 0.0], [3.0, 1.0], [0.0, 8.0]])
    training = pcrp.point_estimate(idata, random_seed=0).labels
    got = predict(idata, new, point=training)
    # by hand: each draw's prediction with that draw's alpha and r, then the average
    total = np.zeros_like(got.probabilities)
    for chain in range(2):
        for draw in range(10):
            one = predict(
                _one_draw(idata, chain, draw),
                new,
                power=powers[chain, draw],
                alpha=alphas[chain, draw],
                prior=prior,
                point=training,
            )
            total += one.probabilities
    np.testing.assert_allclose(got.probabilities, total / 20, rtol=1e-10, atol=1e-14)
    # log_likelihood reads the same record as it reads the model
    from_record = pcrp.posterior.log_likelihood(idata, extend_inferencedata=False)["x"]
    from_model = pcrp.posterior.log_likelihood(idata, model=model, extend_inferencedata=False)
    np.testing.assert_allclose(from_record.values, from_model["x"].values, rtol=1e-12)
    assert np.isfinite(predictive_density(idata, new)).all()


def test_conflicting_symbolic_and_missing_values_are_refused():
    x = _data(16)
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 2.0, 2.0)
        z = pcrp.PowerCRP("z", alpha=alpha, power=1.2, n=len(x))
        pcrp.NIWMixture("x", z=z, prior=pcrp.NIWPrior.from_data(x), observed=x)
        idata = pm.sample(random_seed=SEED + 3, **QUIET)
    with pytest.raises(ValueError, match=r"'power' = 1.1 conflicts with the power = 1.2"):
        predict(idata, x[:2], power=1.1)
    with pytest.raises(ValueError, match=r"'alpha' = 1 conflicts with the record: the posterior"):
        predict(idata, x[:2], alpha=1.0)
    with pytest.raises(TypeError, match=r"'alpha' is the PyMC variable 'alpha', not a number"):
        predict(idata, x[:2], alpha=model["alpha"])
    with pytest.raises(TypeError, match=r"'power' is the PyMC variable"):
        predict(idata, x[:2], power=pt.as_tensor_variable(1.2))
    predict(idata, x[:2], power=1.2, alpha="alpha")  # agreeing values are accepted
    dropped = idata.copy()
    dropped.posterior = dropped.posterior.drop_vars("alpha")
    with pytest.raises(ValueError, match=r"'alpha' of idata.posterior, which holds no such"):
        predict(dropped, x[:2])
    bare = idata.copy()
    del bare.constant_data
    with pytest.raises(ValueError, match=r"does not record.*record_model\(idata, model\)"):
        predict(bare, x[:2])
    assert pcrp.record_model(bare, model)
    np.testing.assert_array_equal(
        predict(bare, x[:2]).probabilities, predict(idata, x[:2]).probabilities
    )


def test_record_model_of_a_model_without_a_pcrp_mixture_is_a_no_op():
    with pm.Model() as model:
        pm.Normal("mu")
    idata = az.from_dict(posterior={"mu": np.zeros((1, 3))})
    assert pcrp.record_model(idata, model) is False
    assert "constant_data" not in idata.groups()


def _frame_fit():
    rng = np.random.default_rng(SEED + 4)
    frame = pd.DataFrame(
        {
            "length": np.r_[rng.normal(-2.0, 0.5, 15), rng.normal(2.0, 0.5, 15)],
            "width": np.r_[rng.normal(0.0, 0.5, 15), rng.normal(1.0, 0.5, 15)],
            "depth": np.r_[rng.normal(5.0, 0.5, 15), rng.normal(-5.0, 0.5, 15)],
        }
    )
    return frame, pcrp.fit(frame, power=1.1, random_seed=SEED, **QUIET)


def test_dataframe_columns_are_matched_by_name():
    frame, idata = _frame_fit()
    new = frame.iloc[[0, 20, 29]]
    base = predict(idata, new.to_numpy())
    reordered = predict(idata, new[["depth", "length", "width"]])
    np.testing.assert_array_equal(reordered.probabilities, base.probabilities)
    with pytest.raises(ValueError, match=r"lacks the column\(s\) \['width'\]"):
        predict(idata, new[["depth", "length"]])
    with pytest.raises(ValueError, match=r"the column\(s\) \['id'\] that the model was not"):
        predict(idata, new.assign(id=[1, 2, 3]))
    # an array fit has no feature names: a DataFrame is then taken in its column order
    plain = pcrp.fit(frame.to_numpy(), power=1.1, random_seed=SEED, **QUIET)
    by_position = predict(plain, new[["depth", "length", "width"]])
    np.testing.assert_array_equal(
        by_position.probabilities,
        predict(plain, new[["depth", "length", "width"]].to_numpy()).probabilities,
    )


def test_rows_far_outside_the_fitted_data_warn_with_the_likely_cause():
    frame, _ = _frame_fit()
    mean, sd = frame.mean(), frame.std(ddof=0)
    standardised = (frame - mean) / sd
    idata = pcrp.fit(standardised, power=1.1, random_seed=SEED, **QUIET)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        predict(idata, standardised.iloc[:4])  # rows like the fitted ones: no warning
    raw = frame.iloc[:4] * 10.0
    with pytest.warns(UserWarning, match=r"4 of 4 row\(s\).*standardised data.*transform X_new"):
        result = predict(idata, raw)
    assert (result.labels == -1).all()  # the cause of the warning: all new clusters
    unscaled = pcrp.fit(frame, power=1.1, random_seed=SEED, **QUIET)
    far = frame.iloc[:2] + np.array([0.0, 0.0, 1000.0])
    with pytest.warns(UserWarning, match=r"feature 'depth'.*units, scaling and column order"):
        predict(unscaled, far)


def test_nan_in_the_stored_observed_data_is_refused():
    x = _data(16)
    idata = pcrp.fit(x, power=1.1, random_seed=SEED, **QUIET)
    idata.observed_data["x"][3, 1] = np.nan
    with pytest.raises(ValueError, match=r"NaN or infinite values in 1 row\(s\) \(positions 3\)"):
        predict(idata, x[:2])
    with pytest.raises(ValueError, match="observed_data"):
        pcrp.posterior.log_likelihood(idata)


def test_cli_idata_keeps_the_column_names(tmp_path):
    import argparse

    from pymc_pcrp.cli.cluster import add_cluster_parser, run_cluster

    frame, _ = _frame_fit()
    path = tmp_path / "data.csv"
    frame[["width", "length"]].to_csv(path, index=False)
    out = tmp_path / "out"
    parser = argparse.ArgumentParser(prog="python -m pymc_pcrp")
    add_cluster_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(
        ["cluster", str(path), "--power", "1.1", "--draws", "20", "--tune", "10",
         "--chains", "1", "--seed", "1", "--out", str(out)]
    )  # fmt: skip
    assert run_cluster(args) == 0
    idata = az.from_netcdf(out / "idata.nc")
    assert list(idata.observed_data["x"].coords["feature"].values) == ["width", "length"]
    assert list(idata.constant_data["mu0"].coords["feature"].values) == ["width", "length"]
    swapped = predict(idata, frame[["length", "width"]].iloc[:3])
    np.testing.assert_array_equal(
        swapped.probabilities, predict(idata, frame[["width", "length"]].iloc[:3]).probabilities
    )


def test_a_model_with_two_pcrp_mixtures_samples_without_a_record():
    x = _data(16)
    with pm.Model() as model:
        for name, part in (("a", x[:8]), ("b", x[8:])):
            z = pcrp.PowerCRP(f"z_{name}", alpha=1.0, power=1.1, n=len(part))
            pcrp.NIWMixture(f"x_{name}", z=z, prior=pcrp.NIWPrior.from_data(x), observed=part)
        with warnings.catch_warnings():
            warnings.simplefilter("error", UserWarning)
            idata = pm.sample(random_seed=SEED, **QUIET)
    assert "constant_data" not in idata.groups()
    with pytest.raises(ValueError, match="several observed NIWMixture variables"):
        pcrp.record_model(idata, model)
