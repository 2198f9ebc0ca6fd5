"""Choosing the power ``r`` (the names of version 0.2.0).

The code lives in :mod:`pymc_pcrp.stats.power_choice` (the package's default rule)
and :mod:`pymc_pcrp.stats.cross_validation` (the paper's rule); this module keeps
its public names.
"""

from pymc_pcrp.stats.cross_validation import (
    CVResult,
    cluster_loss,
    cross_validate_power,
    find_jump,
    split_train_test,
)
from pymc_pcrp.stats.power_choice import (
    AUTO_POWERS,
    DEFAULT_POWER,
    PowerChoice,
    PowerSensitivity,
    PowerSensitivityWarning,
    agreeing_power,
    choose_power,
    merged_pairs,
    power_sensitivity,
)

__all__ = [
    "AUTO_POWERS",
    "DEFAULT_POWER",
    "CVResult",
    "PowerChoice",
    "PowerSensitivity",
    "PowerSensitivityWarning",
    "agreeing_power",
    "choose_power",
    "cluster_loss",
    "cross_validate_power",
    "find_jump",
    "merged_pairs",
    "power_sensitivity",
    "split_train_test",
]
