"""The numba sweep against slow NumPy/SciPy references (tests/reference.py)."""

import numpy as np
import pytest

from kernel_reference import conditional_log_weights, step_labels_out
from reference import gibbs_conditional, log_pcrp_joint, niw_log_marginal

from pymc_pcrp._kernels.niw import chol_rank_one_at, cholesky_lower
from pymc_pcrp._kernels.pair_moves import no_pairs
from pymc_pcrp._kernels.partitions import canonical_labels
from pymc_pcrp._kernels.sweep import (
    gibbs_sweeps,
    init_state,
    log_joint,
    make_params,
    sweep_tables,
)

SEED = sum(ord(c) for c in "test_sweep")


def _problem(n, d, seed, n_clusters=3):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d)) + 3.0 * rng.integers(0, 2, size=(n, 1))
    mu0 = rng.normal(size=d)
    a = rng.normal(size=(d, d))
    psi0 = a @ a.T + d * np.eye(d)
    labels = canonical_labels(rng.integers(0, n_clusters, size=n))
    return x, labels, mu0, 0.3, d + 1.5, psi0


@pytest.mark.parametrize("d", [1, 2, 4])
@pytest.mark.parametrize(("alpha", "r"), [(1.0, 1.0), (0.7, 1.5), (3.0, 2.0), (1.0, 0.6)])
def test_conditional_matches_reference(d, alpha, r):
    x, labels, mu0, kappa0, nu0, psi0 = _problem(12, d, SEED + d)
    params = make_params(alpha, r, kappa0, nu0, psi0)
    xc = x - mu0
    state = init_state(xc, labels, params)
    for i in range(len(x)):
        slots, logw = conditional_log_weights(xc, state, params, i)
        probs = np.exp(logw - logw.max())
        probs /= probs.sum()
        ref_labels, ref_probs = gibbs_conditional(i, labels, x, alpha, r, mu0, kappa0, nu0, psi0)
        # slots are the label values (labels are canonical, so slot == label)
        got = dict(zip(slots.tolist(), probs, strict=True))
        ref = dict(zip([*ref_labels, -1], ref_probs, strict=True))
        assert set(got) == set(ref)
        for key, value in ref.items():
            assert got[key] == pytest.approx(value, rel=1e-10, abs=1e-14)
    # the state is left as it was
    np.testing.assert_array_equal(state.labels, labels)


def test_conditional_is_a_ratio_of_joints():
    """The kernel's log weight differences equal differences of the full log joint."""
    x, labels, mu0, kappa0, nu0, psi0 = _problem(9, 2, SEED)
    alpha, r = 1.3, 1.7
    params = make_params(alpha, r, kappa0, nu0, psi0)
    state = init_state(x - mu0, labels, params)
    i = 4
    slots, logw = conditional_log_weights(x - mu0, state, params, i)
    joints = []
    for slot in slots:
        moved = labels.copy()
        moved[i] = labels.max() + 1 if slot == -1 else slot
        joints.append(log_pcrp_joint(moved, x, alpha, r, mu0, kappa0, nu0, psi0))
    np.testing.assert_allclose(logw - logw[0], np.array(joints) - joints[0], rtol=1e-10, atol=1e-9)


def _fresh_logdets(x, labels, mu0, kappa0, psi0):
    out = {}
    for k in np.unique(labels):
        pts = x[labels == k] - mu0
        s = pts.sum(0)
        psi_n = psi0 + pts.T @ pts - np.outer(s, s) / (kappa0 + len(pts))
        out[k] = (np.linalg.cholesky(psi_n), np.linalg.slogdet(psi_n)[1])
    return out


@pytest.mark.parametrize("d", [1, 3])
def test_incremental_state_equals_recomputation(d):
    x, labels, mu0, kappa0, nu0, psi0 = _problem(80, d, SEED + 7)
    params = make_params(1.0, 1.3, kappa0, nu0, psi0)
    xc = x - mu0
    state = init_state(xc, labels, params)
    rng = np.random.default_rng(SEED)
    moved = gibbs_sweeps(rng, (xc, state, params, sweep_tables(xc, params)), 300)
    assert moved > 0
    slots = state.order[: state.k[0]]
    assert np.array_equal(np.sort(slots), np.unique(state.labels))
    fresh = _fresh_logdets(x, state.labels, mu0, kappa0, psi0)
    for slot in slots:
        members = state.labels == slot
        assert state.counts[slot] == members.sum()
        np.testing.assert_allclose(state.sums[slot], xc[members].sum(0), rtol=1e-9, atol=1e-9)
        chol, logdet = fresh[slot]
        np.testing.assert_allclose(state.chol[slot], chol, rtol=1e-8, atol=1e-9)
        assert state.logdet[slot] == pytest.approx(logdet, rel=1e-9, abs=1e-9)
    assert np.all(state.counts[state.order[state.k[0] :]] == 0)


