"""How the chains' clusterings differ (pymc_pcrp.diagnostics.compare_chains)."""

import arviz as az
import numpy as np
import pytest

import pymc_pcrp as pcrp

from pymc_pcrp.stats.chain_comparison import _placed_differently, compare_chains

SEED = sum(ord(c) for c in "test_compare_chains")
N = 60


def _base() -> np.ndarray:
    """Three clusters of 30, 20 and 10 points, in a shuffled order of the rows."""
    labels = np.repeat([0, 1, 2], [30, 20, 10])
    return np.random.default_rng(SEED).permutation(labels)


def _chain(rng, partition, draws, noisy, p=0.5):
    """Draws of ``partition``; its ``noisy`` points sit in the next cluster in a share ``p``."""
    out = np.tile(partition, (draws, 1))
    for i in noisy:
        flip = rng.random(draws) < p
        out[flip, i] = (partition[i] + 1) % (partition.max() + 1)
    return out


def _idata(chains, log_joint=None):
    z = np.stack(chains).astype(np.int64)
    posterior = {"z": z, "n_clusters": np.array([[np.unique(d).size for d in c] for c in z])}
    stats = {} if log_joint is None else {"sample_stats": {"log_joint": np.asarray(log_joint)}}
    return az.from_dict(posterior=posterior, dims={"z": ["point"]}, **stats)


def test_two_modes_are_found_with_the_points_they_dispute():
    rng = np.random.default_rng(SEED + 1)
    a = _base()
    b = a.copy()
    moved = np.flatnonzero(a == 2)[:6]  # six points of the small cluster join the largest
    b[moved] = 0
    noisy = np.flatnonzero(a == 1)[:2]  # uncertain in every chain, but not 50/50
    chains = [_chain(rng, p, 200, noisy, 0.2) for p in (a, b, a, b)]
    lj = rng.normal(size=(4, 200)) + np.array([[0.0], [5.0], [0.0], [5.0]])
    idata = _idata(chains, lj)
    result = compare_chains(idata)
    assert result.within.max() == 0 and result.tolerance == 2  # 2% of 60 points, rounded up
    assert result.groups == ((0, 2), (1, 3))
    assert not result.agree
    np.testing.assert_array_equal(result.disputed, np.sort(moved))
    assert result.n_different[0, 1] == result.n_different[2, 3] == 6
    assert result.n_different[0, 2] == result.n_different[1, 3] == 0
    assert result.largest_difference == 6
    np.testing.assert_allclose(result.mean_log_joint, lj.mean(axis=1))
    text = result.summary()
    assert "2 groups" in text and "{0, 2} and {1, 3}" in text
    assert ", ".join(str(i) for i in np.sort(moved)) in text
    assert "up to 6 of 60 points" in text
    # a tolerance of 6 points counts the two clusterings as one
    loose = compare_chains(idata, tolerance=6)
    assert loose.agree and loose.disputed.size == 0


def test_chains_of_one_posterior_agree():
    rng = np.random.default_rng(SEED + 2)
    a = _base()
    noisy = np.flatnonzero(a == 1)[:3]
    result = compare_chains(_idata([_chain(rng, a, 300, noisy) for _ in range(4)]))
    assert result.agree
    assert result.groups == ((0, 1, 2, 3),)
    assert result.disputed.size == 0
    assert result.mean_log_joint is None
    # the three 50/50 points make single estimates differ, chains and halves alike
    assert result.within.max() > 0 and result.n_different.max() > 0
    assert "no chain sits in a mode of its own" in result.summary()
    same = compare_chains(_idata([np.tile(a, (20, 1)), np.tile(np.array([1, 2, 0])[a], (20, 1))]))
    assert same.agree and same.n_different.max() == 0 and same.largest_difference == 0
    assert same.verdict() == "Every chain's estimate is the same clustering of the 60 points."


def test_renumbered_clusters_are_the_same_clustering():
    a = _base()
    relabelled = np.array([2, 0, 1])[a]
    assert not _placed_differently(a, relabelled).any()
    # one point moved between clusters is one point placed differently
    b = relabelled.copy()
    b[np.flatnonzero(a == 0)[0]] = 1
    assert _placed_differently(a, b).sum() == 1


def test_a_chain_that_moves_between_modes_shows_in_its_halves():
    a = _base()
    b = a.copy()
    b[np.flatnonzero(a == 2)[:6]] = 0
    switching = np.r_[np.tile(a, (100, 1)), np.tile(b, (100, 1))]
    result = compare_chains(_idata([switching, np.tile(a, (200, 1))]))
    assert result.within[0] == 6 and result.within[1] == 0
    assert result.agree  # within one chain's own spread: no separate modes claimed


def test_bad_arguments_are_named():
    idata = _idata([np.tile(_base(), (10, 1))])
    with pytest.raises(ValueError, match="'max_draws'"):
        compare_chains(idata, max_draws=0)
    with pytest.raises(ValueError, match="'tolerance'"):
        compare_chains(idata, tolerance=-1)
    with pytest.raises(ValueError, match="posterior"):
        compare_chains(az.from_dict(sample_stats={"log_joint": np.zeros((1, 5))}))


def test_on_a_fit():
    rng = np.random.default_rng(SEED + 3)
    x = np.r_[rng.normal(-5, 1, (25, 2)), rng.normal(5, 1, (25, 2))]
    idata = pcrp.fit(x, power=1.1, draws=100, tune=100, chains=2, random_seed=SEED)
    result = pcrp.diagnostics.compare_chains(idata)
    assert result.estimates.shape == (2, 50)
    assert result.agree
    assert np.unique(result.estimates[0]).size == 2
    np.testing.assert_allclose(result.mean_k, idata.posterior["n_clusters"].values.mean(axis=1))
