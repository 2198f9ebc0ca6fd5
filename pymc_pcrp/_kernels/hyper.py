r"""A learned NIW scale: the exact update of ``s`` in ``Psi_0 = s P`` given the partition.

With a hyperprior the NIW scale matrix is ``Psi_0 = s P``: ``P`` is a fixed base
matrix and ``s`` takes values on a grid ``s_1 < ... < s_G`` with prior weights
``w_g``. The step samples the pair ``(z, s)``: sweeps (and split-merge moves)
update ``z`` given ``s``, then :func:`advance_scaled` draws ``s`` exactly from
its conditional given ``z``,

.. math::

    p(s_g \mid z, X) \propto w_g \prod_k m(X_k \mid s_g P).

For a cluster with ``n`` points, centred sums ``S`` and outer products ``Q``,
``Psi_n = s P + B`` with ``B = Q - S S^T / (kappa0 + n)``, which does not depend
on ``s``. With ``P = L0 L0^T`` and ``lambda_j`` the eigenvalues of
``L0^{-1} B L0^{-T}``,

.. math::

    \log|s P + B| = \log|P| + \sum_j \log(s + \lambda_j),

so after one ``O(D^3)`` eigen-decomposition per cluster every grid value costs
``O(D)``: ``O(K D^3 + G K D)`` for the whole conditional. The eigenvalues of a
cluster whose ``B`` is bit for bit the one of the previous call in its slot are
reused (:func:`cluster_eigenvalues`): a sweep moves a handful of points, and the
clusters it leaves alone keep their statistics. After a new ``s`` the
occupied slots' Cholesky factors (``O(K D^3)``) and every point's new-cluster
weight (``O(N)``, from the cached ``q_i = x_i^T P^{-1} x_i``) are recomputed.

A hyperprior on ``nu0`` as well: ``nu0`` takes values ``nu_1 < ... < nu_H`` with
prior weights ``v_h``, independent of ``s``. After the sweeps of a draw,
:func:`advance_scaled` draws ``nu0`` exactly from its conditional given ``z``
and ``s``. The sums ``A_g = sum_k sum_j log(s_g + lambda_kj)`` and
``B_g = sum_k n_k sum_j log(s_g + lambda_kj)`` do not depend on ``nu0``, so
with them every ``(s_g, nu_h)`` pair costs ``O(1)`` beyond the ``O(K D)``
multivariate gamma constants of each ``nu_h``. A change of ``nu0`` rewrites the
size tables of the sweep (``O(N)``); the Cholesky factors of ``Psi_n = s P + B``
do not depend on ``nu0``. With one ``nu0`` value (``H = 1``) nothing is drawn
and the chain is the scale-only chain.

The data are centred at the prior mean, as everywhere in :mod:`pymc_pcrp._kernels`.
"""

import math

from typing import NamedTuple

import numba
import numpy as np

from pymc_pcrp._kernels._config import NJIT_KWARGS
from pymc_pcrp._kernels.chain import finish_draw, run_moves, with_log_alpha
from pymc_pcrp._kernels.draws import draw_log_index, log_sum_exp
from pymc_pcrp._kernels.eigen import symmetric_eigenvalues, whiten
from pymc_pcrp._kernels.hyperprior import alpha_proposal
from pymc_pcrp._kernels.log_joint import (
    add_state_prior_terms,
    cluster_scatter,
    drifted,
    mean_weight,
    n_blocks,
    prior_terms,
    resync_state,
)
from pymc_pcrp._kernels.niw import log_multigamma, predictive_constants
from pymc_pcrp._kernels.state import NIWParams, SweepState, refresh_slot

__all__ = [
    "EIGEN_CACHE_SLOTS",
    "ScaleGrid",
    "advance_scaled",
    "cluster_eigenvalues",
    "draw_nu0",
    "log_marginal_grid",
    "make_scale_grid",
    "nu0_constants",
    "params_at",
    "partition_log_joint_scaled",
    "scale_conditional",
    "set_nu0",
]

LOG_PI = math.log(math.pi)

# Values of ``ScaleGrid.current[1]``: what the step did to the state since the last call.
IN_SYNC = 0  # the state's factors already use the current s
REBUILT = 1  # the state was rebuilt from labels with another Psi_0: refresh it
FRESH_CHAIN = 2  # a new chain: draw s from its conditional given the initial partition


