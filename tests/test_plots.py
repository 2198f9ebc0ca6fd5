"""Figures: each function returns a Figure holding the artists it promises."""

import arviz as az
import matplotlib
import numpy as np
import pytest

import pymc_pcrp as pcrp

matplotlib.use("Agg")

import matplotlib.pyplot as plt

from matplotlib.figure import Figure
from matplotlib.patches import Ellipse, Rectangle

SEED = sum(ord(c) for c in "test_plots")


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _idata(labels, x=None, n_clusters=True):
    labels = np.asarray(labels, dtype=np.int64)
    posterior = {"z": labels}
    if n_clusters:
        k = np.apply_along_axis(lambda row: np.unique(row).size, -1, labels)
        posterior["n_clusters"] = k
    groups = {"posterior": posterior}
    if x is not None:
        groups["observed_data"] = {"x": x}
        # every draw at one value of the learned scale grid of NIWPrior.from_data(x)
        scale = pcrp.NIWPrior.from_data(x).scale_grid[60]
        nu0 = pcrp.NIWPrior.from_data(x).nu0  # and at the learned nu0's start value
        groups["sample_stats"] = {
            "niw_scale": np.full(labels.shape[:2], scale),
            "niw_nu0": np.full(labels.shape[:2], nu0),
        }
    return az.from_dict(**groups)


def _random_label_draws(rng, chains, draws, n, k_max):
    return rng.integers(0, rng.integers(1, k_max + 1, size=(chains, draws, 1)), (chains, draws, n))


def test_plot_k_trace_one_line_per_chain():
    rng = np.random.default_rng(SEED)
    labels = _random_label_draws(rng, 3, 25, 12, 5)
    fig = pcrp.plots.plot_k_trace(_idata(labels))
    assert isinstance(fig, Figure)
    (ax,) = fig.axes
    assert len(ax.lines) == 3
    expected_k = np.apply_along_axis(lambda row: np.unique(row).size, -1, labels)
    for c, line in enumerate(ax.lines):
        np.testing.assert_array_equal(line.get_ydata(), expected_k[c])
    # without n_clusters in the posterior, K is counted from the labels
    fig = pcrp.plots.plot_k_trace(_idata(labels, n_clusters=False))
    np.testing.assert_array_equal(fig.axes[0].lines[1].get_ydata(), expected_k[1])


def test_plot_k_trace_one_panel_per_method():
    rng = np.random.default_rng(SEED + 1)
    methods = {
        "CRP": _idata(_random_label_draws(rng, 2, 10, 8, 6)),
        "pCRP": _idata(_random_label_draws(rng, 4, 10, 8, 3)),
    }
    fig = pcrp.plots.plot_k_trace(methods)
    assert [ax.get_title() for ax in fig.axes] == ["CRP", "pCRP"]
    assert [len(ax.lines) for ax in fig.axes] == [2, 4]
    _, axes = plt.subplots(1, 2)
    assert pcrp.plots.plot_k_trace(methods, ax=axes) is axes[0].figure
    with pytest.raises(ValueError, match="2 Axes"):
        pcrp.plots.plot_k_trace(methods, ax=axes[0])


def test_plot_k_posterior_one_marked_line_per_method():
    k_a = np.array([[2, 3, 3, 3, 4, 3]])
    k_b = np.array([[1, 1, 2, 5]])
    fig = pcrp.plots.plot_k_posterior({"a": k_a, "b": _idata(np.zeros((1, 4, 3)))})
    ax = fig.axes[0]
    assert len(ax.lines) == 2
    np.testing.assert_array_equal(ax.lines[0].get_xdata(), [2, 3, 4])
    np.testing.assert_allclose(ax.lines[0].get_ydata(), [1 / 6, 4 / 6, 1 / 6])
    np.testing.assert_allclose(ax.lines[1].get_ydata(), [1.0])
    assert [line.get_marker() for line in ax.lines] == ["x", "o"]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["a", "b"]
    fig = pcrp.plots.plot_k_posterior({"b": k_b})
    np.testing.assert_allclose(fig.axes[0].lines[0].get_ydata(), [0.5, 0.25, 0.25])


