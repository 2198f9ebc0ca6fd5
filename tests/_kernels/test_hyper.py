"""The learned NIW scale (pymc_pcrp._kernels.hyper) against brute-force references.

The last two tests drive the kernel's own draw loop on a 4-point problem and compare
it with exact enumeration (the cheap fast-tier check; the pm.sample version with
more draws is in tests/statistical/test_scale_hyperprior.py). A test-only chain that
draws s from its prior instead of its conditional shows that the comparison detects
a wrong update.
"""

import math

import numpy as np
import pytest

from enumeration import exact_posterior_scaled
from kernel_reference import step_labels_out
from reference import niw_log_marginal
from scipy.special import logsumexp

from pymc_pcrp._kernels.chain import advance
from pymc_pcrp._kernels.eigen import symmetric_eigenvalues
from pymc_pcrp._kernels.hyper import (
    REBUILT,
    advance_scaled,
    draw_nu0,
    make_scale_grid,
    scale_conditional,
    set_scale,
)
from pymc_pcrp._kernels.pair_moves import no_pairs
from pymc_pcrp._kernels.partitions import canonical_labels
from pymc_pcrp._kernels.state import place_point
from pymc_pcrp._kernels.sweep import init_state, log_joint, make_params, sweep_tables
from pymc_pcrp.distributions._niw_numpy import scale_log_posterior

SEED = sum(ord(c) for c in "test_hyper")
GRID = np.array([0.003, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0])
LOG_W = np.log(np.array([1.0, 2.0, 1.0, 3.0, 1.0, 2.0, 1.0]) / 11.0)


def _problem(n, d, seed, n_clusters=3):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d)) + 3.0 * rng.integers(0, 2, size=(n, 1))
    mu0 = rng.normal(size=d)
    a = rng.normal(size=(d, d))
    base = a @ a.T + d * np.eye(d)  # a non-diagonal base matrix P
    labels = canonical_labels(rng.integers(0, n_clusters, size=n))
    return x, labels, mu0, 0.3, d + 1.5, base


def _reference_loglik(x, labels, mu0, kappa0, nu0, psi0):
    return sum(
        niw_log_marginal(x[labels == k], mu0, kappa0, nu0, psi0) for k in range(labels.max() + 1)
    )


@pytest.mark.parametrize("d", [1, 2, 4])
def test_grid_conditional_matches_the_marginal_likelihood_at_each_scale(d):
    x, labels, mu0, kappa0, nu0, base = _problem(15, d, SEED + d)
    xc = x - mu0
    grid = make_scale_grid(xc, base, GRID, LOG_W, nu0)
    state = init_state(xc, labels, make_params(1.0, 1.0, kappa0, nu0, base))
    out = np.empty(GRID.size)
    top = scale_conditional(state, kappa0, nu0, grid, out)
    ref = np.array(
        [
            w + _reference_loglik(x, labels, mu0, kappa0, nu0, s * base)
            for s, w in zip(GRID, LOG_W, strict=True)
        ]
    )
    np.testing.assert_allclose(out, ref, rtol=1e-10, atol=1e-9)
    assert top == pytest.approx(logsumexp(ref), rel=1e-12)
    # the NumPy copy the model's log density uses
    np.testing.assert_allclose(
        scale_log_posterior(xc, labels, kappa0, nu0, base, GRID, LOG_W), ref, rtol=1e-10
    )
    # and the package's own log joint at each scale (Cholesky route)
    for g, s in enumerate(GRID):
        params = make_params(1.0, 1.0, kappa0, nu0, s * base)
        lj = log_joint(init_state(xc, labels, params), params, d)
        prior_z = sum(math.lgamma(n) for n in np.bincount(labels))
        assert lj - prior_z == pytest.approx(out[g] - LOG_W[g], rel=1e-10)


