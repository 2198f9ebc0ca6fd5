"""Helpers shared by the figures: new axes, label vectors, markers and colours."""

from __future__ import annotations

from typing import TYPE_CHECKING

import arviz as az
import numpy as np

from pymc_pcrp._idata import label_draws
from pymc_pcrp._validation import check_data

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["MARKERS", "cluster_colours", "k_draws", "label_vector", "new_axes", "plane_data"]

#: Marker styles for clusterings drawn in one figure.
MARKERS = ("x", "o", "*", "s", "^", "D", "v", "P")


def new_axes(ax: Axes | None) -> Axes:
    """Return ``ax``, or the axes of a new figure."""
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    _, new = plt.subplots()
    return new


def plane_data(X, function: str) -> np.ndarray:
    """``X`` checked as data of exactly two columns, for the scatter plots."""
    x = check_data(X, "X")
    if x.shape[1] != 2:
        raise ValueError(f"{function} needs 2-D data, got D = {x.shape[1]}.")
    return x


def k_draws(source) -> np.ndarray:
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


def label_vector(labels, name: str, n: int | None = None) -> np.ndarray:
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


def cluster_colours(n: int) -> list:
    """``C0``-``C9`` for up to 10 clusters, else a 20-colour map (then repeated)."""
    if n <= 10:
        return [f"C{i}" for i in range(n)]
    import matplotlib

    cmap = matplotlib.colormaps["tab20"]
    return [cmap(i % 20) for i in range(n)]
