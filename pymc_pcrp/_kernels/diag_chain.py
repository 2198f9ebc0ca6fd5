r"""One draw of a diagonal-family chain: sweeps, split-merge, the scale and the log joint.

:func:`advance_diag` is the diagonal family's counterpart of
:func:`~pymc_pcrp._kernels.hyper.advance_scaled`: the scale ``s`` of
``b0 = s base`` lives on a grid (a fixed scale is a one-point grid), and after
each sweep and its split-merge proposals ``s`` is drawn exactly from

.. math:: p(s_g \mid z, X) \propto w_g \prod_k m(X_k \mid s_g\, \mathrm{base}),

which from the clusters' sums costs ``O(G K D)`` (one logarithm per cluster
and grid value, from a flushed product): ``b_nj = s base_j + W_j / 2`` with
``W_j = Q_j - S_j^2 / kappa_n`` independent of ``s``.

The reported log joint is computed afresh from the canonical labels in index
order (two passes per cluster: mean, then scatter), so the same partition
gives the same value bit for bit in every chain, as in
:mod:`pymc_pcrp._kernels.log_joint`.
"""

import math

import numba
import numpy as np

from pymc_pcrp._kernels._config import NJIT_KWARGS
from pymc_pcrp._kernels.chain import finish_draw
from pymc_pcrp._kernels.diag_splitmerge import diag_split_merge_moves
from pymc_pcrp._kernels.diag_state import (
    FRESH_CHAIN,
    IN_SYNC,
    REBUILT,
    DiagGrid,
    DiagParams,
    DiagState,
    new_cluster_log_weights,
    refresh_slot,
    resync_diag_state,
)
from pymc_pcrp._kernels.diag_sweep import diag_sweeps
from pymc_pcrp._kernels.draws import draw_log_index, log_sum_exp
from pymc_pcrp._kernels.hyperprior import alpha_proposal
from pymc_pcrp._kernels.log_joint import add_state_prior_terms, cluster_means, drifted, n_blocks
from pymc_pcrp._kernels.moves import (
    SMALL_PAIRS,
    SMALL_SIZE,
    UNIFORM_PAIRS,
    add_counts,
    draw_n_moves,
)

__all__ = [
    "advance_diag",
    "diag_params_at",
    "diag_partition_log_joint",
    "diag_scale_conditional",
]

_LOG_2PI = math.log(2.0 * math.pi)


@numba.njit(**NJIT_KWARGS)
def diag_params_at(params: DiagParams, grid: DiagGrid, log_alpha: float) -> DiagParams:
    """``params`` at the grid's current ``s`` (``b0 = grid.b0``) and the given ``log alpha``."""
    acc = 0.0
    for j in range(grid.base.shape[0]):
        acc += math.log(grid.base[j])
    logb0 = acc + grid.base.shape[0] * grid.log_s[grid.current[0]]
    return DiagParams(log_alpha, params.power, params.kappa0, params.a0, grid.b0, logb0)


@numba.njit(**NJIT_KWARGS)
def _grid_log_marginals(
    sizes: np.ndarray,
    w: np.ndarray,
    k: int,
    kappa0: float,
    a0: float,
    grid: DiagGrid,
    out: np.ndarray,
) -> float:
    """Write ``log w_g + sum_k log m(X_k | s_g)`` into ``out``; return its log-sum-exp.

    ``w[c, j]`` is ``Q_j - S_j^2 / kappa_n`` of cluster ``c`` (twice what it adds to ``b0``).
    """
    d = grid.base.shape[0]
    log_base = 0.0
    for j in range(d):
        log_base += math.log(grid.base[j])
    const = 0.0
    a_total = 0.0
    for c in range(k):
        n = sizes[c]
        a_n = a0 + 0.5 * n
        const += (
            d * (math.lgamma(a_n) - math.lgamma(a0) + 0.5 * math.log(kappa0 / (kappa0 + n)))
            - 0.5 * n * d * _LOG_2PI
        )
        a_total += a0
    for g in range(grid.log_s.shape[0]):
        ls = grid.log_s[g]
        s = math.exp(ls)
        acc = grid.log_w[g] + const + a_total * (log_base + d * ls)
        for c in range(k):
            inner = 0.0
            prod = 1.0
            for j in range(d):
                prod *= s * grid.base[j] + 0.5 * w[c, j]
                if prod > 1e150 or prod < 1e-150:
                    inner += math.log(prod)
                    prod = 1.0
            inner += math.log(prod)
            acc -= (a0 + 0.5 * sizes[c]) * inner
        out[g] = acc
    return log_sum_exp(out)


