"""The powered Chinese restaurant process (pCRP) for PyMC.

The top level holds the model and the verbs of a typical session::

    import pymc_pcrp as pcrp

    idata = pcrp.fit(x, power=1.1)           # or write the model with PowerCRP / NIWMixture
    best = pcrp.point_estimate(idata)        # one partition summarising the posterior
    new = pcrp.predict(idata, x_new)         # r, alpha and the prior are stored in idata

The toolkits live in named submodules, all imported with the package:
:mod:`pymc_pcrp.posterior` (similarity, point estimate, prediction, replicated
data), :mod:`pymc_pcrp.prior` (the prior on the number of clusters),
:mod:`pymc_pcrp.stats` (convergence of the chains, scores against known labels,
choosing ``r``), :mod:`pymc_pcrp.plots`, :mod:`pymc_pcrp.datasets` and
:mod:`pymc_pcrp.distributed` (chains on several machines). The modules
``pymc_pcrp.diagnostics``, ``pymc_pcrp.metrics`` and ``pymc_pcrp.model_selection``
keep the names they held in version 0.2.0.

Importing the package registers :class:`PCRPGibbs` (labels) and :class:`PCRPHyper`
(a random ``alpha`` or power) with ``pm.sample``, makes
PyMC's end-of-sampling convergence report use the number of clusters instead of
individual labels, and makes ``pm.compute_log_likelihood`` store the pointwise
log-likelihood of an :class:`NIWMixture` (:func:`pymc_pcrp.posterior.log_likelihood`).
It also makes ``pm.sample_posterior_predictive``, ``pm.sample_smc``,
``pm.find_MAP`` and ``pm.sample(step=...)`` either handle a pCRP model correctly or
refuse it with the reason, and makes ``pm.sample`` record the model's power, alpha
and NIW prior in its InferenceData, as :func:`fit` does (docs/entry_points.md). All
of these patches are in :mod:`pymc_pcrp.pymc_integration`; set the environment
variable ``PYMC_PCRP_NO_PATCH=1`` before the import, or call
``pymc_pcrp.pymc_integration.uninstall()``, to keep PyMC's functions as they are.
"""

import pymc_pcrp._startup  # noqa: F401  (first: a Ctrl-C of the command line during the imports)

# isort: split
from importlib.metadata import PackageNotFoundError, version

from pymc_pcrp import (
    datasets,
    diagnostics,
    distributed,
    metrics,
    model_selection,
    plots,
    posterior,
    prior,
    pymc_integration,
    stats,
)
from pymc_pcrp.distributions import (
    NIWMixture,
    NIWPrior,
    PowerCRP,
    TableColumn,
    TableMixture,
    table_spec,
)
from pymc_pcrp.estimator import PCRPMixture
from pymc_pcrp.fitting import build_model, fit
from pymc_pcrp.posterior import (
    point_estimate,
    posterior_similarity,
    predict,
    predict_slots,
    relabel_slots,
    sample_posterior_predictive,
)
from pymc_pcrp.pymc_integration import record_model
from pymc_pcrp.stats.convergence import ConvergenceWarning, SamplingInterrupted, check_convergence
from pymc_pcrp.step_methods import MaxClustersWarning, PCRPGibbs, PCRPHyper, PCRPSlotGibbs

try:
    __version__ = version("pymc-pcrp")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0.0.0+unknown"

if not pymc_integration.opted_out():
    pymc_integration.install()

__all__ = [
    "ConvergenceWarning",
    "MaxClustersWarning",
    "NIWMixture",
    "NIWPrior",
    "PCRPGibbs",
    "PCRPHyper",
    "PCRPMixture",
    "PCRPSlotGibbs",
    "PowerCRP",
    "SamplingInterrupted",
    "TableColumn",
    "TableMixture",
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
    "predict_slots",
    "prior",
    "pymc_integration",
    "record_model",
    "relabel_slots",
    "sample_posterior_predictive",
    "stats",
    "table_spec",
]
