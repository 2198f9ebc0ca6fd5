"""Tests of the exact pCRP prior kernels in pymc_pcrp._kernels.partitions."""

import math

import numpy as np
import pytest
import scipy.special
import scipy.stats

from enumeration import log_pcrp_prior_unnorm, set_partitions

from pymc_pcrp._kernels.partitions import (
    canonical_labels,
    log_prior_k,
    log_stirling_bounds,
    log_stirling_r_table,
    log_stirling_rows,
)
from pymc_pcrp._kernels.prior_draws import sample_partition, sample_partitions
from pymc_pcrp.distributions.normaliser import log_normaliser


def unsigned_stirling_first_kind(n_max):
    """|s(n, k)| as exact Python ints via |s(n+1, k)| = n |s(n, k)| + |s(n, k-1)|."""
    s = [[0] * (n_max + 1) for _ in range(n_max + 1)]
    s[0][0] = 1
    for n in range(n_max):
        for k in range(1, n + 2):
            s[n + 1][k] = n * s[n][k] + s[n][k - 1]
    return s


def brute_force_stirling_r(n, r, k_max):
    """S_r(n, k), k <= k_max, by summing prod Gamma(n_j)^r over every set partition."""
    total = np.zeros(k_max + 1)
    for z in set_partitions(n):
        sizes = np.bincount(z) if n else np.array([], dtype=int)
        total[len(sizes)] += np.prod(scipy.special.gamma(sizes) ** r)
    return total


def partition_code(labels, base):
    """Integer code of canonical label rows, for fast counting."""
    labels = np.atleast_2d(labels)
    powers = base ** np.arange(labels.shape[1], dtype=np.int64)
    return labels @ powers


# ----------------------------------------------------------------- Stirling table


def test_r1_is_unsigned_stirling_first_kind():
    n_max = 12
    exact = unsigned_stirling_first_kind(n_max)
    table = log_stirling_r_table(n_max, 1.0, n_max)
    assert table.shape == (n_max + 1, n_max + 1)
    for n in range(n_max + 1):
        for k in range(n_max + 1):
            if exact[n][k] == 0:
                assert table[n, k] == -np.inf, (n, k)
            else:
                assert math.isclose(math.exp(table[n, k]), exact[n][k], rel_tol=1e-12), (n, k)


@pytest.mark.parametrize("r", [0.5, 1.0, 1.5, 2.0])
def test_table_matches_brute_force_sum_over_partitions(r):
    n_max = 7
    table = log_stirling_r_table(n_max, r, n_max)
    for n in range(n_max + 1):
        expected = brute_force_stirling_r(n, r, n_max)
        got = np.exp(table[n])
        np.testing.assert_array_equal(got == 0.0, expected == 0.0)
        np.testing.assert_allclose(got, expected, rtol=1e-10, atol=0.0)


def test_table_shape_and_columns_beyond_n():
    table = log_stirling_r_table(4, 1.3, 7)
    assert table.shape == (5, 8)
    assert np.all(table[:, 5:] == -np.inf)
    assert table[0, 0] == 0.0
    assert np.all(table[1:, 0] == -np.inf)
    # One block of m items: S_r(m, 1) = Gamma(m)^r.
    m = np.arange(1, 5)
    np.testing.assert_allclose(table[1:, 1], 1.3 * scipy.special.gammaln(m), rtol=1e-12)


def test_table_is_finite_for_large_n():
    table = log_stirling_r_table(1500, 1.0, 3)
    # |s(n, 1)| = (n-1)!, |s(n, 2)| = (n-1)! H_{n-1}.
    n = 1500
    assert math.isclose(table[n, 1], math.lgamma(n), rel_tol=1e-13)
    harmonic = np.sum(1.0 / np.arange(1, n))
    assert math.isclose(table[n, 2], math.lgamma(n) + math.log(harmonic), rel_tol=1e-12)
    assert np.all(np.isfinite(table[3:, 1:]))


def test_table_rejects_bad_arguments():
    with pytest.raises(ValueError):
        log_stirling_r_table(-1, 1.0, 2)
    with pytest.raises(ValueError):
        log_stirling_r_table(3, 1.0, -1)