def test_log_joint_matches_reference():
    x, labels, mu0, kappa0, nu0, psi0 = _problem(30, 2, SEED + 3)
    params = make_params(0.8, 1.4, kappa0, nu0, psi0)
    state = init_state(x - mu0, labels, params)
    expected = log_pcrp_joint(labels, x, 0.8, 1.4, mu0, kappa0, nu0, psi0)
    assert log_joint(state, params, 2) == pytest.approx(expected, rel=1e-10)
    one = niw_log_marginal(x, mu0, kappa0, nu0, psi0) + 1.4 * np.sum(np.log(np.arange(1, 30)))
    state1 = init_state(x - mu0, np.zeros(30, dtype=np.int64), params)
    assert log_joint(state1, params, 2) == pytest.approx(one + np.log(0.8), rel=1e-10)


def test_same_generator_state_gives_same_sweeps():
    x, labels, mu0, kappa0, nu0, psi0 = _problem(40, 2, SEED + 5)
    params = make_params(1.0, 1.5, kappa0, nu0, psi0)
    out = []
    for _ in range(2):
        state = init_state(x - mu0, labels, params)
        xc = x - mu0
        gibbs_sweeps(np.random.default_rng(5), (xc, state, params, sweep_tables(xc, params)), 20)
        out.append(canonical_labels(state.labels))
    np.testing.assert_array_equal(out[0], out[1])


def test_prior_only_sweep_has_no_likelihood():
    """With D = 0 the weights are n_k^r and alpha: the pCRP seating rule itself."""
    labels = np.array([0, 0, 0, 1, 1, 2], dtype=np.int64)
    params = make_params(0.5, 2.0, 1.0, 1.0, np.zeros((0, 0)))
    xc = np.zeros((6, 0))
    state = init_state(xc, labels, params)
    slots, logw = conditional_log_weights(xc, state, params, 0)
    np.testing.assert_allclose(logw, [2.0 * np.log(2), 2.0 * np.log(2), 0.0, np.log(0.5)])
    assert slots.tolist() == [0, 1, 2, -1]


@pytest.mark.parametrize("d", [1, 2, 5])
def test_rank_one_update_and_downdate(d):
    rng = np.random.default_rng(SEED + d)
    a = rng.normal(size=(d, d))
    m = a @ a.T + np.eye(d)
    v = rng.normal(size=d)
    chol = np.zeros((d, d))
    assert cholesky_lower(m, chol)
    np.testing.assert_allclose(chol, np.linalg.cholesky(m), rtol=1e-12)
    # the factors of three slots; only slot 1 may change
    up = np.stack([np.eye(d), chol, np.eye(d)])
    assert chol_rank_one_at(up, 1, v.copy(), 1.0)
    np.testing.assert_allclose(up[1], np.linalg.cholesky(m + np.outer(v, v)), rtol=1e-10)
    np.testing.assert_array_equal(up[[0, 2]], np.stack([np.eye(d), np.eye(d)]))
    down = up.copy()
    assert chol_rank_one_at(down, 1, v.copy(), -1.0)
    np.testing.assert_allclose(down[1], chol, rtol=1e-9, atol=1e-12)
    # a downdate that would lose definiteness is reported, not silently applied
    assert not chol_rank_one_at(
        chol[None].copy(),
        0,
        10.0 * np.sqrt(np.linalg.eigvalsh(m).max()) * v / np.linalg.norm(v),
        -1.0,
    )
    bad = -np.eye(d)
    assert not cholesky_lower(bad, np.zeros((d, d)))