class ScaleGrid(NamedTuple):
    """Grids of ``s`` and of ``nu0``, the base matrix ``P`` and the chain's current values.

    ``psi0`` and ``chol0`` hold ``s P`` and its Cholesky factor for the current
    ``s``; ``current`` is ``[grid index of s, status, grid index of nu0]`` (see
    the module constants for the status). ``nu0s`` and ``nu_log_w`` are the
    ``nu0`` grid and its log prior weights (one value for a fixed ``nu0``).
    ``cached_b`` and ``cached_eig`` remember, per slot, the last ``B`` whose
    eigenvalues :func:`cluster_eigenvalues` computed, and those eigenvalues.
    """

    log_s: np.ndarray
    log_w: np.ndarray
    base_chol_inv: np.ndarray
    base_chol: np.ndarray
    logdet_base: float
    q: np.ndarray
    psi0: np.ndarray
    chol0: np.ndarray
    current: np.ndarray
    nu0s: np.ndarray
    nu_log_w: np.ndarray
    cached_b: np.ndarray
    cached_eig: np.ndarray


# Slots whose eigenvalues cluster_eigenvalues remembers: the first EIGEN_CACHE_SLOTS, fewer
# when their D^2 floats each would pass EIGEN_CACHE_FLOATS (32 MB).
EIGEN_CACHE_SLOTS = 64
EIGEN_CACHE_FLOATS = 1 << 22