# ------------------------------------------------------------------- prior on K


@pytest.mark.parametrize(("n", "alpha", "r"), [(1, 0.3, 1.0), (10, 1.0, 1.5), (60, 2.0, 0.7)])
def test_log_prior_k_is_normalised(n, alpha, r):
    log_p = log_prior_k(n, alpha, r)
    assert log_p[0] == -np.inf
    assert math.isclose(scipy.special.logsumexp(log_p), 0.0, abs_tol=1e-12)
    log_p_full = log_prior_k(n, alpha, r, k_max=n)
    assert len(log_p_full) == n + 1
    assert math.isclose(scipy.special.logsumexp(log_p_full), 0.0, abs_tol=1e-12)


@pytest.mark.parametrize("alpha", [0.1, 1.0, 3.7])
def test_log_prior_k_r1_matches_crp(alpha):
    n = 12
    exact = unsigned_stirling_first_kind(n)[n]
    k = np.arange(n + 1)
    with np.errstate(divide="ignore"):
        log_exact = np.log(np.array(exact, dtype=float))
    expected = k * np.log(alpha) + log_exact + math.lgamma(alpha) - math.lgamma(alpha + n)
    np.testing.assert_allclose(log_prior_k(n, alpha, 1.0, k_max=n), expected, rtol=1e-12)
    assert math.isclose(
        log_normaliser(n, alpha, 1.0), math.lgamma(alpha + n) - math.lgamma(alpha), rel_tol=1e-13
    )


def test_log_normaliser_r1_large_n():
    n, alpha = 2000, 1.5
    assert math.isclose(
        log_normaliser(n, alpha, 1.0), math.lgamma(alpha + n) - math.lgamma(alpha), rel_tol=1e-12
    )


@pytest.mark.parametrize(
    ("alpha", "r"),
    [
        (0.5, 1.0),
        (1.0, 0.7),
        (4.0, 0.7),
        (1.0, 1.5),
        (3.0, 2.0),
        (0.2, 3.0),
        (1e4, 4.0),
        (0.3, -0.5),
    ],
)
def test_adaptive_truncation_agrees_with_full_table(alpha, r):
    n = 60
    adaptive = log_prior_k(n, alpha, r)
    full = log_prior_k(n, alpha, r, k_max=n)
    k_max = len(adaptive) - 1
    assert 1 <= k_max <= n
    np.testing.assert_allclose(adaptive, full[: k_max + 1], rtol=0.0, atol=1e-12)
    if k_max < n:
        assert scipy.special.logsumexp(full[k_max + 1 :]) < -50.0
    full_normaliser = scipy.special.logsumexp(
        np.arange(n + 1) * np.log(alpha) + log_stirling_r_table(n, r, n)[n]
    )
    assert math.isclose(log_normaliser(n, alpha, r), full_normaliser, rel_tol=1e-13)


@pytest.mark.parametrize("r", [0.0, 0.3, 0.7, 1.0])
def test_stirling_r_rows_are_log_concave_for_r_at_most_one(r):
    # Observed numerically (not proven here); it makes the prior on K unimodal.
    table = log_stirling_r_table(80, r, 80)
    for n in range(3, 81):
        row = table[n, 1 : n + 1]
        assert np.all(np.diff(row, 2) <= 1e-9), n


def test_prior_on_k_can_be_bimodal_for_large_r():
    # n = 3, r = 5, alpha = 5: weights 5 * 2^5, 25 * 3, 125 * 1.
    log_p = log_prior_k(3, 5.0, 5.0)
    np.testing.assert_allclose(np.exp(log_p[1:]), np.array([160.0, 75.0, 125.0]) / 360.0)


def test_adaptive_truncation_keeps_a_distant_second_mode():
    # Modes at K = 1 and K = n separated by a dip deeper than 50 nats: a rule
    # that stops once the weights have decreased far below the maximum would lose
    # the second mode; the certified bound must not.
    n, r, alpha = 50, 5.0, math.exp(14.75)
    full = log_prior_k(n, alpha, r, k_max=n)
    assert full[1] > math.log(0.3) and full[n] > math.log(0.3)
    assert full[1:].min() < full[1:].max() - 50.0
    adaptive = log_prior_k(n, alpha, r)
    assert len(adaptive) == n + 1
    np.testing.assert_allclose(adaptive, full, rtol=0.0, atol=1e-12)


