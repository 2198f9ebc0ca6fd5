"""The table family's sweeps against the exact posterior, called as kernels.

The sampler runs the table family's written-out sweep
(``_kernels.table_sweep.table_sweeps``), which skips clusters whose bounded log
weight is far below the top and completes the draw exactly when the uniform lands
where they could matter. With the shipped ``SKIP_NATS = 6`` that branch is rare,
so a copy of the kernel with ``skip_nats = 0.5`` (tests/kernel_variants.py) is run
too, where most updates skip something. The generic sweep of
``_kernels.family_moves`` (the sweep of a family without one of its own) is run on
the same tables. Each must visit the partitions of N = 5 rows with the exact
posterior's frequencies (tests/table_reference.py, by brute force); a sweep that
scores the own cluster with the row left in (built here) must fail.
"""

import numpy as np
import pandas as pd
import pytest

from kernel_variants import recompiled, sweep_variant
from table_reference import kernel_inputs, mixed_table_5

from pymc_pcrp._kernels import family_moves, table_scores
from pymc_pcrp._kernels.partitions import canonical_labels
from pymc_pcrp._kernels.table import table_tables
from pymc_pcrp._kernels.table_sweep import table_sweeps
from pymc_pcrp.sampler.inputs import compiled_for

SWEEPS = 20_000
CHAINS = 2
TV_MAX = 0.02
TV_BROKEN = 0.08


def _tables():
    """Tables of 5 rows: every kind with missing cells; Gaussian columns with unequal cells."""
    mixed, columns = mixed_table_5()
    gaussian = pd.DataFrame({"g": [0.1, 0.3, 3.9, 4.2, 8.0], "h": [-1.0, np.nan, 2.0, 2.4, 5.5]})
    return {"mixed": (mixed, columns, 1.0, 1.2), "gaussian": (gaussian, None, 0.8, 1.3)}


def _tv(sweep, x, params, parts, probs, seed):
    n = x.shape[0]
    tables = table_tables(x, params)
    freq: dict[tuple, float] = {}
    for chain in range(CHAINS):
        rng = np.random.default_rng([seed, chain])
        state = family_moves.init_state(x, np.zeros(n, dtype=np.int64), params)
        args = (rng, (x, state, params, tables), 1)
        run = compiled_for(sweep, args)
        run(rng, (x, state, params, tables), 50)
        for _ in range(SWEEPS):
            run(*args)
            key = tuple(int(v) for v in canonical_labels(state.labels))
            freq[key] = freq.get(key, 0.0) + 1.0 / (SWEEPS * CHAINS)
    assert set(freq) <= set(parts)
    return 0.5 * np.abs(np.array([freq.get(p, 0.0) for p in parts]) - probs).sum()


SWEEPS_UNDER_TEST = {
    "table": lambda: table_sweeps,
    "table, skip_nats = 0.5": lambda: sweep_variant(family="table", skip_nats=0.5),
    "generic": lambda: family_moves.sweeps,
}


@pytest.mark.parametrize("case", ["mixed", "gaussian"])
@pytest.mark.parametrize("kernel", list(SWEEPS_UNDER_TEST))
def test_table_sweeps_keep_the_exact_posterior(case, kernel):
    df, columns, alpha, r = _tables()[case]
    x, params, (parts, probs) = kernel_inputs(df, columns, alpha, r)
    tv = _tv(SWEEPS_UNDER_TEST[kernel](), x, params, parts, probs, seed=len(kernel))
    assert tv < TV_MAX, f"{kernel} on {case}: total variation {tv:.4f} from the exact posterior"


def test_a_sweep_that_leaves_the_row_in_its_own_cluster_is_caught():
    # the own cluster scored as any other cluster (the row counted in its statistics)
    df, columns, alpha, r = _tables()["mixed"]
    x, params, (parts, probs) = kernel_inputs(df, columns, alpha, r)
    broken = recompiled(table_sweeps, **_left_in_parts())
    tv = _tv(broken, x, params, parts, probs, seed=5)
    assert tv > TV_BROKEN, f"the broken sweep is only {tv:.4f} from the exact posterior"


def _left_in_parts() -> dict:
    """Stand-ins for the sweep's leave-one-out parts that score the row left in its cluster."""
    import math

    import numba

    cell_offsets = table_scores.cell_offsets
    count_terms = table_scores.count_terms
    gaussian_terms = table_scores.gaussian_terms

    # each lookup column's left-in table (at toff) is the one other clusters are scored with
    @numba.njit(cache=False)
    def offsets_left_in(data, i, cols, toff, loff, tmax, zero, at, loo_at):
        cell_offsets(data, i, cols, toff, loff, tmax, zero, at, loo_at)
        loo_at[:] = at

    @numba.njit(cache=False)
    def count_left_in(total, cache, slot, data, i, count_cols, coff, loff, tmax):
        return count_terms(
            total, cache, slot, data, i, count_cols, coff, loff - tmax - 1, tmax, -math.inf
        )

    @numba.njit(cache=False)
    def gaussian_left_in(
        total, stats, cache, slot, data, i, gauss_cols, coff, expo, soff, hyp, gtab_id, gtab
    ):
        return total + gaussian_terms(
            cache, slot, data, i, gauss_cols, coff, cache[slot, expo], -math.inf
        )

    return {
        "cell_offsets": offsets_left_in,
        "count_loo_terms": count_left_in,
        "gaussian_loo_terms": gaussian_left_in,
    }
