"""PyMC step methods; importing this registers :class:`PCRPGibbs` in ``pm.STEP_METHODS``."""

from pymc_pcrp.step_methods.pcrp_gibbs import PCRPGibbs

__all__ = ["PCRPGibbs"]
