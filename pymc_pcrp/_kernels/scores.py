"""What the sweep scores a point with: tables, per-slot caches, bounds and the exact draw.

:func:`pymc_pcrp._kernels.sweep.gibbs_sweeps` scores a point against every
occupied cluster. This module holds what it reads while doing so:

* :func:`sweep_tables`: per-point and per-size constants of the log weights,
  computed once per data set and parameters;
* the per-slot caches (posterior mean, inverse diagonal of the Cholesky factor,
  the constant part of the log weight, eigenvalue bounds), refreshed by
  :func:`sync_slot` when a cluster changes;
* the logarithm-free bounds that let the sweep skip far clusters
  (:func:`loo_lower_bound`, :func:`log_weight_upper_bound`, :data:`SKIP_NATS`),
  and :func:`draw_with_skipped`, which completes a draw exactly when a skipped
  cluster might matter.

Everything works on the sweep's plain arrays and a
:class:`~pymc_pcrp._kernels.state.SweepState`; see :mod:`pymc_pcrp._kernels.niw`
for the conventions (data centred at the prior mean).
"""

import math

import numba
import numpy as np

from llvmlite import ir as llvm_ir
from numba.core import types
from numba.extending import intrinsic

from pymc_pcrp._kernels._config import NJIT_KWARGS
from pymc_pcrp._kernels.niw import predictive_constants
from pymc_pcrp._kernels.state import NIWParams, SweepState

__all__ = [
    "PARTIAL_ROWS",
    "SKIP_NATS",
    "below_cut",
    "distance_limit",
    "log1p_lower_bound",
    "log_weight_upper_bound",
    "loo_log_weight",
    "loo_lower_bound",
    "pick_option",
    "scored_weights",
    "size_table",
    "skipped_stage",
    "sweep_tables",
    "sweep_workspace",
]


@numba.njit(**NJIT_KWARGS)
def _mahalanobis(
    chol: np.ndarray, x: np.ndarray, s: np.ndarray, kappa_n: float, y: np.ndarray
) -> float:
    """Return ``||L^{-1}(x - s / kappa_n)||^2`` by forward substitution."""
    d = x.shape[0]
    acc = 0.0
    for a in range(d):
        t = x[a] - s[a] / kappa_n
        for b in range(a):
            t -= chol[a, b] * y[b]
        t /= chol[a, a]
        y[a] = t
        acc += t * t
    return acc


@numba.njit(**NJIT_KWARGS)
def _new_cluster_log_weights(xc: np.ndarray, params: NIWParams) -> np.ndarray:
    """``log alpha + log prior predictive`` for every point (fixed across sweeps)."""
    n, d = xc.shape
    pred_const = predictive_constants(0, d, params.kappa0, params.nu0)
    out = np.empty(n)
    y = np.empty(d)
    zero = np.zeros(d)
    c = params.kappa0 / (params.kappa0 + 1.0)
    for i in range(n):
        u = _mahalanobis(params.chol0, xc[i], zero, params.kappa0, y)
        out[i] = (
            params.log_alpha
            + pred_const[0]
            - 0.5 * params.logdet0
            - 0.5 * (params.nu0 + 1.0) * math.log1p(u * c)
        )
    return out


@numba.njit(**NJIT_KWARGS)
def sample_log_weights(rng: np.random.Generator, logw: np.ndarray, m: int) -> int:
    """Draw an index in ``0..m-1`` with probabilities proportional to ``exp(logw)``."""
    top = logw[0]
    for j in range(1, m):
        if logw[j] > top:
            top = logw[j]
    total = 0.0
    for j in range(m):
        w = math.exp(logw[j] - top)
        logw[j] = w
        total += w
    u = rng.random() * total
    acc = 0.0
    for j in range(m - 1):
        acc += logw[j]
        if u < acc:
            return j
    return m - 1


