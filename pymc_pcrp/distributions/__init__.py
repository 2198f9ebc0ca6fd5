"""PyMC distributions: the pCRP prior on labels and the collapsed mixture likelihoods."""

from pymc_pcrp.distributions.niw import NIWMixture
from pymc_pcrp.distributions.niw_prior import NIWPrior
from pymc_pcrp.distributions.pcrp import PowerCRP
from pymc_pcrp.distributions.table import TableColumn, TableMixture, table_spec

__all__ = ["NIWMixture", "NIWPrior", "PowerCRP", "TableColumn", "TableMixture", "table_spec"]
