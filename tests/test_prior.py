"""The exact prior on K, choosing alpha, the CRP-Oracle and the sequential seating process."""

import math

import numpy as np
import pytest
import scipy.stats

import pymc_pcrp as pcrp

from pymc_pcrp._kernels.partitions import log_prior_k

SEED = sum(ord(c) for c in "test_prior")


def _unsigned_stirling_first(n: int) -> list[int]:
    """Row n of |s(n, k)| as exact integers, by |s(m+1, k)| = m |s(m, k)| + |s(m, k-1)|."""
    row = [1]
    for m in range(n):
        nxt = [0] * (m + 2)
        for k in range(m + 2):
            nxt[k] = (m * row[k] if k <= m else 0) + (row[k - 1] if k >= 1 else 0)
        row = nxt
    return row


def _chi2_pvalue(k: np.ndarray, p: np.ndarray) -> float:
    draws = k.size
    observed = np.bincount(k, minlength=p.size)
    keep = p * draws >= 5
    expected = np.r_[p[keep], p[~keep].sum()] * draws
    counts = np.r_[observed[keep], observed[~keep].sum()]
    chi2 = ((counts - expected) ** 2 / expected).sum()
    return float(scipy.stats.chi2.sf(chi2, df=counts.size - 1))


@pytest.mark.parametrize("n", [1, 2, 7, 25, 60])
@pytest.mark.parametrize("alpha", [0.3, 1.0, 4.5])
def test_crp_prior_is_stirling_over_rising_factorial(n, alpha):
    stirling = _unsigned_stirling_first(n)
    log_rising = math.fsum(math.log(alpha + i) for i in range(n))
    expected = np.array(
        [0.0]
        + [
            math.exp(math.log(s) + k * math.log(alpha) - log_rising)
            for k, s in enumerate(stirling)
            if k >= 1
        ]
    )
    got = pcrp.prior.prior_num_clusters(n, alpha, 1.0)
    assert got.shape == (n + 1,)
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-300)


@pytest.mark.parametrize(("n", "alpha", "r"), [(15, 1.0, 1.5), (15, 3.0, 0.5), (30, 0.7, 2.0)])
def test_general_power_matches_the_kernel_prior(n, alpha, r):
    expected = np.exp(log_prior_k(n, alpha, r, n))
    # entries past the certified truncation are 0; together they weigh < n exp(-50)
    got = pcrp.prior.prior_num_clusters(n, alpha, r)
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=n * math.exp(-50))
    assert expected[got == 0].sum() < n * math.exp(-50)
    # r = 1 has its own path (the row of |s(n, k)|); a power next to 1 goes through
    # the generalised recursion and must agree with it.
    np.testing.assert_allclose(
        pcrp.prior.prior_num_clusters(n, alpha, 1.0 + 1e-12),
        pcrp.prior.prior_num_clusters(n, alpha, 1.0),
        rtol=1e-8,
        atol=n * math.exp(-50),
    )


def test_large_n_is_finite_and_normalised():
    n = 5000
    for r in (1.0, 1.5):
        p = pcrp.prior.prior_num_clusters(n, 1.0, r)
        assert p.shape == (n + 1,)
        assert np.all(np.isfinite(p))
        assert np.all(p >= 0)
        assert p[0] == 0.0
        assert math.fsum(p) == pytest.approx(1.0, abs=1e-12)
    # a larger power concentrates the prior on fewer clusters
    assert pcrp.prior.prior_mean_num_clusters(n, 1.0, 1.5) < pcrp.prior.prior_mean_num_clusters(
        n, 1.0, 1.0
    )


@pytest.mark.parametrize("alpha", [0.4, 1.0, 7.0])
def test_crp_mean_formula_at_n_5000(alpha):
    n = 5000
    expected = math.fsum(alpha / (alpha + i - 1) for i in range(1, n + 1))
    assert pcrp.prior.prior_mean_num_clusters(n, alpha, 1.0) == pytest.approx(expected, rel=1e-10)


