r"""Kernels of the hyper-parameter update: ``log Z_n`` at any ``(alpha, r)`` and a slice sampler.

**The normaliser at one ``(alpha, r)`` in ``O(n^2)``**, for a power that keeps changing.

Conditioning on the block that holds the last item (of size ``j``, chosen among
the other ``m - 1`` items in ``C(m - 1, j - 1)`` ways) gives a recursion on the
normaliser itself,

.. math::

    Z_0 = 1, \qquad
    Z_m(\alpha, r) = \alpha \sum_{j=1}^{m} \binom{m-1}{j-1} \Gamma(j)^r Z_{m-j}(\alpha, r),

which costs ``O(n^2)`` for one pair ``(alpha, r)`` and needs no truncation. The
Stirling rows of :mod:`pymc_pcrp.distributions.normaliser` cost
``O(n^2 k_max)`` per ``r`` but then give any ``alpha`` in ``O(k_max)``: they are
the right tool when ``r`` is fixed and ``alpha`` varies, this recursion when
``r`` varies (a new ``r`` at every evaluation of a slice sampler).

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

# Terms of the recursion this far below the largest are skipped (see the recursion).
SKIP_NATS = 60.0

__all__ = [
    "IDENTITY",
    "INTERVAL",
    "LOG",
    "LOWER",
    "alpha_proposal",
    "backward",
    "interpolate",
    "label_statistics",
    "log_normaliser_recursion",
    "pcrp_log_conditional",
    "row_log_normaliser",
    "slice_given_blocks",
    "slice_surrogate",
]


@numba.njit(**NJIT_KWARGS)
def log_normaliser_recursion(n: int, log_alpha: float, r: float) -> float:
    """``log Z_n(alpha, r)`` by the recursion of the module docstring.

    Parameters
    ----------
    n : int
        Number of items, ``n >= 0``.
    log_alpha : float
        Finite log concentration.
    r : float
        Finite power.

    Returns
    -------
    float
        The log normalising constant.
    """
    # lgam[i] = log Gamma(i) for i = 1..n+1
    lgam = np.empty(n + 2)
    lgam[0] = math.inf
    for i in range(1, n + 2):
        lgam[i] = math.lgamma(i)
    log_z = np.empty(n + 1)
    log_z[0] = 0.0
    terms = np.empty(n + 1)
    for m in range(1, n + 1):
        # term j: log C(m-1, j-1) + r log Gamma(j) + log Z_{m-j}
        #       = lgam[m] + (r - 1) lgam[j] - lgam[m - j + 1] + log_z[m - j]
        top = -math.inf
        for j in range(1, m + 1):
            t = (r - 1.0) * lgam[j] - lgam[m - j + 1] + log_z[m - j]
            terms[j] = t
            if t > top:
                top = t
        # Terms more than SKIP_NATS below the largest are left out: together they
        # weigh less than m * exp(-SKIP_NATS) of the sum (relative error < 1e-15 for
        # m < 10^7), and skipping their exp() is most of the speed of the loop.
        floor = top - SKIP_NATS
        acc = 0.0
        for j in range(1, m + 1):
            if terms[j] > floor:
                acc += math.exp(terms[j] - top)
        log_z[m] = log_alpha + lgam[m] + top + math.log(acc)
    return log_z[n]


@numba.njit(**NJIT_KWARGS)
def row_log_normaliser(
    row: np.ndarray, bound: np.ndarray, log_alpha: float, nats: float
) -> tuple[float, bool]:
    """``log sum_k exp(k log(alpha) + row[k])`` and whether the truncated row suffices.

    ``row`` holds ``log S_r(n, k)`` for ``k = 0..k_built``, ``bound`` upper
    bounds of ``log S_r(n, k)`` for ``k = 0..n``. The result is certified when
    every omitted weight ``k log(alpha) + bound[k]``, ``k > k_built``, lies
    more than ``nats`` below the largest computed weight (the rule of
    :func:`~pymc_pcrp._kernels.partitions.truncation_certified`, without its
    temporary arrays: this is the inner loop of a slice sampler over ``alpha``).
    """
    k_built = row.shape[0] - 1
    top = -math.inf
    for k in range(k_built + 1):
        w = k * log_alpha + row[k]
        if w > top:
            top = w
    # weights more than SKIP_NATS below the largest are left out of the sum (their
    # total is below (k_built + 1) exp(-SKIP_NATS) of it): a row grown for a large
    # alpha then costs one exp() per weight that matters, not per column
    floor = top - SKIP_NATS
    acc = 0.0
    for k in range(k_built + 1):
        w = k * log_alpha + row[k]
        if w > floor:
            acc += math.exp(w - top)
    certified = True
    for k in range(k_built + 1, bound.shape[0]):
        if k * log_alpha + bound[k] >= top - nats:
            certified = False
            break
    return top + math.log(acc), certified


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
    if not use_row:
        log_z = log_normaliser_recursion(n, log_alpha, r)
    else:
        log_z, ok = row_log_normaliser(row, bound, log_alpha, nats)
        if not ok:
            log_z = log_normaliser_recursion(n, log_alpha, r)
            if log_alpha > missed[0]:
                missed[0] = log_alpha
    return n_blocks * log_alpha + r * log_gamma_sum - log_z


@numba.njit(**NJIT_KWARGS)
def _surrogate(
    u: float,
    code: int,
    lower: float,
    upper: float,
    q_lo: float,
    q_step: float,
    q_values: np.ndarray,
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
    value = backward(code, u, lower, upper)
    h = pcrp_log_conditional(
        value, is_power, use_row, other, n_blocks, log_gamma_sum, n, row, bound, nats, missed
    )
    return h + interpolate(u, q_lo, q_step, q_values)


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


# Layout of the float and integer parameter arrays of slice_surrogate.
F_U0, F_W, F_LOWER, F_UPPER, F_Q_LO, F_Q_STEP, F_OTHER, F_NATS = range(8)
I_MAX_STEPS, I_MAX_SHRINKS, I_CODE, I_IS_POWER, I_N, I_USE_ROW = range(6)
# Layout of slice_surrogate's output array: the first four entries are always
# written; the rest when the array is long enough (OUT_SIZE).
O_U1, O_Q1, O_Q0, O_WIDTH, O_H0, O_H1, O_K, O_T, O_EVALS = range(9)
OUT_SIZE = 9


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
    q(u0), width of the final interval]`` into ``out`` (and more, see
    :func:`slice_given_blocks`) and returns the number of evaluations, or ``-1``
    when shrinkage found no point in ``max_shrinks`` tries.
    """
    n_blocks, log_gamma_sum = label_statistics(labels)
    return slice_given_blocks(
        rng, fpar, ipar, n_blocks, log_gamma_sum, q_values, row, bound, missed, out
    )


