"""Statistics of a fit: convergence, agreement between chains, scores, the choice of ``r``.

* :mod:`pymc_pcrp.stats.convergence`: R-hat and bulk ESS of the number of clusters
  and the log joint (:func:`check_convergence`), and runs cut short
  (:class:`SamplingInterrupted`);
* :mod:`pymc_pcrp.stats.chain_comparison`: which chains agree, and on which points
  they do not (:func:`compare_chains`);
* :mod:`pymc_pcrp.stats.metrics`: partitions against known labels (NMI, VI) and the
  paper's summaries of K;
* :mod:`pymc_pcrp.stats.power_choice`: the package's default choice of ``r``
  (:func:`choose_power`) and the sensitivity of the answer to it;
* :mod:`pymc_pcrp.stats.cross_validation`: the paper's choice of ``r`` by
  cross-validation (:func:`cross_validate_power`).

Every name is also importable from here. The modules ``pymc_pcrp.diagnostics``
(convergence and chain comparison), ``pymc_pcrp.metrics`` and
``pymc_pcrp.model_selection`` (the choice of ``r``) keep the names they held in
version 0.2.0.
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
from pymc_pcrp.stats.cross_validation import (
    CVResult,
    cluster_loss,
    cross_validate_power,
    find_jump,
    split_train_test,
)
from pymc_pcrp.stats.metrics import (
    ClusteringSummary,
    clustering_summary,
    draw_metrics,
    normalized_mutual_info,
    variation_of_information,
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
    "ChainComparison",
    "ClusteringSummary",
    "ConvergenceReport",
    "ConvergenceWarning",
    "PowerChoice",
    "PowerSensitivity",
    "PowerSensitivityWarning",
    "QuantityDiagnostics",
    "SamplingInterrupted",
    "agreeing_power",
    "check_complete",
    "check_convergence",
    "choose_power",
    "cluster_loss",
    "clustering_summary",
    "compare_chains",
    "cross_validate_power",
    "draw_metrics",
    "find_jump",
    "merged_pairs",
    "normalized_mutual_info",
    "power_sensitivity",
    "split_train_test",
    "stop_after_interrupted_chain",
    "variation_of_information",
    "warn_if_not_converged",
]
