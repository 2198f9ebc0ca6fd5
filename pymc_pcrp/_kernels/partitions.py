"""Exact combinatorics of the powered Chinese restaurant process prior.

The pCRP prior targeted by the collapsed Gibbs sampler is the joint
distribution on set partitions of ``n`` items into ``K`` blocks of sizes
``n_1, ..., n_K``::

    p(z) = alpha**K * prod_k Gamma(n_k)**r / Z_n(alpha, r),

whose full conditionals are the paper's prediction rule (weight ``n_k**r`` for an
occupied block, ``alpha`` for a new one). Everything here is computed from the
generalised Stirling numbers ``S_r(m, k)``, the sum over all partitions of ``m``
labelled items into ``k`` blocks of ``prod_j Gamma(n_j)**r``, which are
obtained in log space by conditioning on the size ``j`` of the block that holds
one distinguished item:
``S_r(m, k) = sum_j C(m-1, j-1) Gamma(j)**r S_r(m-j, k-1)`` with ``S_r(0, 0) = 1``.
For ``r = 1`` these are the unsigned Stirling numbers of the first kind.

The module provides

* :func:`log_stirling_r_table`: the table ``log S_r(m, k)``;
* :func:`log_prior_k`: the exact prior on the number of blocks (the only
  ``log Z_n(alpha, r)`` is :func:`pymc_pcrp.distributions.normaliser.log_normaliser`,
  which caches the Stirling row and uses the same certified truncation,
  :func:`log_stirling_bounds` and :func:`truncation_certified`);
* :func:`table_and_log_weights`: the table and the log weights of ``K`` behind
  the exact prior draws of :mod:`pymc_pcrp._kernels.prior_draws`;
* :func:`canonical_labels`: relabelling of blocks in order of first appearance.

Note that the *sequential* seating process of the paper (customers arriving one
after another and choosing a table with probabilities proportional to
``n_k**r`` and ``alpha``) is a different distribution when ``r != 1``: its law
depends on the arrival order and it is not the stationary distribution of the
Gibbs sampler. Nothing in this module samples from it.

Truncation in the number of blocks
----------------------------------
Computing every column ``k = 0..n`` of the table costs ``O(n**3)``. When no
``k_max`` is given, :func:`log_prior_k` (and the functions built on it) add
columns ``k = 1, 2, ...`` one at a time (``O(n**2)`` each) and stop at the first
``k`` such that a rigorous upper bound on every later log weight
``k' log(alpha) + log S_r(n, k')``, ``k' > k``, lies more than 50 nats below the
largest weight computed so far (or at ``k = n``). Every omitted weight is then
below ``exp(-50)`` times the largest one, so the omitted prior mass is below
``n * exp(-50)`` relative to the total, whatever the shape of the weights.

The bounds follow from ``1 <= prod_j Gamma(n_j) <= Gamma(n - k + 1)`` for any
partition into ``k`` blocks, and from the convexity of ``r -> log S_r(n, k)``:

* ``r >= 1``: ``S_r(n, k) <= |s(n, k)| Gamma(n - k + 1)**(r - 1)``;
* ``0 <= r <= 1``: ``S_r(n, k) <= min(|s(n, k)|, S(n, k) Gamma(n - k + 1)**r,
  S(n, k)**(1 - r) |s(n, k)|**r)``;
* ``r < 0``: ``S_r(n, k) <= S(n, k)``,

where ``|s(n, k)|`` and ``S(n, k)`` are the Stirling numbers of the first
(unsigned) and second kinds, whose last rows cost ``O(n**2)`` once.

A bound is needed because the weights need not be unimodal in ``k``: for
``r > 1`` the generalised Stirling numbers are not log-concave in ``k``, and with
a large ``alpha`` the prior on ``K`` can have one mode at ``K = 1`` and another
at large ``K`` (already for ``n = 3``, ``r = 5``, ``alpha = 5`` the weights are
160, 75 and 125). A rule that stops once the weights decrease far below their
maximum would then drop a whole mode. For ``r <= 1`` the weights were
log-concave, hence unimodal, in every case checked numerically.
"""

import math

import numba
import numpy as np

from pymc_pcrp._kernels._config import NJIT_KWARGS

__all__ = [
    "canonical_labels",
    "check_prior_args",
    "log_gamma_table",
    "log_prior_k",
    "log_stirling_bounds",
    "log_stirling_r_table",
    "normalise_log",
    "table_and_log_weights",
    "truncation_certified",
]

#: Margin (nats) below the largest weight that certifies the omitted tail in K.
TRUNCATION_NATS = 50.0


