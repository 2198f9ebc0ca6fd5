"""Clusters in the plane: a 2-D projection that separates them, ellipses, chain groups."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from pymc_pcrp._validation import check_data
from pymc_pcrp.distributions import NIWPrior
from pymc_pcrp.distributions._niw_numpy import check_prior, niw_posterior
from pymc_pcrp.plots._common import cluster_colours, label_vector, new_axes, plane_data

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from pymc_pcrp.stats.chain_comparison import ChainComparison


__all__ = ["cluster_projection", "plot_chain_groups", "plot_clusters_2d"]


def _ellipse_params(cov: np.ndarray, n_std: float) -> tuple[float, float, float]:
    """Width, height and angle (degrees) of the ``n_std`` ellipse of a 2x2 covariance."""
    eigval, eigvec = np.linalg.eigh(cov)
    eigval = np.clip(eigval, 0.0, None)
    angle = float(np.degrees(np.arctan2(eigvec[1, 1], eigvec[0, 1])))
    width, height = 2.0 * n_std * np.sqrt(eigval[::-1])
    return float(width), float(height), angle


def cluster_projection(X, labels, method: str = "auto") -> tuple[np.ndarray, np.ndarray, list]:
    """Return a 2-D linear projection of ``X`` in which the clusters of ``labels`` separate.

    Parameters
    ----------
    X : array_like, shape (N, D), D >= 2
    labels : array_like of int, shape (N,)
    method : {"auto", "lda", "pca", "none"}, default="auto"
        ``"lda"``: the first two linear discriminant axes of ``labels`` (scikit-learn's
        ``LinearDiscriminantAnalysis``), the plane that best separates the clusters
        relative to their spread; it needs at least 3 clusters. ``"pca"``: the first two
        principal components. ``"none"``: the first two columns. ``"auto"``: the columns
        themselves for D = 2, else LDA with 3 or more clusters and PCA otherwise.

    Returns
    -------
    points : numpy.ndarray, shape (N, 2)
        ``(X - centre) @ W``.
    W : numpy.ndarray, shape (D, 2)
        The linear map (columns: the two axes).
    names : list of str
        Axis names, e.g. ``["LD1", "LD2"]`` or ``["PC1 (41% of variance)", ...]``.
    """
    x = check_data(X, "X")
    z = label_vector(labels, "labels", x.shape[0])
    d = x.shape[1]
    if d < 2:
        raise ValueError(f"cluster_projection needs at least 2 columns, got D = {d}.")
    if method not in ("auto", "lda", "pca", "none"):
        raise ValueError(
            f"Argument 'method' must be 'auto', 'lda', 'pca' or 'none', got {method!r}."
        )
    k = np.unique(z).size
    if method == "auto":
        method = "none" if d == 2 else ("lda" if k >= 3 else "pca")
    if method == "lda" and k < 3:
        raise ValueError(f"method='lda' needs at least 3 clusters for two axes, got {k}.")
    centre = x.mean(axis=0)
    if method == "none":
        w = np.eye(d)[:, :2]
        names = ["column 1", "column 2"]
    elif method == "pca":
        _, sv, vt = np.linalg.svd(x - centre, full_matrices=False)
        w = vt[:2].T
        share = sv**2 / np.sum(sv**2)
        names = [f"PC{i + 1} ({share[i]:.0%} of variance)" for i in range(2)]
    else:
        from sklearn.discriminant_analysis import LinearDiscriminantAnalysis

        lda = LinearDiscriminantAnalysis(n_components=2, solver="eigen", shrinkage=1e-3)
        lda.fit(x, z)
        w = np.asarray(lda.scalings_)[:, :2]
        w = w / np.linalg.norm(w, axis=0)
        names = ["LD1", "LD2"]
    return (x - centre) @ w, w, names


def plot_clusters_2d(
    X,
    labels,
    *,
    prior: NIWPrior | None = None,
    n_std: float = 2.0,
    projection: str = "auto",
    max_points: int | None = 5000,
    legend: bool = True,
    ax: Axes | None = None,
) -> Figure:
    """Scatter data coloured by cluster, with one covariance ellipse per cluster (Fig. 6).

    Clusters are coloured by decreasing size (``C0`` the largest); the legend names
    each colour's label and size. Data of more than two columns are drawn in a 2-D
    projection (:func:`cluster_projection`), with each cluster's mean and
    covariance projected by the same linear map.

    Parameters
    ----------
    X : array_like, shape (N, D), D >= 2
    labels : array_like of int, shape (N,)
        A clustering, for example a point estimate (any object with a
        ``labels`` attribute is unwrapped).
    prior : NIWPrior, optional
        Of dimension D. With a prior, each ellipse is centred at the cluster's NIW
        posterior mean ``mu_n`` and drawn from the posterior mean covariance
        ``Psi_n / (nu_n - D - 1)`` (or the posterior mode ``Psi_n / (nu_n + D + 1)``
        when ``nu_n <= D + 1`` and the mean does not exist), so every cluster,
        singletons included, gets one. Without a prior, the ellipses use each
        cluster's sample mean and sample covariance (``ddof=1``), and clusters
        of fewer than 3 points, whose sample covariance is singular, get none.
    n_std : float, default=2.0
        Mahalanobis radius of the ellipses (2 standard deviations by default).
    projection : {"auto", "lda", "pca", "none"}, default="auto"
        See :func:`cluster_projection`; ``"auto"`` keeps 2-D data as it is. The axis
        labels name the axes.
    max_points : int or None, default=5000
        At most this many points are drawn (a random subset, every cluster keeping at
        least 20 or all of its points), so that the ellipses stay visible on large
        data; the ellipses always use every point. ``None`` draws all.
    legend : bool, default=True
        A legend of the clusters (the 12 largest, and a count of the others).
    ax : matplotlib.axes.Axes, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    from matplotlib.patches import Ellipse

    x = check_data(X, "X")
    if x.shape[1] < 2:
        raise ValueError(f"plot_clusters_2d needs 2-D or wider data, got D = {x.shape[1]}.")
    z = label_vector(labels, "labels", x.shape[0])
    if projection == "auto" and x.shape[1] == 2:
        projection = "none"
    _, w, names = cluster_projection(x, z, projection)
    offset = 0.0 if projection == "none" else x.mean(axis=0)  # "none": the columns as they are
    points = (x - offset) @ w
    if prior is not None:
        prior = check_prior(prior, x, x.shape[1])
    ax = new_axes(ax)
    values, counts = np.unique(z, return_counts=True)
    order = np.argsort(-counts, kind="stable")
    colours = cluster_colours(values.size)
    shown = np.ones(x.shape[0], dtype=bool)
    if max_points is not None and x.shape[0] > max_points:
        rng = np.random.default_rng(0)
        shown = np.zeros(x.shape[0], dtype=bool)
        shown[rng.choice(x.shape[0], size=int(max_points), replace=False)] = True
    size = 10 if shown.sum() <= 2000 else 4
    d = x.shape[1]
    for rank, i in enumerate(order):
        k = values[i]
        in_k = z == k
        visible = np.flatnonzero(in_k & shown)
        if visible.size < min(20, counts[i]):
            visible = np.flatnonzero(in_k)[: min(20, counts[i])]
        colour = colours[rank]
        ax.scatter(
            points[visible, 0],
            points[visible, 1],
            s=size,
            color=colour,
            alpha=0.6,
            label=f"{k} ({counts[i]})",
        )
        members = x[in_k]
        if prior is not None:
            mean, _, nu_n, psi_n = niw_posterior(
                members, prior.mu0, prior.kappa0, prior.nu0, prior.psi0
            )
            cov = psi_n / (nu_n - d - 1.0) if nu_n > d + 1.0 else psi_n / (nu_n + d + 1.0)
        elif members.shape[0] >= 3:
            mean, cov = members.mean(axis=0), np.cov(members, rowvar=False)
        else:
            continue
        width, height, angle = _ellipse_params(w.T @ np.atleast_2d(cov) @ w, n_std)
        ellipse = Ellipse(
            (mean - offset) @ w, width, height, angle=angle, fill=False, color=colour, lw=1.8
        )
        ax.add_patch(ellipse)
    if projection == "none":
        names = ["x1", "x2"]
    ax.set_xlabel(names[0])
    ax.set_ylabel(names[1])
    if legend:
        handles, texts = ax.get_legend_handles_labels()
        title = "cluster (size)"
        if len(handles) > 12:
            title += f"; {len(handles) - 12} smaller not listed"
        ax.legend(
            handles[:12],
            texts[:12],
            title=title,
            fontsize="small",
            markerscale=2,
            loc="best",
            framealpha=0.8,
        )
    if not shown.all():
        ax.text(
            0.01,
            0.01,
            f"{int(shown.sum()):,} of {x.shape[0]:,} points drawn",
            transform=ax.transAxes,
            fontsize="small",
            va="bottom",
        )
    return ax.figure


