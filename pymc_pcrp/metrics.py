"""Scores of partitions against known labels (the names of version 0.2.0).

The code lives in :mod:`pymc_pcrp.stats.metrics`; this module keeps its public names.
"""

from pymc_pcrp.stats.metrics import (
    ClusteringSummary,
    clustering_summary,
    draw_metrics,
    normalized_mutual_info,
    variation_of_information,
)

__all__ = [
    "ClusteringSummary",
    "clustering_summary",
    "draw_metrics",
    "normalized_mutual_info",
    "variation_of_information",
]
