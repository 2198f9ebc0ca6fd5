"""The table family after sampling: the record, predict, the pointwise log-likelihood, LOO.

Every number is checked against a brute-force computation from
:func:`~pymc_pcrp.distributions._table_numpy.table_log_predictive` (a difference
of two log marginal likelihoods, row by row), independent of the vectorised
predictive the package uses.
"""

import arviz as az
import numpy as np
import pandas as pd
import pymc as pm
import pytest

from scipy.special import logsumexp

import pymc_pcrp as pcrp

from pymc_pcrp._table_record import stored_table_parameters
from pymc_pcrp.distributions._table_numpy import table_log_predictive

SEED = 20261203


def _table(n=24, seed=SEED):
    """Two groups of rows, a missing cell in three of the four columns."""
    rng = np.random.default_rng(seed)
    group = np.arange(n) % 2
    df = pd.DataFrame(
        {
            "smoker": np.where(group == 0, rng.random(n) < 0.9, rng.random(n) < 0.1),
            "region": pd.Categorical(
                np.where(group == 0, rng.choice(["north", "east"], n), "south")
            ),
            "visits": rng.poisson(np.where(group == 0, 1.0, 6.0)),
            "age": rng.normal(np.where(group == 0, 30.0, 60.0), 4.0),
        }
    )
    df["smoker"] = df["smoker"].astype("boolean")
    df.loc[2, "smoker"] = pd.NA
    df.loc[3, "age"] = np.nan
    df.loc[5, "region"] = np.nan
    return df


COLUMNS = {"visits": "poisson"}


@pytest.fixture(scope="module")
def fitted():
    df = _table()
    idata = pcrp.fit(
        df, columns=COLUMNS, power=1.2, alpha=0.7, draws=60, tune=30, chains=2,
        random_seed=SEED, compute_convergence_checks=False,
    )  # fmt: skip
    return df, idata


@pytest.fixture(scope="module")
def sampled():
    df = _table()
    with pm.Model():
        z = pcrp.PowerCRP("z", alpha=0.7, power=1.2, n=len(df))
        pcrp.TableMixture("x", z=z, columns=COLUMNS, observed=df)
        idata = pm.sample(
            draws=40, tune=20, chains=1, random_seed=SEED, progressbar=False,
            compute_convergence_checks=False,
        )  # fmt: skip
    return df, idata


def _brute_predict(idata, df, new):
    """predict's probabilities from the definition, one cluster block at a time."""
    spec = pcrp.table_spec(df, COLUMNS)
    x, mask = spec.encode(df)
    x_new, mask_new = spec.encode(new[list(df.columns)])
    args = (spec.kind, spec.nlev, spec.conc, spec.hyp)
    training = pcrp.point_estimate(idata, loss="vi", random_seed=0).labels
    n_point = np.unique(training).size
    draws = idata.posterior["z"].values.reshape(-1, len(df))
    total = np.zeros((len(new), n_point + 1))
    for z in draws:
        clusters = np.unique(z)
        log_w = [1.2 * np.log(np.sum(z == k)) for k in clusters] + [np.log(0.7)]
        log_t = [
            table_log_predictive(x_new, mask_new, x[z == k], mask[z == k], *args) for k in clusters
        ]
        log_t.append(table_log_predictive(x_new, mask_new, x[:0], mask[:0], *args))
        score = np.array(log_w)[:, None] + np.array(log_t)
        rule = np.exp(score - logsumexp(score, axis=0))
        for row, k in enumerate(clusters):
            members = training[z == k]
            for c in range(n_point):
                total[:, c] += rule[row] * np.mean(members == c)
        total[:, -1] += rule[-1]
    return total / draws.shape[0]


def test_fit_and_pm_sample_record_the_column_spec(fitted, sampled, tmp_path):
    df, idata = fitted
    spec = pcrp.table_spec(df, COLUMNS)
    for run in (idata, sampled[1]):
        record = stored_table_parameters(run)
        assert record["power"] == 1.2 and record["alpha"] == 0.7
        assert record["spec"].names == spec.names
        assert [c.kind for c in record["spec"].columns] == [c.kind for c in spec.columns]
        assert record["spec"].columns[1].levels == ("east", "north", "south")
        np.testing.assert_array_equal(record["spec"].hyp, spec.hyp)
        np.testing.assert_array_equal(record["mask"], spec.encode(df)[1])
    # the resolved priors rebuild the same spec from the data, and survive netCDF
    az.to_netcdf(idata, str(tmp_path / "idata.nc"))
    again = stored_table_parameters(az.from_netcdf(str(tmp_path / "idata.nc")))
    rebuilt = pcrp.table_spec(df, list(again["spec"].columns))
    np.testing.assert_array_equal(rebuilt.hyp, spec.hyp)
    np.testing.assert_array_equal(rebuilt.conc, spec.conc)
    assert again["spec"].columns[0].levels == (False, True)


@pytest.mark.parametrize("which", ["fitted", "sampled"])
def test_predict_matches_the_brute_force_prediction_rule(which, request):
    df, idata = request.getfixturevalue(which)
    new = df.iloc[[0, 1, 2, 3, 5]].copy()
    new.loc[new.index[1], "visits"] = np.nan  # a missing cell of X_new
    new = new[["age", "region", "smoker", "visits"]]  # columns matched by name
    result = pcrp.predict(idata, new)
    np.testing.assert_allclose(result.probabilities, _brute_predict(idata, df, new), atol=1e-10)
    assert result.n_draws == idata.posterior["z"].shape[0] * idata.posterior["z"].shape[1]
    np.testing.assert_allclose(result.probabilities.sum(axis=1), 1.0)
    # the two well separated groups are told apart
    assert result.labels[0] != result.labels[1]