def test_log_weight_bounds_hold():
    from pymc_pcrp._kernels.scores import log_weight_upper_bound, loo_log_weight, loo_lower_bound

    rng = np.random.default_rng(SEED + 9)
    for _ in range(20_000):
        a = rng.normal(scale=10.0)
        e = -rng.uniform(0.5, 5000.0)
        b = rng.uniform(0.01, 1.0)
        c = 1.0 + rng.exponential(0.5)
        u_hi = rng.uniform(0.0, 1.0 / c) * rng.choice([1e-6, 1e-2, 1.0])
        u = rng.uniform(0.0, u_hi)
        u_lo = rng.uniform(0.0, u)
        exact = loo_log_weight(a, e, b, c, u)
        assert loo_lower_bound(a, e, b, c, u_lo, u_hi) <= exact + 1e-9 * (1 + abs(exact))
        assert loo_lower_bound(a, e, b, c, u, u) <= exact + 1e-9 * (1 + abs(exact))
        t = rng.exponential(1.0) * rng.choice([1e-6, 1.0, 1e3])
        t_lo = rng.uniform(0.0, t)
        value = a + e * np.log1p(t)
        assert log_weight_upper_bound(a, e, t_lo) >= value - 1e-9 * (1 + abs(value))
    # Equality where the bounds are tight: u = 0 and t = 0.
    assert loo_lower_bound(1.5, -3.0, 0.5, 1.2, 0.0, 0.0) == loo_log_weight(
        1.5, -3.0, 0.5, 1.2, 0.0
    )
    assert log_weight_upper_bound(1.5, -3.0, 0.0) == 1.5


def test_log1p_lower_bound_is_below_the_log_and_within_its_stated_gap():
    # The sweep skips a cluster when const + e L(t) (e < 0) is below the cut: L must
    # never exceed the log the sweep would compute, and it is tight (the point of it).
    from pymc_pcrp._kernels.scores import log1p_lower_bound

    rng = np.random.default_rng(SEED + 10)
    powers = 2.0 ** np.arange(0, 80)
    ts = np.r_[
        10.0 ** rng.uniform(-15, 15, 50_000),
        0.0,
        5e-324,
        1e-300,
        1e300,
        powers - 1.0,  # 1 + t a power of two: the bound's equality points
        np.nextafter(powers, np.inf) - 1.0,
        np.nextafter(powers, 0.0) - 1.0,  # 1 + t just below: the largest gaps
    ]
    ts = ts[ts >= 0.0]
    gaps = np.array([np.log(1.0 + t) - log1p_lower_bound(t) for t in ts])
    assert gaps.min() >= 0.0
    assert gaps.max() <= np.log(2.0) - 2.0 / 3.0 + 1e-9
    assert gaps.max() > 0.02  # the stated gap is reached, near 1 + t = 2^k from below
    assert log1p_lower_bound(np.inf) == np.inf
    # tighter than the bound t / (1 + t) it replaced (below t ~ 1e-6 both are t up to the
    # rounding of 1 + t, which the sweep's own log(1 + t) shares)
    tested = [t for t in ts if t >= 1e-6]
    assert all(log1p_lower_bound(t) >= t / (1.0 + t) for t in tested)


def test_below_cut_decides_as_the_tight_bound_does():
    """The cheap-first skip test gives the tight bound's answer, and never skips a weight >= cut."""
    from pymc_pcrp._kernels.scores import below_cut, log_weight_upper_bound

    rng = np.random.default_rng(SEED + 11)
    const = rng.normal(0.0, 5.0, 20_000)
    e = -rng.uniform(0.5, 20.0, const.size)
    t = 10.0 ** rng.uniform(-6, 8, const.size)
    cut = const + e * np.log1p(t) + rng.normal(0.0, 2.0, const.size)
    cheap = np.array([below_cut(*args) for args in zip(const, e, t, cut, strict=True)])
    tight = np.array(
        [log_weight_upper_bound(c, a, b) < d for c, a, b, d in zip(const, e, t, cut, strict=True)]
    )
    np.testing.assert_array_equal(cheap, tight)
    assert 0.2 < cheap.mean() < 0.8  # both answers occur
    exact = const + e * np.log1p(t)
    assert np.all(exact[cheap] < cut[cheap])


def _one_cluster(x, params):
    """All of ``x`` in slot 0: the state, the size table and the slot's sweep caches."""
    from pymc_pcrp._kernels.scores import sync_slot

    n, d = x.shape
    state = init_state(x, np.zeros(n, dtype=np.int64), params)
    by_size = sweep_tables(x, params)[2]
    cap = state.counts.shape[0]
    caches = (np.zeros((cap, d)), np.zeros((cap, d)), np.zeros(cap), np.zeros((cap, 2)))
    sync_slot(state, 0, by_size, caches)
    return state, by_size, caches


