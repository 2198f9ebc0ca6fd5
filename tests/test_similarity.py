"""Posterior similarity matrix, loss-based point estimates and the similarity plot."""

import itertools

import arviz as az
import matplotlib
import numpy as np
import pytest

from enumeration import set_partitions

import pymc_pcrp as pcrp

from pymc_pcrp.plots import plot_similarity
from pymc_pcrp.posterior import similarity as summaries
from pymc_pcrp.posterior.similarity import (
    PointEstimate,
    expected_loss,
    point_estimate,
    posterior_similarity,
)

matplotlib.use("Agg")
import matplotlib.pyplot as plt

# ---------------------------------------------------------------------------
# Independent references (plain NumPy, written from the definitions)
# ---------------------------------------------------------------------------


def ref_psm(draws):
    z = np.asarray(draws).reshape(-1, np.shape(draws)[-1])
    return (z[:, :, None] == z[:, None, :]).mean(axis=0)


def ref_expected_vi(c, draws):
    """Wade & Ghahramani's per-point form, averaged over the draws (bits)."""
    z = np.asarray(draws).reshape(-1, np.shape(draws)[-1])
    c = np.asarray(c)
    same_c = c[:, None] == c[None, :]
    same_z = z[:, :, None] == z[:, None, :]
    size_c = same_c.sum(axis=1)
    size_z = same_z.sum(axis=2)
    size_cz = (same_z & same_c[None]).sum(axis=2)
    per_point = np.log2(size_c)[None] + np.log2(size_z) - 2 * np.log2(size_cz)
    return float(per_point.mean())


def ref_expected_binder(c, psm, a=1.0):
    c = np.asarray(c)
    iu = np.triu_indices(len(c), k=1)
    same = (c[:, None] == c[None, :])[iu]
    p = psm[iu]
    return float(np.sum(np.where(same, (2 - a) * (1 - p), a * p)))


def canonical(labels):
    out, seen = [], {}
    for v in labels:
        seen.setdefault(int(v), len(seen))
        out.append(seen[int(v)])
    return np.array(out)


def noisy_draws(base, n_draws, flip, n_labels, seed):
    """Draws that copy ``base`` but give each point a random label with probability ``flip``."""
    rng = np.random.default_rng(seed)
    base = np.asarray(base)
    z = np.tile(base, (n_draws, 1))
    mask = rng.random(z.shape) < flip
    z[mask] = rng.integers(0, n_labels, size=mask.sum())
    return z


def brute_force(loss_fn, n, max_clusters=None):
    """Every partition of n points with its loss, sorted by loss."""
    rows = []
    for c in set_partitions(n):
        if max_clusters is not None and c.max() + 1 > max_clusters:
            continue
        rows.append((loss_fn(c), c))
    rows.sort(key=lambda row: row[0])
    return rows


# ---------------------------------------------------------------------------
# posterior_similarity
# ---------------------------------------------------------------------------

# Two chains of two draws each on four points; label values are arbitrary.
HAND_DRAWS = np.array(
    [
        [[0, 0, 1, 1], [3, 3, 3, -1]],
        [[9, 8, 9, 8], [2, 2, 2, 2]],
    ]
)
# Worked out pair by pair from HAND_DRAWS.
HAND_PSM = np.array(
    [
        [1.00, 0.75, 0.75, 0.25],
        [0.75, 1.00, 0.50, 0.50],
        [0.75, 0.50, 1.00, 0.50],
        [0.25, 0.50, 0.50, 1.00],
    ]
)


@pytest.fixture(params=["default", "blas_always"])
def blas_setting(request, monkeypatch):
    """Run a test as is, and again with the BLAS path allowed for every N."""
    if request.param == "blas_always":
        monkeypatch.setattr(summaries, "_BLAS_MIN_N", 0)
    return request.param


def test_similarity_hand_made_draws(blas_setting):
    np.testing.assert_array_equal(posterior_similarity(HAND_DRAWS), HAND_PSM)
    psm32 = posterior_similarity(HAND_DRAWS, dtype=np.float32)
    assert psm32.dtype == np.float32
    np.testing.assert_array_equal(psm32, HAND_PSM.astype(np.float32))


