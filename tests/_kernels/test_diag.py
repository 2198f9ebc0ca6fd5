"""The diagonal-covariance family's kernels against NumPy references.

* the log joint of a partition (fixed and learned scale) against
  :mod:`pymc_pcrp.distributions._diag_numpy`, and that module's marginal against the product
  of ``D`` one-dimensional NIW marginals of the full family (``nu0 = 2 a0``,
  ``psi0 = 2 b0``): tests/reference.py and the full family's own kernel;
* the sweep's predictive weights (other clusters, the point's own cluster
  left out, a new cluster) against the predictive of the NumPy module, itself
  checked against a product of SciPy Student-t densities;
* the state after sweeps and split-merge moves equals a state built afresh
  from its labels, and the reported log joint is the model's;
* a chain of split-merge moves alone (no sweeps) reaches the exact posterior of
  a 5-point problem, and the same chain with the proposal term left out of the
  acceptance ratio does not (the test can fail).
"""

import math

import numpy as np
import pytest

from kernel_variants import diag_split_merge_without_proposal_probability, sweep_variant
from reference import niw_log_marginal
from scipy import stats
from scipy.special import gammaln, logsumexp

from pymc_pcrp._kernels.diag_chain import advance_diag, diag_partition_log_joint
from pymc_pcrp._kernels.diag_splitmerge import diag_split_merge_moves
from pymc_pcrp._kernels.diag_state import (
    diag_tables,
    init_diag_state,
    make_diag_grid,
    make_diag_params,
)
from pymc_pcrp._kernels.diag_sweep import loo_log_ratio, seat_log_weight
from pymc_pcrp._kernels.moves import SMALL_PAIRS, UNIFORM_PAIRS
from pymc_pcrp._kernels.niw import log_marginal_from_logdet
from pymc_pcrp._kernels.pair_moves import no_pairs
from pymc_pcrp._kernels.partitions import canonical_labels
from pymc_pcrp.distributions._diag_numpy import (
    diag_cluster_stats,
    diag_log_marginal,
    diag_log_predictive,
    diag_scale_marginal_loglik,
)
from pymc_pcrp.sampler.inputs import compiled_for

SEED = sum(ord(c) for c in "test_diag")
GRID = np.array([0.05, 0.3, 1.0, 4.0])
LOG_W = np.log(np.array([1.0, 2.0, 3.0, 1.0]) / 7.0)


