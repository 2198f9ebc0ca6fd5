"""PyMC step methods; importing this registers :class:`PCRPGibbs` and :class:`PCRPHyper`."""

from pymc_pcrp.step_methods.pcrp_gibbs import PCRPGibbs
from pymc_pcrp.step_methods.pcrp_hyper import PCRPHyper

__all__ = ["PCRPGibbs", "PCRPHyper"]
