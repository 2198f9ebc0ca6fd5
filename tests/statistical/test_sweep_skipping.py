"""The sweep's shortcuts keep it exact: bounded (skipped) clusters and the in-place shuffle.

``gibbs_sweeps`` bounds a cluster's log weight before scoring it and skips the
cluster when the bound is more than ``skip_nats`` below the top; the draw is
then completed exactly, scoring the skipped clusters only when the uniform
lands in the small region where they could matter (``draw_with_skipped``).
With the default ``skip_nats = 6`` that rare branch runs for about one point
update in a few hundred, too seldom for a test on tiny data to notice an error
in it. These tests therefore run copies of the kernel (``tests/kernel_variants.py``)
with ``skip_nats`` between 0.5 and 2, where most updates skip something and a large
share take the rare branch, and compare the visited partitions with the exact
posterior enumerated over all partitions. The tests catch a wrong rare branch:
making it always keep the scored group (checked by hand on 2026-11-26) fails two of
the four cases, with total variations of 0.11 and 0.53 against the threshold of 0.02
(the threshold of test_exact_enumeration.py).
"""

import itertools
import math

import numpy as np
import pytest
import scipy.stats

from enumeration import exact_posterior
from kernel_reference import conditional_log_weights
from kernel_variants import sweep_variant

from pymc_pcrp._kernels.partitions import canonical_labels
from pymc_pcrp._kernels.sweep import init_state, make_params, shuffle_in_place, sweep_tables
from pymc_pcrp.sampler.inputs import compiled_for

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
        args = (rng, (x, state, params, tables), 1)
        # the compiled function: the dispatcher would type the chain (it holds the state)
        # in Python at every sweep, 0.1 ms each
        sweep = compiled_for(sweep_variant(skip_nats=skip_nats), args)
        sweep(rng, (x, state, params, tables), 50)
        for _ in range(SWEEPS):
            sweep(*args)
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
        (5, 6, 1.0, 1.3, 3.0, 1.0),  # D > 4: the solve also stops at a partial distance
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


def _mixture(n, d, spread, seed):
    """Three Gaussian clusters whose centres are ``spread`` apart, and the true labels."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 3, size=n)
    centres = rng.normal(size=(3, d)) * spread
    x = centres[truth] + rng.normal(size=(n, d))
    return np.ascontiguousarray(x - x.mean(0)), canonical_labels(truth)


@pytest.mark.parametrize(
    ("d", "spread", "skip_nats"),
    [(1, 2.0, 0.5), (2, 1.5, 1.0), (3, 1.5, 0.5), (3, 2.5, 2.0), (10, 1.0, 0.5), (10, 1.5, 6.0)],
)
def test_single_updates_follow_the_exact_conditional(d, spread, skip_nats):
    """One point update, repeated from the same state, against the full conditional.

    This reaches the branches at a realistic size (N = 90, clusters of about
    30): the bound on the own cluster (for D = 3 also the one from the
    Euclidean distance; at D = 10 clusters of 30 points are too anisotropic
    for the Gershgorin bound, so the exact path runs), the skipped far clusters
    and the exact completion of the draw. The points tested are a singleton,
    the three whose exact conditional is the most spread out and the four
    whose probability of staying is closest to 0.9. The bounds themselves are
    checked exactly in tests/_kernels/test_sweep.py; here, under-stating the
    skipped weight 20-fold fails two cases with p < 1e-30 (checked by hand on
    2026-11-26).
    """
    n = 90
    xc, labels = _mixture(n, d, spread, seed=d * 100 + int(10 * spread))
    labels = labels.copy()
    labels[0] = labels.max() + 1  # a singleton
    params = make_params(0.8, 1.3, 0.3, d + 2.0, np.eye(d))
    probe = init_state(xc, labels, params)
    conditionals = []
    for i in range(n):
        slots, logw = conditional_log_weights(xc, probe, params, i)
        prob = np.exp(logw - logw.max())
        conditionals.append((slots, prob / prob.sum()))
    entropy = [-(p * np.log(np.maximum(p, 1e-300))).sum() for _, p in conditionals]
    # The probability of staying: near 0.9 the fast "stay" branch competes with
    # one plausible alternative, where a wrong bound shows most.
    stay = np.array(
        [
            p[list(s).index(labels[i])] if labels[i] in s else 0.0
            for i, (s, p) in enumerate(conditionals)
        ]
    )
    points = [0, *np.argsort(entropy)[::-1][:3], *np.argsort(np.abs(stay - 0.9))[:4]]
    rng = np.random.default_rng(d)
    trials = 6000
    # The variant updates point 0 alone: the point under test goes first in the data.
    sweep_one = sweep_variant(skip_nats=skip_nats, first_point_only=True)
    for i in points:
        slots, prob = conditionals[i]
        counts = np.zeros(len(slots))
        position = {int(s): j for j, s in enumerate(slots[:-1])}
        first = np.r_[i, np.delete(np.arange(n), i)]
        x_first, labels_first = np.ascontiguousarray(xc[first]), labels[first]
        tables = sweep_tables(x_first, params)
        state = init_state(x_first, labels_first, params)
        sweep = compiled_for(sweep_one, (rng, (x_first, state, params, tables), 1))
        for _ in range(trials):
            state = init_state(x_first, labels_first, params)
            sweep(rng, (x_first, state, params, tables), 1)
            counts[position.get(int(state.labels[0]), len(slots) - 1)] += 1
        expected = prob * trials
        big = expected >= 5
        observed = np.r_[counts[big], counts[~big].sum()]
        expect = np.r_[expected[big], expected[~big].sum()]
        keep = expect > 0
        if keep.sum() < 2:
            assert counts[big].sum() >= trials - 10
            continue
        p = scipy.stats.chisquare(
            observed[keep], expect[keep] * observed.sum() / expect[keep].sum()
        )
        assert p.pvalue > 1e-4, (i, counts, expected)


def test_low_skip_nats_really_takes_the_shortcut():
    # Same seed, no skipping vs heavy skipping: the chains differ, so the tests
    # above at low skip_nats do exercise the shortcut.
    x = _data(6, 2, 3, 4.0)
    params = make_params(1.0, 1.3, 0.5, 3.0, 0.5 * np.eye(2))
    tables = sweep_tables(x, params)
    runs = []
    for skip_nats in (1e9, 0.5):
        rng = np.random.default_rng(11)
        state = init_state(x, np.zeros(6, dtype=np.int64), params)
        sweep = sweep_variant(skip_nats=skip_nats)
        trace = []
        for _ in range(200):
            sweep(rng, (x, state, params, tables), 1)
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
