"""The informed split-merge move alone, called as a kernel, against the exact posterior.

``_kernels.informed_moves.informed_split_merge`` picks a merge's second cluster by
how much the posterior gains from the merge and counts that choice (both orders of
the pair, and the reverse split's uniform choice, each in its own state) in the
Metropolis-Hastings ratio. Run alone (no sweep to hide an error) on tables of N = 5
rows, it must visit the 52 partitions with the exact posterior's frequencies
(tests/table_reference.py, by brute force). Two copies with a deliberately wrong
ratio, built here with tests/kernel_variants.py, must fail: one without the
selection probabilities, one that counts a merge's pair in one order only.
"""

import functools

import numba
import numpy as np
import pytest

from kernel_variants import NJIT, recompiled
from table_reference import categorical_table_5, kernel_inputs, mixed_table_5

from pymc_pcrp._kernels import family_moves, informed_moves
from pymc_pcrp._kernels.partitions import canonical_labels
from pymc_pcrp._kernels.table import table_tables

MOVES = 150_000
CHAINS = 2
TV_MAX = 0.02
TV_BROKEN = 0.05


def _tables():
    mixed, columns = mixed_table_5()
    categorical = categorical_table_5()
    return {"mixed": (mixed, columns, 1.0, 1.2), "categorical": (categorical, None, 0.7, 1.3)}


def _tv(kernel, x, params, parts, probs, seed):
    n = x.shape[0]
    tables = table_tables(x, params)
    freq = dict.fromkeys(parts, 0.0)
    for chain in range(CHAINS):
        rng = np.random.default_rng([seed, chain])
        state = family_moves.init_state(x, np.zeros(n, dtype=np.int64), params)
        local = (x, state, params, tables)
        kernel(rng, local, 200, np.int64(-1))
        for _ in range(MOVES):
            kernel(rng, local, 1, np.int64(-1))
            freq[tuple(int(v) for v in canonical_labels(state.labels))] += 1.0
    total = MOVES * CHAINS
    return 0.5 * np.abs(np.array([freq[p] / total for p in parts]) - probs).sum()


@numba.njit(**NJIT)
def _nothing(*args):
    return 0.0


@numba.njit(**NJIT)
def _first_order(x, y):
    return x


@functools.cache
def _broken(wrong: str):
    """The move with a wrong Metropolis-Hastings ratio (see the module docstring)."""
    kernel = informed_moves.informed_split_merge
    if wrong == "no selection ratio":
        names = {"merge_selection": _nothing, "split_selection": _nothing}
        return recompiled(kernel, **names, _split_reverse=_nothing)
    merge = recompiled(informed_moves.merge_selection, log_add=_first_order)
    reverse = recompiled(informed_moves._split_reverse, merge_selection=merge)
    return recompiled(kernel, merge_selection=merge, _split_reverse=reverse)


@pytest.mark.parametrize("case", ["mixed", "categorical"])
def test_informed_moves_keep_the_exact_posterior(case):
    df, columns, alpha, r = _tables()[case]
    x, params, (parts, probs) = kernel_inputs(df, columns, alpha, r)
    tv = _tv(informed_moves.informed_split_merge, x, params, parts, probs, seed=11)
    assert tv < TV_MAX, f"{case}: total variation {tv:.4f} from the exact posterior"


@pytest.mark.parametrize("wrong", ["no selection ratio", "one order of the pair"])
def test_a_wrong_ratio_is_caught(wrong):
    df, columns, alpha, r = _tables()["mixed"]
    x, params, (parts, probs) = kernel_inputs(df, columns, alpha, r)
    tv = _tv(_broken(wrong), x, params, parts, probs, seed=12)
    assert tv > TV_BROKEN, f"{wrong}: only {tv:.4f} from the exact posterior"
