r"""Kernels of the hyper-parameter update: the slice sampler of ``alpha`` and ``r``.

``log Z_n(alpha, r)`` comes from :mod:`pymc_pcrp._kernels.normaliser` (a recursion for
a power that keeps changing, or a Stirling row for a fixed one).

**The slice sampler** (:func:`slice_surrogate`) updates the unconstrained value
``u`` of ``alpha`` or ``r`` given the labels, on the pCRP term
``K log(alpha) + r T - log Z_n(alpha, r)`` plus a tabulated, piecewise-linear
surrogate of the prior term; :class:`~pymc_pcrp.PCRPHyper` turns it into an
exact update with a Metropolis-Hastings correction by the exact prior term.
"""

import math

import numba
import numpy as np

from pymc_pcrp._kernels._config import NJIT_KWARGS
from pymc_pcrp._kernels.normaliser import log_normaliser_recursion, row_log_normaliser

__all__ = [
    "IDENTITY",
    "INTERVAL",
    "LOG",
    "LOWER",
    "alpha_proposal",
    "backward",
    "exact_log_z",
    "interpolate",
    "label_statistics",
    "log_jacobian",
    "pcrp_log_conditional",
    "prior_log_density",
    "prior_term",
    "shift_new_cluster_weights",
    "slice_surrogate",
    "table_log_z",
]


# Transforms of the unconstrained value u (PyMC's default transforms of a scalar).
IDENTITY = 0  # no transform: the parameter is u
LOG = 1  # LogTransform: exp(u)
INTERVAL = 2  # IntervalTransform, both bounds finite: sigmoid(u) * upper + (1 - sigmoid(u)) * lower
LOWER = 3  # IntervalTransform, lower bound only: exp(u) + lower


@numba.njit(**NJIT_KWARGS)
def backward(code: int, u: float, lower: float, upper: float) -> float:
    """Return the parameter value of the unconstrained value ``u`` (see the transform codes)."""
    if code == LOG:
        return math.exp(u)
    if code == INTERVAL:
        if u >= 0.0:
            s = 1.0 / (1.0 + math.exp(-u))
        else:
            e = math.exp(u)
            s = e / (1.0 + e)
        return s * upper + (1.0 - s) * lower
    if code == LOWER:
        return math.exp(u) + lower
    return u


@numba.njit(**NJIT_KWARGS)
def interpolate(u: float, lo: float, step: float, values: np.ndarray) -> float:
    """Piecewise-linear interpolation of ``values`` on ``lo + step * j``, linear beyond the ends."""
    last = values.shape[0] - 1
    pos = (u - lo) / step
    j = math.floor(pos)
    if j < 0:
        j = 0
    elif j > last - 1:
        j = last - 1
    frac = pos - j
    return values[j] + frac * (values[j + 1] - values[j])


@numba.njit(**NJIT_KWARGS)
def pcrp_log_conditional(
    value: float,
    is_power: bool,
    use_row: bool,
    other: float,
    n_blocks: int,
    log_gamma_sum: float,
    n: int,
    row: np.ndarray,
    bound: np.ndarray,
    nats: float,
    missed: np.ndarray,
) -> float:
    """``K log(alpha) + r T - log Z_n(alpha, r)`` with ``value`` as alpha (or r) and ``other``.

    ``log Z`` comes from the Stirling row of the (fixed) power when ``use_row``
    and the row certifies it, else from the recursion (exact either way);
    ``missed[0]`` is raised to the largest ``log(alpha)`` the row could not
    certify. ``use_row`` must be false when the power varies (the row is that of
    one power).
    """
    if is_power:
        alpha, r = other, value
    else:
        alpha, r = value, other
    if not (alpha > 0.0 and r > 0.0 and math.isfinite(alpha) and math.isfinite(r)):
        return -math.inf
    log_alpha = math.log(alpha)
    log_z = exact_log_z(log_alpha, (n, r, use_row, row, bound, nats, missed))
    return n_blocks * log_alpha + r * log_gamma_sum - log_z