@numba.njit(**NJIT_KWARGS)
def log_gamma_table(n: int) -> np.ndarray:
    """Return ``lgam`` with ``lgam[i] = log Gamma(i)`` for ``1 <= i <= n + 1``.

    Parameters
    ----------
    n : int
        Largest number of items.

    Returns
    -------
    numpy.ndarray
        Array of length ``n + 2``; entry 0 is ``+inf`` and never used.
    """
    lgam = np.empty(n + 2)
    lgam[0] = np.inf
    for i in range(1, n + 2):
        lgam[i] = math.lgamma(i)
    return lgam


@numba.njit(**NJIT_KWARGS)
def log_stirling_next_column(
    prev: np.ndarray, k: int, r: float, lgam: np.ndarray, out: np.ndarray
) -> None:
    """Fill ``out[m] = log S_r(m, k)`` for all ``m`` from column ``k - 1``.

    Parameters
    ----------
    prev : numpy.ndarray
        ``log S_r(m, k - 1)`` for ``m = 0..n``.
    k : int
        Column to compute, ``k >= 1``.
    r : float
        Power of the pCRP.
    lgam : numpy.ndarray
        Output of :func:`_log_gamma_table` for at least ``n`` items.
    out : numpy.ndarray
        Array of length ``n + 1`` that receives the column.
    """
    n = prev.shape[0] - 1
    terms = np.empty(n + 1)
    for m in range(n + 1):
        out[m] = -np.inf
    for m in range(k, n + 1):
        # Block holding the distinguished item has size j = 1..m-k+1; the other
        # m - j items form k - 1 blocks.
        n_terms = m - k + 1
        top = -np.inf
        for j in range(1, n_terms + 1):
            t = prev[m - j] + (r - 1.0) * lgam[j] - lgam[m - j + 1]
            terms[j] = t
            if t > top:
                top = t
        if top == -np.inf:
            continue
        acc = 0.0
        for j in range(1, n_terms + 1):
            acc += math.exp(terms[j] - top)
        out[m] = lgam[m] + top + math.log(acc)


@numba.njit(**NJIT_KWARGS)
def log_stirling_r_table(n: int, r: float, k_max: int) -> np.ndarray:
    """Tabulate the logarithm of the generalised Stirling numbers ``S_r(m, k)``.

    ``S_r(m, k)`` is the sum, over all partitions of ``m`` labelled items into
    ``k`` non-empty blocks, of ``prod_j Gamma(n_j)**r`` (``n_j`` the block sizes).

    Parameters
    ----------
    n : int
        Largest number of items, ``n >= 0``.
    r : float
        Power of the pCRP.
    k_max : int
        Largest number of blocks, ``k_max >= 0``. Columns ``k > n`` are all
        ``-inf``.

    Returns
    -------
    numpy.ndarray
        Array of shape ``(n + 1, k_max + 1)`` whose entry ``[m, k]`` is
        ``log S_r(m, k)``, and ``-inf`` where ``S_r(m, k) = 0`` (``k > m``, or
        ``k = 0 < m``).

    Notes
    -----
    Uses the recursion on the size of the block holding one distinguished item,
    with a max-shifted log-sum-exp for every entry; the cost is
    ``O(n**2 * k_max)`` operations and ``O(n * k_max)`` memory.
    """
    if n < 0:
        raise ValueError("n must be non-negative")
    if k_max < 0:
        raise ValueError("k_max must be non-negative")
    lgam = log_gamma_table(n)
    # Built column by column in a transposed, row-contiguous buffer.
    cols = np.full((k_max + 1, n + 1), -np.inf)
    cols[0, 0] = 0.0
    for k in range(1, min(k_max, n) + 1):
        log_stirling_next_column(cols[k - 1], k, r, lgam, cols[k])
    table = np.empty((n + 1, k_max + 1))
    for m in range(n + 1):
        for k in range(k_max + 1):
            table[m, k] = cols[k, m]
    return table


@numba.njit(**NJIT_KWARGS)
def log_add(a: float, b: float) -> float:
    """Return ``log(exp(a) + exp(b))`` without overflow.

    Parameters
    ----------
    a, b : float
        Log values, possibly ``-inf``.

    Returns
    -------
    float
        The log of the sum.
    """
    if a == -np.inf:
        return b
    if b == -np.inf:
        return a
    if a > b:
        return a + math.log1p(math.exp(b - a))
    return b + math.log1p(math.exp(a - b))


