"""The powered Chinese restaurant process (pCRP) for PyMC.

The top level holds the model and the verbs of a typical session::

    import pymc_pcrp as pcrp

    idata = pcrp.fit(x, power=1.1)           # or write the model with PowerCRP / NIWMixture
    best = pcrp.point_estimate(idata)        # one partition summarising the posterior
    new = pcrp.predict(idata, x_new)         # r, alpha and the prior are stored in idata

The toolkits live in named submodules, all imported with the package:
:mod:`pymc_pcrp.posterior` (similarity, point estimate, prediction, replicated
data), :mod:`pymc_pcrp.prior` (the prior on the number of clusters),
:mod:`pymc_pcrp.model_selection` (choosing ``r``), :mod:`pymc_pcrp.diagnostics`
(convergence of the chains), :mod:`pymc_pcrp.metrics`
(scores against known labels), :mod:`pymc_pcrp.plots`, :mod:`pymc_pcrp.datasets`
and :mod:`pymc_pcrp.distributed` (chains on several machines).

Importing the package registers :class:`PCRPGibbs` (labels) and :class:`PCRPHyper`
(a random ``alpha`` or power) with ``pm.sample``, makes
PyMC's end-of-sampling convergence report use the number of clusters instead of
individual labels, and makes ``pm.compute_log_likelihood`` store the pointwise
log-likelihood of an :class:`NIWMixture` (:func:`pymc_pcrp.posterior.log_likelihood`).
It also makes ``pm.sample_posterior_predictive``, ``pm.sample_smc``,
``pm.find_MAP`` and ``pm.sample(step=...)`` either handle a pCRP model correctly or
refuse it with the reason (docs/entry_points.md).
"""

import pymc_pcrp._startup  # noqa: F401  (first: a Ctrl-C of the command line during the imports)

# isort: split
from importlib.metadata import PackageNotFoundError, version

from pymc_pcrp import (
    _entry_points,
    datasets,
    diagnostics,
    distributed,
    metrics,
    model_selection,
    plots,
    posterior,
    prior,
)
from pymc_pcrp.diagnostics import ConvergenceWarning, SamplingInterrupted, check_convergence
from pymc_pcrp.distributions import NIWMixture, NIWPrior, PowerCRP
from pymc_pcrp.estimator import PCRPMixture
from pymc_pcrp.fitting import build_model, fit
from pymc_pcrp.posterior import (
    _pymc_hook,
    point_estimate,
    posterior_similarity,
    predict,
    sample_posterior_predictive,
)
from pymc_pcrp.step_methods import PCRPGibbs, PCRPHyper, _convergence

try:
    __version__ = version("pymc-pcrp")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0.0.0+unknown"

_convergence.install()
_pymc_hook.install()
_entry_points.install()

__all__ = [
    "ConvergenceWarning",
    "NIWMixture",
    "NIWPrior",
    "PCRPGibbs",
    "PCRPHyper",
    "PCRPMixture",
    "PowerCRP",
    "SamplingInterrupted",
    "__version__",
    "build_model",
    "check_convergence",
    "datasets",
    "diagnostics",
    "distributed",
    "fit",
    "metrics",
    "model_selection",
    "plots",
    "point_estimate",
    "posterior",
    "posterior_similarity",
    "predict",
    "prior",
    "sample_posterior_predictive",
]
