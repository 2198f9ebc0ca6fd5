"""Chains and cross-validation grid points as joblib jobs, sequential and on a Dask cluster."""

import logging
import warnings

import joblib
import numpy as np
import pytest

from pymc.util import get_random_generator

import pymc_pcrp as pcrp

from pymc_pcrp.distributed import chain_seeds, fit_parallel

SEED = sum(ord(c) for c in "test_distributed")
SMALL = {"power": 1.1, "draws": 15, "tune": 5, "progressbar": False}


@pytest.fixture(scope="module")
def data():
    return pcrp.datasets.load_old_faithful(standardize=True)[:40]


def assert_same_draws(a, b):
    for group in ("posterior", "sample_stats"):
        left, right = a[group], b[group]
        assert sorted(left.data_vars) == sorted(right.data_vars)
        for name in left.data_vars:
            np.testing.assert_array_equal(left[name].values, right[name].values, err_msg=name)
        np.testing.assert_array_equal(left["chain"].values, right["chain"].values)
    np.testing.assert_array_equal(a.observed_data["x"].values, b.observed_data["x"].values)


@pytest.mark.parametrize("chains", [1, 3])
@pytest.mark.parametrize(
    "make_seed", [lambda: 5, lambda: np.random.default_rng(5), lambda: np.random.SeedSequence(5)]
)
def test_chain_seeds_are_the_children_pm_sample_spawns(make_seed, chains):
    # pm.sample(random_seed=s, chains=k) samples chain i with
    # get_random_generator(s).spawn(k)[i]; a one-chain pm.sample given
    # default_rng(chain_seeds(s, k)[i]) spawns exactly that generator.
    seed = make_seed()
    expected = get_random_generator(
        seed if not isinstance(seed, np.random.SeedSequence) else np.random.default_rng(seed)
    ).spawn(chains)
    for i, child in enumerate(chain_seeds(seed, chains)):
        (got,) = get_random_generator(np.random.default_rng(child)).spawn(1)
        assert got.bit_generator.state == expected[i].bit_generator.state


def test_chain_seeds_do_not_advance_a_generator():
    rng = np.random.default_rng(3)
    state = rng.bit_generator.state
    chain_seeds(rng, 4)
    assert rng.bit_generator.state == state


def test_chain_seeds_without_seed_are_distinct():
    # The chains' streams are the children these seed sequences spawn.
    seeds = chain_seeds(None, 3)
    states = {tuple(s.spawn(1)[0].generate_state(2)) for s in seeds}
    assert len(states) == 3


@pytest.mark.parametrize("bad", [0, -1, 2.5, True])
def test_chain_seeds_rejects_bad_chains(bad):
    with pytest.raises(ValueError, match="'chains' must be a positive integer"):
        chain_seeds(1, bad)


def test_chain_seeds_rejects_bad_seed():
    with pytest.raises(ValueError, match="'random_seed' must be an int"):
        chain_seeds("seven", 2)


def test_fit_parallel_rejects_cores(data):
    with pytest.raises(ValueError, match="'cores' is not accepted"):
        fit_parallel(data, chains=2, cores=2)


def test_fit_parallel_equals_fit(data):
    reference = pcrp.fit(data, chains=3, random_seed=SEED, **SMALL)
    got = fit_parallel(data, chains=3, random_seed=SEED, n_jobs=1, **SMALL)
    assert_same_draws(got, reference)
    assert got.posterior["z"].dims == ("chain", "draw", "obs_id")
    # Joining leaves one total sampling time, not az.concat's per-chain lists.
    assert got.posterior.attrs["sampling_time"] > 0
    assert not any(key.startswith(("combined_", "previous_")) for key in got.posterior.attrs)


def convergence_messages(caplog, run):
    caplog.clear()
    with caplog.at_level("INFO", logger="pymc.stats.convergence"):
        run()
    return [r.getMessage() for r in caplog.records if r.name == "pymc.stats.convergence"]


def test_fit_parallel_reports_convergence_as_fit_does(data, caplog):
    # The joined chains are checked once, as pm.sample checks its chains; the
    # one-chain jobs are not checked (they would each report a single chain).
    kwargs = {**SMALL, "draws": 100, "chains": 2, "random_seed": SEED}
    expected = convergence_messages(caplog, lambda: pcrp.fit(data, **kwargs))
    got = convergence_messages(caplog, lambda: fit_parallel(data, n_jobs=1, **kwargs))
    assert got == expected
    assert sum("at least 4 chains" in message for message in got) == 1


# -- Dask ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def dask_client():
    distributed = pytest.importorskip(
        "distributed", reason="dask.distributed is not installed (pip install '.[dask]')"
    )
    with (
        distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            silence_logs=logging.ERROR,
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        yield client


def test_fit_parallel_on_dask_equals_fit(data, dask_client):
    from distributed import get_task_stream

    reference = pcrp.fit(data, chains=4, random_seed=SEED, **SMALL)
    with get_task_stream(dask_client) as stream, joblib.parallel_config(backend="dask"):
        got = fit_parallel(data, chains=4, random_seed=SEED, **SMALL)
    assert_same_draws(got, reference)
    # The chains really ran as tasks on the cluster's worker processes.
    assert len(stream.data) >= 4
    assert {task["worker"] for task in stream.data} <= set(dask_client.scheduler_info()["workers"])


def _cv(train, test, **kwargs):
    with warnings.catch_warnings():
        # Whether this tiny run finds a jump does not matter here.
        warnings.filterwarnings("ignore", "The held-out loss never rose", UserWarning)
        return pcrp.model_selection.cross_validate_power(train, test, **kwargs)


def test_cross_validation_on_dask_equals_sequential(data, dask_client):
    train, test = pcrp.model_selection.split_train_test(data, 30, seed=SEED)
    kwargs = {"powers": [1.0, 1.5, 3.0], "draws": 10, "tune": 5, "random_seed": SEED}
    sequential = _cv(train, test, n_jobs=1, **kwargs)
    with joblib.parallel_config(backend="dask"):
        distributed = _cv(train, test, n_jobs=None, **kwargs)
    np.testing.assert_array_equal(distributed.loss_draws, sequential.loss_draws)
    np.testing.assert_array_equal(distributed.mean_k, sequential.mean_k)
    assert distributed.chosen_power == sequential.chosen_power
