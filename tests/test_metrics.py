"""Tests of the clustering metrics and of the paper-style posterior summary."""

import math

import arviz as az
import numpy as np
import pytest
import xarray as xr

from sklearn.metrics import normalized_mutual_info_score

import pymc_pcrp.stats.metrics as metrics_module

from pymc_pcrp.stats.metrics import (
    ClusteringSummary,
    clustering_summary,
    draw_metrics,
    normalized_mutual_info,
    variation_of_information,
)

SEED = sum(ord(c) for c in "test_metrics")
LOG2_3 = math.log2(3)


# --------------------------------------------------------------------------- pairwise scores


@pytest.mark.parametrize("seed", [SEED, SEED + 1, SEED + 2])
@pytest.mark.parametrize("average_method", ["arithmetic", "geometric", "max", "min"])
def test_nmi_matches_sklearn_on_random_labelings(seed, average_method):
    rng = np.random.default_rng(seed)
    for _ in range(20):
        n = int(rng.integers(2, 300))
        a = rng.integers(0, int(rng.integers(1, 8)), size=n)
        b = rng.integers(-3, int(rng.integers(-2, 6)), size=n) * 11  # negative, sparse values
        expected = normalized_mutual_info_score(a, b, average_method=average_method)
        got = normalized_mutual_info(a, b, average_method=average_method)
        assert got == pytest.approx(expected, abs=1e-12)


def test_scores_are_invariant_to_renaming_and_accept_any_label_type():
    a = np.array([0, 0, 1, 1, 2, 2, 2])
    renamed = np.array(["z", "z", "x", "x", "y", "y", "y"])
    assert normalized_mutual_info(a, renamed) == pytest.approx(1.0, abs=1e-15)
    assert variation_of_information(a, renamed) == pytest.approx(0.0, abs=1e-12)
    b = np.array([5, 5, 5, 9, 9, 1, 1])
    assert normalized_mutual_info(a, b) == pytest.approx(normalized_mutual_info(renamed, b))
    assert variation_of_information(b, a) == pytest.approx(variation_of_information(b, renamed))


def test_vi_one_block_versus_two_equal_blocks_is_log_two():
    one = [0, 0, 0, 0, 0, 0]
    two = [0, 0, 0, 1, 1, 1]
    assert variation_of_information(one, two) == pytest.approx(1.0, abs=1e-14)  # bits
    assert variation_of_information(one, two, base=math.e) == pytest.approx(math.log(2))
    assert variation_of_information(two, one, base=10) == pytest.approx(math.log10(2))


def test_vi_hand_computed_case():
    # a: {0,1,2}{3,4,5}; b: {0,1}{2,3}{4,5}. Joint cells 2,1,1,2 of 6 points, so
    # H(a,b) = (2/3) log2 3 + (1/3) log2 6, H(a) = 1, H(b) = log2 3 and
    # VI = 2 H(a,b) - H(a) - H(b) = log2 3 - 1/3.
    a = [0, 0, 0, 1, 1, 1]
    b = [0, 0, 1, 1, 2, 2]
    assert variation_of_information(a, b) == pytest.approx(LOG2_3 - 1 / 3, abs=1e-14)
    # I(a;b) = H(a) + H(b) - H(a,b) = 2/3 bit, NMI = (2/3) / ((1 + log2 3) / 2).
    expected_nmi = (2 / 3) / ((1 + LOG2_3) / 2)
    assert normalized_mutual_info(a, b) == pytest.approx(expected_nmi, abs=1e-14)


def test_vi_is_a_metric_on_random_triples():
    rng = np.random.default_rng(SEED)
    for _ in range(200):
        n = int(rng.integers(1, 40))
        a, b, c = (rng.integers(0, int(rng.integers(1, 6)), size=n) for _ in range(3))
        ab = variation_of_information(a, b)
        assert ab >= 0.0
        assert ab == pytest.approx(variation_of_information(b, a), abs=1e-12)
        assert ab <= math.log2(n) + 1e-12
        assert ab <= variation_of_information(a, c) + variation_of_information(c, b) + 1e-12


def test_degenerate_single_cluster_cases():
    ones = np.zeros(5, dtype=int)
    other = np.array([0, 1, 1, 2, 2])
    h_other = -(0.2 * math.log2(0.2) + 2 * 0.4 * math.log2(0.4))
    for method in ["arithmetic", "geometric", "max", "min"]:
        # Both single-cluster: identical partitions.
        assert normalized_mutual_info(ones, ones + 7, average_method=method) == 1.0
        # Exactly one single-cluster: no shared information.
        assert normalized_mutual_info(ones, other, average_method=method) == 0.0
        assert normalized_mutual_info(other, ones, average_method=method) == 0.0
    assert variation_of_information(ones, ones + 7) == 0.0
    assert variation_of_information(ones, other) == pytest.approx(h_other, abs=1e-14)
    # One point: a single cluster each.
    assert normalized_mutual_info([3], [4]) == 1.0
    assert variation_of_information([3], [4]) == 0.0