@numba.njit(**NJIT_KWARGS)
def log_stirling_rows(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Last rows of the classical Stirling triangles, in log space.

    Parameters
    ----------
    n : int
        Number of items.

    Returns
    -------
    first : numpy.ndarray
        ``log |s(n, k)|`` (unsigned, first kind) for ``k = 0..n``.
    second : numpy.ndarray
        ``log S(n, k)`` (second kind) for ``k = 0..n``.

    Notes
    -----
    Rolls ``|s(m+1, k)| = m |s(m, k)| + |s(m, k-1)|`` and
    ``S(m+1, k) = k S(m, k) + S(m, k-1)`` over ``m``, in ``O(n**2)``.
    """
    first = np.full(n + 1, -np.inf)
    second = np.full(n + 1, -np.inf)
    first[0] = 0.0
    second[0] = 0.0
    for m in range(n):
        log_m = math.log(m) if m > 0 else -np.inf
        for k in range(m + 1, 0, -1):
            first[k] = log_add(log_m + first[k], first[k - 1])
            second[k] = log_add(math.log(k) + second[k], second[k - 1])
        first[0] = -np.inf
        second[0] = -np.inf
    return first, second


@numba.njit(**NJIT_KWARGS)
def log_stirling_bounds(n: int, r: float) -> np.ndarray:
    """Upper bounds ``b[k] >= log S_r(n, k)`` for ``k = 0..n``, independent of ``alpha``.

    The bounds are those listed in the module docstring; ``b[0]`` is ``log
    S_r(n, 0)`` itself (``0`` for ``n = 0``, else ``-inf``).
    """
    first, second = log_stirling_rows(n)
    bound = np.empty(n + 1)
    bound[0] = 0.0 if n == 0 else -np.inf
    for k in range(1, n + 1):
        log_gamma_big = math.lgamma(n - k + 1)
        if r >= 1.0:
            bound[k] = first[k] + (r - 1.0) * log_gamma_big
        elif r >= 0.0:
            bound[k] = min(
                first[k],
                second[k] + r * log_gamma_big,
                (1.0 - r) * second[k] + r * first[k],
            )
        else:
            bound[k] = second[k]
    return bound


def truncation_certified(k_built: int, log_alpha: float, best: float, bound: np.ndarray) -> bool:
    """Whether the columns ``0..k_built`` of the Stirling table are enough.

    True when every later log weight ``k log(alpha) + log S_r(n, k)``,
    ``k > k_built``, is certified (by ``bound``, :func:`log_stirling_bounds`)
    more than :data:`TRUNCATION_NATS` below ``best``, the largest weight so far,
    or when no column is left.
    """
    n = bound.shape[0] - 1
    if k_built >= n:
        return True
    later = np.arange(k_built + 1, n + 1) * log_alpha + bound[k_built + 1 :]
    return bool(np.max(later) < best - TRUNCATION_NATS)


def check_prior_args(n: int, alpha: float, r: float) -> tuple[int, float, float]:
    """Validate and convert ``(n, alpha, r)`` for the prior functions.

    Used here and by :mod:`pymc_pcrp.distributions.normaliser`.

    Parameters
    ----------
    n, alpha, r : int, float, float
        Number of items, concentration parameter and power of the pCRP.

    Returns
    -------
    tuple of (int, float, float)
        The converted ``(n, alpha, r)``.
    """
    if int(n) != n or n < 0:
        raise ValueError(f"n must be a non-negative integer, got {n!r}")
    alpha = float(alpha)
    r = float(r)
    if not (math.isfinite(alpha) and alpha > 0.0):
        raise ValueError(f"alpha must be positive and finite, got {alpha!r}")
    if not math.isfinite(r):
        raise ValueError(f"r must be finite, got {r!r}")
    return int(n), alpha, r


def table_and_log_weights(
    n: int, alpha: float, r: float, k_max: int = -1
) -> tuple[np.ndarray, np.ndarray]:
    """Build the Stirling table and the unnormalised log prior on ``K``.

    Parameters
    ----------
    n, alpha, r : int, float, float
        Number of items, concentration parameter and power of the pCRP.
    k_max : int, default -1
        Number of columns to compute; a negative value selects it adaptively
        with the certified truncation described in the module docstring.

    Returns
    -------
    table : numpy.ndarray
        ``log S_r(m, k)``, shape ``(n + 1, k_max + 1)``.
    log_w : numpy.ndarray
        ``k log(alpha) + log S_r(n, k)`` for ``k = 0..k_max``.
    """
    n, alpha, r = check_prior_args(n, alpha, r)
    log_alpha = math.log(alpha)
    if k_max >= 0:
        table = log_stirling_r_table(n, r, int(k_max))
    elif n == 0:
        table = np.zeros((1, 1))
    else:
        lgam = log_gamma_table(n)
        bound = log_stirling_bounds(n, r)
        columns = [np.full(n + 1, -np.inf)]
        columns[0][0] = 0.0
        best = -np.inf
        for k in range(1, n + 1):
            column = np.empty(n + 1)
            log_stirling_next_column(columns[-1], k, r, lgam, column)
            columns.append(column)
            best = max(best, k * log_alpha + column[n])
            if truncation_certified(k, log_alpha, best, bound):
                break
        table = np.ascontiguousarray(np.stack(columns, axis=1))
    k = np.arange(table.shape[1])
    log_w = k * log_alpha + table[n]
    return table, log_w


def normalise_log(log_w: np.ndarray) -> np.ndarray:
    """Subtract the log-sum-exp of ``log_w`` from every entry.

    Parameters
    ----------
    log_w : numpy.ndarray
        Unnormalised log weights, at least one finite.

    Returns
    -------
    numpy.ndarray
        Log probabilities.
    """
    top = np.max(log_w)
    return log_w - (top + np.log(np.sum(np.exp(log_w - top))))


def log_prior_k(n: int, alpha: float, r: float, k_max: int = -1) -> np.ndarray:
    """Log prior probability of the number of blocks under the pCRP.

    Parameters
    ----------
    n : int
        Number of items, ``n >= 0``.
    alpha : float
        Concentration parameter, ``alpha > 0``.
    r : float
        Power of the pCRP.
    k_max : int, default -1
        Largest number of blocks to report. A negative value selects it
        adaptively: columns are added until an upper bound on all later log
        weights is more than 50 nats below the largest weight so far, or
        ``k = n`` (see the module docstring for the bound and the guarantee).
        When ``0 <= k_max < n`` the result is the prior conditioned on
        ``K <= k_max``; it is exact when ``k_max >= n``.

    Returns
    -------
    numpy.ndarray
        Array of length ``k_max + 1`` (the chosen ``k_max`` when adaptive) whose
        entry ``k`` is ``log p(K = k | n, alpha, r) = k log(alpha)
        + log S_r(n, k) - log Z_n(alpha, r)``; entry 0 is ``-inf`` unless
        ``n = 0``.

    Examples
    --------
    >>> import numpy as np
    >>> from pymc_pcrp._kernels.partitions import log_prior_k
    >>> p = np.exp(log_prior_k(3, 1.0, 1.0))
    >>> np.round(p, 4)  # CRP with alpha = 1: 2/6, 3/6, 1/6
    array([0.    , 0.3333, 0.5   , 0.1667])
    """
    if k_max >= 0 and n > 0 and k_max == 0:
        raise ValueError("k_max must be at least 1 when n > 0")
    _, log_w = table_and_log_weights(n, alpha, r, k_max)
    return normalise_log(log_w)


@numba.njit(**NJIT_KWARGS)
def canonical_labels(z: np.ndarray) -> np.ndarray:
    """Relabel blocks ``0, 1, 2, ...`` in order of first appearance.

    Parameters
    ----------
    z : numpy.ndarray
        One-dimensional array of non-negative integer labels.

    Returns
    -------
    numpy.ndarray
        ``int64`` array of the same length describing the same partition, in
        which the first item has label 0 and each new block gets the next
        unused integer. For example ``[3, 3, 1, 3, 0]`` becomes
        ``[0, 0, 1, 0, 2]``.
    """
    n = z.shape[0]
    out = np.empty(n, dtype=np.int64)
    if n == 0:
        return out
    largest = 0
    for i in range(n):
        if z[i] < 0:
            raise ValueError("labels must be non-negative")
        if z[i] > largest:
            largest = z[i]
    mapping = np.full(largest + 1, -1, dtype=np.int64)
    next_label = 0
    for i in range(n):
        old = z[i]
        if mapping[old] < 0:
            mapping[old] = next_label
            next_label += 1
        out[i] = mapping[old]
    return out


@numba.njit(**NJIT_KWARGS)
def count_distinct(z: np.ndarray) -> int:
    """Count the distinct values of a one-dimensional integer array.

    Labels in ``0..4n`` (every label vector the package makes) are counted with
    a table of flags; anything else falls back to sorting.
    """
    n = z.shape[0]
    if n == 0:
        return 0
    low = z[0]
    high = z[0]
    for i in range(n):
        if z[i] < low:
            low = z[i]
        if z[i] > high:
            high = z[i]
    if low >= 0 and high <= 4 * n:
        seen = np.zeros(high + 1, dtype=np.bool_)
        count = 0
        for i in range(n):
            if not seen[z[i]]:
                seen[z[i]] = True
                count += 1
        return count
    srt = np.sort(z)
    count = 1
    for i in range(1, n):
        if srt[i] != srt[i - 1]:
            count += 1
    return count
