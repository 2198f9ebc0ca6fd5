"""Everything done with a posterior after sampling.

* :mod:`~pymc_pcrp.posterior.similarity`: co-clustering probabilities, a point
  estimate of the partition and its expected loss;
* :mod:`~pymc_pcrp.posterior.prediction`: new points, their cluster
  (:func:`predict`) and their predictive density;
* :mod:`~pymc_pcrp.posterior.ppc`: replicated data (posterior predictive draws), the
  tables' in :mod:`~pymc_pcrp.posterior.table_ppc`;
* :mod:`~pymc_pcrp.posterior.pointwise`: the pointwise log-likelihood
  (:func:`log_likelihood`) behind ``az.loo``, ``az.waic`` and ``az.compare``;
* :mod:`~pymc_pcrp.posterior.relabel`: per-cluster summaries of the parameters
  of slot labels (``PowerCRP(..., max_clusters=K)``, :func:`relabel_slots`);
* :mod:`~pymc_pcrp.posterior.slot_prediction`: the cluster of new observations
  for slot labels and any elementwise likelihood (:func:`predict_slots`).

Every name below is importable from ``pymc_pcrp.posterior``; the most used ones
(:func:`point_estimate`, :func:`posterior_similarity`, :func:`predict`,
:func:`predict_slots`, :func:`relabel_slots`, :func:`sample_posterior_predictive`)
also from ``pymc_pcrp``.
"""

from pymc_pcrp._idata import label_draws, observed_points
from pymc_pcrp.posterior.pointwise import log_likelihood, pointwise_log_likelihood
from pymc_pcrp.posterior.ppc import sample_posterior_predictive
from pymc_pcrp.posterior.prediction import (
    DensityComponents,
    PredictResult,
    predict,
    predictive_density,
)
from pymc_pcrp.posterior.relabel import relabel_slots, slot_permutations
from pymc_pcrp.posterior.similarity import (
    PointEstimate,
    expected_loss,
    point_estimate,
    posterior_similarity,
)
from pymc_pcrp.posterior.slot_prediction import predict_slots

__all__ = [
    "DensityComponents",
    "PointEstimate",
    "PredictResult",
    "expected_loss",
    "label_draws",
    "log_likelihood",
    "observed_points",
    "point_estimate",
    "pointwise_log_likelihood",
    "posterior_similarity",
    "predict",
    "predict_slots",
    "predictive_density",
    "relabel_slots",
    "sample_posterior_predictive",
    "slot_permutations",
]