@pytest.mark.parametrize("d", [3, 5, 10])
def test_eigenvalue_bounds_bracket_the_distance(d):
    from pymc_pcrp._kernels.scores import forward_norm2

    rng = np.random.default_rng(SEED + d)
    finite = []
    for n, mix in ((3, 0.3), (30, 0.3), (300, 0.3), (3000, 0.3), (3000, 0.0)):
        a = rng.normal(size=(d, d))
        x = rng.normal(size=(n, d)) @ (np.eye(d) + mix * a) + rng.normal(size=d)
        params = make_params(1.0, 1.2, 0.5, d + 2.0, np.eye(d) * rng.uniform(0.1, 3.0))
        state, _, (mean, inv_diag, _, inv_eig) = _one_cluster(x, params)
        eig = np.linalg.eigvalsh(state.chol[0] @ state.chol[0].T)
        assert 1.0 / inv_eig[0, 0] >= eig[-1] * (1 - 1e-12)
        assert 1.0 / inv_eig[0, 1] <= eig[0] * (1 + 1e-12)
        finite.append(bool(np.isfinite(inv_eig[0, 1])))
        probes = np.r_[x[:50], rng.normal(size=(50, d)) * 5.0]
        y = np.empty(d)
        for i in range(len(probes)):
            u = forward_norm2(state.chol, 0, probes, i, mean, inv_diag, y)
            dist2 = np.sum((probes[i] - mean[0]) ** 2)
            assert dist2 * inv_eig[0, 0] <= u * (1 + 1e-12)
            assert u <= dist2 * inv_eig[0, 1] * (1 + 1e-12)
    # Gershgorin gives a bound for a large isotropic cluster (the case it serves).
    assert finite[-1]


@pytest.mark.parametrize("d", [3, 5, 9, 30])
def test_capped_solve_stops_only_past_its_limit_and_is_otherwise_the_full_solve(d):
    # The sweep stops a cluster's triangular solve once the partial distance rules the
    # cluster out. A solve that runs to the end must give the full distance bit for bit
    # (the draw is then the one the full solve gives), and a stop must mean that the full
    # distance is beyond the limit, where the log weight's bound is below the cut.
    from pymc_pcrp._kernels.scores import (
        PARTIAL_ROWS,
        distance_limit,
        forward_norm2,
        forward_norm2_capped,
        log_weight_upper_bound,
    )

    rng = np.random.default_rng(SEED + 40 + d)
    n = 200
    x = rng.normal(size=(n, d)) @ (np.eye(d) + 0.5 * rng.normal(size=(d, d)))
    params = make_params(1.0, 1.2, 0.5, d + 2.0, np.eye(d))
    state, by_size, (mean, inv_diag, const, _) = _one_cluster(x, params)
    e, bm = by_size[n, 1], by_size[n, 2]
    probes = np.r_[x[:40], rng.normal(size=(160, d)) * rng.uniform(0.5, 6.0, size=(160, 1))]
    y = np.empty(d)
    stopped = 0
    for i in range(len(probes)):
        u = forward_norm2(state.chol, 0, probes, i, mean, inv_diag, y)
        for cut in const[0] + e * np.array([0.05, 0.3, 0.6, 0.9, 0.99, 1.5]):
            limit = distance_limit(const[0], e, bm, cut)
            capped = forward_norm2_capped(state.chol, 0, probes, i, mean, inv_diag, y, limit)
            if capped < 0.0:
                stopped += 1
                assert d > PARTIAL_ROWS
                assert u > limit
                assert log_weight_upper_bound(const[0], e, u * bm) < cut
            else:
                assert capped == u  # bit for bit
        # the limit is tight: just inside it the bound is not below the cut
        cut = const[0] + e * 0.5
        limit = distance_limit(const[0], e, bm, cut)
        assert log_weight_upper_bound(const[0], e, limit * (1 - 1e-6) * bm) >= cut
    if d > PARTIAL_ROWS:
        assert stopped > 100  # the stop is taken, and checked above
    else:
        assert stopped == 0
    # far below the constant the limit is finite (the bound keeps growing like a log)
    far = distance_limit(const[0], e, bm, const[0] + 2.0 * e)
    assert np.isfinite(far) and log_weight_upper_bound(const[0], e, far * 1.001 * bm) < (
        const[0] + 2.0 * e
    )
    # beyond every double: no distance is enough
    assert distance_limit(const[0], e, bm, const[0] + 2000.0 * e) == np.inf


