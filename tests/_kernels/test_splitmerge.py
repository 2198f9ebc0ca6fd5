"""The restricted-Gibbs split-merge move against exact enumeration, and its bookkeeping.

Exactness is checked two ways on N = 5 points (52 partitions), against the
exact posterior ``p(z | X) ∝ alpha^K prod Gamma(n_k)^r prod m(X_k)`` computed by
brute force (``tests/enumeration.py``):

* invariance: draw ``z`` from the exact posterior, apply ONE move; the result
  must again be distributed as the exact posterior. This is the sharpest test:
  the draws are independent, so any departure is the move's own error;
* convergence: a chain of split-merge moves alone (no Gibbs sweep), started
  with every point in one cluster, visits the partitions with the exact
  posterior frequencies; this also shows that the move alone is irreducible.

Measured on 2026-11-25 (``PYTHONPATH=.:tests python tests/_kernels/test_splitmerge.py``):
after one move from 60,000 exact draws the total variation distance was
0.0050-0.0117 over the seven (D, alpha, r) cases, against 0.0051-0.0080 for
60,000 independent exact draws (the 0.0117, D = 2, alpha = 0.5, r = 1.5, is
this seed's luck: over 12 other seeds the same case gave 0.0052-0.0088, and
2,000,000 draws gave chi-square 43 and 49 on 51 degrees of freedom). The
split-merge-only chains of 200,000 moves gave 0.0050 and 0.0065 and the pCRP
prior case 0.0046. Wrong acceptance ratios are caught with a wide margin:
at r = 2 the Dirichlet-process prior ratio (r = 1 in the ratio only) gives TV
0.084 after one move, and leaving out the restricted-Gibbs proposal
probability 0.098. The threshold is 0.02.
"""

import time

import numba
import numpy as np
import pytest

from enumeration import exact_posterior, log_pcrp_prior_unnorm, set_partitions
from kernel_variants import split_merge_variant
from reference import log_pcrp_joint

from pymc_pcrp._kernels.allocation import seat_constants
from pymc_pcrp._kernels.moves import SMALL_PAIRS, UNIFORM_PAIRS
from pymc_pcrp._kernels.partitions import canonical_labels
from pymc_pcrp._kernels.splitmerge import run_split_merge, split_merge_moves
from pymc_pcrp._kernels.sweep import (
    gibbs_sweeps,
    init_state,
    log_joint,
    make_params,
    sweep_tables,
)

# (pair rule, small-cluster size): cluster first (a rule the sampler does not use, built
# in tests/kernel_variants.py, which ignores the pair argument); two clusters drawn among
# all of them (no size limit at N = 5); two drawn among the clusters of at most 2 points,
# so that at N = 5 both the clusters the rule never draws and the merges it refuses occur
RULES = {"first": (UNIFORM_PAIRS, 0), "pairs": (SMALL_PAIRS, 10**6), "small": (SMALL_PAIRS, 2)}

SEED = sum(ord(c) for c in "test_splitmerge")
TV_THRESHOLD = 0.02
N_POINTS = 5
N_DRAWS = 60_000
N_CHAIN = 200_000
CASES = [(1.0, 1.0), (0.5, 1.5), (2.0, 2.0)]


# The compiled helpers below are deliberately not cached: numba's cache of a
# function does not notice changes in the functions it calls, so a cached
# helper would keep testing an old version of the kernel. They take the move as
# their first argument: the shipped run_split_merge or a variant of
# tests/kernel_variants.py. The shipped move is called with the argument types the
# sampler's own call has (int64 counts, a pair rule of two int64), so that the fast
# tier reuses the sampler's compilation of the move. Inside compiled code a global
# such as UNIFORM_PAIRS or a bare 1 is typed as a literal (Literal[int](1)) and
# would compile a second copy of the move: hence the np.int64(...) wrappers.


@numba.njit
def _encode(labels):
    """Integer code of the partition of ``labels`` (blocks numbered by first appearance)."""
    n = labels.shape[0]
    relabel = np.full(labels.max() + 1, -1, dtype=np.int64)
    n_blocks = 0
    code = 0
    mult = 1
    for i in range(n):
        s = labels[i]
        if relabel[s] < 0:
            relabel[s] = n_blocks
            n_blocks += 1
        code += relabel[s] * mult
        mult *= n
    return code


