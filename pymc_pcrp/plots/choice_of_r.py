"""The cross-validation loss against the power ``r``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pymc_pcrp.plots._common import new_axes

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from pymc_pcrp.stats.cross_validation import CVResult


__all__ = ["plot_cv_curve"]


def plot_cv_curve(cv_result: CVResult, *, ax: Axes | None = None, show_k: bool = False) -> Figure:
    """Cross-validation loss against the power ``r``, with the chosen ``r`` marked (Fig. 2).

    Parameters
    ----------
    cv_result : CVResult
        Output of :func:`~pymc_pcrp.stats.cross_validation.cross_validate_power`.
    ax : matplotlib.axes.Axes, optional
    show_k : bool, default=False
        Also draw the posterior mean number of clusters on a second y axis.

    Returns
    -------
    matplotlib.figure.Figure
        Error bars are the Monte Carlo standard errors; the vertical line is the
        chosen ``r``.
    """
    ax = new_axes(ax)
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
