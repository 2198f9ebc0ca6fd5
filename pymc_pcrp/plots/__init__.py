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

from pymc_pcrp.plots.choice_of_r import plot_cv_curve
from pymc_pcrp.plots.clusters import cluster_projection, plot_chain_groups, plot_clusters_2d
from pymc_pcrp.plots.density import plot_predictive_density
from pymc_pcrp.plots.number_of_clusters import (
    plot_cluster_sizes,
    plot_k_posterior,
    plot_k_trace,
    plot_prior_num_clusters,
)
from pymc_pcrp.plots.similarity import plot_similarity

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