def test_predict_refuses_unseen_levels_and_wrong_columns(fitted):
    df, idata = fitted
    new = df.iloc[:3].copy()
    new["region"] = new["region"].astype(object)
    new.iloc[1, 1] = "west"
    with pytest.raises(ValueError, match=r"column 'region' holds the level 'west'.*'east', "):
        pcrp.predict(idata, new)
    with pytest.raises(ValueError, match=r"it lacks \['age'\]"):
        pcrp.predict(idata, df.iloc[:3].drop(columns="age"))
    with pytest.raises(ValueError, match="'visits' is modelled as 'poisson'"):
        pcrp.predict(idata, df.iloc[:3].assign(visits=-1))
    with pytest.raises(ValueError, match="Argument 'prior'"):
        pcrp.predict(idata, df.iloc[:3], prior=pcrp.NIWPrior.from_data(np.eye(3)))
    with pytest.raises(ValueError, match=r"Argument 'power' = 1\.5 conflicts"):
        pcrp.predict(idata, df.iloc[:3], power=1.5)
    # an array in the fitted column order is accepted
    arr = df.iloc[:3].to_numpy(dtype=object)
    np.testing.assert_allclose(
        pcrp.predict(idata, arr).probabilities, pcrp.predict(idata, df.iloc[:3]).probabilities
    )


def _brute_pointwise(df, labels, power, alpha):
    """ell_{s,i} from the definition: row i against the other rows' clusters."""
    spec = pcrp.table_spec(df, COLUMNS)
    x, mask = spec.encode(df)
    args = (spec.kind, spec.nlev, spec.conc, spec.hyp)
    out = np.empty(labels.shape)
    for s, z in enumerate(labels):
        for i in range(len(df)):
            keep = np.arange(len(df)) != i
            zo, xo, mo = z[keep], x[keep], mask[keep]
            clusters = np.unique(zo)
            sizes = np.array([np.sum(zo == k) for k in clusters], dtype=float)
            t = [
                table_log_predictive(x[i], mask[i], xo[zo == k], mo[zo == k], *args)[0]
                for k in clusters
            ]
            t0 = table_log_predictive(x[i], mask[i], xo[:0], mo[:0], *args)[0]
            mix = np.sum(sizes**power * np.exp(t)) + alpha * np.exp(t0)
            out[s, i] = np.log(mix / (np.sum(sizes**power) + alpha))
    return out


def test_pointwise_log_likelihood_matches_brute_force_on_a_tiny_table():
    df = _table(n=7, seed=3)
    with pm.Model():
        z = pcrp.PowerCRP("z", alpha=0.7, power=1.2, n=len(df))
        pcrp.TableMixture("x", z=z, columns=COLUMNS, observed=df)
        idata = pm.sample(
            draws=15, tune=5, chains=2, random_seed=SEED, progressbar=False,
            compute_convergence_checks=False,
        )  # fmt: skip
    pcrp.posterior.log_likelihood(idata)
    got = idata.log_likelihood["x"].values
    assert got.shape == (2, 15, 7)
    labels = idata.posterior["z"].values.reshape(-1, 7)
    np.testing.assert_allclose(
        got.reshape(-1, 7), _brute_pointwise(df, labels, 1.2, 0.7), rtol=1e-10
    )


def test_az_loo_on_a_table_fit():
    df = _table(n=30, seed=5)
    idata = pcrp.fit(
        df, columns=COLUMNS, power=1.1, draws=200, tune=100, chains=2, random_seed=SEED,
        idata_kwargs={"log_likelihood": True}, compute_convergence_checks=False,
    )  # fmt: skip
    assert idata.log_likelihood["x"].dims == ("chain", "draw", "obs_id")
    loo = az.loo(idata, pointwise=True)
    assert np.isfinite(loo.elpd_loo) and loo.elpd_loo < 0
    # the pointwise terms are those of the standalone function
    again = pcrp.posterior.log_likelihood(idata, extend_inferencedata=False)
    np.testing.assert_array_equal(again["x"].values, idata.log_likelihood["x"].values)


def test_point_estimate_of_a_table_posterior(fitted, sampled):
    for df, idata in (fitted, sampled):
        estimate = pcrp.point_estimate(idata, random_seed=0)
        assert estimate.labels.shape == (len(df),)
        assert estimate.n_clusters == np.unique(estimate.labels).size >= 1
    # the groups of the fitted table are found
    df, idata = fitted
    labels = pcrp.point_estimate(idata, random_seed=0).labels
    group = np.arange(len(df)) % 2
    assert len(set(labels[group == 0]) & set(labels[group == 1])) == 0


def test_pm_sample_stores_the_pointwise_log_likelihood_of_a_table():
    df = _table(n=7, seed=3)
    with pm.Model():
        z = pcrp.PowerCRP("z", alpha=0.7, power=1.2, n=len(df))
        pcrp.TableMixture("x", z=z, columns=COLUMNS, observed=df)
        idata = pm.sample(
            draws=15, tune=5, chains=1, random_seed=SEED, progressbar=False,
            compute_convergence_checks=False, idata_kwargs={"log_likelihood": True},
        )  # fmt: skip
    got = idata.log_likelihood["x"].values
    assert got.shape == (1, 15, 7)  # one term per row, not one total per draw
    labels = idata.posterior["z"].values.reshape(-1, 7)
    np.testing.assert_allclose(
        got.reshape(-1, 7), _brute_pointwise(df, labels, 1.2, 0.7), rtol=1e-10
    )