def test_classical_stirling_rows():
    n = 12
    first, second = log_stirling_rows(n)
    exact_first = unsigned_stirling_first_kind(n)[n]
    exact_second = [0] * (n + 1)
    for k in range(1, n + 1):  # explicit formula for the second kind
        exact_second[k] = sum(
            (-1) ** (k - j) * math.comb(k, j) * j**n for j in range(k + 1)
        ) // math.factorial(k)
    with np.errstate(divide="ignore"):
        np.testing.assert_allclose(first, np.log(np.array(exact_first, float)), rtol=1e-13)
        np.testing.assert_allclose(second, np.log(np.array(exact_second, float)), rtol=1e-13)


@pytest.mark.parametrize("r", [-0.5, 0.0, 0.4, 1.0, 1.6, 4.0])
@pytest.mark.parametrize("alpha", [0.01, 1.0, 300.0])
def test_tail_bound_dominates_true_weights(alpha, r):
    n = 40
    weights = np.arange(n + 1) * math.log(alpha) + log_stirling_r_table(n, r, n)[n]
    bound = np.arange(n + 1) * math.log(alpha) + log_stirling_bounds(n, r)
    assert bound[0] == -np.inf
    assert np.all(bound[1:] >= weights[1:] - 1e-9)


def test_log_prior_k_edge_cases():
    np.testing.assert_array_equal(log_prior_k(0, 1.0, 1.5), [0.0])
    np.testing.assert_array_equal(log_prior_k(1, 2.0, 1.5), [-np.inf, 0.0])
    assert log_normaliser(1, 2.0, 1.5) == pytest.approx(math.log(2.0))
    with pytest.raises(ValueError):
        log_prior_k(5, 0.0, 1.0)
    with pytest.raises(ValueError):
        log_prior_k(5, 1.0, np.nan)
    with pytest.raises(ValueError):
        log_prior_k(-2, 1.0, 1.0)


# --------------------------------------------------------------------- sampler


@pytest.mark.parametrize("r", [1.0, 1.5, 2.0])
@pytest.mark.parametrize("alpha", [0.5, 2.0])
def test_sampler_matches_exact_partition_probabilities(alpha, r):
    n, draws = 5, 40_000
    partitions = list(set_partitions(n))
    assert len(partitions) == 52
    log_w = np.array([log_pcrp_prior_unnorm(z, alpha, r) for z in partitions])
    probs = np.exp(log_w - scipy.special.logsumexp(log_w))
    # Cross-check the normaliser used by the library.
    assert math.isclose(scipy.special.logsumexp(log_w), log_normaliser(n, alpha, r), rel_tol=1e-12)

    rng = np.random.default_rng(20180710 + int(10 * alpha) + int(100 * r))
    samples = sample_partitions(rng, n, alpha, r, draws)
    assert samples.shape == (draws, n)
    assert samples.dtype == np.int64
    codes = partition_code(np.array(partitions), n)
    index = {int(c): i for i, c in enumerate(codes)}
    observed = np.zeros(len(partitions))
    for code, count in zip(*np.unique(partition_code(samples, n), return_counts=True), strict=True):
        observed[index[int(code)]] += count  # KeyError if a draw is not canonical

    expected = probs * draws
    # Pool the cells with small expected counts so the chi-square law applies.
    small = expected < 5
    obs = np.append(observed[~small], observed[small].sum())
    exp = np.append(expected[~small], expected[small].sum())
    if not small.any():
        obs, exp = obs[:-1], exp[:-1]
    p_value = scipy.stats.chisquare(obs, exp).pvalue
    assert p_value > 1e-3
    tv = 0.5 * np.abs(observed / draws - probs).sum()
    assert tv < 0.02


