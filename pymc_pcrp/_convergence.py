"""Old home of :mod:`pymc_pcrp.step_methods._convergence`, kept so existing imports work."""

from pymc_pcrp.step_methods._convergence import (
    TESTED_PYMC,
    install,
    run_convergence_checks,
)

__all__ = ["TESTED_PYMC", "install", "run_convergence_checks"]
