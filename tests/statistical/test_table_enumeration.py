"""The table family through ``pm.sample`` against the exact posterior, with broken variants.

For N = 5 rows the exact posterior over all 52 partitions is computed by
brute force from tests/table_reference.py (Polya-urn chain rule, quadrature
over a Poisson rate, the NIW marginal of tests/reference.py: none of the
package's algebra). Chains of the step's default move set (sweeps and
split-merge proposals) through ``pm.sample`` must come within total variation
``TV_MAX`` of it for binary, categorical and count tables and for a product
table with missing cells; each case's deliberately broken variant (kernels that
see each cell twice, or missing cells counted as observed, built in
tests/table_reference.py) must be further than ``TV_BROKEN`` from it.
"""

import numpy as np
import pandas as pd
import pymc as pm
import pytest

from enumeration import ENUMERATION_SWEEPS_PER_DRAW
from table_reference import (
    categorical_table_5,
    cells_counted_twice,
    missing_counted,
    partition_tv,
    table_posterior,
)

import pymc_pcrp as pcrp

DRAWS = 10_000
CHAINS = 2
TV_MAX = 0.035
TV_BROKEN = 0.1


def _tables():
    """The four N = 5 tables: binary, categorical, counts, and a product with missing cells."""
    binary = pd.DataFrame(
        {
            "a": [True, True, False, False, False],
            "b": [True, True, True, False, False],
            "c": [False, True, False, True, True],
        }
    )
    categorical = categorical_table_5()
    counts = pd.DataFrame({"n": [0, 1, 0, 6, 8], "m": [3, 2, 4, 0, 1]})
    mixed = pd.DataFrame(
        {
            "flag": pd.array([True, True, None, False, False], dtype="boolean"),
            "kind": pd.Categorical(["x", "x", "y", "y", "y"]),
            "n": [1, 0, 2, 7, 5],
            "g": [0.3, np.nan, -0.2, 2.1, 2.6],
        }
    )
    return {
        "bernoulli": (binary, None, 1.0, 1.2),
        "categorical": (categorical, None, 0.7, 1.0),
        "poisson": (counts, "poisson", 1.5, 1.3),
        "mixed": (mixed, {"n": "poisson"}, 1.0, 1.1),
    }


def _sample(df, columns, alpha, r, seed):
    with pm.Model():
        z = pcrp.PowerCRP("z", alpha=alpha, power=r, n=len(df))
        pcrp.TableMixture("x", z=z, columns=columns, observed=df)
        return pm.sample(
            draws=DRAWS,
            tune=100,
            chains=CHAINS,
            cores=1,
            random_seed=seed,
            progressbar=False,
            compute_convergence_checks=False,
            pcrp_gibbs={"sweeps_per_draw": ENUMERATION_SWEEPS_PER_DRAW},
        )


@pytest.mark.parametrize("case", ["bernoulli", "categorical", "poisson", "mixed"])
def test_table_family_matches_exact_posterior(case):
    df, columns, alpha, r = _tables()[case]
    parts, probs = table_posterior(df, columns, alpha, r)
    tv = partition_tv(_sample(df, columns, alpha, r, seed=43), parts, probs)
    assert tv < TV_MAX, f"{case}: total variation {tv:.4f} between sampler and exact posterior"


@pytest.mark.parametrize(
    ("case", "breakage"),
    [
        ("bernoulli", cells_counted_twice),
        ("categorical", cells_counted_twice),
        ("poisson", cells_counted_twice),
        ("mixed", missing_counted),
    ],
)
def test_broken_table_kernels_are_detected(case, breakage, monkeypatch):
    df, columns, alpha, r = _tables()[case]
    parts, probs = table_posterior(df, columns, alpha, r)
    breakage(monkeypatch)
    tv = partition_tv(_sample(df, columns, alpha, r, seed=44), parts, probs)
    assert tv > TV_BROKEN, f"{case}: the broken variant is only {tv:.4f} from the exact posterior"
