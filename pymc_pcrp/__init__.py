"""The powered Chinese restaurant process (pCRP) for PyMC.

Importing the package registers :class:`PCRPGibbs` with ``pm.sample`` and makes
PyMC's end-of-sampling convergence report use the number of clusters instead of
individual labels.
"""

from importlib.metadata import PackageNotFoundError, version

from pymc_pcrp import _convergence
from pymc_pcrp.datasets import load_old_faithful
from pymc_pcrp.distributions import NIWMixture, NIWPrior, PowerCRP
from pymc_pcrp.draws import label_draws, observed_points
from pymc_pcrp.fitting import build_model, fit
from pymc_pcrp.predictive import sample_posterior_predictive
from pymc_pcrp.step_methods import PCRPGibbs

try:
    __version__ = version("pymc-pcrp")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0.0.0+unknown"

_convergence.install()

__all__ = [
    "NIWMixture",
    "NIWPrior",
    "PCRPGibbs",
    "PowerCRP",
    "__version__",
    "build_model",
    "fit",
    "label_draws",
    "load_old_faithful",
    "observed_points",
    "sample_posterior_predictive",
]
