"""The sweep's shortcuts keep it exact: bounded (skipped) clusters and the in-place shuffle.

``gibbs_sweeps`` bounds a cluster's log weight before scoring it and skips the
cluster when the bound is more than ``skip_nats`` below the top; the draw is
then completed exactly, scoring the skipped clusters only when the uniform
lands in the small region where they could matter (``_draw_with_skipped``).
With the default ``skip_nats = 6`` that rare branch runs for about one point
update in a few hundred, too seldom for a test on tiny data to notice an error
in it. These tests therefore run the kernel with ``skip_nats`` between 0.5 and
2, where most updates skip something and a large share take the rare branch,
and compare the visited partitions with the exact posterior enumerated over
all partitions. The tests catch a wrong rare branch: making it always keep the
scored group (checked by hand on 2026-11-26) fails two of the four cases, with
total variations of 0.11 and 0.53 against the threshold of 0.02 (the threshold
of test_exact_enumeration.py).
"""

import itertools
import math

import numpy as np
import pytest
import scipy.stats

from enumeration import exact_posterior

from pymc_pcrp._kernels.partitions import canonical_labels
from pymc_pcrp._kernels.sweep import (
    gibbs_sweeps,
    init_state,
    make_params,
    shuffle_in_place,
    sweep_tables,
)

SWEEPS = 40_000
CHAINS = 2


def _data(n, d, seed, shift):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    x[: n // 2] += shift
    return x


def _visits(x, alpha, r, kappa0, nu0, psi0, skip_nats, seed):
    n = x.shape[0]
    params = make_params(alpha, r, kappa0, nu0, psi0)
    tables = sweep_tables(x, params)
    freq: dict[tuple, float] = {}
    for chain in range(CHAINS):
        rng = np.random.default_rng([seed, chain])
        state = init_state(x, np.zeros(n, dtype=np.int64), params)
        gibbs_sweeps(rng, x, state, params, tables, 50, skip_nats)
        for _ in range(SWEEPS):
            gibbs_sweeps(rng, x, state, params, tables, 1, skip_nats)
            key = tuple(int(v) for v in canonical_labels(state.labels))
            freq[key] = freq.get(key, 0.0) + 1.0 / (SWEEPS * CHAINS)
    return freq


@pytest.mark.parametrize(
    ("n", "d", "alpha", "r", "shift", "skip_nats"),
    [
        (5, 1, 1.0, 1.0, 4.0, 0.5),
        (6, 2, 0.5, 1.5, 3.0, 1.0),
        (5, 3, 2.0, 2.0, 4.0, 0.5),  # D > 2: the Euclidean bound also skips the solve
        (6, 3, 1.0, 1.2, 2.5, 2.0),
    ],
)
def test_skipping_keeps_the_exact_posterior(n, d, alpha, r, shift, skip_nats):
    seed = 31 * n + 7 * d + int(10 * skip_nats)
    x = _data(n, d, seed, shift)
    kappa0, nu0, psi0 = 0.5, d + 1.0, 0.5 * np.eye(d)
    partitions, probs = exact_posterior(x, alpha, r, np.zeros(d), kappa0, nu0, psi0)
    freq = _visits(x, alpha, r, kappa0, nu0, psi0, skip_nats, seed)
    assert set(freq) <= set(partitions)
    empirical = np.array([freq.get(p, 0.0) for p in partitions])
    tv = 0.5 * np.abs(empirical - probs).sum()
    assert tv < 0.02, f"total variation {tv:.4f} between skipping sweep and exact posterior"


def test_skipping_changes_the_work_not_the_target():
    # Same seed, no skipping vs heavy skipping: different random streams (the
    # shortcut is really taken) ...
    x = _data(6, 2, 3, 4.0)
    params = make_params(1.0, 1.3, 0.5, 3.0, 0.5 * np.eye(2))
    tables = sweep_tables(x, params)
    runs = []
    for skip_nats in (1e9, 0.5):
        rng = np.random.default_rng(11)
        state = init_state(x, np.zeros(6, dtype=np.int64), params)
        trace = []
        for _ in range(200):
            gibbs_sweeps(rng, x, state, params, tables, 1, skip_nats)
            trace.append(canonical_labels(state.labels))
        runs.append(np.array(trace))
    assert not np.array_equal(runs[0], runs[1])


def test_shuffle_is_uniform_over_permutations():
    rng = np.random.default_rng(2026)
    perm = np.arange(4)
    index = {p: j for j, p in enumerate(itertools.permutations(range(4)))}
    counts = np.zeros(24)
    draws = 48_000
    for _ in range(draws):
        shuffle_in_place(rng, perm)
        counts[index[tuple(int(v) for v in perm)]] += 1
    assert sorted(perm) == [0, 1, 2, 3]
    p = scipy.stats.chisquare(counts).pvalue
    assert p > 1e-3, f"chi-square p = {p:.2e} for uniform permutations of 4"


@pytest.mark.parametrize("n", [0, 1, 2, 1000])
def test_shuffle_keeps_the_elements(n):
    perm = np.arange(n)
    shuffle_in_place(np.random.default_rng(n), perm)
    np.testing.assert_array_equal(np.sort(perm), np.arange(n))
    if n == 1000:
        assert not np.array_equal(perm, np.arange(n))
        # Position of element 0 over many shuffles is uniform (a last-element bias
        # would show here).
        rng = np.random.default_rng(5)
        small = np.arange(7)
        where = np.zeros(7)
        for _ in range(14_000):
            shuffle_in_place(rng, small)
            where[int(np.flatnonzero(small == 0)[0])] += 1
        assert scipy.stats.chisquare(where).pvalue > 1e-3
        assert math.isclose(where.sum(), 14_000)