@numba.njit(**NJIT_KWARGS)
def diag_scale_conditional(
    state: DiagState, kappa0: float, a0: float, grid: DiagGrid, out: np.ndarray
) -> float:
    """Write ``log w_g + sum_k log m(X_k | s_g)`` from the state's sums; return the log-sum-exp."""
    d = grid.base.shape[0]
    k = state.k[0]
    sizes = np.empty(k, dtype=np.int64)
    w = np.empty((k, d))
    for p in range(k):
        slot = state.order[p]
        n = state.counts[slot]
        sizes[p] = n
        inv_kappa = 1.0 / (kappa0 + n)
        for j in range(d):
            s = state.sums[slot, j]
            v = state.sumsq[slot, j] - s * s * inv_kappa
            w[p, j] = v if v > 0.0 else 0.0
    return _grid_log_marginals(sizes, w, k, kappa0, a0, grid, out)


@numba.njit(**NJIT_KWARGS)
def diag_partition_log_joint(
    xc: np.ndarray, labels: np.ndarray, params: DiagParams, grid: DiagGrid
) -> float:
    """``K log alpha + r sum_k log Gamma(n_k) + log sum_g w_g prod_k m(X_k | s_g)`` afresh.

    ``labels`` must be canonical; clusters are visited in label order and points
    in index order.
    """
    k = n_blocks(labels)
    n, d = xc.shape
    sizes, means = cluster_means(xc, labels, k)
    w = np.zeros((k, d))
    for i in range(n):
        c = labels[i]
        for j in range(d):
            t = xc[i, j] - means[c, j]
            w[c, j] += t * t
    prior = 0.0
    for c in range(k):
        nc = sizes[c]
        weight = params.kappa0 * nc / (params.kappa0 + nc)
        for j in range(d):
            w[c, j] += weight * means[c, j] * means[c, j]
        prior += params.log_alpha + params.power * math.lgamma(nc)
    out = np.empty(grid.log_s.shape[0])
    return prior + _grid_log_marginals(sizes, w, k, params.kappa0, params.a0, grid, out)