def test_k_max_cuts_without_renormalising():
    full = pcrp.prior.prior_num_clusters(12, 2.0, 1.3)
    cut = pcrp.prior.prior_num_clusters(12, 2.0, 1.3, k_max=4)
    np.testing.assert_array_equal(cut, full[:5])
    assert cut.sum() < 1.0
    np.testing.assert_array_equal(pcrp.prior.prior_num_clusters(3, 1.0, 1.0, k_max=6)[4:], 0.0)


@pytest.mark.parametrize(("n", "alpha", "r"), [(40, 1.0, 1.3), (40, 10.0, 1.3), (200, 0.5, 1.0)])
def test_mean_and_mode_agree_with_the_pmf(n, alpha, r):
    p = pcrp.prior.prior_num_clusters(n, alpha, r)
    k = np.arange(n + 1)
    assert pcrp.prior.prior_mean_num_clusters(n, alpha, r) == pytest.approx(float(k @ p), rel=1e-12)
    assert pcrp.prior.prior_mode_num_clusters(n, alpha, r) == int(np.argmax(p))


@pytest.mark.parametrize(
    ("n", "r", "mean"), [(300, 1.0, 3.0), (300, 1.5, 3.0), (2000, 1.0, 4.0), (60, 2.0, 1.5)]
)
def test_alpha_for_prior_mean_round_trip(n, r, mean):
    alpha = pcrp.prior.alpha_for_prior_k(n, r, mean=mean)
    assert pcrp.prior.prior_mean_num_clusters(n, alpha, r) == pytest.approx(mean, rel=1e-9)
    if r == 1.0:  # against the closed form of the CRP mean
        closed = math.fsum(alpha / (alpha + i) for i in range(n))
        assert closed == pytest.approx(mean, rel=1e-9)


@pytest.mark.parametrize(
    ("n", "r", "mode"), [(300, 1.0, 3), (300, 1.5, 3), (50, 1.0, 1), (20, 1.0, 20)]
)
def test_alpha_for_prior_mode_round_trip(n, r, mode):
    alpha = pcrp.prior.alpha_for_prior_k(n, r, mode=mode)
    assert pcrp.prior.prior_mode_num_clusters(n, alpha, r) == mode
    # far enough on either side the mode changes (unless the interval is unbounded)
    if mode > 1:
        assert pcrp.prior.prior_mode_num_clusters(n, alpha / 100, r) < mode
    if mode < n:
        assert pcrp.prior.prior_mode_num_clusters(n, alpha * 100, r) > mode


def test_a_mode_the_prior_skips_is_refused():
    # n = 3, r = 5: the weights of K = 1, 2, 3 are 32 alpha, 3 alpha^2, alpha^3, and
    # K = 2 is never the most probable value.
    modes = {pcrp.prior.prior_mode_num_clusters(3, a, 5.0) for a in np.geomspace(0.01, 100, 400)}
    assert modes == {1, 3}
    with pytest.raises(ValueError, match="No alpha gives a prior mode of 2"):
        pcrp.prior.alpha_for_prior_k(3, 5.0, mode=2)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n": 10, "power": 1.0}, "exactly one"),
        ({"n": 10, "power": 1.0, "mean": 2.0, "mode": 2}, "exactly one"),
        ({"n": 10, "power": 1.0, "mean": 1.0}, "'mean'.*between 1 and n"),
        ({"n": 10, "power": 1.0, "mean": 10.0}, "'mean'.*between 1 and n"),
        ({"n": 10, "power": 1.0, "mode": 0}, "'mode'"),
        ({"n": 10, "power": 0.0, "mean": 2.0}, "'power'.*> 0"),
        ({"n": 0, "power": 1.0, "mean": 2.0}, "'n'.*positive integer"),
    ],
)
def test_alpha_for_prior_k_refuses_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        pcrp.prior.alpha_for_prior_k(**kwargs)


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((0, 1.0, 1.0), "'n'.*positive integer"),
        ((5.5, 1.0, 1.0), "'n'.*positive integer"),
        ((5, -1.0, 1.0), "'alpha'.*> 0"),
        ((5, 1.0, 0.0), "'power'.*> 0"),
    ],
)
def test_prior_num_clusters_refuses_bad_arguments(args, match):
    with pytest.raises(ValueError, match=match):
        pcrp.prior.prior_num_clusters(*args)