def test_independent_labelings_have_zero_nmi_and_maximal_vi():
    a = [0, 0, 1, 1]
    b = [0, 1, 0, 1]
    assert normalized_mutual_info(a, b) == pytest.approx(0.0, abs=1e-15)
    assert variation_of_information(a, b) == pytest.approx(2.0, abs=1e-14)


@pytest.mark.parametrize(
    ("a", "b", "kwargs", "match"),
    [
        ([0, 1], [0, 1, 2], {}, "same points"),
        ([[0, 1]], [0, 1], {}, "'a' must be a 1-D"),
        ([0, 1], [], {}, "'b' is empty"),
        ([0, 1], [0, 1], {"average_method": "mean"}, "average_method"),
    ],
)
def test_nmi_input_errors(a, b, kwargs, match):
    with pytest.raises(ValueError, match=match):
        normalized_mutual_info(a, b, **kwargs)


@pytest.mark.parametrize("base", [1, 0, -2, np.inf])
def test_vi_rejects_bad_base(base):
    with pytest.raises(ValueError, match="'base'"):
        variation_of_information([0, 1], [0, 0], base=base)


# --------------------------------------------------------------------------- per-draw scores


def _random_draws(rng, chains, draws, truth, flip=0.2, k_extra=5):
    out = np.broadcast_to(truth, (chains, draws, truth.size)).copy()
    mask = rng.random(out.shape) < flip
    out[mask] = rng.integers(0, truth.max() + 1 + k_extra, size=int(mask.sum()))
    return out


def test_draw_metrics_equal_pairwise_scores(monkeypatch):
    # A tiny block size forces several bincount blocks, as for long runs.
    monkeypatch.setattr(metrics_module, "_BLOCK_ELEMENTS", 500)
    rng = np.random.default_rng(SEED)
    truth = rng.integers(0, 3, size=120)
    draws = _random_draws(rng, 3, 17, truth)
    idata = az.from_dict(posterior={"z": draws})
    result = draw_metrics(idata, truth)
    assert isinstance(result, xr.Dataset)
    assert result["nmi"].dims == ("chain", "draw")
    assert result["nmi"].shape == (3, 17)
    np.testing.assert_array_equal(result.coords["draw"].values, np.arange(17))
    for c in range(3):
        for d in range(17):
            z = draws[c, d]
            assert result["nmi"].values[c, d] == pytest.approx(
                normalized_mutual_info_score(truth, z), abs=1e-12
            )
            assert result["vi"].values[c, d] == pytest.approx(
                variation_of_information(z, truth), abs=1e-12
            )
            assert result["n_clusters"].values[c, d] == np.unique(z).size


def test_draw_metrics_handle_labels_outside_zero_to_n():
    rng = np.random.default_rng(SEED + 5)
    truth = np.repeat(["a", "b", "c"], 10)
    draws = _random_draws(rng, 2, 5, np.repeat([0, 1, 2], 10))
    shifted = draws * 1000 - 7  # negative and > N: relabelled row by row
    base = draw_metrics(draws, truth, base=math.e)
    other = draw_metrics(shifted, truth, base=math.e)
    for name in ["nmi", "vi", "n_clusters"]:
        np.testing.assert_allclose(other[name].values, base[name].values, rtol=0, atol=1e-12)
    assert base.attrs["vi_base"] == math.e


def test_draw_metrics_errors():
    truth = np.array([0, 0, 1])
    with pytest.raises(ValueError, match="'true_labels' has 3 labels"):
        draw_metrics(np.zeros((1, 4, 5), dtype=int), truth)
    with pytest.raises(ValueError, match="integer array of label draws"):
        draw_metrics(np.zeros((4, 3)), truth)
    with pytest.raises(ValueError, match="'var_name'"):
        draw_metrics(az.from_dict(posterior={"z": np.zeros((1, 4, 3), dtype=int)}), truth, "w")


# --------------------------------------------------------------------------- posterior summary

# Four partitions of four points scored against truth {0,1}{2,3}, worked out by hand
# (bits): H(truth) = 1.
TRUTH = np.array([0, 0, 1, 1])
KNOWN = {
    # name: (labels, NMI, VI, K)
    "exact": ([0, 0, 1, 1], 1.0, 0.0, 2),
    # one cluster: I = 0.
    "lumped": ([0, 0, 0, 0], 0.0, 1.0, 1),
    # {0,1}{2}{3}: H = 1.5, I = 1, NMI = 1 / 1.25, VI = 1.5 + 1 - 2.
    "split": ([0, 0, 1, 2], 0.8, 0.5, 3),
    # singletons: H = 2, I = 1, NMI = 1 / 1.5, VI = 2 + 1 - 2.
    "singletons": ([0, 1, 2, 3], 2 / 3, 1.0, 4),
}


def _known_posterior(pattern):
    draws = np.array([[KNOWN[name][0] for name in row] for row in pattern])
    expect = {
        key: np.array([[KNOWN[name][i] for name in row] for row in pattern], dtype=float)
        for i, key in [(1, "nmi"), (2, "vi"), (3, "k")]
    }
    return draws, expect