@numba.njit(**NJIT_KWARGS)
def exact_log_z(log_alpha: float, exact: tuple) -> float:
    """``log Z_n(alpha, r)``: the Stirling row's when ``use_row`` and it certifies, else recursion.

    ``exact`` is ``(n, r, use_row, row, bound, nats, missed)`` (the row and its
    bounds as in :func:`~pymc_pcrp._kernels.normaliser.row_log_normaliser`);
    ``missed[0]`` is raised to the largest ``log(alpha)`` the row could not certify.
    """
    n, r, use_row, row, bound, nats, missed = exact
    if not use_row:
        return log_normaliser_recursion(n, log_alpha, r)
    log_z, ok = row_log_normaliser(row, bound, log_alpha, nats)
    if not ok:
        log_z = log_normaliser_recursion(n, log_alpha, r)
        if log_alpha > missed[0]:
            missed[0] = log_alpha
    return log_z


@numba.njit(**NJIT_KWARGS)
def _surrogate(u: float, args: tuple, stats: tuple) -> float:
    """Return the slice sampler's target at ``u``: pCRP term plus the tabulated prior term.

    ``args`` is ``(code, lower, upper, q_lo, q_step, q_values, is_power,
    use_row, other)`` and ``stats`` is ``(n_blocks, log_gamma_sum, n, row,
    bound, nats, missed, z_table)`` (see :func:`_slice`).
    """
    code, lower, upper, q_lo, q_step, q_values, is_power, use_row, other = args
    n_blocks, log_gamma_sum, n, row, bound, nats, missed, z_table = stats
    value = backward(code, u, lower, upper)
    if z_table[0].shape[0] == 0:
        h = pcrp_log_conditional(
            value, is_power, use_row, other, n_blocks, log_gamma_sum, n, row, bound, nats, missed
        )
    else:  # alpha, with log Z from the table (see alpha_proposal)
        if not (value > 0.0 and math.isfinite(value)):
            return -math.inf
        exact = (n, other, use_row, row, bound, nats, missed)
        log_z = table_log_z(u, (code, lower, upper), (q_lo, q_step, z_table), exact)
        h = n_blocks * math.log(value) - log_z
    return h + interpolate(u, q_lo, q_step, q_values)


@numba.njit(**NJIT_KWARGS)
def _node_log_z(j: int, transform: tuple, grid: tuple, nats: float) -> float:
    """Node ``j`` of the table ``grid = (lo, step, z_table)``, computed on first use.

    The value is the sum over the table's own Stirling row ``row`` (a copy, fixed
    while the table is in use): ``log Z_n`` where that row certifies it, a lower
    bound of it beyond (the nodes far out in the tails, which the slice's
    stepping out visits and which the exact sum would need many more columns
    or the ``O(n^2)`` recursion for); ``inf`` where alpha is not positive.
    ``transform`` and ``grid`` are as in :func:`table_log_z`.
    """
    code, lower, upper = transform
    lo, step, z_table = grid
    values, row, bound = z_table
    if math.isnan(values[j]):
        alpha = backward(code, lo + j * step, lower, upper)
        if alpha > 0.0 and math.isfinite(alpha):
            values[j] = row_log_normaliser(row, bound, math.log(alpha), nats)[0]
        else:
            values[j] = math.inf
    return values[j]


@numba.njit(**NJIT_KWARGS)
def table_log_z(u: float, transform: tuple, grid: tuple, exact: tuple) -> float:
    """Approximate ``log Z_n(alpha(u), r)``, linearly in ``u`` between nodes ``lo + step j``.

    ``alpha(u)`` is ``backward(code, u, lower, upper)`` with ``transform =
    (code, lower, upper)``, and ``grid`` is ``(lo, step, z_table)``.
    ``z_table = (values, row, bound)``: ``values`` holds the nodes, ``nan``
    until first used (:func:`_node_log_z`, from the table's own fixed copy of
    the Stirling row), so that the result is a fixed function of ``u`` however
    the table fills. Off the grid, or next to a node outside the support, it is
    ``log Z_n`` itself (``exact`` as in :func:`exact_log_z`). ``alpha(u)`` must
    be positive.
    """
    code, lower, upper = transform
    lo, step, z_table = grid
    pos = (u - lo) / step
    j = math.floor(pos)
    if 0 <= j < z_table[0].shape[0] - 1:
        nats = exact[5]
        a = _node_log_z(j, transform, grid, nats)
        b = _node_log_z(j + 1, transform, grid, nats)
        if math.isfinite(a) and math.isfinite(b):
            return a + (pos - j) * (b - a)
    alpha = backward(code, u, lower, upper)
    return exact_log_z(math.log(alpha), exact)


