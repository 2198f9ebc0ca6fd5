"""The pair move (two nearby points of one cluster carried to another) against enumeration.

As for the split-merge move (``test_splitmerge.py``): 60,000 draws from the exact
posterior at N = 5, ONE move applied to each, and the result must again follow
the exact posterior (total variation below 0.02; iid draws give about
0.005-0.01). The pair distribution is drawn at random (weights and neighbour
rows), since the move is exact for any fixed one. A move whose test uses the
wrong power in the prior ratio must be detected.
"""

import numba
import numpy as np
import pytest

from _kernels.test_splitmerge import (
    N_DRAWS,
    SEED,
    TV_THRESHOLD,
    _encode,
    _exact_draws,
    _problem,
    _tv,
)
from kernel_variants import pair_moves_with_power

from pymc_pcrp._kernels.moves import block_log_weight
from pymc_pcrp._kernels.pair_moves import grow_by_two, no_pairs, pair_moves, pair_picks
from pymc_pcrp._kernels.state import init_state, make_params


@numba.njit
def _one_move_each(move, rng, xc, params, starts, picks):
    """One move (``pair_moves`` or a variant) from each start; codes and summed counts."""
    out = np.empty(starts.shape[0], dtype=np.int64)
    tally = np.zeros(4, dtype=np.int64)
    for s in range(starts.shape[0]):
        state = init_state(xc, starts[s], params)
        got = move(rng, xc, state, params, 1, picks)
        for a in range(4):
            tally[a] += got[a]
        out[s] = _encode(state.labels)
    return out, tally


def _random_picks(n, seed):
    rng = np.random.default_rng(seed)
    cum = np.cumsum(rng.uniform(0.2, 1.0, size=n))
    neighbours = np.array(
        [rng.permutation([q for q in range(n) if q != i])[:2] for i in range(n)], dtype=np.int64
    )
    return cum, neighbours


def _tv_after_one_move(d, alpha, r, move=pair_moves):
    xc, params, partitions, probs = _problem(d, alpha, r)
    picks = _random_picks(xc.shape[0], SEED + 3)
    rng = np.random.default_rng(SEED + 7)
    starts = _exact_draws(rng, partitions, probs, N_DRAWS)
    codes, tally = _one_move_each(move, rng, xc, params, starts, picks)
    return _tv(codes, partitions, probs), tally


@pytest.mark.parametrize(("d", "alpha", "r"), [(1, 0.5, 1.5), (2, 2.0, 2.0), (2, 1.0, 1.0)])
def test_one_pair_move_keeps_the_exact_posterior(d, alpha, r):
    """Measured 2026-11-27 (this seed): TV 0.0054, 0.0070, 0.0062 for the three cases."""
    tv, tally = _tv_after_one_move(d, alpha, r)
    assert tally[1] > 0 and tally[3] > 0, tally  # both kinds of move were accepted
    assert tv < TV_THRESHOLD, f"TV {tv:.4f} after one pair move"


def test_a_wrong_prior_ratio_is_detected():
    """The move tested with the Dirichlet-process ratio (r = 1) at r = 2 biases the draws.

    Measured 2026-11-27 (this seed): TV 0.092.
    """
    tv, _ = _tv_after_one_move(2, 1.0, 2.0, pair_moves_with_power(1.0))
    assert tv > 2 * TV_THRESHOLD, f"TV {tv:.4f}"


def test_pair_picks_are_nearest_neighbours_and_favour_outlying_points():
    rng = np.random.default_rng(SEED)
    x = np.r_[rng.normal(size=(60, 2)), [[12.0, 12.0], [12.5, 12.0]]]
    cum, neighbours = pair_picks(x)
    assert neighbours.shape == (62, 4) and np.all(neighbours != np.arange(62)[:, None])
    d2 = ((x[:, None] - x[None]) ** 2).sum(-1)
    np.fill_diagonal(d2, np.inf)
    np.testing.assert_array_equal(np.sort(d2, axis=1)[:, :4], np.take_along_axis(d2, neighbours, 1))
    weights = np.diff(np.r_[0.0, cum])
    assert np.all(weights >= 0.5 / 62 - 1e-15)
    assert weights[60] > 5 * np.median(weights[:60])  # the far pair is drawn far more often
    assert neighbours[60, 0] == 61 and neighbours[61, 0] == 60


@pytest.mark.parametrize("d", [1, 2, 5, 30])
@pytest.mark.parametrize("n", [0, 1, 2, 7, 500])
def test_grow_by_two_is_the_change_of_the_block_weight(n, d):
    """The log-gamma-free weight change equals the difference of the two block weights."""
    rng = np.random.default_rng(n + 10 * d)
    a = rng.normal(size=(d, d))
    params = make_params(0.7, 1.3, 0.05, d + 2.5, a @ a.T + d * np.eye(d))
    ld_n, ld_grown = rng.normal(scale=3.0, size=2) if n else (0.0, rng.normal(scale=3.0))
    expected = block_log_weight(params, 1.3, n + 2, ld_grown, d) - block_log_weight(
        params, 1.3, n, ld_n, d
    )
    got = grow_by_two(params, 1.3, n, ld_n, ld_grown, d)
    assert got == pytest.approx(expected, rel=1e-10, abs=1e-9)


def test_no_pairs_has_the_types_of_real_tables():
    rate, (cum, neighbours), tally = no_pairs()
    real_cum, real_neighbours = pair_picks(np.arange(12.0).reshape(6, 2))
    assert rate == 0.0 and tally.dtype == np.int64 and tally.shape == (2,)
    for empty, real in ((cum, real_cum), (neighbours, real_neighbours)):
        assert numba.typeof(empty) == numba.typeof(real)