@numba.njit(**NJIT_KWARGS)
def set_diag_scale(
    g: int,
    grid: DiagGrid,
    state: DiagState,
    params: DiagParams,
    xc: np.ndarray,
    tables: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> DiagParams:
    """Make ``s_g`` current: ``b0``, every occupied slot and the new-cluster weights."""
    grid.current[0] = g
    s = math.exp(grid.log_s[g])
    for j in range(grid.base.shape[0]):
        grid.b0[j] = s * grid.base[j]
    local = diag_params_at(params, grid, params.log_alpha)
    for p in range(state.k[0]):
        refresh_slot(state, state.order[p], local)
    new_cluster_log_weights(xc, local, tables[1][0], tables[0])
    return local


@numba.njit(**NJIT_KWARGS)
def diag_moves(
    rng: np.random.Generator, chain: tuple, plan: tuple, seat: np.ndarray, counts: np.ndarray
) -> None:
    """One sweep, then the split-merge proposals after it (added to ``counts``).

    ``chain`` is ``(xc, state, params, tables)`` and ``plan`` is
    ``(n_split_merge, n_scans, n_specks)``, as in :func:`advance_diag`; ``seat`` is
    the sweep's ``r log n + c(n)`` table (column 0 of ``tables[2]``).
    """
    xc, state, params, _ = chain
    n_split_merge, n_scans, n_specks = plan
    diag_sweeps(rng, chain, np.int64(1))
    # Pairs of points drawn uniformly, then pairs drawn among the small clusters.
    for rule in (UNIFORM_PAIRS, SMALL_PAIRS):
        n_moves = draw_n_moves(rng, n_split_merge if rule == UNIFORM_PAIRS else n_specks)
        if n_moves == 0:
            continue
        # np.int64(SMALL_SIZE): the type a call from Python has (see chain.run_moves)
        found = diag_split_merge_moves(
            rng, xc, state, params, n_moves, n_scans, seat, (rule, np.int64(SMALL_SIZE))
        )
        add_counts(counts, found)


@numba.njit(**NJIT_KWARGS)
def advance_diag(
    rng: np.random.Generator,
    chain: tuple,
    grid: DiagGrid,
    plan: tuple,
    out: tuple,
    alpha_args: tuple | None,
) -> float:
    """Run one draw's worth of updates in place; return the log joint of the new state.

    Per sweep: one Gibbs sweep (:func:`~pymc_pcrp._kernels.diag_sweep.diag_sweeps`),
    ``n_split_merge`` expected split-merge proposals (as in
    :func:`~pymc_pcrp._kernels.chain.advance`), then, for a grid of more than
    one value, an exact draw of ``s`` given the partition. ``grid.current[1]``
    says what changed since the last call, as in
    :func:`~pymc_pcrp._kernels.hyper.advance_scaled`; ``tables[0]`` is
    overwritten when ``s`` changes. ``chain`` (with the diagonal family's state
    and parameters), ``plan``, ``out`` (the four split-merge counts and the
    canonical partition) and ``alpha_args`` (an owned ``alpha``) are as in
    :func:`~pymc_pcrp._kernels.chain.advance`, except that this family has no
    pair moves: their rate must be 0 (``ValueError`` otherwise). (The step
    passes every argument, ``alpha_args=None`` too: it looks the compiled
    function up by its exact signature.)

    Returns
    -------
    float
        ``K log alpha + r sum_k log Gamma(n_k) + log sum_g w_g prod_k m(X_k | s_g)``
        computed afresh from the labels; the state is rebuilt from its labels
        when its running value has drifted from it.
    """
    xc, state, params, tables = chain
    n_sweeps, n_split_merge, n_scans, n_specks, pairs = plan
    if pairs[0] != 0:
        raise ValueError("pair moves are not implemented for the diagonal covariance family")
    pairs[2][:] = 0
    counts, labels_out = out
    if alpha_args is not None:
        params = DiagParams(
            alpha_args[-1][0], params.power, params.kappa0, params.a0, params.b0, params.logb0
        )
    g_count = grid.log_s.shape[0]
    logp = np.empty(g_count)
    status = grid.current[1]
    if status == FRESH_CHAIN:
        top = diag_scale_conditional(state, params.kappa0, params.a0, grid, logp)
        local = set_diag_scale(draw_log_index(rng, logp, top), grid, state, params, xc, tables)
    elif status == REBUILT:
        local = set_diag_scale(grid.current[0], grid, state, params, xc, tables)
    else:
        local = diag_params_at(params, grid, params.log_alpha)
    grid.current[1] = IN_SYNC
    seat = np.ascontiguousarray(tables[2][:, 0])
    counts[:] = 0
    for _ in range(n_sweeps):
        diag_moves(
            rng, (xc, state, local, tables), (n_split_merge, n_scans, n_specks), seat, counts
        )
        if g_count > 1:
            top = diag_scale_conditional(state, params.kappa0, params.a0, grid, logp)
            g = draw_log_index(rng, logp, top)
            if g != grid.current[0]:
                local = set_diag_scale(g, grid, state, local, xc, tables)
    finish_draw(state, labels_out)
    fresh = diag_partition_log_joint(xc, labels_out, local, grid)
    running = add_state_prior_terms(
        diag_scale_conditional(state, params.kappa0, params.a0, grid, logp),
        state,
        local.log_alpha,
        local.power,
    )
    if drifted(running, fresh):
        resync_diag_state(xc, state, local)
    if alpha_args is not None:
        alpha_proposal(rng, state, tables[0], alpha_args)
    return fresh