@numba.njit(**NJIT_KWARGS)
def label_statistics(labels: np.ndarray) -> tuple[int, float]:
    """Return ``K`` and ``T = sum_k log Gamma(n_k)`` of non-negative integer labels."""
    top = 0
    for i in range(labels.shape[0]):
        if labels[i] > top:
            top = labels[i]
    counts = np.zeros(top + 1, dtype=np.int64)
    for i in range(labels.shape[0]):
        counts[labels[i]] += 1
    n_blocks = 0
    total = 0.0
    for c in counts:
        if c > 0:
            n_blocks += 1
            total += math.lgamma(c)
    return n_blocks, total


# Layout of the float and integer parameter arrays of slice_surrogate (from F_LOG_Z0
# and I_FAMILY on: alpha_proposal only).
F_U0, F_W, F_LOWER, F_UPPER, F_Q_LO, F_Q_STEP, F_OTHER, F_NATS, F_LOG_Z0, F_P0, F_P1 = range(11)
I_MAX_STEPS, I_MAX_SHRINKS, I_CODE, I_IS_POWER, I_N, I_USE_ROW, I_FAMILY = range(7)
# Layout of alpha_proposal's output array (the first four are slice_surrogate's).
O_U1, O_Q1, O_Q0, O_WIDTH, O_EVALS, O_K, O_T, O_TABLE0, O_TABLE1, O_LOG_Z0, O_LOG_Z1 = range(11)
O_ACCEPT, O_G0, O_G1, O_ALPHA1 = range(11, 15)
OUT_SIZE = 15

# Prior families whose log density alpha_proposal evaluates itself (parameters as
# PyTensor's random variables take them); UNKNOWN leaves the test to the caller.
UNKNOWN, GAMMA, EXPONENTIAL, HALF_NORMAL, LOG_NORMAL, HALF_CAUCHY, INV_GAMMA, UNIFORM = range(-1, 7)
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


@numba.njit(**NJIT_KWARGS)
def prior_log_density(family: int, x: float, p0: float, p1: float) -> float:
    """Log density of a known prior family at ``x`` (``-inf`` off its support).

    ``GAMMA`` (shape, scale), ``EXPONENTIAL`` (scale), ``HALF_NORMAL`` (loc,
    scale), ``LOG_NORMAL`` (mean, sigma of the log), ``HALF_CAUCHY`` (scale),
    ``INV_GAMMA`` (shape, scale), ``UNIFORM`` (lower, upper).
    """
    if family == UNIFORM:
        return -math.log(p1 - p0) if p0 <= x <= p1 else -math.inf
    if family == HALF_NORMAL:
        if x < p0:
            return -math.inf
        z = (x - p0) / p1
        return math.log(2.0) - _HALF_LOG_2PI - math.log(p1) - 0.5 * z * z
    if not x > 0.0:
        return -math.inf
    if family == GAMMA:
        return (p0 - 1.0) * math.log(x) - x / p1 - math.lgamma(p0) - p0 * math.log(p1)
    if family == EXPONENTIAL:
        return -math.log(p0) - x / p0
    if family == LOG_NORMAL:
        z = (math.log(x) - p0) / p1
        return -math.log(x) - math.log(p1) - _HALF_LOG_2PI - 0.5 * z * z
    if family == HALF_CAUCHY:
        z = x / p0
        return math.log(2.0 / math.pi) - math.log(p0) - math.log1p(z * z)
    if family == INV_GAMMA:
        return p0 * math.log(p1) - math.lgamma(p0) - (p0 + 1.0) * math.log(x) - p1 / x
    return math.nan


@numba.njit(**NJIT_KWARGS)
def log_jacobian(code: int, u: float, lower: float, upper: float) -> float:
    """``log |d backward(u) / du|`` of a transform code."""
    if code == LOG or code == LOWER:
        return u
    if code == INTERVAL:
        # log((upper - lower) sigmoid(u) (1 - sigmoid(u)))
        au = abs(u)
        return math.log(upper - lower) - au - 2.0 * math.log1p(math.exp(-au))
    return 0.0


@numba.njit(**NJIT_KWARGS)
def prior_term(u: float, family: int, p0: float, p1: float, code: int, lower, upper) -> float:
    """Return the prior term of the unconstrained value ``u``: log density plus log Jacobian."""
    x = backward(code, u, lower, upper)
    return prior_log_density(family, x, p0, p1) + log_jacobian(code, u, lower, upper)


