"""One draw of a chain in a single numba call: sweeps, split-merge and pair moves, the output.

``pm.sample`` calls the step once per draw, and every call from Python into a
numba function pays for unboxing its arguments (a random generator and two
named tuples of arrays here: several microseconds). At one sweep of
``N = 2,000`` points per draw that is a visible share of the draw, so the step
makes exactly one call, to :func:`advance`.
"""

import numba
import numpy as np

from pymc_pcrp._kernels._config import NJIT_KWARGS
from pymc_pcrp._kernels.hyperprior import alpha_proposal
from pymc_pcrp._kernels.log_joint import drifted, partition_log_joint, resync_state
from pymc_pcrp._kernels.moves import (
    SMALL_PAIRS,
    SMALL_SIZE,
    UNIFORM_PAIRS,
    add_counts,
    draw_n_moves,
)
from pymc_pcrp._kernels.pair_moves import pair_moves
from pymc_pcrp._kernels.partitions import canonical_labels
from pymc_pcrp._kernels.splitmerge import run_split_merge
from pymc_pcrp._kernels.sweep import NIWParams, SweepState, gibbs_sweeps, log_joint

__all__ = ["advance", "finish_draw", "labels_match", "run_moves", "with_log_alpha"]


@numba.njit(**NJIT_KWARGS)
def run_moves(rng: np.random.Generator, chain: tuple, plan: tuple, counts: np.ndarray) -> None:
    """Run the sweeps, split-merge proposals and pair moves of :func:`advance` in place.

    ``chain`` is ``(xc, state, params, tables)`` and ``plan`` is
    ``(n_sweeps, n_split_merge, n_scans, n_specks, pairs)``, both as in
    :func:`advance`; ``counts`` is overwritten with the split-merge counts (both
    kinds of proposal), and the pair moves are added to ``pairs[2]``.
    """
    xc, state, params, tables = chain
    n_sweeps, n_split_merge, n_scans, n_specks, pairs = plan
    n_pairs, picks, pair_tally = pairs
    counts[:] = 0
    if n_split_merge == 0 and n_specks == 0 and n_pairs == 0:
        gibbs_sweeps(rng, chain, n_sweeps)
        return
    # r log n + size constant of the predictive, for n = 0..N: the sweep's table
    # (copied to contiguous memory on the first proposal of the draw).
    seat_const = np.empty(0)
    for _ in range(n_sweeps):
        # np.int64, not the literal 1: numba would compile a second copy of the sweep
        # for the literal type (tens of seconds on a cold cache).
        gibbs_sweeps(rng, chain, np.int64(1))
        # Pairs of points drawn uniformly, then pairs drawn among the small clusters.
        for rule in (UNIFORM_PAIRS, SMALL_PAIRS):
            n_moves = draw_n_moves(rng, n_split_merge if rule == UNIFORM_PAIRS else n_specks)
            if n_moves == 0:
                continue
            if seat_const.shape[0] == 0:
                seat_const = np.ascontiguousarray(tables[2][:, 0])
            # np.int64(SMALL_SIZE), not the global (typed as a literal): the pair rule is
            # then two int64, the type a call from Python has, and calls from Python
            # reuse this compilation of the move instead of compiling their own.
            pair_rule = (rule, np.int64(SMALL_SIZE))
            found = run_split_merge(
                rng, (xc, state, params), (n_moves, n_scans), seat_const, pair_rule
            )
            add_counts(counts, found)
        # Then two nearby points of one cluster carried together (pair_moves.py).
        n_moves = draw_n_moves(rng, n_pairs)
        if n_moves > 0:
            found = pair_moves(rng, xc, state, params, n_moves, picks)
            pair_tally[0] += found[0] + found[2]
            pair_tally[1] += found[1] + found[3]


@numba.njit(**NJIT_KWARGS)
def finish_draw(state: SweepState, labels_out: np.ndarray) -> None:
    """Write the state's partition into ``labels_out`` in canonical form."""
    labels_out[:] = canonical_labels(state.labels)


