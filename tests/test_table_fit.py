"""``fit`` on tables: the family chosen from the data, and three latent classes found."""

import numpy as np
import pandas as pd
import pytest

import pymc_pcrp as pcrp


def _latent_classes(n, seed):
    """``n`` rows of 8 bool columns from 3 latent classes (cells agree with the class's
    profile with probability 0.85); returns the DataFrame and the classes."""
    rng = np.random.default_rng(seed)
    classes = rng.integers(0, 3, n)
    profiles = np.array(
        [[1, 1, 1, 1, 0, 0, 0, 0], [0, 0, 0, 0, 1, 1, 1, 1], [1, 0, 1, 0, 1, 0, 1, 0]]
    )
    p = np.where(profiles == 1, 0.85, 0.15)
    cells = rng.random((n, 8)) < p[classes]
    return pd.DataFrame(cells, columns=[f"q{j}" for j in range(8)]), classes


def test_fit_samples_a_small_table_with_missing_cells():
    df, _ = _latent_classes(20, seed=1)
    df["q0"] = df["q0"].astype("boolean")
    df.loc[3, "q0"] = pd.NA
    df["colour"] = pd.Categorical(np.where(np.arange(20) < 10, "red", "blue"))
    idata = pcrp.fit(df, power=1.1, draws=20, tune=10, chains=1, random_seed=2)
    assert idata.posterior["z"].shape == (1, 20, 20)
    assert list(idata.posterior["z"].coords["obs_id"].values) == list(range(20))
    assert np.isnan(idata.sample_stats["niw_nu0"].values).all()


def test_fit_refuses_gaussian_arguments_for_a_table():
    df, _ = _latent_classes(20, seed=1)
    with pytest.raises(ValueError, match="are for family='gaussian'"):
        pcrp.fit(df, covariance="diag", draws=5, tune=5, chains=1)


def test_fit_finds_three_latent_classes_in_a_bool_table():
    df, _ = _latent_classes(300, seed=2026)
    idata = pcrp.fit(df, power=1.1, draws=300, tune=300, chains=2, random_seed=3)
    labels = pcrp.point_estimate(idata).labels
    k = np.unique(labels).size
    assert abs(k - 3) <= 1, f"the point estimate has K = {k}"
    assert abs(float(idata.posterior["n_clusters"].mean()) - 3) <= 1.5