PATTERN = [
    ["exact", "exact", "split", "exact", "lumped", "exact", "split", "singletons"],
    ["split", "exact", "exact", "exact", "split", "split", "exact", "exact"],
]


def test_posterior_summary_known_answers():
    flat = [name for row in PATTERN for name in row]
    counts = {name: flat.count(name) for name in KNOWN}
    assert counts == {"exact": 9, "lumped": 1, "split": 5, "singletons": 1}
    draws, expect = _known_posterior(PATTERN)
    idata = az.from_dict(posterior={"z": draws})
    s = clustering_summary(idata, TRUTH)
    assert isinstance(s, ClusteringSummary)
    n = 16
    assert s.n_draws == n
    assert s.k_max == 4
    # Means and naive SEs written out from the 16 hand-scored draws.
    nmi = expect["nmi"].ravel()
    vi = expect["vi"].ravel()
    k = expect["k"].ravel()
    assert s.nmi_mean == pytest.approx((9 * 1.0 + 5 * 0.8 + 0.0 + 2 / 3) / n, abs=1e-14)
    assert s.vi_mean == pytest.approx((9 * 0.0 + 5 * 0.5 + 1.0 + 1.0) / n, abs=1e-14)
    assert s.k_mean == pytest.approx((9 * 2 + 5 * 3 + 1 + 4) / n, abs=1e-14)
    assert s.k_mean == 38 / 16
    for mean_sq, values, se in [
        ((9 * 1.0 + 5 * 0.64 + 4 / 9) / n, nmi, s.nmi_se),
        ((5 * 0.25 + 1.0 + 1.0) / n, vi, s.vi_se),
        ((9 * 4 + 5 * 9 + 1 + 16) / n, k, s.k_se),
    ]:
        var = (mean_sq - values.mean() ** 2) * n / (n - 1)
        assert se == pytest.approx(math.sqrt(var / n), rel=1e-12)
    # MCSE: ArviZ's sd / sqrt(ESS_mean) on the (chain, draw) arrays.
    for key, mcse in [("nmi", s.nmi_mcse), ("vi", s.vi_mcse), ("k", s.k_mcse)]:
        ess = float(az.ess(expect[key], method="mean"))
        assert mcse == pytest.approx(expect[key].std(ddof=1) / math.sqrt(ess), rel=1e-10)
    # The same from the bare label array.
    assert clustering_summary(draws, TRUTH) == s


def test_ground_truth_row():
    draws = np.broadcast_to(TRUTH, (2, 10, 4))
    s = clustering_summary(draws, ["x", "x", "y", "y"])
    assert (s.nmi_mean, s.vi_mean, s.k_mean, s.k_max) == (1.0, 0.0, 2.0, 2)
    assert (s.nmi_se, s.vi_se, s.k_se) == (0.0, 0.0, 0.0)
    assert (s.nmi_mcse, s.vi_mcse, s.k_mcse) == (0.0, 0.0, 0.0)


def test_mcse_exceeds_naive_se_for_sticky_chains():
    # Each chain stays 25 draws in one state: the naive SE treats 200 draws as
    # independent, the MCSE sees about 8 independent blocks.
    rng = np.random.default_rng(SEED)
    names = list(KNOWN)
    pattern = [[names[j] for j in np.repeat(rng.integers(0, 4, size=4), 25)] for _ in range(2)]
    draws, _ = _known_posterior(pattern)
    s = clustering_summary(az.from_dict(posterior={"z": draws}), TRUTH)
    assert s.k_mcse > 2 * s.k_se
    assert s.vi_mcse > 2 * s.vi_se


def test_summary_formats_and_options():
    draws, _ = _known_posterior(PATTERN)
    s = clustering_summary(draws, TRUTH, base=math.e, average_method="max")
    assert s.vi_base == math.e
    assert s.vi_mean == pytest.approx(clustering_summary(draws, TRUTH).vi_mean * math.log(2))
    d = s.as_dict()
    assert list(d)[:3] == ["nmi_mean", "nmi_se", "nmi_mcse"]
    assert d["k_max"] == 4
    text = str(s)
    assert "K_max 4" in text
    assert "VI[nats]" in text
    assert f"K {38 / 16:.2f}" in text
    with pytest.raises(AttributeError):
        s.k_max = 5  # frozen


def test_posterior_summary_reads_named_label_variable():
    draws, _ = _known_posterior(PATTERN)
    idata = az.from_dict(posterior={"labels": draws, "other": draws + 1})
    with pytest.raises(ValueError, match="several label vectors"):
        clustering_summary(idata, TRUTH)
    assert clustering_summary(idata, TRUTH, "labels") == clustering_summary(draws, TRUTH)


def test_mcse_is_nan_with_fewer_than_four_draws_per_chain():
    draws, _ = _known_posterior([["exact", "split", "lumped"], ["split", "split", "exact"]])
    s = clustering_summary(draws, TRUTH)
    assert s.n_draws == 6
    assert s.k_mean == pytest.approx((2 + 3 + 1 + 3 + 3 + 2) / 6)
    assert math.isnan(s.k_mcse) and math.isnan(s.nmi_mcse) and math.isnan(s.vi_mcse)
    assert s.k_se > 0
