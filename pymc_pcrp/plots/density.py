"""The 1-D posterior predictive density and its components."""

from __future__ import annotations

from typing import TYPE_CHECKING

import arviz as az
import numpy as np

from pymc_pcrp._idata import observed_points
from pymc_pcrp._validation import check_data
from pymc_pcrp.distributions import NIWPrior
from pymc_pcrp.plots._common import new_axes
from pymc_pcrp.posterior.prediction import predictive_density

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


__all__ = ["plot_predictive_density"]


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
    ax = new_axes(ax)
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