def test_plot_predictive_density_draws_density_and_components():
    rng = np.random.default_rng(SEED + 2)
    x = np.r_[rng.normal(-4, 1, 20), rng.normal(0, 1, 15), rng.normal(5, 1, 10)]
    labels = np.r_[np.zeros(20), np.ones(15), np.full(10, 2)].astype(int)
    idata = _idata(np.broadcast_to(labels, (1, 3, 45)).copy(), x)
    prior = pcrp.NIWPrior.from_data(x)  # the InferenceData is hand-made: no record
    fig = pcrp.plots.plot_predictive_density(idata, power=1.2, alpha=1.0, prior=prior, bins=12)
    ax = fig.axes[0]
    assert len(ax.lines) == 4  # the density and three dashed components
    assert [line.get_linestyle() for line in ax.lines] == ["-", "--", "--", "--"]
    assert sum(isinstance(p, Rectangle) for p in ax.patches) == 12
    grid = ax.lines[0].get_xdata()
    expected = pcrp.posterior.predictive_density(idata, grid, power=1.2, alpha=1.0, prior=prior)
    np.testing.assert_allclose(ax.lines[0].get_ydata(), expected)
    # components are drawn by decreasing size and sum to less than the density
    peaks = [grid[np.argmax(line.get_ydata())] for line in ax.lines[1:]]
    assert peaks[0] < -2 and abs(peaks[1]) < 2 and peaks[2] > 3
    assert np.all(sum(line.get_ydata() for line in ax.lines[1:]) < expected)
    fig = pcrp.plots.plot_predictive_density(
        idata, power=1.2, alpha=1.0, prior=prior, show_components=False
    )
    assert len(fig.axes[0].lines) == 1
    with pytest.raises(ValueError, match="1-D"):
        pcrp.plots.plot_predictive_density(
            _idata(np.zeros((1, 2, 5)), rng.normal(size=(5, 2))), power=1.0, alpha=1.0
        )


def test_plot_cv_curve_marks_the_chosen_power():
    powers = np.array([1.0, 1.2, 1.4, 1.6])
    loss = np.array([20.0, 19.0, 19.2, 30.0])
    result = pcrp.model_selection.CVResult(
        powers=powers,
        loss=loss,
        loss_se=np.full(4, 0.2),
        mean_k=np.array([4.0, 2.5, 2.1, 1.0]),
        loss_draws=np.repeat(loss[:, None, None], 3, axis=2),
        chosen_power=1.4,
        jump_index=3,
        jump_tol=0.1,
    )
    fig = pcrp.plots.plot_cv_curve(result)
    ax = fig.axes[0]
    curve, marker = ax.lines[0], ax.lines[-1]
    np.testing.assert_array_equal(curve.get_xdata(), powers)
    np.testing.assert_array_equal(curve.get_ydata(), loss)
    np.testing.assert_array_equal(marker.get_xdata(), [1.4, 1.4])
    assert "1.4" in marker.get_label()
    assert len(pcrp.plots.plot_cv_curve(result, show_k=True).axes) == 2


def test_plot_clusters_2d_one_ellipse_per_cluster():
    rng = np.random.default_rng(SEED + 3)
    x = np.r_[rng.normal(0, 1, (30, 2)), rng.normal(6, 0.5, (12, 2)), [[20.0, 20.0]]]
    labels = np.r_[np.full(30, 4), np.full(12, 1), [9]]
    prior = pcrp.NIWPrior.from_data(x)
    fig = pcrp.plots.plot_clusters_2d(x, labels, prior=prior)
    ax = fig.axes[0]
    ellipses = [p for p in ax.patches if isinstance(p, Ellipse)]
    assert len(ax.collections) == 3 and len(ellipses) == 3
    # the largest cluster comes first; its ellipse is centred near its NIW posterior mean
    assert ax.collections[0].get_offsets().shape == (30, 2)
    np.testing.assert_allclose(ellipses[0].center, x[:30].mean(axis=0), atol=0.05)
    # sample covariances: the singleton gets no ellipse, and a 2-sd ellipse of a
    # cluster with covariance diag(4, 1) has axes 8 and 4
    fig = pcrp.plots.plot_clusters_2d(x, labels)
    assert sum(isinstance(p, Ellipse) for p in fig.axes[0].patches) == 2
    wide = rng.normal(size=(4000, 2)) * [2.0, 1.0]
    fig = pcrp.plots.plot_clusters_2d(wide, np.zeros(4000, int))
    (ellipse,) = fig.axes[0].patches
    assert sorted([ellipse.width, ellipse.height]) == pytest.approx([4.0, 8.0], rel=0.05)
    with pytest.raises(ValueError, match="2-D or wider"):
        pcrp.plots.plot_clusters_2d(rng.normal(size=(5, 1)), np.zeros(5, int))


