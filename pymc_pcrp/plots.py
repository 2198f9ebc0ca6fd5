"""Figures of the paper's kind, drawn with matplotlib.

===============================  ===================================================
:func:`plot_k_trace`             trace of the number of clusters per chain (Fig. 3)
:func:`plot_predictive_density`  1-D predictive density and its components (Fig. 4)
:func:`plot_k_posterior`         posterior of ``K`` for several methods (Fig. 5)
:func:`plot_cv_curve`            cross-validation loss against ``r`` (Fig. 2)
:func:`plot_clusters_2d`         2-D clusters with covariance ellipses (Fig. 6)
:func:`plot_cluster_sizes`       cluster sizes of several clusterings (Fig. 7)
:func:`plot_similarity`          posterior similarity matrix, grouped by cluster
:func:`plot_prior_num_clusters`  the exact prior on the number of clusters
===============================  ===================================================

Every function draws into ``ax`` if given (a new figure otherwise) and returns
the :class:`~matplotlib.figure.Figure`. Colours follow the active matplotlib
colour cycle (``"C0"``, ``"C1"``, ...), as ArviZ's plots do, so an ArviZ style
(``az.style.use("arviz-darkgrid")``) applies to them too. matplotlib is imported
only when a function is called.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

import arviz as az
import numpy as np

from pymc_pcrp._idata import label_draws, observed_points
from pymc_pcrp._validation import check_data, check_positive_scalar
from pymc_pcrp.distributions import NIWPrior
from pymc_pcrp.distributions._niw_numpy import check_prior, niw_posterior
from pymc_pcrp.posterior.prediction import predictive_density
from pymc_pcrp.posterior.similarity import (
    PointEstimate,
    _canonical,
    _check_similarity,
    _flat_draws,
    _is_similarity,
    point_estimate,
    posterior_similarity,
)
from pymc_pcrp.prior import _check_n, prior_num_clusters

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from pymc_pcrp.diagnostics import ChainComparison
    from pymc_pcrp.model_selection import CVResult

__all__ = [
    "cluster_projection",
    "plot_chain_groups",
    "plot_cluster_sizes",
    "plot_clusters_2d",
    "plot_cv_curve",
    "plot_k_posterior",
    "plot_k_trace",
    "plot_predictive_density",
    "plot_prior_num_clusters",
    "plot_similarity",
]

_MARKERS = ("x", "o", "*", "s", "^", "D", "v", "P")


def _new_axes(ax: Axes | None) -> Axes:
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    _, new = plt.subplots()
    return new


def _plane_data(X, function: str) -> np.ndarray:
    """``X`` checked as data of exactly two columns, for the scatter plots."""
    x = check_data(X, "X")
    if x.shape[1] != 2:
        raise ValueError(f"{function} needs 2-D data, got D = {x.shape[1]}.")
    return x


def _k_draws(source) -> np.ndarray:
    """Count the clusters of each draw, shape ``(chain, draw)``, from idata or an array."""
    if isinstance(source, az.InferenceData):
        if "posterior" in source.groups() and "n_clusters" in source.posterior:
            return np.asarray(source.posterior["n_clusters"].values, dtype=np.int64)
        labels = label_draws(source)
        flat = labels.reshape(-1, labels.shape[-1])
        counts = np.array([np.unique(row).size for row in flat], dtype=np.int64)
        return counts.reshape(labels.shape[:2])
    values = np.asarray(source)
    if values.size == 0 or not np.issubdtype(values.dtype, np.integer) or values.ndim > 2:
        raise ValueError(
            "Expected an InferenceData or integer draws of K with shape (draw,) or "
            f"(chain, draw), but got dtype {values.dtype} and shape {values.shape}."
        )
    return values.reshape(1, -1) if values.ndim <= 1 else values


def _label_vector(labels, name: str, n: int | None = None) -> np.ndarray:
    """Integer labels of shape ``(N,)``; objects with a ``labels`` attribute are unwrapped."""
    values = np.asarray(getattr(labels, "labels", labels))
    if values.ndim != 1 or not np.issubdtype(values.dtype, np.integer):
        raise ValueError(
            f"Argument '{name}' must be a vector of integer labels, but got dtype "
            f"{values.dtype} and shape {values.shape}."
        )
    if n is not None and values.shape[0] != n:
        raise ValueError(f"Argument '{name}' has {values.shape[0]} labels for {n} points.")
    return values


def plot_k_trace(
    idata_or_dict: az.InferenceData | Mapping[str, az.InferenceData],
    *,
    ax: Axes | Sequence[Axes] | None = None,
) -> Figure:
    """Trace of the number of clusters ``K``, one line per chain (the paper's Fig. 3).

    Parameters
    ----------
    idata_or_dict : arviz.InferenceData or mapping of str to InferenceData
        One posterior, or several keyed by method name (one panel each, sharing
        the ``K`` axis). ``K`` is read from ``posterior.n_clusters`` when
        present and counted from the labels otherwise; an integer array of
        ``K`` draws, shape ``(chain, draw)``, is accepted in place of an
        InferenceData.
    ax : matplotlib.axes.Axes or sequence of Axes, optional
        One Axes for one posterior, one per method for a mapping.

    Returns
    -------
    matplotlib.figure.Figure
    """
    import matplotlib.pyplot as plt

    if isinstance(idata_or_dict, Mapping) and not isinstance(idata_or_dict, az.InferenceData):
        items = list(idata_or_dict.items())
        if not items:
            raise ValueError("Argument 'idata_or_dict' is an empty mapping.")
    else:
        items = [(None, idata_or_dict)]
    if ax is None:
        _, created = plt.subplots(
            1, len(items), figsize=(4.0 * len(items), 3.0), sharey=True, squeeze=False
        )
        axes = list(created[0])
    else:
        axes = [ax] if not isinstance(ax, Sequence | np.ndarray) else list(np.ravel(ax))
        if len(axes) != len(items):
            raise ValueError(f"Argument 'ax' must hold {len(items)} Axes, got {len(axes)}.")
    for panel, (name, source) in zip(axes, items, strict=True):
        k = _k_draws(source)
        for c in range(k.shape[0]):
            panel.plot(np.arange(k.shape[1]), k[c], color=f"C{c}", lw=0.8, label=f"chain {c}")
        panel.set_xlabel("Draw")
        panel.set_ylabel("Number of clusters K")
        panel.yaxis.get_major_locator().set_params(integer=True)
        if name is not None:
            panel.set_title(str(name))
        if k.shape[0] > 1:
            panel.legend(fontsize="small")
    return axes[0].figure


def plot_k_posterior(
    results: Mapping[str, az.InferenceData],
    *,
    ax: Axes | None = None,
    markers: Sequence[str] | None = None,
    kind: str = "line",
) -> Figure:
    """Posterior probability of each number of clusters, one marked line per method (Fig. 5).

    ``kind="bar"`` draws bars instead (side by side for several methods), the
    natural picture of a discrete posterior.

    Parameters
    ----------
    results : mapping of str to InferenceData
        Posteriors keyed by method name (an integer array of ``K`` draws is
        accepted in place of an InferenceData). All chains are pooled.
    ax : matplotlib.axes.Axes, optional
    markers : sequence of str, optional
        One marker per method; by default ``x``, ``o``, ``*``, ... as in the
        paper's figure.
    kind : {"line", "bar"}, default="line"

    Returns
    -------
    matplotlib.figure.Figure
    """
    if isinstance(results, az.InferenceData) or not isinstance(results, Mapping) or not results:
        raise ValueError(
            "Argument 'results' must be a non-empty mapping {method name: idata}; wrap a single "
            "InferenceData as {'name': idata}."
        )
    if kind not in ("line", "bar"):
        raise ValueError(f"Argument 'kind' must be 'line' or 'bar', got {kind!r}.")
    ax = _new_axes(ax)
    markers = list(markers) if markers is not None else list(_MARKERS)
    width = 0.8 / len(results)
    for i, (name, source) in enumerate(results.items()):
        k = _k_draws(source).ravel()
        values, counts = np.unique(k, return_counts=True)
        if kind == "bar":
            shift = (i - (len(results) - 1) / 2) * width
            bars = ax.bar(
                values + shift, counts / k.size, width=width, color=f"C{i}", label=str(name)
            )
            if len(results) == 1:  # each bar's probability above it
                ax.bar_label(bars, labels=[f"{c / k.size:.3g}" for c in counts], fontsize="small")
            continue
        ax.plot(
            values,
            counts / k.size,
            marker=markers[i % len(markers)],
            color=f"C{i}",
            lw=1.0,
            label=str(name),
        )
    ax.set_xlabel("Number of clusters K")
    ax.set_ylabel("Posterior probability")
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.legend()
    return ax.figure


def plot_predictive_density(
    idata: az.InferenceData,
    X=None,
    *,
    power: float,
    alpha: float,
    prior: NIWPrior | None = None,
    grid=None,
    n_grid: int = 400,
    bins: int | str = "auto",
    max_draws: int | None = None,
    show_components: bool = True,
    ax: Axes | None = None,
) -> Figure:
    """Posterior predictive density over a histogram of 1-D data (the paper's Fig. 4).

    The solid line is :func:`~pymc_pcrp.posterior.predictive_density` averaged over the
    draws. The dashed lines are the weighted components ``w_k t_k(x)`` of the
    occupied clusters of the representative draw that
    ``predictive_density(..., components=True)`` picks (the modal number of
    clusters, highest log joint). The new-cluster term is part of the solid
    line but is not drawn on its own: its weight is small and it is nearly flat.

    Parameters
    ----------
    idata : arviz.InferenceData
        Posterior of a fit to 1-D data.
    X : array_like, shape (N,) or (N, 1), optional
        Data of the histogram; defaults to the observed data in ``idata``.
    power, alpha, prior, max_draws
        As in :func:`~pymc_pcrp.posterior.predictive_density`.
    grid : array_like, shape (G,), optional
        Defaults to ``n_grid`` points spanning the data and 10% of its range
        on either side.
    n_grid : int, default=400
    bins : int or str, default="auto"
        Passed to :meth:`matplotlib.axes.Axes.hist`.
    show_components : bool, default=True
    ax : matplotlib.axes.Axes, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    data = observed_points(idata) if X is None else check_data(X, "X")
    if data.shape[1] != 1:
        raise ValueError(
            f"plot_predictive_density draws 1-D data; got D = {data.shape[1]}. "
            "Use plot_clusters_2d for 2-D data."
        )
    values = data[:, 0]
    if grid is None:
        low, high = values.min(), values.max()
        pad = 0.1 * (high - low) if high > low else 1.0
        grid = np.linspace(low - pad, high + pad, int(n_grid))
    grid = np.asarray(grid, dtype=np.float64).reshape(-1)
    density, parts = predictive_density(
        idata,
        grid,
        power=power,
        alpha=alpha,
        prior=prior,
        max_draws=max_draws,
        components=True,
    )
    ax = _new_axes(ax)
    ax.hist(values, bins=bins, density=True, color="0.75", edgecolor="white", label="data")
    ax.plot(grid, density, color="C0", lw=2.0, label="predictive density")
    if show_components:
        order = np.argsort(-parts.sizes, kind="stable")
        for rank, k in enumerate(order):
            ax.plot(
                grid,
                parts.densities[k],
                ls="--",
                lw=1.2,
                color=f"C{rank + 1}",
                label=f"component {rank + 1} (n={parts.sizes[k]})",
            )
    ax.set_xlabel("x")
    ax.set_ylabel("Density")
    ax.legend(fontsize="small")
    return ax.figure


def plot_cv_curve(cv_result: CVResult, *, ax: Axes | None = None, show_k: bool = False) -> Figure:
    """Cross-validation loss against the power ``r``, with the chosen ``r`` marked (Fig. 2).

    Parameters
    ----------
    cv_result : CVResult
        Output of :func:`~pymc_pcrp.model_selection.cross_validate_power`.
    ax : matplotlib.axes.Axes, optional
    show_k : bool, default=False
        Also draw the posterior mean number of clusters on a second y axis.

    Returns
    -------
    matplotlib.figure.Figure
        Error bars are the Monte Carlo standard errors; the vertical line is the
        chosen ``r``.
    """
    ax = _new_axes(ax)
    ax.errorbar(
        cv_result.powers,
        cv_result.loss,
        yerr=cv_result.loss_se,
        marker="o",
        ms=4,
        color="C0",
        capsize=2,
        label="held-out loss",
    )
    ax.axvline(
        cv_result.chosen_power,
        color="C3",
        ls="--",
        label=f"chosen r = {cv_result.chosen_power:g}",
    )
    ax.set_xlabel("Power r")
    ax.set_ylabel("Loss")
    if show_k:
        twin = ax.twinx()
        twin.plot(cv_result.powers, cv_result.mean_k, color="C1", ls=":", marker="s", ms=3)
        twin.set_ylabel("Posterior mean K", color="C1")
    ax.legend(fontsize="small")
    return ax.figure


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
    z = _label_vector(labels, "labels", x.shape[0])
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


def _cluster_colours(n: int) -> list:
    """``C0``-``C9`` for up to 10 clusters, else a 20-colour map (then repeated)."""
    if n <= 10:
        return [f"C{i}" for i in range(n)]
    import matplotlib

    cmap = matplotlib.colormaps["tab20"]
    return [cmap(i % 20) for i in range(n)]


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
    z = _label_vector(labels, "labels", x.shape[0])
    if projection == "auto" and x.shape[1] == 2:
        projection = "none"
    _, w, names = cluster_projection(x, z, projection)
    offset = 0.0 if projection == "none" else x.mean(axis=0)  # "none": the columns as they are
    points = (x - offset) @ w
    if prior is not None:
        prior = check_prior(prior, x, x.shape[1])
    ax = _new_axes(ax)
    values, counts = np.unique(z, return_counts=True)
    order = np.argsort(-counts, kind="stable")
    colours = _cluster_colours(values.size)
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
        Output of :func:`pymc_pcrp.diagnostics.compare_chains`.
    axes : sequence of matplotlib.axes.Axes, optional
        One per group; new axes side by side by default.

    Returns
    -------
    matplotlib.figure.Figure
    """
    x = _plane_data(X, "plot_chain_groups")
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


def plot_cluster_sizes(
    results: Mapping[str, object],
    *,
    ax: Axes | None = None,
) -> Figure:
    """Sizes of the clusters of several clusterings, as grouped bars (the paper's Fig. 7).

    Each clustering's cluster sizes are sorted in decreasing order; bar group
    ``j`` on the x axis holds the ``j``-th largest cluster of every method.

    Parameters
    ----------
    results : mapping of str to array_like of int
        Clusterings of the same data keyed by method name (label vectors, or
        objects with a ``labels`` attribute such as a point estimate).
    ax : matplotlib.axes.Axes, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    if not isinstance(results, Mapping) or not results:
        raise ValueError("Argument 'results' must be a non-empty mapping {method name: labels}.")
    sizes = {
        name: np.sort(
            np.unique(_label_vector(labels, f"results[{name!r}]"), return_counts=True)[1]
        )[::-1]
        for name, labels in results.items()
    }
    ax = _new_axes(ax)
    width = 0.8 / len(sizes)
    for i, (name, counts) in enumerate(sizes.items()):
        positions = np.arange(1, counts.size + 1) - 0.4 + (i + 0.5) * width
        ax.bar(positions, counts, width=width, color=f"C{i}", label=f"{name} (K={counts.size})")
    ax.set_xlabel("Cluster (by decreasing size)")
    ax.set_ylabel("Size")
    ax.set_xticks(np.arange(1, max(c.size for c in sizes.values()) + 1))
    ax.legend(fontsize="small")
    return ax.figure


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

    if _is_similarity(psm_or_idata):
        psm = _check_similarity(psm_or_idata)
        source = psm
        default_loss = "binder"
    else:
        draws = _flat_draws(psm_or_idata, var_name)
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
    labels = _canonical(labels)
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


def plot_prior_num_clusters(
    n: int, alpha: float, powers: float | Iterable[float], ax: Axes | None = None
) -> Figure:
    """Plot the exact prior on the number of clusters for one or several powers.

    Parameters
    ----------
    n, alpha : int, float
        Number of items and concentration, as in
        :func:`~pymc_pcrp.prior.prior_num_clusters`.
    powers : float or iterable of float
        One line is drawn per power ``r``.
    ax : matplotlib.axes.Axes, optional
        Axes to draw on; a new figure is created by default.

    Returns
    -------
    matplotlib.figure.Figure
        The figure holding the axes; ``K`` is on the horizontal axis.

    Notes
    -----
    Requires matplotlib, which is not a dependency of the library.
    """
    try:
        import matplotlib.pyplot as plt
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError(
            "plot_prior_num_clusters needs matplotlib; install it with `pip install matplotlib`."
        ) from err
    n = _check_n(n)
    alpha = check_positive_scalar(alpha, "alpha")
    powers = [check_positive_scalar(r, "powers") for r in np.atleast_1d(powers)]
    if not powers:
        raise ValueError("Argument 'powers' must hold at least one power.")
    pmfs = [prior_num_clusters(n, alpha, r) for r in powers]
    # Show K up to where every curve has dropped below 1e-4 of its largest value.
    k_hi = max(int(np.flatnonzero(p >= 1e-4 * p.max()).max()) for p in pmfs)
    k_hi = max(k_hi, 2)
    if ax is None:
        _, ax = plt.subplots()
    k = np.arange(1, k_hi + 1)
    for r, p in zip(powers, pmfs, strict=True):
        ax.plot(k, p[1 : k_hi + 1], marker="o", markersize=3, label=f"r = {r:g}")
    ax.set_xlabel("number of clusters K")
    ax.set_ylabel("prior probability P(K)")
    ax.set_title(f"pCRP prior on K (N = {n}, alpha = {alpha:g})")
    ax.legend()
    return ax.figure
