"""The posterior similarity matrix, grouped by the clusters of a point estimate."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from pymc_pcrp.posterior.similarity import (
    PointEstimate,
    check_similarity,
    first_appearance_labels,
    flat_draws,
    is_similarity,
    point_estimate,
    posterior_similarity,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


__all__ = ["plot_similarity"]


def plot_similarity(
    psm_or_idata,
    labels=None,
    *,
    ax: Axes | None = None,
    var_name: str | None = None,
    random_seed=0,
    cmap: str = "viridis",
) -> Figure:
    """Plot the posterior similarity matrix with the points grouped by cluster.

    Parameters
    ----------
    psm_or_idata : numpy.ndarray of float, arviz.InferenceData or array_like of int
        A similarity matrix from :func:`posterior_similarity`, or anything it
        accepts (the matrix is then computed).
    labels : array_like of int or PointEstimate, optional
        Clustering used to order the rows and columns. Defaults to
        :func:`point_estimate` with ``loss="vi"`` when draws are given, or with
        ``loss="binder"`` when only a similarity matrix is given (the VI needs
        the draws).
    ax : matplotlib.axes.Axes, optional
        Axes to draw in; a new figure is made if omitted.
    var_name : str, optional
        Name of the label variable; only for InferenceData input.
    random_seed : int, numpy.random.Generator or None, default=0
        Passed to :func:`point_estimate` when ``labels`` is omitted.
    cmap : str, default="viridis"
        Colour map of the image.

    Returns
    -------
    matplotlib.figure.Figure
        The figure holding the axes. Its image is the ``(N, N)`` matrix with
        clusters in decreasing order of size and, within a cluster, points in
        decreasing order of mean similarity to the rest of the cluster; white
        lines mark the cluster boundaries.
    """
    import matplotlib.pyplot as plt

    if is_similarity(psm_or_idata):
        psm = check_similarity(psm_or_idata)
        source = psm
        default_loss = "binder"
    else:
        draws = flat_draws(psm_or_idata, var_name)
        psm = posterior_similarity(draws)
        source = draws
        default_loss = "vi"
    n = psm.shape[0]
    if labels is None:
        labels = point_estimate(source, loss=default_loss, random_seed=random_seed).labels
    elif isinstance(labels, PointEstimate):
        labels = labels.labels
    labels = np.asarray(labels)
    if labels.shape != (n,) or not np.issubdtype(labels.dtype, np.integer):
        raise ValueError(
            f"Argument 'labels' must be {n} integer labels, but got dtype {labels.dtype} and "
            f"shape {labels.shape}."
        )
    labels = first_appearance_labels(labels)
    sizes = np.bincount(labels)
    cohesion = np.zeros(n)
    for k in range(sizes.shape[0]):
        members = np.flatnonzero(labels == k)
        cohesion[members] = psm[np.ix_(members, members)].mean(axis=1)
    # Clusters by decreasing size (ties by label), then points by decreasing cohesion.
    cluster_rank = np.empty_like(sizes)
    cluster_rank[np.lexsort((np.arange(sizes.shape[0]), -sizes))] = np.arange(sizes.shape[0])
    order = np.lexsort((np.arange(n), -cohesion, cluster_rank[labels]))

    if ax is None:
        fig, ax = plt.subplots(figsize=(5.5, 4.5))
    else:
        fig = ax.figure
    image = ax.imshow(
        psm[np.ix_(order, order)], cmap=cmap, vmin=0.0, vmax=1.0, interpolation="nearest"
    )
    for edge in np.cumsum(np.sort(sizes)[::-1])[:-1]:
        ax.axhline(edge - 0.5, color="white", lw=0.8)
        ax.axvline(edge - 0.5, color="white", lw=0.8)
    fig.colorbar(image, ax=ax, label="posterior co-clustering probability")
    ax.set(
        title=f"Posterior similarity, {sizes.shape[0]} clusters",
        xlabel="row, grouped by cluster",
        ylabel="row, grouped by cluster",
    )
    return fig
