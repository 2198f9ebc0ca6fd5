"""PowerCRP with max_clusters: slot labels, exact log density and draws, validation."""

import functools
import itertools
import math

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
import scipy.special
import scipy.stats

from enumeration import log_pcrp_prior_unnorm, set_partitions

import pymc_pcrp as pcrp

from pymc_pcrp.distributions.slots import (
    PowerCRPSlotsRV,
    truncated_log_normaliser,
    truncated_log_prior_k,
)

SEED = sum(ord(c) for c in "test_pcrp_slots")


@functools.cache
def _log_z_by_hand(n, alpha, r, k_max):
    """log sum over the partitions of n items into at most K blocks of their pCRP weight."""
    weights = [log_pcrp_prior_unnorm(p, alpha, r) for p in set_partitions(n) if p.max() < k_max]
    return scipy.special.logsumexp(weights)


def _slot_logp_by_hand(labels, alpha, r, k_max):
    """log p(z): truncated pCRP of the partition over the K!/(K-k)! labellings, by brute force."""
    log_z = _log_z_by_hand(len(labels), alpha, r, k_max)
    k = len(set(labels.tolist()))
    labellings = math.lgamma(k_max + 1) - math.lgamma(k_max - k + 1)
    return log_pcrp_prior_unnorm(labels, alpha, r) - log_z - labellings


def _logp_fn(alpha, r, n, k_max):
    value = pt.lvector("z")
    return pm.compile([value], pm.logp(pcrp.PowerCRP.dist(alpha, r, n, max_clusters=k_max), value))


@pytest.mark.parametrize(("alpha", "r", "k_max"), [(1.0, 1.0, 2), (0.6, 1.4, 3), (2.0, 0.7, 5)])
def test_logp_is_normalised_over_all_slot_label_vectors(alpha, r, k_max):
    n = 5
    fn = _logp_fn(alpha, r, n, k_max)
    values = []
    for labels in itertools.product(range(k_max), repeat=n):
        labels = np.array(labels)
        got = fn(labels)
        assert got == pytest.approx(_slot_logp_by_hand(labels, alpha, r, k_max), rel=1e-12)
        values.append(got)
    assert scipy.special.logsumexp(values) == pytest.approx(0.0, abs=1e-12)


def test_truncated_normaliser_without_truncation_is_the_crp_one():
    # K >= n and r = 1: Z_n = Gamma(alpha + n) / Gamma(alpha)
    got = truncated_log_normaliser(7, 1.3, 1.0, 7)
    assert got == pytest.approx(math.lgamma(1.3 + 7) - math.lgamma(1.3), rel=1e-13)
    assert truncated_log_normaliser(7, 1.3, 1.0, 50) == pytest.approx(got, rel=1e-13)
    assert truncated_log_normaliser(7, 1.3, 1.0, 2) < got


def test_logp_is_minus_inf_for_labels_outside_the_slots():
    fn = _logp_fn(1.0, 1.2, 4, 3)
    for bad in ([0, 0, 3, 1], [0, -1, 0, 0]):
        assert fn(np.array(bad)) == -np.inf, bad
    assert np.isfinite(fn(np.array([2, 2, 0, 1])))


def test_pm_data_alpha_gives_the_same_logp_as_a_number():
    labels = np.array([1, 1, 0, 4, 1])
    with pm.Model() as model:
        a = pm.Data("a", 0.8)
        pcrp.PowerCRP("z", alpha=a, power=1.3, n=5, max_clusters=5)
    got = model.compile_logp()({"z": labels.astype("int16")})
    assert got == pytest.approx(_slot_logp_by_hand(labels, 0.8, 1.3, 5), rel=1e-12)


@pytest.mark.parametrize(("alpha", "r", "k_max"), [(1.0, 1.3, 2), (1.5, 0.8, 4)])
def test_draws_follow_the_exact_law_of_slot_label_vectors(alpha, r, k_max):
    n, draws = 4, 40_000
    dist = pcrp.PowerCRP.dist(alpha, r, n, max_clusters=k_max)
    sample = pm.draw(dist, draws=draws, random_seed=SEED)
    assert sample.shape == (draws, n)
    assert sample.min() >= 0 and sample.max() < k_max
    fn = _logp_fn(alpha, r, n, k_max)
    support = [np.array(t) for t in itertools.product(range(k_max), repeat=n)]
    probs = np.exp([fn(t) for t in support])
    codes = np.ravel_multi_index(sample.T.astype(np.int64), (k_max,) * n)
    observed = np.bincount(codes, minlength=k_max**n)
    assert scipy.stats.chisquare(observed, probs * draws).pvalue > 1e-3


def test_prior_on_k_sums_the_stirling_row_up_to_max_clusters():
    log_pk = truncated_log_prior_k(6, 1.0, 1.0, 3)
    stirling = np.array([0, 120, 274, 225], dtype=float)  # |s(6, k)|, k <= 3
    assert np.exp(log_pk) == pytest.approx(stirling / stirling.sum(), rel=1e-12)


def test_model_gets_slot_labels_a_support_point_and_n_clusters():
    with pm.Model() as model:
        z = pcrp.PowerCRP("z", alpha=1.0, power=1.2, n=30, max_clusters=4)
    assert isinstance(z.owner.op, PowerCRPSlotsRV)
    assert z.dtype == "int16"
    point = model.initial_point()
    assert np.array_equal(point["z"], np.zeros(30))
    assert "n_clusters" in model.named_vars
    assert np.isfinite(model.compile_logp()(point))


def test_without_max_clusters_nothing_changes():
    with pm.Model():
        z = pcrp.PowerCRP("z", alpha=1.0, power=1.2, n=5)
    assert not isinstance(z.owner.op, PowerCRPSlotsRV)


@pytest.mark.parametrize("bad", [0, -2, 2.5, "3", True, pt.constant(3)])
def test_max_clusters_must_be_an_integer_at_least_one(bad):
    with pytest.raises(ValueError, match="'max_clusters' of PowerCRP must be an integer >= 1"):
        pcrp.PowerCRP.dist(1.0, 1.2, 5, max_clusters=bad)


def test_random_alpha_with_max_clusters_is_refused():
    with pm.Model():
        alpha = pm.Gamma("alpha", 2.0, 1.0)
        with pytest.raises(ValueError, match="max_clusters needs a fixed 'alpha'"):
            pcrp.PowerCRP("z", alpha=alpha, power=1.2, n=5, max_clusters=3)