@numba.njit(**NJIT_KWARGS)
def slice_surrogate(
    rng: np.random.Generator,
    fpar: np.ndarray,
    ipar: np.ndarray,
    labels: np.ndarray,
    q_values: np.ndarray,
    row: np.ndarray,
    bound: np.ndarray,
    missed: np.ndarray,
    out: np.ndarray,
) -> int:
    """One slice-sampling update (Neal 2003, stepping out and shrinkage) of ``u``.

    The target is the pCRP term (:func:`pcrp_log_conditional`) plus the
    tabulated surrogate ``q`` of the prior term (:func:`interpolate`), given the
    ``labels`` (through :func:`label_statistics`). The scalars come packed in
    ``fpar`` and ``ipar`` (indices ``F_*`` and ``I_*``: few arguments keep
    numba's per-call dispatch cheap). Writes ``[u1, q(u1),
    q(u0), width of the final interval]`` into ``out`` and returns the number of
    evaluations, or ``-1`` when shrinkage found no point in ``max_shrinks`` tries.
    """
    n_blocks, log_gamma_sum = label_statistics(labels)
    no_table = (np.empty(0), np.empty(0), np.empty(0))
    return _slice(
        rng, fpar, ipar, n_blocks, log_gamma_sum, q_values, row, bound, missed, out, no_table
    )


@numba.njit(**NJIT_KWARGS)
def _slice(
    rng: np.random.Generator,
    fpar: np.ndarray,
    ipar: np.ndarray,
    n_blocks: int,
    log_gamma_sum: float,
    q_values: np.ndarray,
    row: np.ndarray,
    bound: np.ndarray,
    missed: np.ndarray,
    out: np.ndarray,
    z_table: tuple,
) -> int:
    """:func:`slice_surrogate` given ``K`` and ``T``; ``log Z`` from ``z_table`` unless empty."""
    u0, w = fpar[F_U0], fpar[F_W]
    lower, upper, q_lo, q_step = fpar[F_LOWER], fpar[F_UPPER], fpar[F_Q_LO], fpar[F_Q_STEP]
    other, nats = fpar[F_OTHER], fpar[F_NATS]
    max_steps, max_shrinks, code = ipar[I_MAX_STEPS], ipar[I_MAX_SHRINKS], ipar[I_CODE]
    is_power, n, use_row = ipar[I_IS_POWER] != 0, ipar[I_N], ipar[I_USE_ROW] != 0
    args = (code, lower, upper, q_lo, q_step, q_values, is_power, use_row, other)
    stats = (n_blocks, log_gamma_sum, n, row, bound, nats, missed, z_table)
    f0 = _surrogate(u0, args, stats)
    y = f0 - rng.standard_exponential()
    left = u0 - w * rng.random()
    right = left + w
    j = int(max_steps * rng.random())
    k = max_steps - 1 - j
    evals = 1
    while j > 0:
        evals += 1
        if not y < _surrogate(left, args, stats):
            break
        left -= w
        j -= 1
    while k > 0:
        evals += 1
        if not y < _surrogate(right, args, stats):
            break
        right += w
        k -= 1
    for _ in range(max_shrinks):
        u1 = left + (right - left) * rng.random()
        evals += 1
        if y < _surrogate(u1, args, stats):
            out[O_U1] = u1
            out[O_Q1] = interpolate(u1, q_lo, q_step, q_values)
            out[O_Q0] = interpolate(u0, q_lo, q_step, q_values)
            out[O_WIDTH] = right - left
            return evals
        if u1 < u0:
            left = u1
        else:
            right = u1
    return -1


