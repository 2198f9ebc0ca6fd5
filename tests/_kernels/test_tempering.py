"""Parallel tempering (pymc_pcrp._kernels.tempering, sampler.tempering) by enumeration.

For N = 5 points every partition is enumerated and the exact tempered posterior
``p(z) prod_k m(X_k)^beta`` (with a learned scale ``w_g p(z) prod_k m(X_k | s_g P)^beta``,
summed over the grid) is computed from scratch with ``tests/reference.py``. The
checks drive the kernels directly, as the step does:

* a hot replica alone (its tempered sweeps, and its tempered draw of ``s``) against
  the tempered posterior at its ``beta``;
* the whole tempered chain (replica 0 by the step's own kernel, two hot replicas,
  swaps between neighbours): replica 0 against the untempered posterior;
* the same chain with a wrong swap ratio (the ``beta`` difference dropped, or the
  sign flipped) is detected by the same comparison.

``PYTHONPATH=tests python tests/_kernels/test_tempering.py`` prints the figures.
"""

import pickle

from unittest import mock

import numpy as np
import pytest
import scipy.special

from enumeration import log_pcrp_prior_unnorm, set_partitions
from kernel_reference import step_labels_out
from reference import niw_log_marginal

from pymc_pcrp._kernels.chain import advance
from pymc_pcrp._kernels.hyper import advance_scaled, make_scale_grid
from pymc_pcrp._kernels.pair_moves import no_pairs
from pymc_pcrp._kernels.partitions import canonical_labels
from pymc_pcrp._kernels.sweep import init_state, make_params, sweep_tables
from pymc_pcrp._kernels.tempering import advance_hot, advance_hot_scaled
from pymc_pcrp.sampler import tempering as sampler_tempering
from pymc_pcrp.sampler.families import FULL
from pymc_pcrp.sampler.inputs import SweepInputs, compiled_for
from pymc_pcrp.sampler.tempering import Replicas, swap_log_ratio, temper_ladder

SEED = sum(ord(c) for c in "test_tempering")
GRID = np.array([0.05, 0.3, 1.0, 3.0])
LOG_W = np.log(np.array([1.0, 2.0, 1.0, 1.0]) / 5.0)
BETAS = np.array([1.0, 0.6, 0.3])
KAPPA0 = 0.5
DRAWS = 40_000
TV_MAX = 0.02  # as in tests/statistical/test_exact_enumeration.py


