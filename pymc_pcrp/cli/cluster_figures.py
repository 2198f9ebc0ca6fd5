"""The figures of a ``cluster`` run: K's trace and posterior, the clusters, the similarity."""

from __future__ import annotations

from pathlib import Path

import arviz as az
import numpy as np

from pymc_pcrp.cli.cluster_options import MAX_SIMILARITY_ROWS
from pymc_pcrp.cli.io import save_figure
from pymc_pcrp.distributions import NIWPrior
from pymc_pcrp.posterior import PointEstimate
from pymc_pcrp.stats.chain_comparison import ChainComparison
from pymc_pcrp.stats.cross_validation import CVResult

__all__ = ["write_figures"]


def write_figures(
    tmp: Path,
    idata: az.InferenceData,
    x: np.ndarray,  # or the table's DataFrame
    names: list[str],
    estimate: PointEstimate,
    prior: NIWPrior | None,
    power: float,
    alpha: float,
    cv: CVResult | None,
    comparison: ChainComparison | None = None,
) -> list[str]:
    """Draw the run's figures into ``tmp`` and return their file names.

    ``prior`` None means the table family (``x`` a DataFrame): only the figures
    of K and the similarity matrix are drawn
    (:data:`~pymc_pcrp.cli.cluster_table.SKIPPED_FIGURES` says why).
    """
    from pymc_pcrp.plots import (
        cluster_projection,
        plot_chain_groups,
        plot_clusters_2d,
        plot_cv_curve,
        plot_k_posterior,
        plot_k_trace,
        plot_predictive_density,
        plot_similarity,
    )

    def k_trace(ax):
        plot_k_trace(idata, ax=ax)
        ax.set_title("Number of clusters K in each draw, one line per chain")

    def k_posterior(ax):
        plot_k_posterior({f"r = {power:g}": idata}, ax=ax, kind="bar")
        ax.set_title(f"Posterior of the number of clusters K (r = {power:g})")
        ax.get_legend().remove()

    written = ["k_trace.png", "k_posterior.png"]
    save_figure(tmp / "k_trace.png", k_trace, (7.0, 3.5))
    save_figure(tmp / "k_posterior.png", k_posterior)
    if prior is None:  # the table family: no plane or line to draw the rows in
        pass
    elif x.shape[1] == 1:

        def density(ax):
            plot_predictive_density(idata, power=power, alpha=alpha, prior=prior, ax=ax)
            ax.set_xlabel(names[0])
            ax.set_title(f"Posterior predictive density (r = {power:g})")

        save_figure(tmp / "density_1d.png", density)
        written.append("density_1d.png")
    else:
        plane, _, axis_names = cluster_projection(x, estimate.labels)
        if x.shape[1] == 2:
            plane, axis_names = x, names[:2]
        how = "" if x.shape[1] == 2 else f", on {axis_names[0][:3]} and {axis_names[1][:3]}"

        def clusters(ax):
            plot_clusters_2d(x, estimate, prior=prior, ax=ax)
            ax.set(
                xlabel=axis_names[0],
                ylabel=axis_names[1],
                title=f"Point estimate: {estimate.n_clusters} cluster(s){how}",
            )

        save_figure(tmp / "clusters_2d.png", clusters, (6.5, 5.5))
        written.append("clusters_2d.png")
        if comparison is not None and not comparison.agree:

            def chain_groups(axes):
                plot_chain_groups(plane, comparison, axes=axes)
                for ax in axes:
                    ax.set(xlabel=axis_names[0], ylabel=axis_names[1])

            n_groups = len(comparison.groups)
            size = (5.0 * n_groups, 4.5)
            save_figure(tmp / "chain_groups.png", chain_groups, size, panels=n_groups)
            written.append("chain_groups.png")
    if x.shape[0] <= MAX_SIMILARITY_ROWS:

        def similarity(ax):
            plot_similarity(idata, estimate, ax=ax)
            ax.set_title("Posterior probability that two rows share a cluster")

        save_figure(tmp / "similarity.png", similarity, (6.0, 5.0))
        written.append("similarity.png")
    if cv is not None:

        def cv_curve(ax):
            plot_cv_curve(cv, ax=ax, show_k=True)
            ax.set_title("Cross-validation: held-out loss against r")

        save_figure(tmp / "cv_curve.png", cv_curve)
        written.append("cv_curve.png")
    return written