@numba.njit(**NJIT_KWARGS)
def advance(
    rng: np.random.Generator, chain: tuple, plan: tuple, out: tuple, alpha_args: tuple | None
) -> float:
    """Run one draw's worth of updates in place and return the log joint of the new state.

    Parameters
    ----------
    rng : numpy.random.Generator
        The chain's generator.
    chain : tuple
        ``(xc, state, params, tables)``: centred data, sweep state, parameters
        and :func:`~pymc_pcrp._kernels.scores.sweep_tables`.
    plan : tuple
        ``(n_sweeps, n_split_merge, n_scans, n_specks, pairs)``. ``n_sweeps`` (int):
        sweeps of Algorithm 1. ``n_split_merge`` (float): expected split-merge
        proposals after each sweep, each from a pair of points drawn uniformly:
        its integer part is always made, and one more with probability its
        fractional part (a draw from ``rng`` that does not look at the state, so
        each sweep applies a fixed mixture of invariant kernels); an integer
        value draws no extra random number. ``n_scans`` (int): restricted scans
        per proposal (see
        :func:`~pymc_pcrp._kernels.splitmerge.split_merge_moves`).
        ``n_specks`` (float): expected split-merge proposals after each sweep
        whose pair is drawn among the clusters of at most
        :data:`~pymc_pcrp._kernels.moves.SMALL_SIZE` points (``SMALL_PAIRS``,
        made after the others, drawn in the same way). ``pairs`` is
        ``(n_pairs, picks, tally)``: ``n_pairs`` (float) expected pair moves
        after each sweep's proposals, drawn in the same way
        (:func:`~pymc_pcrp._kernels.pair_moves.pair_moves`, with ``picks`` from
        :func:`~pymc_pcrp._kernels.pair_moves.pair_picks`), and ``tally``
        (``int64``, length 2), overwritten with the pair moves proposed and
        accepted in this draw; :func:`~pymc_pcrp._kernels.pair_moves.no_pairs`
        gives the tuple for none. With the three rates 0 the sweeps run back to
        back (the paper's Algorithm 1).
    out : tuple
        ``(counts, labels_out)``, both overwritten: ``counts`` (``int64``, length
        4) with the split-merge counts (split proposed, split accepted, merge
        proposed, merge accepted), ``labels_out`` (integers, length ``N``) with
        the new partition in canonical form (blocks numbered in order of first
        appearance).
    alpha_args : tuple or None
        For a step that owns ``alpha``: the arguments of
        :func:`~pymc_pcrp._kernels.hyperprior.alpha_proposal`. The draw then runs
        at ``alpha = exp(alpha_args[-1][0])``, the value the new-cluster weights
        ``tables[0]`` hold (``params.log_alpha`` is ignored), and ends with a
        proposal of the next ``alpha``, which may move both; the same call, so
        that a random ``alpha`` costs no second call from Python. ``None``
        (numba compiles the branch away) for a fixed ``alpha``. It has no
        default on purpose: numba types an omitted argument and an explicit
        ``None`` differently, so callers that omitted it compiled a second copy
        of the kernel beside the step's.

    Returns
    -------
    float
        The log joint of the new partition,
        :func:`~pymc_pcrp._kernels.log_joint.partition_log_joint`: computed
        afresh from the labels, so the same partition always gives the same
        value. When the state's running value
        (:func:`~pymc_pcrp._kernels.sweep.log_joint`) has drifted from it by
        more than :data:`~pymc_pcrp._kernels.log_joint.DRIFT_TOLERANCE`
        (relative), the state's statistics are rebuilt from its labels.
    """
    xc, state, params, tables = chain
    counts, labels_out = out
    if alpha_args is not None:
        params = with_log_alpha(params, alpha_args[-1][0])
    plan[4][2][:] = 0
    run_moves(rng, (xc, state, params, tables), plan, counts)
    finish_draw(state, labels_out)
    fresh = partition_log_joint(xc, labels_out, params)
    if drifted(log_joint(state, params, xc.shape[1]), fresh):
        resync_state(xc, state, params)
    if alpha_args is not None:
        alpha_proposal(rng, state, tables[0], alpha_args)
    return fresh


@numba.njit(**NJIT_KWARGS)
def labels_match(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two label arrays (of any integer types) hold the same values."""
    if a.shape[0] != b.shape[0]:
        return False
    for i in range(a.shape[0]):
        if a[i] != b[i]:
            return False
    return True


@numba.njit(**NJIT_KWARGS)
def with_log_alpha(params: NIWParams, log_alpha: float) -> NIWParams:
    """``params`` with another ``log_alpha``."""
    return NIWParams(
        log_alpha,
        params.power,
        params.kappa0,
        params.nu0,
        params.psi0,
        params.chol0,
        params.logdet0,
    )
