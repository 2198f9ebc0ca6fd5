"""PyMC step methods; importing this registers every step of the package with ``pm.sample``."""

from pymc_pcrp.step_methods.pcrp_gibbs import PCRPGibbs
from pymc_pcrp.step_methods.pcrp_hyper import PCRPHyper
from pymc_pcrp.step_methods.pcrp_slots import MaxClustersWarning, PCRPSlotGibbs

__all__ = ["MaxClustersWarning", "PCRPGibbs", "PCRPHyper", "PCRPSlotGibbs"]
