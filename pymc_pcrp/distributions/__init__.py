"""PyMC distributions: the pCRP prior on labels and the collapsed NIW mixture likelihood."""

from pymc_pcrp.distributions.niw import NIWMixture
from pymc_pcrp.distributions.niw_prior import NIWPrior
from pymc_pcrp.distributions.pcrp import PowerCRP

__all__ = ["NIWMixture", "NIWPrior", "PowerCRP"]