@pytest.mark.parametrize("d", [1, 3])
def test_remembered_eigenvalues_give_the_conditional_of_a_fresh_grid(d):
    # The grid reuses a slot's eigenvalues while its B is unchanged bit for bit. Two
    # points swapped between clusters keep every size: a check on sizes alone would
    # reuse stale eigenvalues, and the conditional would differ from a fresh grid's.
    x, labels, mu0, kappa0, nu0, base = _problem(15, d, SEED + 20 + d)
    xc = np.ascontiguousarray(x - mu0)
    params = make_params(1.0, 1.0, kappa0, nu0, base)
    state = init_state(xc, labels, params)
    grid = make_scale_grid(xc, base, GRID, LOG_W, nu0)
    out, ref = np.empty(GRID.size), np.empty(GRID.size)
    scale_conditional(state, kappa0, nu0, grid, out)
    i = int(np.flatnonzero(labels == 0)[0])
    j = int(np.flatnonzero(labels == 1)[0])
    v, buf = np.empty(d), np.empty((d, d))
    for point, src, dst in ((i, 0, 1), (j, 1, 0)):
        place_point(state, xc, point, src, -1, params, v, buf)
        place_point(state, xc, point, dst, 1, params, v, buf)
        state.labels[point] = dst
    top = scale_conditional(state, kappa0, nu0, grid, out)
    fresh = make_scale_grid(xc, base, GRID, LOG_W, nu0)
    assert top == scale_conditional(state, kappa0, nu0, fresh, ref)
    np.testing.assert_array_equal(out, ref)
    # ... and the unchanged cluster's eigenvalues were taken from the cache: a marker
    # written there shows up in the next conditional, until that cluster changes.
    grid.cached_eig[2] += 1.0
    scale_conditional(state, kappa0, nu0, grid, out)
    assert not np.array_equal(out, ref)


def test_eigenvalue_cache_leaves_the_chain_unchanged():
    # The same seed with and without the cache (no slots): the same labels and s draws.
    x, labels, mu0, kappa0, nu0, base = _problem(40, 3, SEED + 25)
    xc = np.ascontiguousarray(x - mu0)
    params = make_params(1.0, 1.2, kappa0, nu0, base)
    runs = []
    for slots in (None, 0):
        grid = make_scale_grid(xc, base, GRID, LOG_W, nu0)
        if slots == 0:
            grid = grid._replace(cached_b=grid.cached_b[:0], cached_eig=grid.cached_eig[:0])
        tables = sweep_tables(xc, params)
        state = init_state(xc, labels.copy(), params)
        counts, out = np.empty(4, dtype=np.int64), step_labels_out(40)
        rng = np.random.default_rng(SEED)
        trace = []
        for _ in range(60):
            lj = advance_scaled(
                rng,
                (xc, state, params, tables),
                grid,
                (3, 0.0, 0, 0.0, no_pairs()),
                (counts, out),
                None,
            )
            trace.append((tuple(int(z) for z in out), int(grid.current[0]), lj))
        runs.append(trace)
    assert runs[0] == runs[1]
    assert len({labels for labels, _, _ in runs[0]}) > 5  # the chain moved


@pytest.mark.parametrize("d", [1, 3])
def test_set_scale_refreshes_factors_and_the_new_cluster_table(d):
    # A stale new-cluster table would bias the sweep silently: after set_scale every
    # table and factor must equal a fresh build at that scale.
    x, labels, mu0, kappa0, nu0, base = _problem(20, d, SEED + 10 + d)
    xc = x - mu0
    grid = make_scale_grid(xc, base, GRID, LOG_W, nu0)
    params = make_params(0.7, 1.3, kappa0, nu0, base)
    tables = sweep_tables(xc, params)
    state = init_state(xc, labels, params)
    for g in (2, 5, 0):
        local = set_scale(g, grid, state, params, tables)
        fresh = make_params(0.7, 1.3, kappa0, nu0, GRID[g] * base)
        np.testing.assert_allclose(tables[0], sweep_tables(xc, fresh)[0], rtol=1e-12)
        ref_state = init_state(xc, labels, fresh)
        k = labels.max() + 1
        np.testing.assert_allclose(state.logdet[:k], ref_state.logdet[:k], rtol=1e-12)
        np.testing.assert_allclose(state.chol[:k], ref_state.chol[:k], rtol=1e-10, atol=1e-12)
        assert local.logdet0 == pytest.approx(fresh.logdet0, rel=1e-12)
        np.testing.assert_allclose(local.psi0, fresh.psi0, rtol=1e-12)