@numba.njit(**NJIT_KWARGS)
def slice_given_blocks(
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
) -> int:
    """:func:`slice_surrogate` given ``K`` and ``T = sum_k log Gamma(n_k)`` instead of labels.

    When ``out`` has :data:`OUT_SIZE` entries it also receives the pCRP term
    ``h = K log(alpha) + r T - log Z_n`` at ``u0`` and at ``u1`` (``O_H0``,
    ``O_H1``), ``K``, ``T`` and the number of evaluations (``O_EVALS``), from
    which the caller gets ``log Z_n`` at either value without computing it again.
    """
    u0, w = fpar[F_U0], fpar[F_W]
    lower, upper, q_lo, q_step = fpar[F_LOWER], fpar[F_UPPER], fpar[F_Q_LO], fpar[F_Q_STEP]
    other, nats = fpar[F_OTHER], fpar[F_NATS]
    max_steps, max_shrinks, code = ipar[I_MAX_STEPS], ipar[I_MAX_SHRINKS], ipar[I_CODE]
    is_power, n, use_row = ipar[I_IS_POWER] != 0, ipar[I_N], ipar[I_USE_ROW] != 0
    args = (code, lower, upper, q_lo, q_step, q_values, is_power, use_row, other)
    stats = (n_blocks, log_gamma_sum, n, row, bound, nats, missed)
    full = out.shape[0] >= OUT_SIZE
    if full:
        out[O_K] = n_blocks
        out[O_T] = log_gamma_sum
        out[O_EVALS] = -1.0
    f0 = _surrogate(u0, *args, *stats)
    q0 = interpolate(u0, q_lo, q_step, q_values)
    if full:
        out[O_H0] = f0 - q0
    y = f0 - rng.standard_exponential()
    left = u0 - w * rng.random()
    right = left + w
    j = int(max_steps * rng.random())
    k = max_steps - 1 - j
    evals = 1
    while j > 0:
        evals += 1
        if not y < _surrogate(left, *args, *stats):
            break
        left -= w
        j -= 1
    while k > 0:
        evals += 1
        if not y < _surrogate(right, *args, *stats):
            break
        right += w
        k -= 1
    for _ in range(max_shrinks):
        u1 = left + (right - left) * rng.random()
        evals += 1
        f1 = _surrogate(u1, *args, *stats)
        if y < f1:
            q1 = interpolate(u1, q_lo, q_step, q_values)
            out[O_U1] = u1
            out[O_Q1] = q1
            out[O_Q0] = q0
            out[O_WIDTH] = right - left
            if full:
                out[O_H1] = f1 - q1
                out[O_EVALS] = evals
            return evals
        if u1 < u0:
            left = u1
        else:
            right = u1
    return -1


@numba.njit(**NJIT_KWARGS)
def alpha_proposal(rng: np.random.Generator, state, alpha_args) -> None:
    """Propose a new ``alpha`` given the sweep state's partition, for :class:`PCRPGibbs`.

    ``alpha_args`` is ``(fpar, ipar, q_values, row, bound, missed, out)`` of
    :func:`slice_given_blocks`; ``K`` and ``T`` come from the state's occupied
    slots in ``O(K)``. This is the step's slice move on the surrogate target;
    the step accepts or rejects its result with the exact prior term (see
    :class:`~pymc_pcrp.PCRPHyper`), and rewrites its sweep tables if accepted.
    """
    fpar, ipar, q_values, row, bound, missed, out = alpha_args
    n_blocks = state.k[0]
    log_gamma_sum = 0.0
    for p in range(n_blocks):
        log_gamma_sum += math.lgamma(state.counts[state.order[p]])
    slice_given_blocks(rng, fpar, ipar, n_blocks, log_gamma_sum, q_values, row, bound, missed, out)