def _blobs_in_5d(rng, n=40):
    """Three clusters apart in columns 2 and 3 only; column 4 is wide noise."""
    centres = 3.0 * np.array([[0, 0, 0, 0, 0], [0, 0, 1, 1, 0], [0, 0, 1, -1, 0]])
    noise = rng.normal(0, 1, (3 * n, 5))
    noise[:, 4] *= 6.0  # the column of largest variance carries no cluster
    labels = np.repeat([0, 1, 2], n)
    return noise + centres[labels], labels


def test_cluster_projection_lda_separates_what_the_columns_and_pca_blur():
    rng = np.random.default_rng(SEED + 11)
    x, labels = _blobs_in_5d(rng)

    def separation(points):
        means = np.array([points[labels == k].mean(axis=0) for k in range(3)])
        spread = np.mean([points[labels == k].std(axis=0).mean() for k in range(3)])
        return (
            np.min([np.linalg.norm(means[i] - means[j]) for i, j in ((0, 1), (0, 2), (1, 2))])
            / spread
        )

    lda, w, names = pcrp.plots.cluster_projection(x, labels)
    assert names == ["LD1", "LD2"] and w.shape == (5, 2)
    np.testing.assert_allclose(lda, (x - x.mean(axis=0)) @ w)
    columns, _, _ = pcrp.plots.cluster_projection(x, labels, "none")
    pca, _, pca_names = pcrp.plots.cluster_projection(x, labels, "pca")
    assert pca_names[0].startswith("PC1 (") and "of variance" in pca_names[0]
    assert separation(lda) > 2 * separation(columns)
    assert separation(lda) > separation(pca)
    # two clusters: LDA has one axis only, "auto" falls back to PCA
    _, _, two = pcrp.plots.cluster_projection(x, (labels > 0).astype(int))
    assert two[0].startswith("PC1")
    with pytest.raises(ValueError, match="needs at least 3 clusters"):
        pcrp.plots.cluster_projection(x, (labels > 0).astype(int), "lda")
    with pytest.raises(ValueError, match="'method' must be"):
        pcrp.plots.cluster_projection(x, labels, "tsne")


def test_plot_clusters_2d_projects_wide_data_with_a_legend_of_labels_and_sizes():
    rng = np.random.default_rng(SEED + 12)
    x, labels = _blobs_in_5d(rng)
    labels = np.r_[labels[:-5], np.full(5, 7)]  # a small fourth cluster, label 7
    fig = pcrp.plots.plot_clusters_2d(x, labels, prior=pcrp.NIWPrior.from_data(x))
    ax = fig.axes[0]
    assert ax.get_xlabel() == "LD1" and ax.get_ylabel() == "LD2"
    assert sum(isinstance(p, Ellipse) for p in ax.patches) == 4
    texts = [t.get_text() for t in ax.get_legend().get_texts()]
    assert texts == ["0 (40)", "1 (40)", "2 (35)", "7 (5)"]
    assert ax.get_legend().get_title().get_text() == "cluster (size)"
    # each legend colour is the colour of its cluster's points
    for collection, handle in zip(ax.collections, ax.get_legend().legend_handles, strict=True):
        np.testing.assert_allclose(collection.get_facecolor()[0], handle.get_facecolor()[0])