def _exact(x, mu0, kappa0, nu0, base, alpha, r):
    return exact_posterior_scaled(x, alpha, r, mu0, kappa0, nu0, base, GRID, LOG_W)


def _run(x, mu0, kappa0, nu0, base, alpha, r, draws, seed, wrong=False):
    """Frequencies of partitions and of grid indices over ``draws`` draws of one chain."""
    rng = np.random.default_rng(seed)
    xc = np.ascontiguousarray(x - mu0)
    n = xc.shape[0]
    grid = make_scale_grid(xc, base, GRID, LOG_W, nu0)
    params = make_params(alpha, r, kappa0, nu0, base)
    tables = sweep_tables(xc, params)
    state = init_state(xc, np.zeros(n, dtype=np.int64), params)
    counts = np.empty(4, dtype=np.int64)
    out = step_labels_out(n)
    z_freq, s_freq = {}, np.zeros(GRID.size)
    weights = np.exp(LOG_W)
    for _ in range(draws):
        if wrong:
            # test-only: s drawn from its prior, ignoring the data term
            local = set_scale(grid.current[0], grid, state, params, tables)
            advance(
                rng, (xc, state, local, tables), (1, 0.0, 0, 0.0, no_pairs()), (counts, out), None
            )
            set_scale(int(rng.choice(GRID.size, p=weights)), grid, state, params, tables)
        else:
            advance_scaled(
                rng,
                (xc, state, params, tables),
                grid,
                (1, 0.0, 0, 0.0, no_pairs()),
                (counts, out),
                None,
            )
        key = tuple(int(v) for v in out)
        z_freq[key] = z_freq.get(key, 0) + 1
        s_freq[grid.current[0]] += 1
    return z_freq, s_freq / draws, grid


@pytest.mark.parametrize("wrong", [False, True])
def test_kernel_chain_matches_exact_posterior_of_z_and_s(wrong):
    rng = np.random.default_rng(SEED)
    x = rng.normal(size=(4, 1))
    x[:2] += 2.0
    mu0, kappa0, nu0, base = np.zeros(1), 0.5, 3.0, np.eye(1)
    parts, pz, ps = _exact(x, mu0, kappa0, nu0, base, 1.0, 1.2)
    draws = 40_000
    z_freq, s_freq, _ = _run(x, mu0, kappa0, nu0, base, 1.0, 1.2, draws, SEED, wrong=wrong)
    tv_z = 0.5 * np.abs(np.array([z_freq.get(p, 0) / draws for p in parts]) - pz).sum()
    tv_s = 0.5 * np.abs(s_freq - ps).sum()
    if wrong:
        assert max(tv_z, tv_s) > 0.05, "a prior-only draw of s went undetected"
    else:
        assert tv_z < 0.03, f"TV(z) = {tv_z:.4f}"
        assert tv_s < 0.03, f"TV(s) = {tv_s:.4f}"


def test_fresh_chain_draws_s_and_rebuilt_state_is_refreshed():
    x, labels, mu0, kappa0, nu0, base = _problem(12, 2, SEED + 30)
    xc = np.ascontiguousarray(x - mu0)
    grid = make_scale_grid(xc, base, GRID, LOG_W, nu0)
    params = make_params(1.0, 1.0, kappa0, nu0, base)
    tables = sweep_tables(xc, params)
    state = init_state(xc, labels, params)
    counts = np.empty(4, dtype=np.int64)
    out = step_labels_out(12)
    rng = np.random.default_rng(SEED)
    lj = advance_scaled(
        rng, (xc, state, params, tables), grid, (1, 0.0, 0, 0.0, no_pairs()), (counts, out), None
    )
    out = out.astype(np.int64)
    assert grid.current[1] == 0
    # the returned log joint integrates s out
    prior_z = sum(math.lgamma(n) for n in np.bincount(out))
    ref = logsumexp(
        [
            w + _reference_loglik(x, out, mu0, kappa0, nu0, s * base)
            for s, w in zip(GRID, LOG_W, strict=True)
        ]
    )
    assert lj == pytest.approx(prior_z + ref, rel=1e-10)
    # a state rebuilt at Psi_0 = P is refreshed to the current s before sweeping
    g = grid.current[0]
    state2 = init_state(xc, out.copy(), params)
    grid.current[1] = REBUILT
    set_scale(g, grid, state2, params, tables)  # what the kernel does for REBUILT
    fresh = make_params(1.0, 1.0, kappa0, nu0, GRID[g] * base)
    k = out.max() + 1
    np.testing.assert_allclose(state2.logdet[:k], init_state(xc, out, fresh).logdet[:k])