def _problem(n, d, seed, k=4):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d)) * rng.uniform(0.5, 2.0, size=d)
    x[: n // 2] += 2.0
    xc = x - x.mean(axis=0)
    psi = 0.7 * x.var(axis=0)
    labels = canonical_labels(rng.integers(0, k, size=n))
    return xc, psi, labels


def _prior_terms(labels, alpha, r):
    sizes = np.bincount(labels)
    sizes = sizes[sizes > 0]
    return sizes.size * math.log(alpha) + r * float(np.sum(gammaln(sizes)))


@pytest.mark.parametrize("d", [1, 3, 30])
def test_log_joint_matches_numpy_reference(d):
    xc, psi, labels = _problem(50, d, SEED + d)
    alpha, r, kappa0, nu0 = 0.8, 1.3, 0.05, 3.0
    params = make_diag_params(alpha, r, kappa0, nu0, psi)
    prior = _prior_terms(labels, alpha, r)
    fixed = diag_partition_log_joint(xc, labels, params, make_diag_grid(psi, [1.0], [0.0]))
    ref = prior + diag_scale_marginal_loglik(xc, labels, kappa0, nu0, psi, [1.0], [0.0])
    assert abs(fixed - ref) < 1e-10 * max(1.0, abs(ref))
    learned = diag_partition_log_joint(xc, labels, params, make_diag_grid(psi, GRID, LOG_W))
    ref = prior + diag_scale_marginal_loglik(xc, labels, kappa0, nu0, psi, GRID, LOG_W)
    assert abs(learned - ref) < 1e-10 * max(1.0, abs(ref))


def test_diag_marginal_is_a_product_of_one_dimensional_niw_marginals():
    xc, psi, labels = _problem(40, 4, SEED)
    kappa0, nu0 = 0.3, 2.5
    n, means, w = diag_cluster_stats(xc, labels)
    ours = diag_log_marginal(n, w, means, kappa0, 0.5 * nu0, 0.5 * psi)
    for c in range(n.size):
        block = xc[labels == c]
        ref = sum(niw_log_marginal(block[:, j], [0.0], kappa0, nu0, [[psi[j]]]) for j in range(4))
        # the full family's own kernel at D = 1, from log|Psi_n| of each column
        kernel = 0.0
        for j in range(4):
            col = block[:, j]
            psi_n = psi[j] + np.sum((col - col.mean()) ** 2)
            psi_n += kappa0 * col.size / (kappa0 + col.size) * col.mean() ** 2
            kernel += log_marginal_from_logdet(
                col.size, math.log(psi_n), 1, kappa0, nu0, math.log(psi[j])
            )
        assert abs(ours[c] - ref) < 1e-10 * max(1.0, abs(ref))
        assert abs(ours[c] - kernel) < 1e-10 * max(1.0, abs(ref))


def test_numpy_predictive_is_a_product_of_student_t_densities():
    xc, psi, labels = _problem(30, 3, SEED + 1)
    kappa0, a0, b0 = 0.2, 1.5, 0.5 * psi
    block = xc[labels == 0]
    n = block.shape[0]
    kappa_n, a_n = kappa0 + n, a0 + 0.5 * n
    s = block.sum(axis=0)
    b_n = b0 + 0.5 * (np.sum(block**2, axis=0) - s**2 / kappa_n)
    scale = np.sqrt(b_n * (kappa_n + 1) / (a_n * kappa_n))
    ref = stats.t.logpdf(xc[:5], df=2 * a_n, loc=s / kappa_n, scale=scale).sum(axis=1)
    np.testing.assert_allclose(diag_log_predictive(xc[:5], block, kappa0, a0, b0), ref, rtol=1e-12)
    # the predictive is m(X u x) / m(X)
    both = np.vstack([block, xc[:1]])
    ratio = diag_log_marginal(
        [n + 1], *[a[None] for a in _stats(both)], kappa0, a0, b0
    ) - diag_log_marginal([n], *[a[None] for a in _stats(block)], kappa0, a0, b0)
    assert abs(ratio[0] - ref[0]) < 1e-10


def _stats(block):
    m = block.mean(axis=0)
    return np.sum((block - m) ** 2, axis=0), m


@pytest.mark.parametrize("d", [2, 40])
def test_sweep_weights_match_numpy_predictive(d):
    xc, psi, labels = _problem(60, d, SEED + 2 * d)
    if d == 40:
        xc = xc * 30.0  # far clusters: the flushed product must not overflow
    alpha, r, kappa0, nu0 = 1.7, 1.4, 0.1, 3.0
    params = make_diag_params(alpha, r, kappa0, nu0, psi)
    a0, b0 = 0.5 * nu0, 0.5 * psi
    state = init_diag_state(xc, labels, params)
    log_new, _, by_size = diag_tables(xc, params)
    ref_new = math.log(alpha) + diag_log_predictive(xc, xc[:0], kappa0, a0, b0)
    np.testing.assert_allclose(log_new, ref_new, rtol=1e-11, atol=1e-10)
    for i in range(0, 60, 7):
        own = labels[i]
        for c in range(labels.max() + 1):
            members = np.flatnonzero(labels == c)
            n = members.size
            if c == own:
                if n == 1:
                    continue
                rest = xc[members[members != i]]
                big_l = loo_log_ratio(
                    xc, i, c, n, state.sums, state.sumsq, state.bn, state.logb, state.mean,
                    kappa0, params.b0,
                )  # fmt: skip
                ours = by_size[n - 1, 0] - 0.5 * state.logb[c] - (a0 + 0.5 * (n - 1)) * big_l
                ref = r * math.log(n - 1) + diag_log_predictive(xc[i], rest, kappa0, a0, b0)[0]
            else:
                ours = seat_log_weight(
                    xc, i, c, n, state.logb, state.mean, state.hinv, by_size[n, 0], a0
                )
                ref = r * math.log(n) + diag_log_predictive(xc[i], xc[members], kappa0, a0, b0)[0]
            assert abs(ours - ref) < 1e-10 * max(1.0, abs(ref)), (i, c, ours, ref)


@pytest.mark.parametrize("learned", [False, True])
def test_state_after_moves_equals_a_fresh_state_and_log_joint_is_the_models(learned):
    xc, psi, labels = _problem(80, 3, SEED + 5)
    params = make_diag_params(1.0, 1.2, 0.05, 3.0, psi)
    grid = make_diag_grid(psi, GRID, LOG_W) if learned else make_diag_grid(psi, [0.5], [0.0])
    state = init_diag_state(xc, labels, params)
    tables = diag_tables(xc, params)
    counts = np.zeros(4, dtype=np.int64)
    out = np.empty(80, dtype=np.int64)
    rng = np.random.default_rng(SEED)
    for _ in range(5):
        value = advance_diag(
            rng,
            (xc, state, params, tables),
            grid,
            (3, 1.0, -1, 1.0, no_pairs()),
            (counts, out),
            None,
        )
        s = math.exp(grid.log_s[grid.current[0]])
        ref = _prior_terms(out, 1.0, 1.2) + diag_scale_marginal_loglik(
            xc, out, 0.05, 3.0, psi, np.exp(grid.log_s), grid.log_w
        )
        assert abs(value - ref) < 1e-10 * abs(ref)
        local = make_diag_params(1.0, 1.2, 0.05, 3.0, s * psi)
        fresh = init_diag_state(xc, state.labels, local)
        order = state.order[: state.k[0]]
        np.testing.assert_array_equal(np.sort(order), np.sort(fresh.order[: fresh.k[0]]))
        np.testing.assert_allclose(state.logb[order], fresh.logb[order], rtol=1e-12)
        np.testing.assert_array_equal(state.counts[order], fresh.counts[order])
        # the new-cluster weights follow the scale
        np.testing.assert_allclose(tables[0], diag_tables(xc, local)[0], rtol=1e-12)
    assert canonical_labels(state.labels).tolist() == out.tolist()


def _exact_diag_posterior(xc, alpha, r, kappa0, nu0, psi):
    from enumeration import set_partitions

    parts, logp = [], []
    for z in set_partitions(xc.shape[0]):
        logp.append(
            _prior_terms(z, alpha, r)
            + diag_scale_marginal_loglik(xc, z, kappa0, nu0, psi, [1.0], [0.0])
        )
        parts.append(tuple(int(v) for v in z))
    logp = np.array(logp)
    return parts, np.exp(logp - logsumexp(logp))


def _moves_alone_tv(move=diag_split_merge_moves, n_iter=150_000, rules=(UNIFORM_PAIRS,)):
    """TV to the exact posterior of a chain of split-merge moves alone.

    ``move`` is the shipped move or a variant of it. Each iteration makes one move
    under each pair rule of ``rules`` (the small-pairs rule counts clusters of at most
    2 points as small).
    """
    rng = np.random.default_rng(SEED)
    x = rng.normal(size=(5, 2))
    x[:2] += 2.5
    xc = x - x.mean(axis=0)
    psi = np.array([0.6, 0.4])
    alpha, r = 1.0, 1.5
    parts, probs = _exact_diag_posterior(xc, alpha, r, 0.5, 3.0, psi)
    params = make_diag_params(alpha, r, 0.5, 3.0, psi)
    seat = np.ascontiguousarray(diag_tables(xc, params)[2][:, 0])
    state = init_diag_state(xc, np.zeros(5, dtype=np.int64), params)
    index = {p: k for k, p in enumerate(parts)}
    visits = np.zeros(len(parts))
    for _ in range(n_iter):
        for rule in rules:
            pairs = (rule, 2)
            move(rng, xc, state, params, 1, -1, seat, pairs)
        visits[index[tuple(canonical_labels(state.labels).tolist())]] += 1
    return 0.5 * np.abs(visits / n_iter - probs).sum()


def test_split_merge_alone_reaches_the_exact_posterior_and_a_wrong_ratio_does_not():
    exact = _moves_alone_tv()
    broken = _moves_alone_tv(diag_split_merge_without_proposal_probability())
    assert exact < 0.02, exact
    assert broken > 0.05, broken


def test_speck_moves_with_uniform_moves_reach_the_exact_posterior():
    """Uniform pairs and pairs among the small clusters, alternated, against enumeration."""
    exact = _moves_alone_tv(rules=(UNIFORM_PAIRS, SMALL_PAIRS))
    assert exact < 0.02, exact


@pytest.mark.parametrize("skip_nats", [0.05])
def test_sweep_draws_a_point_from_its_exact_conditional(skip_nats):
    # One point re-seated many times from the same state: the frequencies of its
    # destinations against the exact conditional from the NumPy predictive. A tiny
    # skip_nats skips nearly every option and takes the rare branch of the draw often.
    # The sweep variant updates point 0 alone, so the point goes first in the data.
    sweep_one = sweep_variant("diag", skip_nats, first_point_only=True)
    xc, psi, labels = _problem(24, 2, SEED + 9, k=3)
    xc = xc * 0.4  # clusters close enough that every option has a visible weight
    labels[3] = labels.max() + 1  # a singleton too
    labels = canonical_labels(labels)
    alpha, r, kappa0, nu0 = 1.5, 1.2, 0.3, 3.0
    params = make_diag_params(alpha, r, kappa0, nu0, psi)
    a0, b0 = 0.5 * nu0, 0.5 * psi
    rng = np.random.default_rng(SEED)
    for i in (0, 3, 20):
        k = labels.max() + 1
        logp = np.empty(k + 1)
        for c in range(k):
            members = np.flatnonzero((labels == c) & (np.arange(24) != i))
            if members.size == 0:
                logp[c] = -np.inf
                continue
            pred = diag_log_predictive(xc[i], xc[members], kappa0, a0, b0)[0]
            logp[c] = r * math.log(members.size) + pred
        logp[k] = math.log(alpha) + diag_log_predictive(xc[i], xc[:0], kappa0, a0, b0)[0]
        probs = np.exp(logp - logsumexp(logp))
        if np.sum(labels == labels[i]) == 1:  # a singleton's own cluster is the new one
            probs[k] += probs[labels[i]]
            probs[labels[i]] = 0.0
        draws = 20_000
        freq = np.zeros(k + 1)
        first = np.r_[i, np.delete(np.arange(24), i)]
        x_first, labels_first = np.ascontiguousarray(xc[first]), labels[first]
        chain = (x_first, init_diag_state(x_first, labels_first, params), params)
        chain += (diag_tables(x_first, params),)
        # the compiled function for these types: the dispatcher would type the chain (it
        # holds the state) in Python at every call, 0.1 ms each
        sweep = compiled_for(sweep_one, (rng, chain, 1))
        for _ in range(draws):
            state = init_diag_state(x_first, labels_first, params)
            sweep(rng, (x_first, state, params, chain[3]), 1)
            dest = state.labels[0]
            freq[dest if state.counts[dest] > 1 or dest == labels[i] else k] += 1
        if np.sum(labels == labels[i]) == 1:
            freq[k] += freq[labels[i]]
            freq[labels[i]] = 0.0
        tv = 0.5 * np.abs(freq / draws - probs).sum()
        assert tv < 0.02, (i, tv, freq / draws, probs)
