"""The powered Chinese restaurant process (pCRP) for PyMC.

Importing the package registers :class:`PCRPGibbs` with ``pm.sample`` and makes
PyMC's end-of-sampling convergence report use the number of clusters instead of
individual labels.
"""

from importlib.metadata import PackageNotFoundError, version

from pymc_pcrp import _convergence
from pymc_pcrp.datasets import load_digits_1to4, load_old_faithful, sim1, sim2
from pymc_pcrp.density import DensityComponents, assign_to_clusters, predictive_density
from pymc_pcrp.distributed import fit_parallel
from pymc_pcrp.distributions import NIWMixture, NIWPrior, PowerCRP
from pymc_pcrp.draws import label_draws, observed_points
from pymc_pcrp.fitting import build_model, fit
from pymc_pcrp.metrics import (
    draw_metrics,
    normalized_mutual_info,
    posterior_summary,
    variation_of_information,
)
from pymc_pcrp.plots import (
    plot_cluster_sizes,
    plot_clusters_2d,
    plot_cv_curve,
    plot_k_posterior,
    plot_k_trace,
    plot_predictive_density,
)
from pymc_pcrp.prediction import PredictResult, predict
from pymc_pcrp.predictive import sample_posterior_predictive
from pymc_pcrp.prior import (
    alpha_for_prior_k,
    crp_oracle_alpha,
    plot_prior_num_clusters,
    prior_mean_num_clusters,
    prior_mode_num_clusters,
    prior_num_clusters,
    sequential_seating,
)
from pymc_pcrp.selection import (
    CVResult,
    cluster_loss,
    cross_validate_power,
    find_jump,
    split_train_test,
)
from pymc_pcrp.step_methods import PCRPGibbs
from pymc_pcrp.summaries import (
    PointEstimate,
    expected_loss,
    plot_similarity,
    point_estimate,
    posterior_similarity,
)

try:
    __version__ = version("pymc-pcrp")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0.0.0+unknown"

_convergence.install()

__all__ = [
    "CVResult",
    "DensityComponents",
    "NIWMixture",
    "NIWPrior",
    "PCRPGibbs",
    "PointEstimate",
    "PowerCRP",
    "PredictResult",
    "__version__",
    "alpha_for_prior_k",
    "assign_to_clusters",
    "build_model",
    "cluster_loss",
    "cross_validate_power",
    "crp_oracle_alpha",
    "draw_metrics",
    "expected_loss",
    "find_jump",
    "fit",
    "fit_parallel",
    "label_draws",
    "load_digits_1to4",
    "load_old_faithful",
    "normalized_mutual_info",
    "observed_points",
    "plot_cluster_sizes",
    "plot_clusters_2d",
    "plot_cv_curve",
    "plot_k_posterior",
    "plot_k_trace",
    "plot_predictive_density",
    "plot_prior_num_clusters",
    "plot_similarity",
    "point_estimate",
    "posterior_similarity",
    "posterior_summary",
    "predict",
    "predictive_density",
    "prior_mean_num_clusters",
    "prior_mode_num_clusters",
    "prior_num_clusters",
    "sample_posterior_predictive",
    "sequential_seating",
    "sim1",
    "sim2",
    "split_train_test",
    "variation_of_information",
]
