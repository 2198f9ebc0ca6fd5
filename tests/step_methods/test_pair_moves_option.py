"""PCRPGibbs(pair_moves=...): the option, its automatic rule, its sample stats and its tables.

The move itself is checked against exact enumeration in
``tests/_kernels/test_pair_moves.py``, and through ``pm.sample`` with the
default moves (which include it) in ``tests/statistical``.
"""

import cloudpickle
import numpy as np
import pymc as pm
import pytest

import pymc_pcrp as pcrp

from pymc_pcrp.sampler.options import (
    PAIR_MOVES,
    PAIR_MOVES_MAX_N,
    PAIR_MOVES_MIN_D,
    auto_pair_moves,
)


def _two_clusters(n, seed=0, d=3):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    x[: n // 2, 0] += 5.0
    return x


@pytest.mark.parametrize("value", [-1, -0.5, float("nan"), float("inf"), True, "often"])
def test_bad_pair_moves_are_refused(value):
    with pcrp.build_model(np.arange(5.0)) as model:
        with pytest.raises(ValueError, match="'pair_moves'"):
            pcrp.PCRPGibbs([model["z"]], pair_moves=value)


@pytest.mark.parametrize(
    ("split_merge", "n", "d", "supported", "rate"),
    [
        (1.0, 60, PAIR_MOVES_MIN_D, True, PAIR_MOVES),
        (0.1, PAIR_MOVES_MAX_N, 30, True, PAIR_MOVES),
        (1.0, 60, 2, True, 0.0),  # one or two dimensions
        (0.0, 60, 30, True, 0.0),  # split_merge=0: the paper's Algorithm 1 alone
        (1.0, PAIR_MOVES_MAX_N + 1, 30, True, 0.0),  # tables too costly to build
        (1.0, 60, 0, True, 0.0),  # no data
        (1.0, 60, 30, False, 0.0),  # the diagonal family, latent values
    ],
)
def test_automatic_pair_moves(split_merge, n, d, supported, rate):
    assert auto_pair_moves(split_merge, n, d, supported) == rate


def test_default_step_makes_pair_moves_and_split_merge_zero_makes_none():
    x = _two_clusters(60)
    with pcrp.build_model(x[:, :2], power=1.1) as model:  # two dimensions: none by default
        assert pcrp.PCRPGibbs([model["z"]]).pair_moves == 0.0
    with pcrp.build_model(x, power=1.1) as model:
        default = pcrp.PCRPGibbs([model["z"]], rng=3, sweeps_per_draw=2)
        plain = pcrp.PCRPGibbs([model["z"]], rng=3, split_merge=0, sweeps_per_draw=2)
        alone = pcrp.PCRPGibbs([model["z"]], rng=3, split_merge=0, pair_moves=3, sweeps_per_draw=2)
    assert default.pair_moves == PAIR_MOVES and plain.pair_moves == 0.0
    assert alone.pair_moves == 3.0 and alone.speck_moves == 0.0
    for step, per_draw in ((default, 2 * PAIR_MOVES), (plain, 0), (alone, 6)):
        # every point its own cluster but the pairs (2q, 2q + 1) together, so that
        # many drawn pairs share a cluster and are proposed; a pair move is accepted
        # about once per 30 draws here (mostly in the first ones, while the pairs
        # merge), so six chains of 30 draws, each from that start
        proposed = accepted = 0
        for seed in range(3, 9):
            step.set_rng(np.random.default_rng(seed))
            point = {"z": np.arange(60, dtype=np.int64) // 2}
            for _ in range(30):
                point, stats = step.step(point)
                proposed += stats[0]["pair_proposed"]
                accepted += stats[0]["pair_accepted"]
                assert stats[0]["pair_proposed"] <= per_draw
        if per_draw == 0:
            assert proposed == accepted == 0
        else:
            assert 0 < accepted <= proposed, (proposed, accepted)


def test_pair_moves_are_sample_stats_of_pm_sample():
    x = _two_clusters(40)
    with pcrp.build_model(x, power=1.1):
        idata = pm.sample(
            draws=20,
            tune=10,
            chains=1,
            random_seed=2,
            progressbar=False,
            compute_convergence_checks=False,
        )
    stats = idata.sample_stats
    assert stats["pair_proposed"].dtype == np.int64
    assert int(stats["pair_proposed"].sum()) > 0  # pairs in one cluster were proposed
    assert int(stats["pair_accepted"].sum()) <= int(stats["pair_proposed"].sum())


def test_the_diagonal_family_and_latent_values_have_no_pair_moves():
    x = _two_clusters(30)
    with pcrp.build_model(x, covariance="diag") as model:
        assert pcrp.PCRPGibbs([model["z"]]).pair_moves == 0.0
        with pytest.raises(ValueError, match=r"'pair_moves' > 0 .*covariance='diag'.*pair_moves=0"):
            pcrp.PCRPGibbs([model["z"]], pair_moves=2)
    prior = pcrp.NIWPrior(mu0=np.zeros(3), kappa0=0.1, nu0=5.0, psi0=np.eye(3))
    with pm.Model() as latent:  # three dimensions, where observed data would get pair moves
        z = pcrp.PowerCRP("z", alpha=1.0, power=1.1, n=4)
        theta = pcrp.NIWMixture("theta", z=z, prior=prior, shape=(4, 3))
        pm.Normal("y", mu=theta, sigma=1.0, observed=np.zeros((4, 3)))
        assert pcrp.PCRPGibbs([latent["z"]]).pair_moves == 0.0
        with pytest.raises(ValueError, match="latent values"):
            pcrp.PCRPGibbs([latent["z"]], pair_moves=1)
    with pm.Model() as prior_only:
        pcrp.PowerCRP("z", alpha=1.0, power=1.1, n=10)
        assert pcrp.PCRPGibbs([prior_only["z"]]).pair_moves == 0.0
        with pytest.raises(ValueError, match="no NIWMixture likelihood"):
            pcrp.PCRPGibbs([prior_only["z"]], pair_moves=1)


def _stepped_once(sweeps_per_draw):
    """A default step on 30 points in 3-D after one draw from one cluster: step, point, data."""
    x = _two_clusters(30)
    with pcrp.build_model(x, power=1.1) as model:
        step = pcrp.PCRPGibbs([model["z"]], rng=1, sweeps_per_draw=sweeps_per_draw)
    point, _ = step.step({"z": np.zeros(30, dtype=np.int64)})
    return step, point, x


def test_pair_tables_are_built_once_and_follow_the_data():
    step, point, x = _stepped_once(1)
    tables = step.chain.pairs[1]
    point, _ = step.step(point)
    assert step.chain.pairs[1] is tables  # the same data: the same tables
    other = step.chain.pair_plan(np.ascontiguousarray(x[::-1]))
    assert other is not tables and not np.array_equal(other[1][1], tables[1][1])
    assert step.chain.pair_plan(step.inputs.arrays().xc)[0] == PAIR_MOVES


def test_a_pickled_step_rebuilds_its_tables_and_draws_alike():
    """``pm.sample`` with several processes pickles the step: the tables are rebuilt."""
    step, point, _ = _stepped_once(2)
    copy = cloudpickle.loads(cloudpickle.dumps(step))
    assert copy.chain.pairs is None
    a, stats_a = step.step(point)
    b, stats_b = copy.step(point)
    np.testing.assert_array_equal(a["z"], b["z"])
    assert stats_a[0]["pair_proposed"] == stats_b[0]["pair_proposed"]