def make_scale_grid(
    xc: np.ndarray,
    base: np.ndarray,
    grid,
    log_weights,
    nu0s,
    nu_log_weights=None,
    start_nu: int = 0,
) -> ScaleGrid:
    """Build a :class:`ScaleGrid` for centred data ``xc``.

    ``nu0s`` is the fixed ``nu0`` (a number) or the grid of a random one, with
    log prior weights ``nu_log_weights`` (default: zeros). Status: fresh chain,
    ``s = s_1`` and ``nu0 = nu0s[start_nu]`` until the kernel draws them.
    """
    nu0s = np.atleast_1d(np.asarray(nu0s, dtype=np.float64))
    if nu_log_weights is None:
        nu_log_weights = np.zeros(nu0s.shape[0])
    base = np.ascontiguousarray(base, dtype=np.float64)
    chol = np.linalg.cholesky(base)
    chol_inv = np.ascontiguousarray(np.linalg.inv(chol))
    y = xc @ chol_inv.T
    q = np.ascontiguousarray(np.einsum("ij,ij->i", y, y))
    log_s = np.log(np.asarray(grid, dtype=np.float64))
    log_w = np.asarray(log_weights, dtype=np.float64)
    logdet = 2.0 * float(np.sum(np.log(np.diag(chol))))
    s = math.exp(log_s[0])
    d = base.shape[0]
    slots = min(xc.shape[0] + 1, EIGEN_CACHE_SLOTS, max(1, EIGEN_CACHE_FLOATS // (d * d)))
    return ScaleGrid(
        np.ascontiguousarray(log_s),
        np.ascontiguousarray(log_w),
        chol_inv,
        np.ascontiguousarray(chol),
        logdet,
        q,
        s * base,
        math.sqrt(s) * chol,
        np.array([0, FRESH_CHAIN, start_nu], dtype=np.int64),
        np.ascontiguousarray(nu0s),
        np.ascontiguousarray(np.asarray(nu_log_weights, dtype=np.float64)),
        np.full((slots, d, d), np.nan),
        np.empty((slots, d)),
    )


@numba.njit(**NJIT_KWARGS)
def cluster_eigenvalues(
    state: SweepState, kappa0: float, grid: ScaleGrid, sizes: np.ndarray, eig: np.ndarray
) -> int:
    """Write each occupied cluster's size and the eigenvalues of ``L0^{-1} B L0^{-T}``.

    ``sizes`` (length ``>= K``) and ``eig`` (shape ``(>= K, D)``) are overwritten
    in the order of ``state.order``; returns ``K``. ``L0^{-1}`` is
    ``grid.base_chol_inv``. For the first :data:`EIGEN_CACHE_SLOTS` slots the
    grid remembers ``B`` and its eigenvalues (``grid.cached_b``,
    ``grid.cached_eig``). The eigenvalues are a function of ``B`` alone, so when
    a slot's ``B`` equals the remembered one bit for bit the remembered values are
    exactly what the decomposition would return, and it is skipped; any other
    ``B`` (a point moved, another ``kappa0``; NaN never compares equal) is
    decomposed afresh and remembered.
    """
    linv = grid.base_chol_inv
    cached_b, cached_eig = grid.cached_b, grid.cached_eig
    d = linv.shape[0]
    b = np.empty((d, d))
    t = np.empty((d, d))
    m = np.empty((d, d))
    k = state.k[0]
    for p in range(k):
        slot = state.order[p]
        n = state.counts[slot]
        sizes[p] = n
        inv_kappa = 1.0 / (kappa0 + n)
        for i in range(d):
            for j in range(d):
                b[i, j] = (
                    state.sumsq[slot, i, j] - state.sums[slot, i] * state.sums[slot, j] * inv_kappa
                )
        cached = slot < cached_b.shape[0]
        if cached:
            same = True
            for i in range(d):
                for j in range(d):
                    if b[i, j] != cached_b[slot, i, j]:
                        same = False
                        break
                if not same:
                    break
            if same:
                for j in range(d):
                    eig[p, j] = cached_eig[slot, j]
                continue
        whiten(linv, b, t, m)
        symmetric_eigenvalues(m, eig[p])
        if cached:
            for i in range(d):
                for j in range(d):
                    cached_b[slot, i, j] = b[i, j]
            for j in range(d):
                cached_eig[slot, j] = eig[p, j]
    return k


@numba.njit(**NJIT_KWARGS)
def nu0_constants(
    sizes: np.ndarray, k: int, d: int, kappa0: float, nu0: float, logdet_base: float
) -> float:
    """Return the terms of ``sum_k log m(X_k | s P, nu0)`` that do not involve ``s``."""
    const = 0.0
    for p in range(k):
        n = sizes[p]
        kappa_n = kappa0 + n
        nu_n = nu0 + n
        const += (
            -0.5 * n * d * LOG_PI
            + log_multigamma(0.5 * nu_n, d)
            - log_multigamma(0.5 * nu0, d)
            + 0.5 * d * math.log(kappa0 / kappa_n)
            - 0.5 * n * logdet_base
        )
    return const


@numba.njit(**NJIT_KWARGS)
def _log_det_sum(eig: np.ndarray, p: int, s: float) -> float:
    """``sum_j log(s + lambda_pj)`` as the log of a product, one log per ~D factors.

    The product is flushed before it can overflow or underflow.
    """
    inner = 0.0
    prod = 1.0
    for j in range(eig.shape[1]):
        prod *= s + eig[p, j]
        if prod > 1e150 or prod < 1e-150:
            inner += math.log(prod)
            prod = 1.0
    return inner + math.log(prod)


@numba.njit(**NJIT_KWARGS)
def log_marginal_grid(
    sizes: np.ndarray,
    eig: np.ndarray,
    k: int,
    kappa0: float,
    nu0: float,
    logdet_base: float,
    log_s: np.ndarray,
    out: np.ndarray,
) -> None:
    """Write ``sum_k log m(X_k | s_g P)`` for every grid value ``s_g`` into ``out``."""
    d = eig.shape[1]
    const = nu0_constants(sizes, k, d, kappa0, nu0, logdet_base)
    nu_total = k * nu0
    for g in range(log_s.shape[0]):
        ls = log_s[g]
        s = math.exp(ls)
        acc = const + 0.5 * nu_total * d * ls
        for p in range(k):
            acc -= 0.5 * (nu0 + sizes[p]) * _log_det_sum(eig, p, s)
        out[g] = acc


@numba.njit(**NJIT_KWARGS)
def scale_conditional(
    state: SweepState, kappa0: float, nu0: float, grid: ScaleGrid, out: np.ndarray
) -> float:
    """Write ``log w_g + sum_k log m(X_k | s_g P)`` into ``out``; return its log-sum-exp.

    The log-sum-exp is the log likelihood of the partition with ``s`` integrated out.
    """
    d = grid.base_chol.shape[0]
    k = state.k[0]
    sizes = np.empty(k, dtype=np.int64)
    eig = np.empty((k, d))
    cluster_eigenvalues(state, kappa0, grid, sizes, eig)
    log_marginal_grid(sizes, eig, k, kappa0, nu0, grid.logdet_base, grid.log_s, out)
    for g in range(out.shape[0]):
        out[g] += grid.log_w[g]
    return log_sum_exp(out)


@numba.njit(**NJIT_KWARGS)
def params_at(params: NIWParams, grid: ScaleGrid) -> NIWParams:
    """``params`` with ``Psi_0 = s P`` and ``nu0`` at the chain's current grid values."""
    d = grid.base_chol.shape[0]
    logdet0 = grid.logdet_base + d * grid.log_s[grid.current[0]]
    nu0 = grid.nu0s[grid.current[2]]
    return NIWParams(
        params.log_alpha, params.power, params.kappa0, nu0, grid.psi0, grid.chol0, logdet0
    )


@numba.njit(**NJIT_KWARGS)
def new_cluster_log_weights(
    grid: ScaleGrid, params: NIWParams, pred_const0: float, log_new: np.ndarray
) -> None:
    """Overwrite ``log_new`` with ``log alpha + log prior predictive`` at the current ``s``.

    Equals :func:`~pymc_pcrp._kernels.scores.sweep_tables`'s first table for
    ``Psi_0 = s P``: ``x^T Psi_0^{-1} x = q / s``.
    """
    d = grid.base_chol.shape[0]
    log_s = grid.log_s[grid.current[0]]
    inv_s = math.exp(-log_s)
    logdet0 = grid.logdet_base + d * log_s
    c = params.kappa0 / (params.kappa0 + 1.0) * inv_s
    base = params.log_alpha + pred_const0 - 0.5 * logdet0
    half = 0.5 * (params.nu0 + 1.0)
    for i in range(log_new.shape[0]):
        log_new[i] = base - half * math.log1p(grid.q[i] * c)


@numba.njit(**NJIT_KWARGS)
def set_scale(
    g: int,
    grid: ScaleGrid,
    state: SweepState,
    params: NIWParams,
    tables: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> NIWParams:
    """Make ``s_g`` current: ``Psi_0``, every occupied factor and the new-cluster table."""
    d = grid.base_chol.shape[0]
    grid.current[0] = g
    s = math.exp(grid.log_s[g])
    root = math.sqrt(s)
    for i in range(d):
        for j in range(d):
            grid.psi0[i, j] = 0.0
            grid.chol0[i, j] = root * grid.base_chol[i, j]
    # psi0 = s L0 L0^T, symmetric by construction
    for i in range(d):
        for j in range(d):
            acc = 0.0
            for a in range(min(i, j) + 1):
                acc += grid.base_chol[i, a] * grid.base_chol[j, a]
            grid.psi0[i, j] = s * acc
    local = params_at(params, grid)
    buf = np.empty((d, d))
    for p in range(state.k[0]):
        refresh_slot(state, state.order[p], local, buf)
    new_cluster_log_weights(grid, local, tables[1][0], tables[0])
    return local


@numba.njit(**NJIT_KWARGS)
def set_nu0(
    h: int, grid: ScaleGrid, params: NIWParams, tables: tuple[np.ndarray, np.ndarray, np.ndarray]
) -> NIWParams:
    """Make ``nu0 = grid.nu0s[h]`` current: rewrite the sweep's tables in place (``O(N)``).

    The Cholesky factors of ``Psi_n = s P + B`` do not involve ``nu0``; the
    per-size constants, the per-size table and the new-cluster weights do.
    """
    grid.current[2] = h
    local = params_at(params, grid)
    pred_const, by_size = tables[1], tables[2]
    n = pred_const.shape[0] - 1
    pred_const[:] = predictive_constants(n, grid.base_chol.shape[0], local.kappa0, local.nu0)
    # the columns of size_table that involve nu0 (the others depend on kappa0 and r only)
    by_size[0, 0] = pred_const[0]
    for m in range(1, n + 1):
        by_size[m, 0] = local.power * math.log(m) + pred_const[m]
    for m in range(n + 1):
        by_size[m, 1] = -0.5 * (local.nu0 + m + 1.0)
    new_cluster_log_weights(grid, local, pred_const[0], tables[0])
    return local


@numba.njit(**NJIT_KWARGS)
def _log_det_sums(
    sizes: np.ndarray, eig: np.ndarray, k: int, log_s: np.ndarray, a: np.ndarray, b: np.ndarray
) -> None:
    """Write ``a[g] = sum_k sum_j log(s_g + lambda_kj)`` and ``b[g]``, weighted by ``n_k``."""
    for g in range(log_s.shape[0]):
        s = math.exp(log_s[g])
        acc_a = 0.0
        acc_b = 0.0
        for p in range(k):
            inner = _log_det_sum(eig, p, s)
            acc_a += inner
            acc_b += sizes[p] * inner
        a[g] = acc_a
        b[g] = acc_b


@numba.njit(**NJIT_KWARGS)
def draw_nu0(
    rng: np.random.Generator,
    state: SweepState,
    params: NIWParams,
    tables: tuple[np.ndarray, np.ndarray, np.ndarray],
    grid: ScaleGrid,
) -> tuple[float, NIWParams]:
    """Draw ``nu0`` exactly from its conditional given the partition and ``s``.

    Returns ``log sum_{g,h} w_g v_h prod_k m(X_k | s_g P, nu_h)`` (the log
    likelihood of the partition with ``s`` and ``nu0`` integrated out) and the
    parameters at the new ``nu0`` (the tables are rewritten when it changed).
    """
    d = grid.base_chol.shape[0]
    k = state.k[0]
    sizes = np.empty(k, dtype=np.int64)
    eig = np.empty((k, d))
    cluster_eigenvalues(state, params.kappa0, grid, sizes, eig)
    g_count = grid.log_s.shape[0]
    h_count = grid.nu0s.shape[0]
    a = np.empty(g_count)
    b = np.empty(g_count)
    _log_det_sums(sizes, eig, k, grid.log_s, a, b)
    joint = np.empty((g_count, h_count))
    for h in range(h_count):
        nu = grid.nu0s[h]
        const = grid.nu_log_w[h] + nu0_constants(sizes, k, d, params.kappa0, nu, grid.logdet_base)
        for g in range(g_count):
            joint[g, h] = (
                const
                + grid.log_w[g]
                + 0.5 * k * nu * d * grid.log_s[g]
                - 0.5 * nu * a[g]
                - 0.5 * b[g]
            )
    row = joint[grid.current[0], :].copy()
    h = draw_log_index(rng, row, log_sum_exp(row))
    total = log_sum_exp(joint.ravel())
    if h != grid.current[2]:
        return total, set_nu0(h, grid, params, tables)
    return total, params_at(params, grid)


@numba.njit(**NJIT_KWARGS)
def partition_log_joint_scaled(
    xc: np.ndarray, labels: np.ndarray, params: NIWParams, grid: ScaleGrid
) -> float:
    """Compute the log joint with ``s`` (and a random ``nu0``) integrated out, from scratch.

    ``K log alpha + r sum_k log Gamma(n_k) + log sum_{g,h} w_g v_h prod_k
    m(X_k | s_g P, nu_h)`` for canonical ``labels`` (the value
    :func:`~pymc_pcrp._kernels.hyper.advance_scaled` reports).
    """
    k = n_blocks(labels)
    d = xc.shape[1]
    sizes, means, w = cluster_scatter(xc, labels, k)
    linv = grid.base_chol_inv
    # Per cluster: eigenvalues lam of L0^{-1} W L0^{-T} = V diag(lam) V^T and
    # u = V^T L0^{-1} m. Then |s P + W + c m m^T| = |P| prod_j (s + lam_j)
    # (1 + c sum_j u_j^2 / (s + lam_j)): the rank-one term, which dominates far
    # from the prior mean, is never added to W.
    lam = np.empty((k, d))
    u = np.empty((k, d))
    t = np.empty((d, d))
    m = np.empty((d, d))
    lm = np.empty(d)
    for c in range(k):
        whiten(linv, w[c], t, m)
        vals, vecs = np.linalg.eigh(m)
        for i in range(d):
            acc = 0.0
            for a in range(i + 1):
                acc += linv[i, a] * means[c, a]
            lm[i] = acc
        for j in range(d):
            lam[c, j] = vals[j]
            acc = 0.0
            for i in range(d):
                acc += vecs[i, j] * lm[i]
            u[c, j] = acc
    g_count = grid.log_s.shape[0]
    h_count = grid.nu0s.shape[0]
    consts = np.empty(h_count)
    for h in range(h_count):
        consts[h] = grid.nu_log_w[h] + nu0_constants(
            sizes, k, d, params.kappa0, grid.nu0s[h], grid.logdet_base
        )
    out = np.empty(g_count * h_count)
    inner = np.empty(k)
    top = -np.inf
    for g in range(g_count):
        ls = grid.log_s[g]
        s = math.exp(ls)
        for c in range(k):
            acc = 0.0
            quad = 0.0
            for j in range(d):
                acc += math.log(s + lam[c, j])
                quad += u[c, j] * u[c, j] / (s + lam[c, j])
            inner[c] = acc + math.log1p(mean_weight(params.kappa0, sizes[c]) * quad)
        for h in range(h_count):
            nu = grid.nu0s[h]
            acc = consts[h] + grid.log_w[g] + 0.5 * k * nu * d * ls
            for c in range(k):
                acc -= 0.5 * (nu + sizes[c]) * inner[c]
            out[g * h_count + h] = acc
            if acc > top:
                top = acc
    total = 0.0
    for i in range(out.shape[0]):
        total += math.exp(out[i] - top)
    return prior_terms(sizes, params) + top + math.log(total)


@numba.njit(**NJIT_KWARGS)
def advance_scaled(
    rng: np.random.Generator,
    chain: tuple,
    grid: ScaleGrid,
    plan: tuple,
    out: tuple,
    alpha_args: tuple | None,
) -> float:
    """:func:`~pymc_pcrp._kernels.chain.advance` with an exact draw of ``s`` after each sweep.

    ``chain``, ``plan``, ``out`` and ``alpha_args`` are as in
    :func:`~pymc_pcrp._kernels.chain.advance`; ``grid`` is the scale grid.

    With a grid of ``nu0`` values (``grid.nu0s``), ``nu0`` is drawn exactly
    after the last sweep (:func:`draw_nu0`).

    ``grid.current[1]`` says what changed since the last call: nothing
    (``IN_SYNC``: the state's factors and ``tables[0]`` already hold the current
    ``s``), the state, ``params`` or ``tables`` were rebuilt (``REBUILT``: they
    may have been built for any ``Psi_0``, and the current ``s`` is applied to
    them), or a new chain (``FRESH_CHAIN``: ``s`` is first drawn given the
    initial partition). ``tables[0]`` is overwritten.

    Returns the log joint of the new labels with ``s`` (and ``nu0``) integrated out,
    ``K log alpha + r sum_k log Gamma(n_k) + log sum_{g,h} w_g v_h prod_k m(X_k | s_g P, nu_h)``,
    computed afresh from the labels (:func:`partition_log_joint_scaled`; the
    state is rebuilt from its labels when its running value has drifted); the
    drawn ``s`` is ``exp(grid.log_s[grid.current[0]])`` and ``nu0`` is
    ``grid.nu0s[grid.current[2]]``.
    """
    xc, state, params, tables = chain
    n_sweeps, n_split_merge, n_scans, n_specks, pairs = plan
    counts, labels_out = out
    pairs[2][:] = 0
    if alpha_args is not None:
        params = with_log_alpha(params, alpha_args[-1][0])
    g_count = grid.log_s.shape[0]
    logp = np.empty(g_count)
    status = grid.current[1]
    learn_nu0 = grid.nu0s.shape[0] > 1
    if status != IN_SYNC and learn_nu0:
        set_nu0(grid.current[2], grid, params, tables)  # tables for the chain's nu0
    if status == FRESH_CHAIN:
        top = scale_conditional(state, params.kappa0, grid.nu0s[grid.current[2]], grid, logp)
        local = set_scale(draw_log_index(rng, logp, top), grid, state, params, tables)
    elif status == REBUILT:
        local = set_scale(grid.current[0], grid, state, params, tables)
    else:
        local = params_at(params, grid)
    grid.current[1] = IN_SYNC
    total = np.zeros(4, dtype=np.int64)
    running = 0.0
    for _ in range(n_sweeps):
        # np.int64(1), not the literal 1, so that run_moves is compiled once (see chain.py)
        one = (np.int64(1), n_split_merge, n_scans, n_specks, pairs)
        run_moves(rng, (xc, state, local, tables), one, counts)
        for j in range(4):
            total[j] += counts[j]
        top = scale_conditional(state, params.kappa0, local.nu0, grid, logp)
        running = add_state_prior_terms(top, state, params.log_alpha, params.power)
        g = draw_log_index(rng, logp, top)
        if g != grid.current[0]:
            local = set_scale(g, grid, state, params, tables)
    if learn_nu0:
        top, local = draw_nu0(rng, state, params, tables, grid)
        running = add_state_prior_terms(top, state, params.log_alpha, params.power)
    counts[:] = total
    finish_draw(state, labels_out)
    fresh = partition_log_joint_scaled(xc, labels_out, params, grid)
    if drifted(running, fresh):
        resync_state(xc, state, local)
    if alpha_args is not None:
        alpha_proposal(rng, state, tables[0], alpha_args)
    return fresh