@pytest.mark.parametrize(
    ("k_true", "n", "paper"),
    [(3, 300, 0.52), (3, 2000, 0.40), (4, 1000, 0.58), (4, 3000, 0.50), (2, 172, 0.39)],
)
def test_crp_oracle_reproduces_the_papers_values(k_true, n, paper):
    alpha = pcrp.prior.crp_oracle_alpha(k_true, n)
    assert alpha == pytest.approx(k_true / math.log(n), rel=1e-15)
    assert abs(alpha - paper) < 0.01


def test_sequential_seating_shapes_seeds_and_canonical_form():
    one = pcrp.prior.sequential_seating(SEED, 9, 1.0, 1.5)
    assert one.shape == (9,)
    assert one.dtype == np.int64
    many = pcrp.prior.sequential_seating(np.random.default_rng(SEED), 9, 1.0, 1.5, size=50)
    assert many.shape == (50, 9)
    np.testing.assert_array_equal(many, pcrp.prior.sequential_seating(SEED, 9, 1.0, 1.5, size=50))
    for row in many:  # tables numbered in order of opening
        first = [int(np.flatnonzero(row == k)[0]) for k in range(row.max() + 1)]
        assert first == sorted(first)
        assert row[0] == 0


def test_sequential_seating_is_the_crp_at_power_one():
    n, alpha, draws = 20, 1.0, 20000
    z = pcrp.prior.sequential_seating(SEED, n, alpha, 1.0, size=draws)
    pval = _chi2_pvalue(z.max(axis=1) + 1, pcrp.prior.prior_num_clusters(n, alpha, 1.0))
    assert pval > 1e-3, pval


@pytest.mark.parametrize("r", [1.5, 2.0])
def test_sequential_seating_is_not_the_pcrp_prior_for_power_above_one(r):
    n, alpha, draws = 20, 1.0, 5000
    z = pcrp.prior.sequential_seating(SEED, n, alpha, r, size=draws)
    k = z.max(axis=1) + 1
    exact = pcrp.prior.prior_num_clusters(n, alpha, r)
    assert _chi2_pvalue(k, exact) < 1e-12
    # the sequential process opens many more tables than the exchangeable prior
    assert k.mean() > float(np.arange(n + 1) @ exact) + 0.5


def test_plot_prior_num_clusters_draws_one_line_per_power():
    matplotlib = pytest.importorskip("matplotlib")  # an optional dependency
    matplotlib.use("Agg")
    import matplotlib.figure
    import matplotlib.pyplot as plt

    fig = pcrp.plots.plot_prior_num_clusters(100, 1.0, [1.0, 1.2, 1.5])
    try:
        assert isinstance(fig, matplotlib.figure.Figure)
        (ax,) = fig.axes
        lines = ax.get_lines()
        assert [line.get_label() for line in lines] == ["r = 1", "r = 1.2", "r = 1.5"]
        x, y = lines[0].get_data()
        assert x[0] == 1
        np.testing.assert_allclose(y, pcrp.prior.prior_num_clusters(100, 1.0, 1.0)[x])
        assert "K" in ax.get_xlabel()
    finally:
        plt.close(fig)
    fig2, ax2 = plt.subplots()
    try:
        assert pcrp.plots.plot_prior_num_clusters(10, 2.0, 1.3, ax=ax2) is fig2
        assert len(ax2.get_lines()) == 1
    finally:
        plt.close(fig2)
