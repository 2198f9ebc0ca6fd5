"""Figures of the number of clusters: its trace, its posterior, cluster sizes, its prior."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

import arviz as az
import numpy as np

from pymc_pcrp._validation import check_positive_scalar
from pymc_pcrp.plots._common import MARKERS, k_draws, label_vector, new_axes
from pymc_pcrp.prior import check_n, prior_num_clusters

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


__all__ = ["plot_cluster_sizes", "plot_k_posterior", "plot_k_trace", "plot_prior_num_clusters"]


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
        k = k_draws(source)
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
    ax = new_axes(ax)
    markers = list(markers) if markers is not None else list(MARKERS)
    width = 0.8 / len(results)
    for i, (name, source) in enumerate(results.items()):
        k = k_draws(source).ravel()
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
        name: np.sort(np.unique(label_vector(labels, f"results[{name!r}]"), return_counts=True)[1])[
            ::-1
        ]
        for name, labels in results.items()
    }
    ax = new_axes(ax)
    width = 0.8 / len(sizes)
    for i, (name, counts) in enumerate(sizes.items()):
        positions = np.arange(1, counts.size + 1) - 0.4 + (i + 0.5) * width
        ax.bar(positions, counts, width=width, color=f"C{i}", label=f"{name} (K={counts.size})")
    ax.set_xlabel("Cluster (by decreasing size)")
    ax.set_ylabel("Size")
    ax.set_xticks(np.arange(1, max(c.size for c in sizes.values()) + 1))
    ax.legend(fontsize="small")
    return ax.figure


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
    n = check_n(n)
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
