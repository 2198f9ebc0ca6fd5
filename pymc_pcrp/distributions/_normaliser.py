"""Old home of :mod:`pymc_pcrp.distributions.normaliser`, kept so existing imports work."""

from pymc_pcrp.distributions.normaliser import (
    PCRPExpectedClusters,
    PCRPLogNormaliser,
    is_fixed,
    log_normaliser,
    log_prior_weights,
    prior_k_moments,
)

__all__ = [
    "PCRPExpectedClusters",
    "PCRPLogNormaliser",
    "is_fixed",
    "log_normaliser",
    "log_prior_weights",
    "prior_k_moments",
]