def test_similarity_from_inferencedata_matches_array(blas_setting):
    idata = az.from_dict(posterior={"z": HAND_DRAWS, "n_clusters": HAND_DRAWS.max(axis=-1)})
    np.testing.assert_array_equal(posterior_similarity(idata), HAND_PSM)
    np.testing.assert_array_equal(posterior_similarity(idata, var_name="z"), HAND_PSM)


def test_similarity_matches_reference_on_random_draws(blas_setting):
    rng = np.random.default_rng(3)
    # Draws with 2 to 30 labels, so that both accumulation paths (pairs within clusters, and
    # BLAS rank-k updates for draws with few clusters) are used.
    n_labels = rng.integers(2, 31, size=(3, 17, 1))
    draws = (rng.random((3, 17, 41)) * n_labels).astype(np.int64) - 3
    expected = ref_psm(draws)
    psm = posterior_similarity(draws)
    np.testing.assert_allclose(psm, expected, rtol=0, atol=1e-15)
    np.testing.assert_array_equal(psm, psm.T)
    np.testing.assert_array_equal(np.diag(psm), 1.0)
    np.testing.assert_array_equal(posterior_similarity(draws, block_size=1), psm)
    np.testing.assert_array_equal(posterior_similarity(draws, block_size=1000), psm)
    np.testing.assert_allclose(posterior_similarity(draws, dtype="float32"), expected, atol=6e-8)