@numba.njit
def _run_moves(move, rng, xc, params, starts, n_steps, n_scans):
    """From each start partition run ``n_steps`` single moves, coding the partition after each.

    ``move`` is ``run_split_merge`` or a variant of it. Returns the codes
    (start-major) and the summed move counts.
    """
    out = np.empty(starts.shape[0] * n_steps, dtype=np.int64)
    tally = np.zeros(4, dtype=np.int64)
    table = seat_constants(np.int64(2), xc.shape[1], params.power, params.kappa0, params.nu0)
    for s in range(starts.shape[0]):
        state = init_state(xc, starts[s], params)
        for t in range(n_steps):
            pairs = (np.int64(UNIFORM_PAIRS), np.int64(0))
            got = move(rng, (xc, state, params), (np.int64(1), n_scans), table, pairs)
            for a in range(4):
                tally[a] += got[a]
            out[s * n_steps + t] = _encode(state.labels)
    return out, tally


@numba.njit
def _run_rule_moves(move, rng, xc, params, starts, n_scans, pairs):
    """One move from each start partition with the pair rule ``pairs``; as _run_moves.

    ``SMALL_PAIRS`` counts clusters of at most 2 points as small, so that at N = 5 both
    the clusters it never draws and the merges it refuses (unions of 3 or more) occur.
    """
    out = np.empty(starts.shape[0], dtype=np.int64)
    tally = np.zeros(4, dtype=np.int64)
    table = seat_constants(np.int64(2), xc.shape[1], params.power, params.kappa0, params.nu0)
    for s in range(starts.shape[0]):
        state = init_state(xc, starts[s], params)
        got = move(rng, (xc, state, params), (np.int64(1), n_scans), table, pairs)
        for a in range(4):
            tally[a] += got[a]
        out[s] = _encode(state.labels)
    return out, tally


def _one_move_each(rng, xc, params, starts, n_scans, move=run_split_merge):
    """Apply one move to each start partition."""
    return _run_moves(move, rng, xc, params, starts, 1, n_scans)


def _chain(rng, xc, params, labels, n_steps, n_scans):
    """A chain of ``n_steps`` exact moves from ``labels``."""
    return _run_moves(run_split_merge, rng, xc, params, labels[None, :], n_steps, n_scans)


def _rule_move(rule, selection_ratio=True):
    """The move under pair rule ``rule`` of RULES, with or without its selection ratio."""
    if rule == "first" or not selection_ratio:
        return split_merge_variant(cluster_first=rule == "first", selection_ratio=selection_ratio)
    return run_split_merge


def _code(labels):
    n = len(labels)
    return sum(int(v) * n**i for i, v in enumerate(labels))


def _tv(codes, partitions, probs):
    keys, counts = np.unique(codes, return_counts=True)
    freq = dict(zip(keys.tolist(), (counts / len(codes)).tolist(), strict=True))
    exact = {_code(p): q for p, q in zip(partitions, probs, strict=True)}
    assert set(freq) <= set(exact), "the move produced something that is not a partition"
    return 0.5 * sum(abs(freq.get(k, 0.0) - q) for k, q in exact.items())