def test_sequential_seating_is_a_different_distribution():
    # docs/model.md: for r != 1 the paper's sequential process differs from
    # the Gibbs target by far more than the sampler test's TV tolerance.
    n, alpha, r = 5, 1.0, 2.0
    partitions = list(set_partitions(n))
    log_w = np.array([log_pcrp_prior_unnorm(z, alpha, r) for z in partitions])
    target = np.exp(log_w - scipy.special.logsumexp(log_w))
    sequential = np.ones(len(partitions))
    for p, z in enumerate(partitions):
        counts = []
        for label in z:
            weights = np.append(np.asarray(counts, dtype=float) ** r, alpha)
            sequential[p] *= weights[label] / weights.sum()
            if label == len(counts):
                counts.append(1)
            else:
                counts[label] += 1
    assert math.isclose(sequential.sum(), 1.0, rel_tol=1e-12)
    assert 0.5 * np.abs(sequential - target).sum() > 0.05


def test_sampler_k_marginal_matches_prior_larger_n():
    n, alpha, r, draws = 40, 1.0, 1.5, 20_000
    rng = np.random.default_rng(7)
    samples = sample_partitions(rng, n, alpha, r, draws)
    k = samples.max(axis=1) + 1
    probs = np.exp(log_prior_k(n, alpha, r))
    observed = np.bincount(k, minlength=len(probs))[: len(probs)]
    assert observed.sum() == draws
    expected = probs * draws
    keep = expected >= 5
    obs = np.append(observed[keep], observed[~keep].sum())
    exp = np.append(expected[keep], expected[~keep].sum())
    assert scipy.stats.chisquare(obs, exp).pvalue > 1e-3
    # Every draw is a canonical label vector.
    np.testing.assert_array_equal(samples[:, 0], 0)
    running_max = np.maximum.accumulate(samples, axis=1)
    assert np.all(samples <= np.concatenate([np.zeros((draws, 1)), running_max[:, :-1] + 1], 1))


def test_sampler_is_reproducible_and_advances_generator():
    a = sample_partitions(np.random.default_rng(123), 30, 1.0, 1.5, 50)
    b = sample_partitions(np.random.default_rng(123), 30, 1.0, 1.5, 50)
    np.testing.assert_array_equal(a, b)
    rng = np.random.default_rng(123)
    first = sample_partitions(rng, 30, 1.0, 1.5, 50)
    second = sample_partitions(rng, 30, 1.0, 1.5, 50)
    np.testing.assert_array_equal(first, a)
    assert not np.array_equal(first, second)
    one = sample_partition(np.random.default_rng(5), 30, 1.0, 1.5)
    np.testing.assert_array_equal(
        one, sample_partitions(np.random.default_rng(5), 30, 1.0, 1.5, 1)[0]
    )


def test_sampler_edge_cases():
    rng = np.random.default_rng(0)
    assert sample_partitions(rng, 0, 1.0, 1.0, 3).shape == (3, 0)
    assert sample_partitions(rng, 4, 1.0, 1.0, 0).shape == (0, 4)
    np.testing.assert_array_equal(sample_partition(rng, 1, 1.0, 2.0), [0])
    with pytest.raises(ValueError):
        sample_partitions(rng, 4, 1.0, 1.0, -1)


# ------------------------------------------------------------- canonical labels


@pytest.mark.parametrize(
    ("z", "expected"),
    [
        ([3, 3, 1, 3, 0], [0, 0, 1, 0, 2]),
        ([0, 1, 2], [0, 1, 2]),
        ([7, 7, 7], [0, 0, 0]),
        ([2, 0, 2, 1, 0], [0, 1, 0, 2, 1]),
        ([], []),
    ],
)
def test_canonical_labels_examples(z, expected):
    got = canonical_labels(np.asarray(z, dtype=np.int64))
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, expected)


def test_canonical_labels_idempotent_and_same_partition():
    rng = np.random.default_rng(11)
    for _ in range(50):
        z = rng.integers(0, 1000, size=rng.integers(1, 40))
        c = canonical_labels(z)
        np.testing.assert_array_equal(canonical_labels(c), c)
        np.testing.assert_array_equal(z[:, None] == z[None, :], c[:, None] == c[None, :])
        assert set(c.tolist()) == set(range(len(np.unique(z))))


def test_canonical_labels_rejects_negative():
    with pytest.raises(ValueError):
        canonical_labels(np.array([0, -1, 2]))