def test_widened_eigenvalue_bounds_stay_valid_over_moves():
    from pymc_pcrp._kernels.scores import sync_slot
    from pymc_pcrp._kernels.sweep import _move_point

    rng = np.random.default_rng(SEED + 21)
    d, n = 4, 400
    x = rng.normal(size=(n, d))
    labels = np.repeat([0, 1], n // 2)
    params = make_params(1.0, 1.2, 0.5, d + 2.0, np.eye(d))
    state = init_state(x, labels, params)
    by_size = sweep_tables(x, params)[2]
    cap = state.counts.shape[0]
    mean, inv_diag = np.zeros((cap, d)), np.zeros((cap, d))
    const, inv_eig = np.zeros(cap), np.zeros((cap, 2))
    for slot in (0, 1):
        sync_slot(state, slot, by_size, (mean, inv_diag, const, inv_eig))
    v, buf = np.empty(d), np.empty((d, d))
    widened = 0
    for _ in range(300):
        i = int(rng.integers(n))
        old = int(state.labels[i])
        if state.counts[old] <= 2:
            continue
        caches = (mean, inv_diag, const, inv_eig)
        _move_point(state, x, i, old, 1 - old, params, by_size, caches, v, buf)
        for slot in (0, 1):
            eig = np.linalg.eigvalsh(state.chol[slot] @ state.chol[slot].T)
            assert 1.0 / inv_eig[slot, 0] >= eig[-1] * (1 - 1e-12)
            assert 1.0 / inv_eig[slot, 1] <= eig[0] * (1 + 1e-12)
            widened += np.isfinite(inv_eig[slot, 1])
    assert widened > 100  # the lower bound stayed informative for a while


@pytest.mark.parametrize("d", [1, 3])
@pytest.mark.parametrize("split_merge", [0.0, 2.0])
def test_slots_grow_as_clusters_open_and_the_chain_is_unchanged(d, split_merge):
    """A state started with few slots grows them and runs exactly the chain of a full one.

    The full state has N + 1 slots (the largest capacity, and the only one before
    slots grew); the small one starts with 2 K + 8 = 10 and doubles when a new
    cluster takes its last free slot. With the same seed both chains make the
    same draws, bit for bit, through sweeps and split-merge moves.
    """
    from pymc_pcrp._kernels.chain import advance

    n = 120
    x, _, mu0, kappa0, nu0, psi0 = _problem(n, d, SEED + 11)
    xc = np.ascontiguousarray(x - mu0)
    params = make_params(40.0, 1.0, kappa0, nu0, 0.05 * psi0)  # many clusters
    tables = sweep_tables(xc, params)
    start = np.zeros(n, dtype=np.int64)
    small = init_state(xc, start, params)
    full = init_state(xc, start, params, n + 1)
    assert small.counts.shape[0] == 10
    assert full.counts.shape[0] == n + 1
    rng_small, rng_full = np.random.default_rng(3), np.random.default_rng(3)
    caps = []
    for _ in range(6):
        out = []
        for state, rng in ((small, rng_small), (full, rng_full)):
            counts = np.empty(4, dtype=np.int64)
            labels = step_labels_out(n)
            lj = advance(
                rng,
                (xc, state, params, tables),
                (2, split_merge, 0, 0.0, no_pairs()),
                (counts, labels),
                None,
            )
            out.append((lj, labels, counts.copy()))
        assert out[0][0] == out[1][0]
        np.testing.assert_array_equal(out[0][1], out[1][1])
        np.testing.assert_array_equal(out[0][2], out[1][2])
        np.testing.assert_array_equal(small.labels, full.labels)
        caps.append(small.counts.shape[0])
        assert small.k[0] < caps[-1] <= n + 1
    assert caps[-1] > 10  # the small state did grow
    # the grown state holds the right statistics
    fresh = _fresh_logdets(x, small.labels, mu0, kappa0, 0.05 * psi0)
    for slot in small.order[: small.k[0]]:
        members = small.labels == slot
        assert small.counts[slot] == members.sum()
        np.testing.assert_allclose(small.sums[slot], xc[members].sum(0), rtol=1e-9, atol=1e-9)
        assert small.logdet[slot] == pytest.approx(fresh[slot][1], rel=1e-9, abs=1e-9)
    free = small.order[small.k[0] :]
    assert np.all(small.counts[free] == 0)
    assert np.all(small.sums[free] == 0.0)
    assert np.all(small.sumsq[free] == 0.0)


def test_sweep_state_pickles_with_its_arrays():
    """The step keeps a state between draws and PyMC may pickle the step."""
    import pickle

    x, labels, mu0, kappa0, nu0, psi0 = _problem(30, 2, SEED + 13)
    params = make_params(1.0, 1.2, kappa0, nu0, psi0)
    state = init_state(x - mu0, labels, params)
    copy = pickle.loads(pickle.dumps(state))
    for name in ("labels", "counts", "sums", "sumsq", "chol", "logdet", "order", "where", "k"):
        np.testing.assert_array_equal(getattr(copy, name), getattr(state, name))
    assert log_joint(copy, params, 2) == log_joint(state, params, 2)
    copy.counts[0] += 1  # a copy, not shared memory
    assert copy.counts[0] == state.counts[0] + 1
