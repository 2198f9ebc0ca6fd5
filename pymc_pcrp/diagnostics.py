"""Convergence of the chains (the names of version 0.2.0).

The code lives in :mod:`pymc_pcrp.stats.convergence` and
:mod:`pymc_pcrp.stats.chain_comparison`; this module keeps its public names.
"""

from pymc_pcrp.stats.chain_comparison import ChainComparison, compare_chains
from pymc_pcrp.stats.convergence import (
    ConvergenceReport,
    ConvergenceWarning,
    QuantityDiagnostics,
    SamplingInterrupted,
    check_complete,
    check_convergence,
    stop_after_interrupted_chain,
    warn_if_not_converged,
)

__all__ = [
    "ChainComparison",
    "ConvergenceReport",
    "ConvergenceWarning",
    "QuantityDiagnostics",
    "SamplingInterrupted",
    "check_complete",
    "check_convergence",
    "compare_chains",
    "stop_after_interrupted_chain",
    "warn_if_not_converged",
]