def test_similarity_large_n_mixed_draws_match_reference():
    # N above the BLAS threshold, with draws of 2 clusters (BLAS) and of ~N/2 clusters (pairs).
    rng = np.random.default_rng(12)
    n = 600
    draws = np.stack(
        [rng.integers(0, 2, size=n) for _ in range(3)]
        + [rng.integers(0, n // 2, size=n) for _ in range(3)]
    )
    expected = ref_psm(draws)
    np.testing.assert_allclose(posterior_similarity(draws), expected, rtol=0, atol=1e-15)
    np.testing.assert_allclose(
        posterior_similarity(draws, dtype=np.float32, block_size=2), expected, atol=6e-8
    )


@pytest.mark.parametrize("n", [30, 600])
def test_similarity_paths_agree_on_extreme_draws(n, blas_setting):
    # One cluster (BLAS path for large N), all singletons (pair path): a known answer.
    one = np.zeros(n, dtype=int)
    singles = np.arange(n)
    psm = posterior_similarity(np.stack([one, singles, singles, one]))
    np.testing.assert_array_equal(psm, np.where(np.eye(n, dtype=bool), 1.0, 0.5))


def test_similarity_input_errors():
    with pytest.raises(ValueError, match="integer"):
        posterior_similarity(HAND_DRAWS.astype(float))
    with pytest.raises(ValueError, match="var_name"):
        posterior_similarity(HAND_DRAWS, var_name="z")
    with pytest.raises(ValueError, match="float32 or float64"):
        posterior_similarity(HAND_DRAWS, dtype=np.int32)
    with pytest.raises(ValueError, match="shape"):
        posterior_similarity(np.zeros((3, 0), dtype=int))
    with pytest.raises(ValueError, match="block_size"):
        posterior_similarity(HAND_DRAWS, block_size=0)


# ---------------------------------------------------------------------------
# expected_loss
# ---------------------------------------------------------------------------


def test_expected_loss_matches_references():
    rng = np.random.default_rng(11)
    draws = rng.integers(0, 4, size=(25, 12))
    psm = ref_psm(draws)
    for _ in range(5):
        c = rng.integers(0, 5, size=12) * 7 - 3  # arbitrary label values
        assert expected_loss(c, draws) == pytest.approx(ref_expected_vi(c, draws), abs=1e-12)
        for a in (1.0, 0.4, 1.7):
            want = ref_expected_binder(c, psm, a)
            assert expected_loss(c, draws, loss="binder", a=a) == pytest.approx(want, abs=1e-10)
            assert expected_loss(c, psm, loss="binder", a=a) == pytest.approx(want, abs=1e-10)


def test_expected_loss_known_values():
    # VI between {0,1}{2,3} and all singletons is H(singletons) - H(pairs) = 2 - 1 bits.
    draws = np.array([[0, 0, 1, 1], [0, 1, 2, 3]])
    assert expected_loss([0, 0, 1, 1], draws) == pytest.approx(0.5, abs=1e-14)
    assert expected_loss([5, 5, 2, 2], draws[:1]) == pytest.approx(0.0, abs=1e-14)
    # Binder, equal costs: half the draws split each of the two within-pair links.
    assert expected_loss([0, 0, 1, 1], draws, loss="binder") == pytest.approx(1.0)


def test_expected_loss_thins_evenly_keeping_first_and_last():
    rng = np.random.default_rng(5)
    draws = rng.integers(0, 3, size=(9, 10))
    c = rng.integers(0, 3, size=10)
    want = ref_expected_vi(c, draws[[0, 4, 8]])
    assert expected_loss(c, draws, max_draws=3) == pytest.approx(want, abs=1e-12)
    assert expected_loss(c, draws, max_draws=3) != pytest.approx(ref_expected_vi(c, draws))


def test_expected_loss_errors():
    draws = np.array([[0, 0, 1, 1]])
    with pytest.raises(ValueError, match="3 points but the posterior has 4"):
        expected_loss([0, 1, 1], draws)
    with pytest.raises(ValueError, match="Binder"):
        expected_loss([0, 0, 1, 1], ref_psm(draws))
    with pytest.raises(ValueError, match="'a'"):
        expected_loss([0, 0, 1, 1], draws, loss="binder", a=2.0)
    with pytest.raises(ValueError, match="'loss'"):
        expected_loss([0, 0, 1, 1], draws, loss="omariz")


# ---------------------------------------------------------------------------
# point_estimate
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("loss", ["vi", "binder"])
def test_identical_draws_give_that_partition(loss):
    rng = np.random.default_rng(0)
    truth = rng.integers(0, 4, size=60)
    # The same partition in every draw, under a different labelling each time.
    draws = np.stack([rng.permutation(7)[truth] for _ in range(30)])
    est = point_estimate(draws, loss=loss, random_seed=1)
    np.testing.assert_array_equal(est.labels, canonical(truth))
    assert est.expected_loss == pytest.approx(0.0, abs=1e-12)
    assert est.n_clusters == 4
    np.testing.assert_array_equal(est.sizes, np.bincount(canonical(truth)))


# Draw sets for the brute-force checks: a base partition of 8 points, perturbed.
BRUTE_CASES = [
    ([0, 0, 0, 1, 1, 1, 2, 2], 40, 0.35, 4, 1),
    ([0, 0, 0, 0, 1, 1, 1, 1], 30, 0.45, 3, 2),
    ([0, 1, 0, 1, 2, 2, 3, 3], 50, 0.30, 5, 3),
    ([0, 0, 1, 1, 1, 1, 1, 2], 25, 0.50, 6, 4),
]


@pytest.mark.parametrize("case", BRUTE_CASES)
def test_vi_search_finds_brute_force_minimum(case):
    base, n_draws, flip, n_labels, seed = case
    draws = noisy_draws(base, n_draws, flip, n_labels, seed)
    n = draws.shape[1]
    ranked = brute_force(lambda c: ref_expected_vi(c, draws), n)
    best_loss, best_c = ranked[0]
    assert ranked[1][0] - best_loss > 1e-6  # a unique minimiser, so labels can be compared
    est = point_estimate(draws, loss="vi", max_clusters=n, random_seed=seed)
    assert est.expected_loss == pytest.approx(best_loss, abs=1e-10)
    np.testing.assert_array_equal(est.labels, best_c)
    # The reported loss is the loss of the returned labels.
    assert est.expected_loss == pytest.approx(ref_expected_vi(est.labels, draws), abs=1e-12)


@pytest.mark.parametrize("a", [1.0, 0.5, 1.6])
@pytest.mark.parametrize("case", BRUTE_CASES[:3])
def test_binder_search_finds_brute_force_minimum(case, a):
    base, n_draws, flip, n_labels, seed = case
    draws = noisy_draws(base, n_draws, flip, n_labels, seed)
    n = draws.shape[1]
    psm = ref_psm(draws)
    ranked = brute_force(lambda c: ref_expected_binder(c, psm, a), n)
    best_loss, best_c = ranked[0]
    est = point_estimate(draws, loss="binder", a=a, max_clusters=n, random_seed=seed)
    assert est.expected_loss == pytest.approx(best_loss, abs=1e-9)
    if ranked[1][0] - best_loss > 1e-6:
        np.testing.assert_array_equal(est.labels, best_c)
    # The same from the similarity matrix alone.
    from_psm = point_estimate(psm, loss="binder", a=a, random_seed=seed)
    assert from_psm.expected_loss == pytest.approx(best_loss, abs=1e-9)
    assert from_psm.n_draws == 0


def test_max_clusters_is_respected_and_optimal_under_the_cap():
    base, n_draws, flip, n_labels, seed = BRUTE_CASES[2]
    draws = noisy_draws(base, n_draws, flip, n_labels, seed)
    for cap in (1, 2, 3):
        ranked = brute_force(lambda c: ref_expected_vi(c, draws), 8, max_clusters=cap)
        est = point_estimate(draws, max_clusters=cap, random_seed=0)
        assert est.n_clusters <= cap
        assert est.expected_loss == pytest.approx(ranked[0][0], abs=1e-10)
    assert point_estimate(draws, max_clusters=1, random_seed=0).labels.max() == 0


def test_zealous_updates_merge_what_single_moves_cannot():
    # Very noisy draws around four clusters: the expected VI is lowest for one cluster, but no
    # single point wants to leave a four-cluster split, so sweeps alone stop there.
    rng = np.random.default_rng(1)
    draws = noisy_draws(rng.integers(0, 4, size=300), 300, 0.5, 6, 1)
    one_cluster = ref_expected_vi(np.zeros(300, dtype=int), draws)
    stuck = point_estimate(draws, max_zealous=0, n_runs=4, random_seed=0)
    assert stuck.n_clusters == 4
    assert stuck.expected_loss > one_cluster + 0.5
    est = point_estimate(draws, n_runs=4, random_seed=0)
    assert est.n_clusters == 1
    assert est.expected_loss == pytest.approx(one_cluster, abs=1e-12)
    np.testing.assert_allclose(est.run_losses, one_cluster, atol=1e-12)


def test_default_cap_is_largest_number_of_clusters_in_draws():
    # Every draw has at most two clusters, so the estimate cannot have three.
    draws = np.array([[0, 0, 0, 1, 1, 1], [0, 0, 1, 1, 1, 1], [0, 0, 0, 0, 1, 1]] * 3)
    est = point_estimate(draws, random_seed=0)
    assert est.n_clusters <= 2


def test_search_is_reproducible_with_a_seed():
    rng = np.random.default_rng(8)
    base = rng.integers(0, 5, size=150)
    draws = noisy_draws(base, 200, 0.4, 8, 9)
    kwargs = {"n_runs": 4, "max_zealous": 3}
    first = point_estimate(draws, random_seed=123, **kwargs)
    second = point_estimate(draws, random_seed=123, **kwargs)
    np.testing.assert_array_equal(first.labels, second.labels)
    np.testing.assert_array_equal(first.run_losses, second.run_losses)
    third = point_estimate(draws, random_seed=np.random.default_rng(123), **kwargs)
    np.testing.assert_array_equal(first.run_losses, third.run_losses)
    assert first.expected_loss == pytest.approx(expected_loss(first.labels, draws), abs=1e-12)
    assert first.expected_loss == first.run_losses.min()


def test_search_beats_every_draw_as_a_candidate():
    rng = np.random.default_rng(21)
    base = rng.integers(0, 4, size=80)
    draws = noisy_draws(base, 60, 0.2, 6, 22)
    est = point_estimate(draws, random_seed=0)
    draw_losses = [ref_expected_vi(z, draws) for z in draws]
    assert est.expected_loss <= min(draw_losses) + 1e-12


def test_point_estimate_reads_inferencedata_and_thins():
    draws = noisy_draws([0, 0, 0, 1, 1, 1, 2, 2], 40, 0.35, 4, 1).reshape(2, 20, 8)
    idata = az.from_dict(posterior={"z": draws})
    est = point_estimate(idata, random_seed=0, max_draws=10)
    assert isinstance(est, PointEstimate)
    assert est.n_draws == 10
    flat = draws.reshape(40, 8)
    kept = flat[np.linspace(0, 39, 10).round().astype(int)]
    assert est.expected_loss == pytest.approx(ref_expected_vi(est.labels, kept), abs=1e-12)
    assert pcrp.point_estimate is point_estimate


def test_point_estimate_single_point_and_errors():
    est = point_estimate(np.zeros((3, 1), dtype=int), random_seed=0)
    np.testing.assert_array_equal(est.labels, [0])
    assert est.expected_loss == 0.0
    draws = np.array([[0, 0, 1]])
    with pytest.raises(ValueError, match="loss='vi'"):
        point_estimate(ref_psm(draws), loss="vi")
    with pytest.raises(ValueError, match="n_runs"):
        point_estimate(draws, n_runs=0)
    with pytest.raises(ValueError, match="max_clusters"):
        point_estimate(draws, max_clusters=0)


# ---------------------------------------------------------------------------
# plot_similarity
# ---------------------------------------------------------------------------


def test_plot_shows_sorted_block_diagonal_image():
    rng = np.random.default_rng(4)
    truth = rng.permutation(np.repeat([0, 1, 2], [2, 5, 3]))
    draws = np.tile(truth, (6, 1))
    fig = plot_similarity(draws)
    assert isinstance(fig, matplotlib.figure.Figure)
    ax = fig.axes[0]
    (image,) = ax.get_images()
    shown = np.asarray(image.get_array())
    assert shown.shape == (10, 10)
    # Clusters by decreasing size: blocks of 5, 3, 2 on the diagonal.
    blocks = np.repeat([0, 1, 2], [5, 3, 2])
    np.testing.assert_array_equal(shown, (blocks[:, None] == blocks[None, :]).astype(float))
    # One horizontal and one vertical line at each of the two inner boundaries.
    positions = sorted({float(line.get_ydata()[0]) for line in ax.lines} - {0.0, 1.0})
    assert len(ax.lines) == 4
    assert positions == [4.5, 7.5]
    plt.close(fig)


def test_plot_from_similarity_matrix_with_given_labels_and_axes():
    psm = HAND_PSM
    fig, ax = plt.subplots()
    out = plot_similarity(psm, labels=[1, 0, 1, 0], ax=ax)
    assert out is fig
    shown = np.asarray(ax.get_images()[0].get_array())
    assert shown.shape == (4, 4)
    # Both clusters have two points; within each, order by mean similarity (ties by index).
    order = [0, 2, 1, 3]
    np.testing.assert_array_equal(shown, psm[np.ix_(order, order)])
    plt.close(fig)
    idata = az.from_dict(posterior={"z": HAND_DRAWS})
    fig = plot_similarity(idata, labels=point_estimate(idata, random_seed=0))
    assert np.asarray(fig.axes[0].get_images()[0].get_array()).shape == (4, 4)
    plt.close(fig)
    with pytest.raises(ValueError, match="labels"):
        plot_similarity(psm, labels=[0, 1])


def test_binder_from_psm_matches_enumeration_for_every_seed():
    # Four points: the search from each of several seeds reaches the enumerated minimum.
    psm = HAND_PSM
    for a in (0.3, 1.0, 1.8):
        best = min(ref_expected_binder(c, psm, a) for c in set_partitions(4))
        for seed in range(3):
            est = point_estimate(psm, loss="binder", a=a, random_seed=seed)
            assert est.expected_loss == pytest.approx(best, abs=1e-12)


def test_vi_brute_force_over_many_random_draw_sets():
    # Many small random posteriors (N = 6): the search must hit the exact minimum each time.
    partitions = list(set_partitions(6))
    misses = 0
    for seed, (n_labels, flip) in enumerate(itertools.product((2, 3, 4), (0.2, 0.5, 0.8))):
        base = np.random.default_rng(seed).integers(0, n_labels, size=6)
        draws = noisy_draws(base, 20, flip, n_labels + 1, seed + 100)
        best = min(ref_expected_vi(c, draws) for c in partitions)
        est = point_estimate(draws, max_clusters=6, random_seed=seed)
        misses += abs(est.expected_loss - best) > 1e-10
    assert misses == 0