NU_OFFSETS = np.array([0.4, 1.0, 3.0, 10.0])
NU_LOG_W = np.log(np.array([1.0, 2.0, 1.0, 1.5]) / 5.5)


def test_nu0_draw_matches_its_exact_conditional_and_rewrites_the_tables():
    # draw_nu0 is a Gibbs draw of nu0 given (z, s): its frequencies over repeated calls
    # on one partition must match p(nu_h | z, s) ∝ v_h prod_k m(X_k | s P, nu_h) from
    # brute-force marginals, and after each draw the sweep's tables must equal a fresh
    # build at the drawn nu0 (stale tables would bias every later sweep silently).
    d = 2
    x, labels, mu0, kappa0, _, base = _problem(14, d, SEED + 40)
    xc = np.ascontiguousarray(x - mu0)
    nu0s = d - 1.0 + NU_OFFSETS
    grid = make_scale_grid(xc, base, GRID, LOG_W, nu0s, NU_LOG_W, 1)
    params = make_params(0.8, 1.2, kappa0, nu0s[1], base)
    tables = sweep_tables(xc, params)
    state = init_state(xc, labels, params)
    set_scale(3, grid, state, params, tables)
    s = GRID[3]
    logp = NU_LOG_W + np.array(
        [_reference_loglik(x, labels, mu0, kappa0, nu, s * base) for nu in nu0s]
    )
    exact = np.exp(logp - logsumexp(logp))
    rng = np.random.default_rng(SEED + 41)
    draws = 20_000
    counts = np.zeros(nu0s.size)
    for i in range(draws):
        total, local = draw_nu0(rng, state, params, tables, grid)
        h = grid.current[2]
        counts[h] += 1
        assert local.nu0 == nu0s[h]
        if i < 8:  # the tables and the log likelihood with s and nu0 summed out
            fresh = make_params(0.8, 1.2, kappa0, nu0s[h], s * base)
            for mine, ref in zip(tables, sweep_tables(xc, fresh), strict=True):
                np.testing.assert_allclose(mine, ref, rtol=1e-12, atol=1e-12)
            ref_total = logsumexp(
                [
                    w + v + _reference_loglik(x, labels, mu0, kappa0, nu, g * base)
                    for g, w in zip(GRID, LOG_W, strict=True)
                    for nu, v in zip(nu0s, NU_LOG_W, strict=True)
                ]
            )
            assert total == pytest.approx(ref_total, rel=1e-10)
    tv = 0.5 * np.abs(counts / draws - exact).sum()
    assert tv < 0.015, f"TV {tv:.4f} between the drawn nu0 and its exact conditional"
    # The check can fail: the conditional without the prior weights v_h is far from it.
    flat = np.exp(logp - NU_LOG_W - logsumexp(logp - NU_LOG_W))
    assert 0.5 * np.abs(counts / draws - flat).sum() > 0.05


def test_closed_form_eigenvalues_match_lapack():
    """D = 1 and 2 in closed form (the scale update's clusters), LAPACK beyond: equal."""
    rng = np.random.default_rng(SEED + 11)
    cases = []
    for d in (1, 2, 3):
        for _ in range(200):
            a = rng.normal(size=(d, d)) * 10.0 ** rng.uniform(-3, 3)
            cases.append(a @ a.T)
        v = rng.normal(size=d)
        cases += [np.outer(v, v), np.zeros((d, d)), np.diag(10.0 ** rng.uniform(-8, 8, size=d))]
    for m in cases:
        out = np.empty(m.shape[0])
        symmetric_eigenvalues(m, out)
        want = np.linalg.eigvalsh(m)
        scale = max(np.abs(want).max(), 1e-300)
        np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-14 * scale)