@numba.njit(**NJIT_KWARGS)
def alpha_proposal(rng: np.random.Generator, state, log_new: np.ndarray, alpha_args: tuple) -> None:
    """Propose a new ``alpha`` given a sweep state's partition (for :class:`PCRPGibbs`).

    One slice update of ``u`` on the surrogate target ``K log(alpha) - L(u) +
    q(u)``: ``q`` the tabulated prior term (as in :func:`slice_surrogate`) and
    ``L`` a piecewise-linear approximation of ``log Z_n(alpha(u), r)``
    (:func:`table_log_z`; ``r`` fixed), so that an evaluation costs no sum over
    the Stirling row. ``K`` and ``T = sum_k log Gamma(n_k)`` come from the
    state's occupied slots in ``O(K)``.

    ``alpha_args`` is ``(fpar, ipar, q_values, z_table, row, bound, missed,
    out, log_alpha)`` (``z_table`` as in :func:`table_log_z`);
    ``fpar[F_LOG_Z0]`` is the exact ``log Z_n`` at ``u0``, or ``nan``;
    ``log_alpha[0]`` the ``log(alpha)`` that the new-cluster weights ``log_new``
    (the sweep's first table) hold. Writes into ``out`` (indices ``O_*``) the
    proposal, the number of evaluations (``-1``: shrinkage failed), ``K``,
    ``T``, ``L`` and the exact ``log Z_n`` at ``u0`` and ``u1``: ``u1`` is to
    be accepted with probability
    ``exp((g - q)(u1) - (g - q)(u0) - (log Z - L)(u1) + (log Z - L)(u0))``,
    ``g`` the exact prior term, which makes the move exact. For a known prior
    family (``ipar[I_FAMILY]``, parameters ``fpar[F_P0]`` and ``fpar[F_P1]``)
    the test is made here (:func:`prior_term`): ``out[O_ACCEPT]`` is then 1 or
    0, with ``g`` at both values and ``alpha(u1)``, and on acceptance
    ``log_new`` is shifted to the new ``alpha`` (``log_alpha[0]`` with it);
    otherwise ``out[O_ACCEPT]`` is -1 and the caller makes the test.
    """
    fpar, ipar, q_values, z_table, row, bound, missed, out, log_alpha = alpha_args
    n_blocks = state.k[0]
    log_gamma_sum = 0.0
    for p in range(n_blocks):
        log_gamma_sum += math.lgamma(state.counts[state.order[p]])
    out[O_K] = n_blocks
    out[O_T] = log_gamma_sum
    evals = _slice(
        rng, fpar, ipar, n_blocks, log_gamma_sum, q_values, row, bound, missed, out, z_table
    )
    out[O_EVALS] = evals
    out[O_ACCEPT] = -1.0
    if evals < 0:
        return
    code, n, use_row = ipar[I_CODE], ipar[I_N], ipar[I_USE_ROW] != 0
    lower, upper, lo, step = fpar[F_LOWER], fpar[F_UPPER], fpar[F_Q_LO], fpar[F_Q_STEP]
    r, nats = fpar[F_OTHER], fpar[F_NATS]
    exact = (n, r, use_row, row, bound, nats, missed)
    transform, grid = (code, lower, upper), (lo, step, z_table)
    u0, u1 = fpar[F_U0], out[O_U1]
    out[O_TABLE0] = table_log_z(u0, transform, grid, exact)
    out[O_TABLE1] = table_log_z(u1, transform, grid, exact)
    log_z0 = fpar[F_LOG_Z0]
    if math.isnan(log_z0):
        log_z0 = exact_log_z(math.log(backward(code, u0, lower, upper)), exact)
    out[O_LOG_Z0] = log_z0
    alpha1 = backward(code, u1, lower, upper)
    out[O_ALPHA1] = alpha1
    out[O_LOG_Z1] = exact_log_z(math.log(alpha1), exact)
    family = ipar[I_FAMILY]
    if family == UNKNOWN:
        return
    g0 = prior_term(u0, family, fpar[F_P0], fpar[F_P1], code, lower, upper)
    g1 = prior_term(u1, family, fpar[F_P0], fpar[F_P1], code, lower, upper)
    out[O_G0] = g0
    out[O_G1] = g1
    log_ratio = (
        (g1 - out[O_Q1])
        - (g0 - out[O_Q0])
        - (out[O_LOG_Z1] - out[O_TABLE1])
        + (log_z0 - out[O_TABLE0])
    )
    accept = log_ratio >= 0.0 or rng.random() < math.exp(log_ratio)
    out[O_ACCEPT] = 1.0 if accept else 0.0
    if accept:
        shift_new_cluster_weights(log_new, log_alpha, math.log(alpha1))


@numba.njit(**NJIT_KWARGS)
def shift_new_cluster_weights(log_new: np.ndarray, log_alpha: np.ndarray, new: float) -> None:
    """Add ``new - log_alpha[0]`` to every new-cluster weight; set ``log_alpha[0] = new``."""
    delta = new - log_alpha[0]
    for i in range(log_new.shape[0]):
        log_new[i] += delta
    log_alpha[0] = new
