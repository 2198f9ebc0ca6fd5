"""One draw of a chain of a generic family (the table family) in a single numba call.

The counterpart of :func:`pymc_pcrp._kernels.chain.advance` for the families of
:mod:`pymc_pcrp._kernels.family_moves`: sweeps, then after each sweep the
split-merge proposals of uniform pairs, the informed proposals
(:mod:`pymc_pcrp._kernels.informed_moves`) and the proposals among small
clusters; then the output labels, the log joint and an owned ``alpha``'s
proposal.
"""

from __future__ import annotations

import numba
import numpy as np

from pymc_pcrp._kernels import moves
from pymc_pcrp._kernels._config import NJIT_KWARGS
from pymc_pcrp._kernels.family_moves import (
    partition_log_joint,
    resync,
    run_sweeps,
    split_merge,
    state_log_joint,
    with_log_alpha,
)
from pymc_pcrp._kernels.hyperprior import alpha_proposal
from pymc_pcrp._kernels.informed_moves import informed_split_merge
from pymc_pcrp._kernels.log_joint import drifted
from pymc_pcrp._kernels.partitions import canonical_labels

__all__ = ["advance"]


@numba.njit(**NJIT_KWARGS)
def advance(rng, chain, plan, out, alpha_args):
    """Run one draw in place; return the log joint of the new partition.

    The arguments of :func:`pymc_pcrp._kernels.chain.advance`, except that
    ``plan`` is ``(n_sweeps, n_split_merge, n_scans, n_specks, pairs,
    n_informed)`` (no pair moves: their rate must be 0). Each sweep is followed
    by ``n_split_merge`` expected proposals from uniform pairs, ``n_informed``
    informed ones and ``n_specks`` among the small clusters, each number drawn as
    in :func:`pymc_pcrp._kernels.moves.draw_n_moves`. ``out`` is ``(counts,
    labels_out)``: ``counts`` holds the splits and merges of every kind of
    proposal. ``alpha_args`` is an owned ``alpha``'s proposal arguments or
    ``None``.
    """
    data, state, params, tables = chain
    n_sweeps, n_split_merge, n_scans, n_specks, pairs, n_informed = plan
    if pairs[0] != 0:
        raise ValueError("pair moves are not implemented for this cluster family")
    pairs[2][:] = 0
    counts, labels_out = out
    if alpha_args is not None:
        params = with_log_alpha(params, alpha_args[-1][0])
    local = (data, state, params, tables)
    counts[:] = 0
    for _ in range(n_sweeps):
        run_sweeps(rng, local, np.int64(1))
        n_moves = moves.draw_n_moves(rng, n_split_merge)
        if n_moves > 0:
            rule = (np.int64(moves.UNIFORM_PAIRS), np.int64(moves.SMALL_SIZE))
            moves.add_counts(counts, split_merge(rng, local, n_moves, np.int64(n_scans), rule))
        n_moves = moves.draw_n_moves(rng, n_informed)
        if n_moves > 0:
            found = informed_split_merge(rng, local, n_moves, np.int64(n_scans))
            moves.add_counts(counts, found)
        n_moves = moves.draw_n_moves(rng, n_specks)
        if n_moves > 0:
            rule = (np.int64(moves.SMALL_PAIRS), np.int64(moves.SMALL_SIZE))
            moves.add_counts(counts, split_merge(rng, local, n_moves, np.int64(n_scans), rule))
    labels_out[:] = canonical_labels(state.labels)
    fresh = partition_log_joint(data, labels_out, params)
    if drifted(state_log_joint(state, params), fresh):
        resync(data, state, params)
    if alpha_args is not None:
        alpha_proposal(rng, state, tables[0], alpha_args)
    return fresh