def plot_chain_groups(
    X, comparison: ChainComparison, *, axes: Sequence[Axes] | None = None
) -> Figure:
    """Show how groups of chains cluster 2-D data differently: one panel per group.

    Each panel is :func:`plot_clusters_2d` of the point estimate of the group's
    first chain (sample means and covariances for the ellipses), with the
    disputed points, those that two groups place differently, ringed in black.

    Parameters
    ----------
    X : array_like, shape (N, 2)
        The data the chains were run on (or two of its columns).
    comparison : ChainComparison
        Output of :func:`pymc_pcrp.stats.chain_comparison.compare_chains`.
    axes : sequence of matplotlib.axes.Axes, optional
        One per group; new axes side by side by default.

    Returns
    -------
    matplotlib.figure.Figure
    """
    x = plane_data(X, "plot_chain_groups")
    if comparison.estimates.shape[1] != x.shape[0]:
        raise ValueError(
            f"Argument 'X' has {x.shape[0]} rows but the chains clustered "
            f"{comparison.estimates.shape[1]} points; pass the data the chains were run on."
        )
    groups = comparison.groups
    if axes is None:
        import matplotlib.pyplot as plt

        _, grid = plt.subplots(1, len(groups), figsize=(5.0 * len(groups), 4.5), squeeze=False)
        axes = list(grid[0])
    elif len(axes) != len(groups):
        raise ValueError(
            f"Argument 'axes' must hold one Axes per group of chains ({len(groups)}), "
            f"got {len(axes)}."
        )
    disputed = comparison.disputed
    for ax, members in zip(axes, groups, strict=True):
        labels = comparison.estimates[members[0]]
        plot_clusters_2d(x, labels, ax=ax)
        if disputed.size:
            ax.scatter(
                x[disputed, 0],
                x[disputed, 1],
                s=70,
                facecolors="none",
                edgecolors="black",
                linewidths=1.0,
            )
        chains = ", ".join(str(c) for c in members)
        k = np.unique(labels).size
        ax.set_title(
            f"chain{'s' if len(members) > 1 else ''} {chains}: {k} cluster{'s' if k != 1 else ''}"
            f" ({disputed.size} disputed, ringed)"
        )
    return axes[0].figure