def test_plot_clusters_2d_thins_large_data_but_keeps_small_clusters_and_ellipses():
    rng = np.random.default_rng(SEED + 13)
    x = np.r_[rng.normal(0, 1, (9000, 2)), rng.normal(8, 1, (12, 2))]
    labels = np.r_[np.zeros(9000, int), np.ones(12, int)]
    fig = pcrp.plots.plot_clusters_2d(x, labels, max_points=1000)
    ax = fig.axes[0]
    drawn = [c.get_offsets().shape[0] for c in ax.collections]
    assert 800 < drawn[0] < 1200 and drawn[1] == 12
    assert sum(isinstance(p, Ellipse) for p in ax.patches) == 2
    assert any("of 9,012 points drawn" in t.get_text() for t in ax.texts)
    full = pcrp.plots.plot_clusters_2d(x, labels, max_points=None)
    assert full.axes[0].collections[0].get_offsets().shape[0] == 9000


def test_plot_k_posterior_bars_carry_their_probabilities():
    k = np.array([[2, 3, 3, 3, 4, 3]])
    fig = pcrp.plots.plot_k_posterior({"a": k}, kind="bar")
    ax = fig.axes[0]
    bars = [p for p in ax.patches if isinstance(p, Rectangle)]
    assert len(bars) == 3 and not ax.lines
    np.testing.assert_allclose([b.get_height() for b in bars], [1 / 6, 4 / 6, 1 / 6])
    np.testing.assert_allclose([b.get_x() + b.get_width() / 2 for b in bars], [2, 3, 4])
    assert [t.get_text() for t in ax.texts] == ["0.167", "0.667", "0.167"]
    two = pcrp.plots.plot_k_posterior({"a": k, "b": np.array([[3, 3]])}, kind="bar")
    assert len([p for p in two.axes[0].patches if isinstance(p, Rectangle)]) == 4
    with pytest.raises(ValueError, match="'kind' must be 'line' or 'bar'"):
        pcrp.plots.plot_k_posterior({"a": k}, kind="pie")


def test_plot_chain_groups_one_panel_per_group_with_the_disputed_points_ringed():
    rng = np.random.default_rng(SEED + 7)
    x = np.r_[rng.normal(0, 1, (30, 2)), rng.normal(6, 0.5, (20, 2))]
    a = np.r_[np.zeros(30, int), np.ones(20, int)]
    b = a.copy()
    b[:5] = 1  # five points of the first cluster join the second
    z = np.stack([np.tile(p, (20, 1)) for p in (a, b, a)])
    idata = az.from_dict(posterior={"z": z}, dims={"z": ["point"]})
    comparison = pcrp.diagnostics.compare_chains(idata)
    assert comparison.groups == ((0, 2), (1,))
    fig = pcrp.plots.plot_chain_groups(x, comparison)
    assert len(fig.axes) == 2
    for ax, sizes in zip(fig.axes, ([30, 20], [25, 25]), strict=True):
        clusters, ringed = ax.collections[:-1], ax.collections[-1]
        assert sorted(len(c.get_offsets()) for c in clusters) == sorted(sizes)
        np.testing.assert_array_equal(ringed.get_offsets(), x[:5])
    assert fig.axes[0].get_title() == "chains 0, 2: 2 clusters (5 disputed, ringed)"
    assert fig.axes[1].get_title() == "chain 1: 2 clusters (5 disputed, ringed)"
    with pytest.raises(ValueError, match="'X' has 49 rows"):
        pcrp.plots.plot_chain_groups(x[:49], comparison)
    with pytest.raises(ValueError, match="2-D"):
        pcrp.plots.plot_chain_groups(np.c_[x, x], comparison)
    with pytest.raises(ValueError, match="one Axes per group"):
        pcrp.plots.plot_chain_groups(x, comparison, axes=[fig.axes[0]])


def test_plot_cluster_sizes_one_bar_per_cluster():
    results = {
        "CRP": np.r_[np.zeros(50), np.ones(30), np.full(3, 2), [3]].astype(int),
        "pCRP": np.r_[np.zeros(52), np.ones(32)].astype(int),
    }
    fig = pcrp.plots.plot_cluster_sizes(results)
    bars = [p for p in fig.axes[0].patches if isinstance(p, Rectangle)]
    assert len(bars) == 6
    assert [b.get_height() for b in bars] == [50, 30, 3, 1, 52, 32]
    assert [t.get_text() for t in fig.axes[0].get_legend().get_texts()] == [
        "CRP (K=4)",
        "pCRP (K=2)",
    ]
    with pytest.raises(ValueError, match="non-empty"):
        pcrp.plots.plot_cluster_sizes({})
