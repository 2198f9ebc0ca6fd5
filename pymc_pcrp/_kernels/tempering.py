r"""Parallel tempering over the likelihood: the kernel of a hot replica and its log likelihood.

With tempering (``PCRPGibbs(temper=...)``) a chain keeps ``M`` replicas of the
state. Replica ``m`` targets

.. math::

    \pi_m(z, s) \propto p(z)\, p(s)\, p(X \mid z, s)^{\beta_m},
    \qquad p(z) \propto \alpha^K \prod_k \Gamma(n_k)^r,

with ``1 = beta_0 > beta_1 > ... > beta_{M-1} > 0`` (``s`` is the learned NIW
scale of ``Psi_0 = s P``; a fixed-scale prior has none). Replica 0 is the chain
itself and runs the step's usual kernels
(:func:`~pymc_pcrp._kernels.chain.advance`,
:func:`~pymc_pcrp._kernels.hyper.advance_scaled`). The hot replicas run the
plain kernel of this module: single-site Gibbs sweeps of the tempered full
conditional

.. math::

    p_\beta(z_i = k \mid z_{-i}) \propto n_k^r\, f(x_i \mid X_k)^{\beta},
    \qquad p_\beta(z_i = \text{new}) \propto \alpha\, f_0(x_i)^{\beta},

(``f`` the NIW posterior predictive of cluster ``k`` without the point, ``f_0``
the prior predictive; every option is scored, no skip bounds), and after each
sweep an exact draw of ``s`` from ``w_g prod_k m(X_k | s_g P)^beta`` on the grid.
Exchanging the states of two replicas is then accepted with probability
``min(1, exp((beta_i - beta_j)(L_j - L_i)))``, ``L = log p(X | z, s)``
(:func:`log_likelihood`), which leaves the product of the ``pi_m`` invariant;
the swaps themselves are made by the step
(:mod:`pymc_pcrp.sampler.tempering`).

The data are centred at the prior mean, as everywhere in :mod:`pymc_pcrp._kernels`.
"""

import math

import numba
import numpy as np

from pymc_pcrp._kernels._config import NJIT_KWARGS
from pymc_pcrp._kernels.draws import draw_log_index, log_sum_exp, shuffle_in_place
from pymc_pcrp._kernels.hyper import (
    FRESH_CHAIN,
    IN_SYNC,
    REBUILT,
    ScaleGrid,
    cluster_eigenvalues,
    log_marginal_grid,
    params_at,
    set_scale,
)
from pymc_pcrp._kernels.log_joint import resync_state
from pymc_pcrp._kernels.niw import log_marginal_from_logdet, log_predictive
from pymc_pcrp._kernels.scores import sample_log_weights
from pymc_pcrp._kernels.state import NIWParams, SweepState, grow_if_full, place_point

__all__ = [
    "advance_hot",
    "advance_hot_scaled",
    "cold_log_likelihood_scaled",
    "log_likelihood",
    "tempered_scale_index",
    "tempered_sweeps",
]


@numba.njit(**NJIT_KWARGS)
def tempered_sweeps(
    rng: np.random.Generator,
    xc: np.ndarray,
    state: SweepState,
    params: NIWParams,
    log_new: np.ndarray,
    pred_const: np.ndarray,
    beta: float,
    n_sweeps: int,
) -> None:
    """Run ``n_sweeps`` Gibbs sweeps of the tempered full conditional in place.

    Each sweep visits the points in a fresh uniformly random order; a point is
    removed from its cluster (an emptied cluster disappears), every occupied
    cluster ``k`` is scored with ``r log n_k + beta log f(x_i | X_k)`` and a new
    cluster with ``log alpha + beta log f_0(x_i)``, and the point is added to the
    drawn one. ``log_new`` holds ``log alpha + log f_0(x_i)`` at ``params``
    (``alpha`` is ``exp(params.log_alpha)``; the first table of
    :func:`~pymc_pcrp._kernels.scores.sweep_tables`), ``pred_const`` the
    size-dependent constants of the log predictive (its second table).
    ``beta = 1`` is Algorithm 1 without the sweep's shortcuts.
    """
    n, d = xc.shape
    perm = np.arange(n)
    logw = np.empty(n + 1)
    y = np.empty(d)
    v = np.empty(d)
    buf = np.empty((d, d))
    log_alpha, power, kappa0, nu0 = params.log_alpha, params.power, params.kappa0, params.nu0
    for _ in range(n_sweeps):
        shuffle_in_place(rng, perm)
        for t in range(n):
            i = perm[t]
            old = state.labels[i]
            place_point(state, xc, i, old, -1, params, v, buf)
            k = state.k[0]
            for p in range(k):
                slot = state.order[p]
                m = state.counts[slot]
                kappa_m = kappa0 + m
                # u = ||L^{-1}(x_i - mu_m)||^2 by forward substitution
                u = 0.0
                for a in range(d):
                    acc = xc[i, a] - state.sums[slot, a] / kappa_m
                    for b in range(a):
                        acc -= state.chol[slot, a, b] * y[b]
                    acc /= state.chol[slot, a, a]
                    y[a] = acc
                    u += acc * acc
                log_pred = log_predictive(m, u, state.logdet[slot], kappa0, nu0, pred_const[m])
                logw[p] = power * math.log(m) + beta * log_pred
            logw[k] = log_alpha + beta * (log_new[i] - log_alpha)
            choice = sample_log_weights(rng, logw, k + 1)
            slot = state.order[choice]
            place_point(state, xc, i, slot, 1, params, v, buf)
            state.labels[i] = slot
            if choice == k:
                grow_if_full(state)