@numba.njit(**NJIT_KWARGS)
def size_table(n: int, d: int, params: NIWParams) -> np.ndarray:
    """Per-size constants of a cluster's log weight, one row per size ``0..n``.

    Columns: ``r log(m) + const[m]`` (the pCRP weight and the size-dependent part
    of the log predictive, see :func:`~pymc_pcrp._kernels.niw.predictive_constants`),
    ``-(nu_m + 1) / 2``, ``kappa_m / (kappa_m + 1)`` and ``1 / kappa_m``.
    """
    pred_const = predictive_constants(n, d, params.kappa0, params.nu0)
    out = np.empty((n + 1, 4))
    for m in range(n + 1):
        kappa_m = params.kappa0 + m
        out[m, 0] = (params.power * math.log(m) if m > 0 else 0.0) + pred_const[m]
        out[m, 1] = -0.5 * (params.nu0 + m + 1.0)
        out[m, 2] = kappa_m / (kappa_m + 1.0)
        out[m, 3] = 1.0 / kappa_m
    return out


@numba.njit(**NJIT_KWARGS)
def sweep_tables(xc: np.ndarray, params: NIWParams) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Tables that depend only on the data and the parameters, for :func:`gibbs_sweeps`.

    Returns ``(log_new, pred_const, by_size)``: each point's ``log alpha + log
    prior predictive``, the size-dependent constants of the log predictive, and
    the per-size table of :func:`size_table`. A caller that sweeps the same
    data many times computes them once.
    """
    n, d = xc.shape
    return (
        _new_cluster_log_weights(xc, params),
        predictive_constants(n, d, params.kappa0, params.nu0),
        size_table(n, d, params),
    )


@numba.njit(**NJIT_KWARGS)
def sync_slot(state: SweepState, slot: int, by_size: np.ndarray, caches: tuple) -> None:
    """Refresh the cached per-slot quantities the sweep scores points with.

    ``caches`` is ``(mean, inv_diag, const, inv_eig)``, arrays with a row per
    slot: ``mean`` (posterior mean), ``inv_diag`` (inverse diagonal of the
    Cholesky factor ``L``), ``const`` (the size- and determinant-dependent part
    of the log weight) and, for ``D > 2``, ``inv_eig``, the eigenvalue bounds of
    :func:`sync_eigen_bounds`.
    """
    sync_moments(state, slot, by_size, caches)
    if caches[0].shape[1] > 2:
        sync_eigen_bounds(state, slot, caches[3])


@numba.njit(**NJIT_KWARGS)
def sync_moments(state: SweepState, slot: int, by_size: np.ndarray, caches: tuple) -> None:
    """Refresh ``mean``, ``inv_diag`` and ``const`` of a slot (see :func:`sync_slot`)."""
    mean, inv_diag, const, _ = caches
    n = state.counts[slot]
    inv_kappa = by_size[n, 3]
    for a in range(mean.shape[1]):
        mean[slot, a] = state.sums[slot, a] * inv_kappa
        inv_diag[slot, a] = 1.0 / state.chol[slot, a, a]
    const[slot] = by_size[n, 0] - 0.5 * state.logdet[slot]


@numba.njit(**NJIT_KWARGS)
def sync_eigen_bounds(state: SweepState, slot: int, inv_eig: np.ndarray) -> None:
    """Bounds on the eigenvalues of ``Psi_n = L L^T`` that bracket distances.

    They bracket the Mahalanobis distance by the Euclidean one,
    ``|x - mean|^2 * inv_eig[slot, 0] <= (x - mean)^T Psi_n^{-1} (x - mean)
    <= |x - mean|^2 * inv_eig[slot, 1]``:

    * ``inv_eig[slot, 0] = 1 / (||L||_1 ||L||_inf)``, because
      ``lambda_max = ||L||_2^2 <= ||L||_1 ||L||_inf``;
    * ``inv_eig[slot, 1] = 1 / g`` with ``g`` the Gershgorin lower bound
      ``min_a (Psi_aa - sum_{b != a} |Psi_ab|)`` on ``lambda_min``, or ``inf``
      when ``g <= 0`` (no bound).

    Both carry a relative margin of ``1e-9`` for rounding: the bounds must hold.
    This costs ``O(D^3)``; between exact refreshes the sweep keeps the bounds
    valid in ``O(D)`` per move with :func:`widen_eigen_bounds`.
    """
    chol = state.chol
    d = chol.shape[1]
    row_max = 0.0
    col_max = 0.0
    gersh = math.inf
    for a in range(d):
        row = 0.0
        col = 0.0
        for b in range(a + 1):
            row += abs(chol[slot, a, b])
        for b in range(a, d):
            col += abs(chol[slot, b, a])
        row_max = max(row_max, row)
        col_max = max(col_max, col)
        diag = 0.0
        off = 0.0
        for b in range(d):
            acc = 0.0
            for c in range(min(a, b) + 1):
                acc += chol[slot, a, c] * chol[slot, b, c]
            if b == a:
                diag = acc
            else:
                off += abs(acc)
        gersh = min(gersh, diag - off * (1.0 + 1e-9) - 1e-9 * diag)
    inv_eig[slot, 0] = 1.0 / (row_max * col_max * (1.0 + 1e-9))
    inv_eig[slot, 1] = 1.0 / gersh if gersh > 0.0 else math.inf


@numba.njit(**NJIT_KWARGS)
def widen_eigen_bounds(inv_eig: np.ndarray, slot: int, vv: float, sign: float) -> None:
    """Keep a slot's eigenvalue bounds valid after ``Psi -> Psi + sign v v^T``, ``|v|^2 = vv``.

    Adding ``v v^T`` cannot lower ``lambda_min`` and raises ``lambda_max`` by at
    most ``vv``; removing it cannot raise ``lambda_max`` and lowers
    ``lambda_min`` by at most ``vv`` (Weyl's inequalities). A relative margin of
    ``1e-12`` covers rounding.
    """
    if sign > 0.0:
        inv_eig[slot, 0] = 1.0 / ((1.0 / inv_eig[slot, 0] + vv) * (1.0 + 1e-12))
    else:
        low = (1.0 / inv_eig[slot, 1] - vv) * (1.0 - 1e-12)
        inv_eig[slot, 1] = 1.0 / low if low > 0.0 else math.inf


@numba.njit(inline="always", **NJIT_KWARGS)
def forward_norm2(
    chol: np.ndarray,
    slot: int,
    xc: np.ndarray,
    i: int,
    mean: np.ndarray,
    inv_diag: np.ndarray,
    y: np.ndarray,
) -> float:
    """``||L^{-1}(x_i - mean)||^2`` for the factor, mean and inverse diagonal of ``slot``.

    ``y`` is scratch space of length ``D`` (used when ``D > 2``; ``D = 1`` and
    ``D = 2`` are written out, with the same operations as the loop). numba
    inlines this into its callers (``inline="always"``): the Gibbs sweep scores
    every option with it, and a call that takes arrays would cost reference
    counting at every point (see the note in :mod:`~pymc_pcrp._kernels.sweep`).
    """
    d = xc.shape[1]
    if d == 1:
        t0 = (xc[i, 0] - mean[slot, 0]) * inv_diag[slot, 0]
        return t0 * t0
    if d == 2:
        t0 = (xc[i, 0] - mean[slot, 0]) * inv_diag[slot, 0]
        t1 = (xc[i, 1] - mean[slot, 1] - chol[slot, 1, 0] * t0) * inv_diag[slot, 1]
        return t0 * t0 + t1 * t1
    acc = 0.0
    for a in range(d):
        t = xc[i, a] - mean[slot, a]
        for b in range(a):
            t -= chol[slot, a, b] * y[b]
        t *= inv_diag[slot, a]
        y[a] = t
        acc += t * t
    return acc


# A partial distance is compared with its limit after every PARTIAL_ROWS rows of the
# triangular solve (forward_norm2_capped); data of at most that many dimensions never stop.
PARTIAL_ROWS = 4


@numba.njit(inline="always", **NJIT_KWARGS)
def forward_norm2_capped(
    chol: np.ndarray,
    slot: int,
    xc: np.ndarray,
    i: int,
    mean: np.ndarray,
    inv_diag: np.ndarray,
    y: np.ndarray,
    limit: float,
) -> float:
    """:func:`forward_norm2` that gives up once the distance is known to exceed ``limit``.

    The first ``j`` rows of the solve give ``sum_{a < j} y_a^2``, a lower bound on
    the squared norm (the rest adds non-negative terms, in floating point too).
    After every :data:`PARTIAL_ROWS` rows that partial sum is compared with
    ``limit``; when it is larger the solve stops and ``-1.0`` is returned.
    Otherwise the full squared norm is returned, computed by the same operations
    in the same order as :func:`forward_norm2`, bit for bit. The sweep uses it
    for ``D > PARTIAL_ROWS`` only (below that no solve can stop early). The loop
    is written out here and in :func:`forward_norm2` rather than shared, so that
    the common full solve carries no limit test.
    """
    d = xc.shape[1]
    acc = 0.0
    for a in range(d):
        t = xc[i, a] - mean[slot, a]
        for b in range(a):
            t -= chol[slot, a, b] * y[b]
        t *= inv_diag[slot, a]
        y[a] = t
        acc += t * t
        if a % PARTIAL_ROWS == PARTIAL_ROWS - 1 and a < d - 1 and acc > limit:
            return -1.0
    return acc


@numba.njit(**NJIT_KWARGS)
def distance_limit(const: float, e: float, bm: float, cut: float) -> float:
    """Return a squared distance beyond which :func:`log_weight_upper_bound` is below ``cut``.

    ``const + e L(t) < cut`` with ``e < 0``, ``t = u bm`` and ``L`` the bound of
    :func:`log1p_lower_bound` holds once ``L(t) > q = (const - cut) / (-e)``.
    ``L`` grows with ``t``, and inverting it piece by piece (``E`` from
    ``q / log 2``, then ``m = (2 + rem) / (2 - rem)``) gives the ``t`` where it
    reaches ``q``. The limit carries a relative margin of ``1e-9`` so that a
    distance beyond it passes the bound's own test despite rounding; ``0`` when
    ``q <= 0``, ``inf`` when no double is far enough.
    """
    q = (const - cut) / (-e)
    if q <= 0.0:
        return 0.0
    q = q / (1.0 - _LOG_SLACK)
    whole = math.floor(q / _LN2)
    if whole > 1000.0:
        return math.inf
    rem = q - whole * _LN2
    m = (2.0 + rem) / (2.0 - rem)
    y = math.ldexp(1.0, int(whole) + 1) if m >= 2.0 else math.ldexp(m, int(whole))
    return (y - 1.0) / bm * (1.0 + 1e-9)


@numba.njit(**NJIT_KWARGS)
def loo_log_weight(a: float, e: float, b: float, c: float, u: float) -> float:
    """Return the log weight of a point's own cluster with the point left out.

    ``a + e log(1 + b t) - log(shrink) / 2`` with ``shrink = 1 - c u`` and
    ``t = c^2 u / shrink``, where ``u`` is the point's distance to its cluster
    *with* it, ``c = kappa_n / kappa_{n-1}``, and ``a``, ``e``, ``b`` the
    constant, exponent and scale of a cluster of size ``n - 1`` (see
    :func:`gibbs_sweeps`). Needs ``shrink > 0``.
    """
    shrink = 1.0 - c * u
    return a - 0.5 * math.log(shrink) + e * math.log(1.0 + b * c * c * u / shrink)


@numba.njit(**NJIT_KWARGS)
def loo_lower_bound(a: float, e: float, b: float, c: float, u_lo: float, u_hi: float) -> float:
    """Bound :func:`loo_log_weight` from below for every ``u`` in ``[u_lo, u_hi]``, without logs.

    ``-log(shrink) / 2 >= (1 - shrink) / 2 = c u / 2 >= c u_lo / 2`` and, as
    ``e < 0`` and ``log(1 + s) <= s``, ``e log(1 + b t) >= e b t(u) >= e b t(u_hi)``
    (``t`` grows with ``u``). Needs ``c u_hi < 1``.
    """
    return a + 0.5 * c * u_lo + e * (b * c * c * u_hi / (1.0 - c * u_hi))


_LN2 = math.log(2.0)
# Relative slack of log1p_lower_bound for the rounding of its own arithmetic and of
# math.log (within an ulp or two): the bound must stay at or below the computed log.
_LOG_SLACK = 1e-12


@intrinsic
def _float_bits(typingctx, x):
    """Reinterpret a float64 as the int64 of its bits (an LLVM bitcast: no call, no memory)."""
    if x != types.float64:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], llvm_ir.IntType(64))

    return types.int64(types.float64), codegen


@intrinsic
def _bits_float(typingctx, bits):
    """Reinterpret the int64 ``bits`` as a float64 (the inverse of :func:`_float_bits`)."""
    if bits != types.int64:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], llvm_ir.DoubleType())

    return types.float64(types.int64), codegen


_MANTISSA = (1 << 52) - 1
_ONE_BITS = 1023 << 52  # the bits of 1.0


@numba.njit(inline="always", **NJIT_KWARGS)
def log1p_lower_bound(t: float) -> float:
    """Bound ``log(1 + t)`` from below for ``t >= 0``, within 0.026 nats, without a log.

    With ``1 + t = m 2^E``, ``m`` in ``[1, 2)`` (``E`` and ``m`` read off the
    float's bits), ``log(1 + t) = E log 2 + log m`` and
    ``log m >= 2 (m - 1) / (m + 1)`` for ``m >= 1`` (equality at ``m = 1``, short
    by ``log 2 - 2 / 3`` at ``m = 2``). Scaled down by a relative ``1e-12`` so
    that rounding cannot lift it above the computed logarithm.
    """
    y = 1.0 + t
    if not y < math.inf:
        return math.inf
    bits = _float_bits(y)  # y >= 1: a positive normal number
    ex = (bits >> 52) - 1023
    m = _bits_float((bits & _MANTISSA) | _ONE_BITS)
    return (ex * _LN2 + 2.0 * (m - 1.0) / (m + 1.0)) * (1.0 - _LOG_SLACK)


@numba.njit(**NJIT_KWARGS)
def log_weight_upper_bound(const: float, e: float, t: float) -> float:
    """Bound a cluster's log weight ``const + e log(1 + t)`` from above, without a log.

    ``e < 0``, so a lower bound on ``log(1 + t)`` (:func:`log1p_lower_bound`)
    gives an upper bound on the weight; a lower bound on ``t`` keeps it one,
    because the bound grows with ``t``.
    """
    return const + e * log1p_lower_bound(t)


@numba.njit(inline="always", **NJIT_KWARGS)
def below_cut(const: float, e: float, t: float, cut: float) -> bool:
    """Whether :func:`log_weight_upper_bound` of ``const``, ``e``, ``t`` is below ``cut``.

    Tries the cheaper bound ``log(1 + t) >= t / (1 + t)`` first: it is never above
    :func:`log1p_lower_bound` (tests/_kernels/test_sweep.py checks this), so when it
    already puts the weight below ``cut`` the tighter bound would too, and the answer
    is the same as with the tighter bound alone (the draws do not change). It
    decides most of the clearly far clusters at the cost of one division (trying it
    first made a plain sweep at D = 2 about a tenth faster).
    """
    if const + e * (t / (1.0 + t)) < cut:
        return True
    return const + e * log1p_lower_bound(t) < cut


# A cluster whose log weight is certainly this far below the largest one is not
# scored exactly (see gibbs_sweeps): its weight is below exp(-6) = 2.5e-3 of the top.
SKIP_NATS = 6.0


@numba.njit(**NJIT_KWARGS)
def sweep_workspace(n: int, skip_nats: float) -> tuple:
    """Scratch arrays of one point's draw among at most ``n + 1`` options, and the skip bound.

    Returns ``(logw, skipped, spare, spare2, skip_weight)``: a log weight per
    option, the indices of the skipped options (``int64``), two float arrays for
    what a sweep keeps per skipped option, all of length ``n + 1``, and
    ``exp(1e-9 - skip_nats)``, a bound on one skipped option's weight relative to
    the largest scored weight (which a sweep's reference is at most).
    """
    return (
        np.empty(n + 1),
        np.empty(n + 1, dtype=np.int64),
        np.empty(n + 1),
        np.empty(n + 1),
        math.exp(1e-9 - skip_nats),
    )


@numba.njit(inline="always", **NJIT_KWARGS)
def scored_weights(logw: np.ndarray, wts: np.ndarray, m: int, ref: float) -> tuple:
    """Weights of the scored options ``logw[:m]`` relative to the largest, into ``wts``.

    The largest is at least ``ref`` (a skipping sweep's reference); skipped options
    (``-inf``) get weight 0. Returns ``(top, total)``.
    """
    top = ref
    for p in range(m):
        if logw[p] > top:
            top = logw[p]
    total = 0.0
    for p in range(m):
        lw = logw[p]
        if lw == top:
            wts[p] = 1.0
        elif lw == -math.inf:
            wts[p] = 0.0
        else:
            wts[p] = math.exp(lw - top)
        total += wts[p]
    return top, total


@numba.njit(inline="always", **NJIT_KWARGS)
def skipped_stage(u: float, a: float, total: float, big: float) -> tuple:
    """Second stage of a skipping sweep's draw, once the skipped options are scored.

    ``u >= a = total / (total + bound)`` fell where the skipped options may matter;
    ``big`` is their exact total weight. Returns ``(in_scored, target)``: whether the
    scored group is chosen (probability ``g - a`` overall, ``g = total / (total +
    big)``) and the rescaled uniform that picks within the chosen group.
    """
    g = total / (total + big)
    if u < g:
        return True, (u - a) / (g - a) * total if g > a else 0.0
    return False, (u - g) / (1.0 - g) * big


@numba.njit(inline="always", **NJIT_KWARGS)
def pick_option(in_scored, target, wts, m, wsk, skipped, n_skip) -> int:
    """Return the option ``target`` falls on, among the scored ``wts[:m]`` or the skipped."""
    choice = -1
    acc = 0.0
    if in_scored:
        for p in range(m):
            if wts[p] > 0.0:
                acc += wts[p]
                choice = p
                if target < acc:
                    break
    else:
        for s_ in range(n_skip):
            if wsk[s_] > 0.0:
                acc += wsk[s_]
                choice = skipped[s_]
                if target < acc:
                    break
        if choice < 0:
            choice = skipped[n_skip - 1]
    return choice


@numba.njit(**NJIT_KWARGS)
def draw_with_skipped(
    rng_value: float,
    total: float,
    bound: float,
    top: float,
    weights: np.ndarray,
    k: int,
    skipped: np.ndarray,
    skipped_u: np.ndarray,
    n_skipped: int,
    log_new_i: float,
    xc: np.ndarray,
    i: int,
    state: SweepState,
    by_size: np.ndarray,
    mean: np.ndarray,
    inv_diag: np.ndarray,
    const: np.ndarray,
    y: np.ndarray,
    wsk: np.ndarray,
) -> int:
    """Finish an exact draw when the uniform falls where skipped clusters might matter.

    The caller has the weights ``weights[:k + 1]`` (relative to ``top``) of the
    clusters it scored, zeros at the ``n_skipped`` positions ``skipped`` whose
    weights it only bounded (their sum is at most ``bound``), and a uniform
    ``rng_value`` with ``rng_value >= a = total / (total + bound)``. The exact
    probability of the scored group is ``g = total / (total + B)`` with ``B``
    the skipped clusters' exact total, ``g >= a``. Given ``rng_value >= a``, the
    scored group is chosen when ``rng_value < g``, which has the right
    probability ``g - a`` overall, and the rescaled uniform picks a member of the
    chosen group; so together with the caller's branch the draw is exact.
    Skipped positions with ``skipped_u < 0`` have no distance yet (the
    Euclidean bound sufficed), and it is computed here; position ``k`` is the
    new cluster, of log weight ``log_new_i``. ``wsk`` is scratch space.
    """
    chol = state.chol
    big = 0.0
    for s in range(n_skipped):
        p = skipped[s]
        if p == k:
            lw = log_new_i
        else:
            slot = state.order[p]
            m = state.counts[slot]
            u = skipped_u[s]
            if u < 0.0:
                u = forward_norm2(chol, slot, xc, i, mean, inv_diag, y)
            lw = const[slot] + by_size[m, 1] * math.log(1.0 + u * by_size[m, 2])
        wsk[s] = math.exp(lw - top)
        big += wsk[s]
    a = total / (total + bound)
    g = total / (total + big)
    if rng_value < g:
        target = (rng_value - a) / (g - a) * total if g > a else 0.0
        acc = 0.0
        for j in range(k):
            acc += weights[j]
            if target < acc:
                return j
        return k
    target = (rng_value - g) / (1.0 - g) * big
    acc = 0.0
    for s in range(n_skipped - 1):
        acc += wsk[s]
        if target < acc:
            return skipped[s]
    return skipped[n_skipped - 1]