def _data(n, d, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    x[: n // 2] += 2.5
    return x


def _problem(d, alpha, r):
    """Data, kernel parameters and the exact posterior of one enumeration case."""
    x = _data(N_POINTS, d, SEED + d)
    mu0 = np.zeros(d)
    psi0 = 0.5 * np.eye(d)
    partitions, probs = exact_posterior(x, alpha, r, mu0, 0.5, d + 1.0, psi0)
    params = make_params(alpha, r, 0.5, d + 1.0, psi0)
    return np.ascontiguousarray(x - mu0), params, partitions, probs


def _exact_draws(rng, partitions, probs, size):
    table = np.array(partitions, dtype=np.int64)
    return table[rng.choice(len(partitions), size=size, p=probs)]


def _one_move_tv(d, alpha, r, move=run_split_merge, seed=SEED, n_scans=2):
    xc, params, partitions, probs = _problem(d, alpha, r)
    rng = np.random.default_rng(seed)
    starts = _exact_draws(rng, partitions, probs, N_DRAWS)
    codes, tally = _one_move_each(rng, xc, params, starts, n_scans, move)
    return _tv(codes, partitions, probs), tally


# D = 3 exercises the general triangular solve (D = 1 and 2 have their own code).
ONE_MOVE_CASES = [(d, alpha, r) for d in (1, 2) for alpha, r in CASES] + [(3, 0.5, 1.5)]


# n_scans = 2: restricted Gibbs (launch + 2 scans + final scan); 0: launch and final
# scan only (the step's default); -1: SAMS, the sequential allocation is the proposal.
@pytest.mark.parametrize("n_scans", [2, 0, -1], ids=["scans2", "scans0", "sams"])
@pytest.mark.parametrize(("d", "alpha", "r"), ONE_MOVE_CASES)
def test_one_move_from_exact_draws_keeps_exact_posterior(d, alpha, r, n_scans):
    tv, tally = _one_move_tv(d, alpha, r, n_scans=n_scans)
    n_split, split_acc, n_merge, merge_acc = tally.tolist()
    assert n_split + n_merge == N_DRAWS
    # A move that never changes anything is trivially invariant: make sure both
    # kinds of proposal are accepted often enough for the test to mean something.
    assert split_acc > 0.1 * n_split
    assert merge_acc > 0.1 * n_merge
    assert tv < TV_THRESHOLD, f"TV {tv:.4f} after one move (counts {tally.tolist()})"


@pytest.mark.parametrize(
    ("d", "alpha", "r", "n_scans"), [(1, 0.5, 1.5, 1), (2, 2.0, 2.0, 1), (2, 0.5, 1.5, -1)]
)
def test_split_merge_chain_alone_reaches_exact_posterior(d, alpha, r, n_scans):
    xc, params, partitions, probs = _problem(d, alpha, r)
    rng = np.random.default_rng(SEED + 1)
    start = np.zeros(N_POINTS, dtype=np.int64)
    codes, tally = _chain(rng, xc, params, start, N_CHAIN, n_scans)
    assert tally[1] > 0 and tally[3] > 0
    visited = set(np.unique(codes).tolist())
    # irreducible without Gibbs sweeps: every partition is visited
    assert visited == {_code(p) for p in partitions}
    tv = _tv(codes, partitions, probs)
    assert tv < TV_THRESHOLD, f"TV {tv:.4f} of the split-merge-only chain"


def _prior_only_tv():
    alpha, r = 0.7, 1.8
    partitions = [tuple(z.tolist()) for z in set_partitions(N_POINTS)]
    log_p = np.array([log_pcrp_prior_unnorm(z, alpha, r) for z in partitions])
    probs = np.exp(log_p - log_p.max())
    probs /= probs.sum()
    params = make_params(alpha, r, 1.0, 1.0, np.zeros((0, 0)))
    xc = np.zeros((N_POINTS, 0))
    rng = np.random.default_rng(SEED + 2)
    starts = _exact_draws(rng, partitions, probs, N_DRAWS)
    codes, tally = _one_move_each(rng, xc, params, starts, 2)
    return _tv(codes, partitions, probs), tally


@pytest.mark.parametrize("rule", list(RULES))
@pytest.mark.parametrize(("d", "alpha", "r"), [(1, 0.5, 1.5), (2, 2.0, 2.0), (2, 1.0, 1.0)])
def test_cluster_pair_rules_keep_exact_posterior(d, alpha, r, rule):
    """Pairs drawn cluster first, or from two clusters drawn uniformly (specks as likely
    as big clusters), with SAMS proposals."""
    xc, params, partitions, probs = _problem(d, alpha, r)
    rng = np.random.default_rng(SEED + 5)
    starts = _exact_draws(rng, partitions, probs, N_DRAWS)
    codes, tally = _run_rule_moves(_rule_move(rule), rng, xc, params, starts, -1, RULES[rule])
    assert tally[1] > 0.05 * tally[0] and tally[3] > 0.05 * tally[2]
    tv = _tv(codes, partitions, probs)
    assert tv < TV_THRESHOLD, f"TV {tv:.4f} after one cluster-first move"


@pytest.mark.parametrize(
    ("rule", "d"),
    [("first", 2), ("pairs", 1), ("small", 2)],
)
def test_pair_rule_without_selection_ratio_is_detected(rule, d):
    """Leaving the pair-selection ratio out of the test biases the chain: detected.

    Measured (this seed, one move from 60,000 exact draws, alpha = 0.5, r = 1.5):
    the cluster-first rule without its ratio gives TV 0.039 to 0.064 over six (D,
    alpha, r) cases, 0.064 for D = 2 (2026-11-26); the cluster-pairs rule 0.025 to
    0.039, 0.039 for D = 1 (2026-11-27); the small-pairs rule (clusters of at
    most 2 points here) 0.032 to 0.074, 0.064 for D = 2. With the ratios,
    0.0064-0.0102 for the last two rules over the same six cases (iid draws:
    about 0.005-0.01).
    """
    xc, params, partitions, probs = _problem(d, 0.5, 1.5)
    rng = np.random.default_rng(SEED + 5)
    starts = _exact_draws(rng, partitions, probs, N_DRAWS)
    move = _rule_move(rule, selection_ratio=False)
    codes, _ = _run_rule_moves(move, rng, xc, params, starts, -1, RULES[rule])
    tv = _tv(codes, partitions, probs)
    assert tv > 1.5 * TV_THRESHOLD, f"TV {tv:.4f}"


def test_prior_only_move_keeps_pcrp_prior():
    """With ``psi0`` of shape (0, 0) there is no likelihood: the target is the pCRP prior."""
    tv, tally = _prior_only_tv()
    assert tally[1] > 0.1 * tally[0] and tally[3] > 0.1 * tally[2]
    assert tv < TV_THRESHOLD


@pytest.mark.parametrize("n_scans", [2, -1], ids=["scans2", "sams"])
@pytest.mark.parametrize(
    "wrong",
    [{"ratio_power": 1.0}, {"proposal_probability": False}],
    ids=["dp-prior-ratio", "no-proposal-probability"],
)
def test_wrong_acceptance_ratio_is_detected(wrong, n_scans):
    """The invariance test has power: a wrong ratio misses the threshold by far."""
    tv, _ = _one_move_tv(1, 2.0, 2.0, split_merge_variant(**wrong), n_scans=n_scans)
    assert tv > 3 * TV_THRESHOLD


def _check_state(xc, state, params, mu0, x, alpha, r, kappa0, nu0, psi0):
    """The incremental state equals a fresh ``init_state`` of the same partition."""
    n = len(xc)
    k = state.k[0]
    cap = state.counts.shape[0]
    order = state.order
    assert sorted(order.tolist()) == list(range(cap))
    np.testing.assert_array_equal(state.where[order], np.arange(cap))
    occupied = order[:k]
    assert np.array_equal(np.sort(occupied), np.unique(state.labels))
    free = order[k:]
    assert np.all(state.counts[free] == 0)
    assert np.all(state.sums[free] == 0.0) and np.all(state.sumsq[free] == 0.0)

    canon = canonical_labels(state.labels)
    fresh = init_state(xc, canon, params)
    assert fresh.k[0] == k
    for slot in occupied:
        members = np.flatnonzero(state.labels == slot)
        c = canon[members[0]]
        assert state.counts[slot] == fresh.counts[c] == len(members)
        np.testing.assert_allclose(state.sums[slot], fresh.sums[c], rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(state.sumsq[slot], fresh.sumsq[c], rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(state.chol[slot], fresh.chol[c], rtol=1e-8, atol=1e-8)
        assert state.logdet[slot] == pytest.approx(fresh.logdet[c], rel=1e-9, abs=1e-9)
    d = xc.shape[1]
    expected = log_pcrp_joint(canon, x, alpha, r, mu0, kappa0, nu0, psi0)
    assert log_joint(state, params, d) == pytest.approx(expected, rel=1e-9)
    assert n == len(state.labels)


@pytest.mark.parametrize("d", [1, 3])
def test_incremental_state_equals_recomputation(d):
    rng = np.random.default_rng(SEED + 10 * d)
    n = 90
    truth = rng.integers(0, 3, size=n)
    x = rng.normal(size=(n, d)) + 1.5 * truth[:, None]
    mu0 = x.mean(0)
    a = rng.normal(size=(d, d))
    psi0 = 0.1 * a @ a.T + 0.5 * np.eye(d)
    # overlapping clusters and a large alpha: many splits and merges are accepted
    alpha, r, kappa0, nu0 = 3.0, 1.2, 0.3, d + 1.5
    params = make_params(alpha, r, kappa0, nu0, psi0)
    xc = np.ascontiguousarray(x - mu0)
    state = init_state(xc, canonical_labels(rng.integers(0, 4, size=n)), params)
    tables = sweep_tables(xc, params)
    tally = np.zeros(4, dtype=np.int64)
    # split-merge alone first, then interleaved with Gibbs sweeps
    tally += split_merge_moves(rng, xc, state, params, 500, 3)
    for _ in range(100):
        tally += split_merge_moves(rng, xc, state, params, 5, 3)
        gibbs_sweeps(rng, (xc, state, params, tables), 1)
    assert tally[1] >= 5 and tally[3] >= 5, tally  # accepted splits and merges
    _check_state(xc, state, params, mu0, x, alpha, r, kappa0, nu0, psi0)


def test_trivial_cases_are_no_ops():
    params = make_params(1.0, 1.5, 1.0, 3.0, np.eye(2))
    rng = np.random.default_rng(SEED)
    xc = np.ones((1, 2))
    state = init_state(xc, np.zeros(1, dtype=np.int64), params)
    assert split_merge_moves(rng, xc, state, params, 10, 3) == (0, 0, 0, 0)
    assert state.labels.tolist() == [0] and state.k[0] == 1
    xc = np.zeros((0, 2))
    state = init_state(xc, np.zeros(0, dtype=np.int64), params)
    assert split_merge_moves(rng, xc, state, params, 10, 3) == (0, 0, 0, 0)
    xc = np.arange(8.0).reshape(4, 2)
    labels = np.array([0, 0, 1, 1], dtype=np.int64)
    state = init_state(xc, labels, params)
    assert split_merge_moves(rng, xc, state, params, 0, 3) == (0, 0, 0, 0)
    assert state.labels.tolist() == labels.tolist()


def test_two_points():
    """N = 2: the move alternates between the two partitions with the exact odds."""
    x = np.array([[0.0], [1.2]])
    alpha, r = 0.8, 1.5
    params = make_params(alpha, r, 0.5, 2.0, 0.5 * np.eye(1))
    partitions, probs = exact_posterior(x, alpha, r, np.zeros(1), 0.5, 2.0, 0.5 * np.eye(1))
    rng = np.random.default_rng(SEED + 3)
    codes, tally = _chain(rng, x, params, np.zeros(2, dtype=np.int64), 40_000, 0)
    assert tally[0] + tally[2] == 40_000
    assert _tv(codes, partitions, probs) < TV_THRESHOLD


def test_same_seed_same_moves():
    x = _data(40, 2, SEED)
    params = make_params(1.0, 1.2, 0.5, 3.0, np.eye(2))
    out = []
    for _ in range(2):
        state = init_state(x, np.zeros(40, dtype=np.int64), params)
        counts = split_merge_moves(np.random.default_rng(11), x, state, params, 200, 3)
        out.append((counts, canonical_labels(state.labels).tolist()))
    assert out[0] == out[1]


def test_split_merge_escapes_the_one_cluster_start():
    """Two well separated clusters of 1,000 points each, every point started in one cluster.

    Measured (these seeds): over 50 plain Gibbs sweeps K wanders between 1 and
    3 but the large cluster never drops below 1,997 points (a point that opens
    a cluster of its own has prior weight ``alpha = 1`` against
    ``1999^1.1 ≈ 4,300`` for staying), so the true split is never found.
    With three split-merge moves (three restricted scans each) after every
    sweep, the first sweep already ends at sizes 1007 / 993 and the 50th at
    1000 / 998 / 1 / 1; 1 of 65 split and 0 of 85 merge proposals were
    accepted (re-measured 2026-11-26 after the sweep's random stream changed).
    The two large clusters then agree with the truth on 98.9% of the points;
    the Bayes classifier agrees on 99.4%, so a posterior draw cannot be
    expected to do better than about 99%.
    """
    rng = np.random.default_rng(SEED + 4)
    n = 2000
    truth = (np.arange(n) >= n // 2).astype(np.int64)
    x = rng.normal(size=(n, 2))
    x[truth == 1, 0] += 5.0
    xc = np.ascontiguousarray(x - x.mean(0))
    params = make_params(1.0, 1.1, 1.0, 4.0, np.eye(2))
    tables = sweep_tables(xc, params)

    plain = init_state(xc, np.zeros(n, dtype=np.int64), params)
    rng = np.random.default_rng(SEED)
    largest = []
    for _ in range(50):
        gibbs_sweeps(rng, (xc, plain, params, tables), 1)
        largest.append(plain.counts[plain.order[: plain.k[0]]].max())
    assert min(largest) > 0.95 * n

    state = init_state(xc, np.zeros(n, dtype=np.int64), params)
    rng = np.random.default_rng(SEED)
    tally = np.zeros(4, dtype=np.int64)
    for _ in range(50):
        gibbs_sweeps(rng, (xc, state, params, tables), 1)
        tally += split_merge_moves(rng, xc, state, params, 3, 3)
    assert tally[1] >= 1, tally
    sizes = state.counts[state.order[: state.k[0]]]
    assert np.sort(sizes)[-2] > 0.45 * n, (sizes, tally)
    # the two large clusters are the true ones
    big = state.order[: state.k[0]][np.argsort(sizes)[-2:]]
    agree = max(
        np.mean((state.labels == big[0]) == (truth == 0)),
        np.mean((state.labels == big[0]) == (truth == 1)),
    )
    assert agree > 0.98


if __name__ == "__main__":
    # Print the measured total variation distances quoted in the module docstring.
    for dim, alpha_, r_ in ONE_MOVE_CASES:
        t0 = time.perf_counter()
        tv_, tally_ = _one_move_tv(dim, alpha_, r_)
        _, _, parts, pr = _problem(dim, alpha_, r_)
        iid = _tv(
            [_code(z) for z in _exact_draws(np.random.default_rng(1), parts, pr, N_DRAWS)],
            parts,
            pr,
        )
        print(
            f"one move   D={dim} alpha={alpha_} r={r_}: TV={tv_:.4f} (iid {iid:.4f}) "
            f"counts={tally_.tolist()} {time.perf_counter() - t0:.1f}s"
        )
    for dim, alpha_, r_ in [(1, 0.5, 1.5), (2, 2.0, 2.0)]:
        xc_, params_, parts, pr = _problem(dim, alpha_, r_)
        codes_, tally_ = _chain(
            np.random.default_rng(SEED + 1), xc_, params_, np.zeros(N_POINTS, np.int64), N_CHAIN, 1
        )
        print(
            f"chain      D={dim} alpha={alpha_} r={r_}: TV={_tv(codes_, parts, pr):.4f} "
            f"counts={tally_.tolist()}"
        )
    tv_, tally_ = _prior_only_tv()
    print(f"prior only (D=0): TV={tv_:.4f} counts={tally_.tolist()}")
    wrong_ratios = {
        "dp-prior-ratio": {"ratio_power": 1.0},
        "no-proposal-prob": {"proposal_probability": False},
    }
    for label, wrong_ in wrong_ratios.items():
        print(
            f"wrong {label}: TV={_one_move_tv(1, 2.0, 2.0, split_merge_variant(**wrong_))[0]:.4f}"
        )