@numba.njit(**NJIT_KWARGS)
def log_likelihood(state: SweepState, params: NIWParams) -> float:
    """``sum_k log m(X_k)`` of the state's partition at ``params`` (from its factors)."""
    d = state.sums.shape[1]
    acc = 0.0
    for p in range(state.k[0]):
        slot = state.order[p]
        acc += log_marginal_from_logdet(
            state.counts[slot], state.logdet[slot], d, params.kappa0, params.nu0, params.logdet0
        )
    return acc


@numba.njit(**NJIT_KWARGS)
def tempered_scale_index(
    rng: np.random.Generator,
    state: SweepState,
    params: NIWParams,
    grid: ScaleGrid,
    beta: float,
    logp: np.ndarray,
) -> int:
    """Draw a grid index from ``w_g prod_k m(X_k | s_g P)^beta`` given the state's partition.

    Reads the clusters' sums only (not their factors), so the state may hold
    factors for any ``Psi_0``. ``logp`` (length ``G``) is scratch space.
    """
    d = grid.base_chol.shape[0]
    k = state.k[0]
    sizes = np.empty(k, dtype=np.int64)
    eig = np.empty((k, d))
    cluster_eigenvalues(state, params.kappa0, grid, sizes, eig)
    log_marginal_grid(sizes, eig, k, params.kappa0, params.nu0, grid.logdet_base, grid.log_s, logp)
    for g in range(logp.shape[0]):
        logp[g] = grid.log_w[g] + beta * logp[g]
    return draw_log_index(rng, logp, log_sum_exp(logp))


@numba.njit(**NJIT_KWARGS)
def advance_hot(rng: np.random.Generator, chain: tuple, beta: float, n_sweeps: int) -> float:
    """One draw of a hot replica with a fixed-scale prior; returns its log likelihood.

    ``chain`` is the replica's ``(xc, state, params, tables)``, as for
    :func:`~pymc_pcrp._kernels.sweep.gibbs_sweeps`. ``n_sweeps`` tempered sweeps
    (:func:`tempered_sweeps`), then the state's statistics are rebuilt from its
    labels (so that rank-one rounding cannot accumulate), and
    ``L = sum_k log m(X_k)`` is returned for the swap test.
    """
    xc, state, params, tables = chain
    tempered_sweeps(rng, xc, state, params, tables[0], tables[1], beta, n_sweeps)
    resync_state(xc, state, params)
    return log_likelihood(state, params)


@numba.njit(**NJIT_KWARGS)
def advance_hot_scaled(
    rng: np.random.Generator, chain: tuple, grid: ScaleGrid, beta: float, n_sweeps: int
) -> float:
    """One draw of a hot replica with a learned NIW scale; returns ``log p(X | z, s)``.

    ``chain`` is the replica's ``(xc, state, params, tables)`` as for
    :func:`advance_hot`; ``grid`` is the replica's own :class:`~pymc_pcrp._kernels.hyper.ScaleGrid`
    (its ``psi0``, ``chol0`` and ``current`` are the replica's; the read-only
    arrays may be shared) and ``tables[0]`` its own new-cluster weights.
    ``grid.current[1]`` says what changed as for
    :func:`~pymc_pcrp._kernels.hyper.advance_scaled`: ``FRESH_CHAIN`` draws ``s``
    from its tempered conditional first, ``REBUILT`` (a swapped-in or rebuilt
    state) applies the replica's ``s`` to the state and the table. Then each of
    ``n_sweeps`` tempered sweeps is followed by an exact draw of ``s``
    (:func:`tempered_scale_index`).
    """
    xc, state, params, tables = chain
    logp = np.empty(grid.log_s.shape[0])
    status = grid.current[1]
    if status == FRESH_CHAIN:
        g = tempered_scale_index(rng, state, params, grid, beta, logp)
        local = set_scale(g, grid, state, params, tables)
    elif status == REBUILT:
        local = set_scale(grid.current[0], grid, state, params, tables)
    else:
        local = params_at(params, grid)
    grid.current[1] = IN_SYNC
    for _ in range(n_sweeps):
        tempered_sweeps(rng, xc, state, local, tables[0], tables[1], beta, np.int64(1))
        g = tempered_scale_index(rng, state, params, grid, beta, logp)
        if g != grid.current[0]:
            local = set_scale(g, grid, state, params, tables)
    resync_state(xc, state, local)
    return log_likelihood(state, local)


@numba.njit(**NJIT_KWARGS)
def cold_log_likelihood_scaled(state: SweepState, params: NIWParams, grid: ScaleGrid) -> float:
    """``L`` of the cold replica at its current ``s`` (after :func:`advance_scaled`)."""
    return log_likelihood(state, params_at(params, grid))