def _data(n, d, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    x[: n // 2] += 2.5
    return x


def exact_tempered(x, alpha, r, beta, psi0, grid=None, log_w=None):
    """Partitions and the exact marginal of ``z`` under the likelihood to the power ``beta``."""
    d = x.shape[1]
    mu0, nu0 = np.zeros(d), d + 1.0
    scales = np.array([1.0]) if grid is None else np.asarray(grid)
    weights = np.zeros(1) if log_w is None else np.asarray(log_w)
    parts, rows = [], []
    for z in set_partitions(len(x)):
        row = weights + log_pcrp_prior_unnorm(z, alpha, r)
        for g, s in enumerate(scales):
            loglik = sum(
                niw_log_marginal(x[z == k], mu0, KAPPA0, nu0, s * psi0) for k in range(z.max() + 1)
            )
            row[g] += beta * loglik
        parts.append(tuple(int(v) for v in z))
        rows.append(row)
    rows = np.array(rows)
    probs = np.exp(rows - scipy.special.logsumexp(rows)).sum(axis=1)
    return parts, probs


def _tv(freq, parts, probs, draws):
    return 0.5 * np.abs(np.array([freq.get(p, 0) / draws for p in parts]) - probs).sum()


def _count(freq, labels):
    key = tuple(int(v) for v in canonical_labels(np.asarray(labels)))
    freq[key] = freq.get(key, 0) + 1


def hot_frequencies(x, alpha, r, beta, psi0, draws, seed, scaled):
    """Partition frequencies of one hot replica run alone at ``beta``."""
    rng = np.random.default_rng(seed)
    xc = np.ascontiguousarray(x)
    n = len(x)
    params = make_params(alpha, r, KAPPA0, x.shape[1] + 1.0, psi0)
    tables = sweep_tables(xc, params)
    state = init_state(xc, np.zeros(n, dtype=np.int64), params)
    grid = make_scale_grid(xc, psi0, GRID, LOG_W, params.nu0) if scaled else None
    chain = (xc, state, params, tables)
    if scaled:
        args = (rng, chain, grid, beta, np.int64(1))
        kernel = compiled_for(advance_hot_scaled, args)
    else:
        args = (rng, chain, beta, np.int64(1))
        kernel = compiled_for(advance_hot, args)
    # the compiled function, as the step calls it: the dispatcher would type the chain
    # (it holds the state) in Python at every draw, 0.1 ms each
    freq = {}
    for _ in range(draws):
        kernel(*args)
        _count(freq, state.labels)
    return freq


def _chain_inputs(x, alpha, r, psi0, scaled):
    """The step inputs of a tempered chain on ``x``, and replica 0's one-cluster start."""
    xc = np.ascontiguousarray(x)
    params = make_params(alpha, r, KAPPA0, x.shape[1] + 1.0, psi0)
    grid = make_scale_grid(xc, psi0, GRID, LOG_W, params.nu0) if scaled else None
    inputs = SweepInputs(xc, params, sweep_tables(xc, params), grid)
    return inputs, init_state(xc, np.zeros(len(x), dtype=np.int64), params)


def _tempered_draws(rng, inputs, state, replicas, first, draws):
    """Yield replica 0's labels and the draw's outcome, for draws ``first, first + 1, ...``.

    Each draw advances replica 0 with the step's kernel, then the hot replicas and
    the swaps, as the step does; draw 0 starts the replicas. The labels buffer is
    reused from one draw to the next.
    """
    xc, params, tables, grid = inputs[:4]
    n = xc.shape[0]
    counts = np.empty(4, dtype=np.int64)
    out = step_labels_out(n)
    for t in range(first, first + draws):
        if grid is not None:
            lj = advance_scaled(
                rng,
                (xc, state, params, tables),
                grid,
                (1, 1.0, -1, 0.0, no_pairs()),
                (counts, out),
                None,
            )
        else:
            lj = advance(
                rng, (xc, state, params, tables), (1, 1.0, -1, 0.0, no_pairs()), (counts, out), None
            )
        drawn = replicas.draw(
            rng, inputs, state, out, lj, t == 0, lambda: np.arange(n, dtype=np.int64)
        )
        state = drawn.state
        yield out, drawn


def tempered_chain_frequencies(x, alpha, r, psi0, draws, seed, scaled, swap_ratio=swap_log_ratio):
    """Replica 0's partition frequencies over a tempered chain, driven as the step drives it.

    ``swap_ratio`` stands in for the sampler's :func:`swap_log_ratio` during the chain
    (a wrong one shows that the test detects it).
    """
    rng = np.random.default_rng(seed)
    inputs, state = _chain_inputs(x, alpha, r, psi0, scaled)
    replicas = Replicas(BETAS, 1, FULL)
    freq = {}
    accepted = 0
    with mock.patch.object(sampler_tempering, "swap_log_ratio", swap_ratio):
        for out, drawn in _tempered_draws(rng, inputs, state, replicas, 0, draws):
            accepted += drawn.swap_accepted
            _count(freq, out)
    return freq, accepted / (draws * (BETAS.size - 1))


@pytest.mark.parametrize("scaled", [False, True])
def test_replicas_pickled_between_draws_draw_on_alike(scaled):
    # The replicas keep the compiled hot kernels between draws; those cannot be
    # pickled, so a pickled copy (a step sent to a worker process) drops them and
    # looks them up again. The copy and the original then make the same draws.
    x, alpha, r, psi0 = _case(scaled)
    rng = np.random.default_rng(SEED + 3)
    inputs, state = _chain_inputs(x, alpha, r, psi0, scaled)
    replicas = Replicas(BETAS, 1, FULL)
    for _, drawn in _tempered_draws(rng, inputs, state, replicas, 0, 20):
        state = drawn.state
    assert replicas._calls  # the compiled hot kernel is kept
    copy = pickle.loads(pickle.dumps((rng, inputs, state, replicas)))
    assert not copy[3]._calls
    ours = [(z.copy(), d) for z, d in _tempered_draws(rng, inputs, state, replicas, 20, 30)]
    theirs = [(z.copy(), d) for z, d in _tempered_draws(*copy, 20, 30)]
    assert sum(d.swap_accepted for _, d in ours) > 0  # swaps happened
    for (z_a, a), (z_b, b) in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(z_a, z_b)
        assert (a.log_density, a.swap_accepted) == (b.log_density, b.swap_accepted)


def _dropped_beta_difference(beta_i, beta_j, l_i, l_j):
    return l_j - l_i


def _flipped_sign(beta_i, beta_j, l_i, l_j):
    return -swap_log_ratio(beta_i, beta_j, l_i, l_j)


def _case(scaled):
    x = _data(5, 2, SEED + int(scaled))
    return x, 1.0, 1.2, 0.5 * np.eye(2)


def test_ladder():
    np.testing.assert_allclose(temper_ladder(3), [1.0, 0.1**0.5, 0.1])
    np.testing.assert_allclose(temper_ladder([1, 0.5, 0.2]), [1.0, 0.5, 0.2])
    assert temper_ladder(None) is None
    for bad in (1, True, [0.9, 0.5], [1.0, 0.5, 0.6], [1.0, 0.0], [1.0], "x", [1.0, np.nan]):
        with pytest.raises(ValueError, match="temper"):
            temper_ladder(bad)


def _check_hot(beta, scaled):
    x, alpha, r, psi0 = _case(scaled)
    grid, log_w = (GRID, LOG_W) if scaled else (None, None)
    parts, probs = exact_tempered(x, alpha, r, beta, psi0, grid, log_w)
    _, probs_cold = exact_tempered(x, alpha, r, 1.0, psi0, grid, log_w)
    draws = DRAWS
    freq = hot_frequencies(x, alpha, r, beta, psi0, draws, SEED + 1, scaled)
    tv = _tv(freq, parts, probs, draws)
    assert tv < TV_MAX, f"TV {tv:.4f} against the tempered posterior at beta={beta}"
    # the tempered posterior is far from the untempered one, so the check has teeth
    assert 0.5 * np.abs(probs - probs_cold).sum() > 5 * TV_MAX


def _check_cold(scaled, swap_ratio=swap_log_ratio):
    x, alpha, r, psi0 = _case(scaled)
    grid, log_w = (GRID, LOG_W) if scaled else (None, None)
    parts, probs = exact_tempered(x, alpha, r, 1.0, psi0, grid, log_w)
    draws = DRAWS
    freq, rate = tempered_chain_frequencies(x, alpha, r, psi0, draws, SEED + 2, scaled, swap_ratio)
    return _tv(freq, parts, probs, draws), rate


def test_hot_replica_alone_matches_the_tempered_posterior():
    _check_hot(0.3, False)


def test_hot_replica_with_a_learned_scale_matches_the_tempered_posterior():
    _check_hot(0.5, True)


def test_cold_replica_of_the_tempered_chain_matches_the_posterior():
    tv, rate = _check_cold(False)
    assert tv < TV_MAX, f"TV {tv:.4f} of replica 0 against the posterior"
    assert 0.05 < rate < 0.95  # swaps happen, and are not all accepted


def test_cold_replica_with_a_learned_scale_matches_the_posterior():
    tv, rate = _check_cold(True)
    assert tv < TV_MAX, f"TV {tv:.4f} of replica 0 against the posterior"
    assert 0.05 < rate < 0.95


def test_a_swap_ratio_without_the_beta_difference_is_detected():
    tv, _ = _check_cold(False, _dropped_beta_difference)
    assert tv > TV_MAX, f"a wrong swap ratio went undetected (TV {tv:.4f})"


def test_a_swap_ratio_of_the_wrong_sign_is_detected():
    tv, _ = _check_cold(False, _flipped_sign)
    assert tv > TV_MAX, f"a wrong swap ratio went undetected (TV {tv:.4f})"


if __name__ == "__main__":
    # PYTHONPATH=tests python tests/_kernels/test_tempering.py
    draws = DRAWS
    for scaled in (False, True):
        x, alpha, r, psi0 = _case(scaled)
        grid, log_w = (GRID, LOG_W) if scaled else (None, None)
        for beta in (1.0, 0.6, 0.3):
            parts, probs = exact_tempered(x, alpha, r, beta, psi0, grid, log_w)
            freq = hot_frequencies(x, alpha, r, beta, psi0, draws, SEED + 1, scaled)
            print(f"scaled={scaled} hot alone beta={beta}: TV {_tv(freq, parts, probs, draws):.4f}")
        parts, probs = exact_tempered(x, alpha, r, 1.0, psi0, grid, log_w)
        for name, ratio in (
            ("exact", swap_log_ratio),
            ("dropped beta difference", _dropped_beta_difference),
            ("flipped sign", _flipped_sign),
        ):
            freq, rate = tempered_chain_frequencies(
                x, alpha, r, psi0, draws, SEED + 2, scaled, ratio
            )
            tv = _tv(freq, parts, probs, draws)
            print(f"scaled={scaled} chain, {name} swap ratio: TV {tv:.4f}, swap rate {rate:.3f}")
