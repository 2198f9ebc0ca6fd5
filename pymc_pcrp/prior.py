r"""The pCRP prior on the number of clusters, and how to choose ``alpha``.

Under the pCRP prior on partitions of ``n`` items (docs/model.md),

.. math::

    p(z \mid \alpha, r) = \frac{\alpha^K \prod_{k=1}^K \Gamma(n_k)^r}{Z_n(\alpha, r)},

the number of clusters ``K`` has the exact distribution

.. math::

    p(K = k \mid n, \alpha, r) = \frac{\alpha^k S_r(n, k)}{Z_n(\alpha, r)},
    \qquad S_r(n, k) = \sum_{\text{partitions into } k \text{ blocks}} \prod_j \Gamma(n_j)^r .

For ``r = 1`` (the CRP) ``S_1(n, k) = |s(n, k)|`` are the unsigned Stirling
numbers of the first kind and ``E[K] = sum_{i=1}^n alpha / (alpha + i - 1)``.

This module computes that distribution and its mean and mode
(:func:`prior_num_clusters`, :func:`prior_mean_num_clusters`,
:func:`prior_mode_num_clusters`), inverts them to choose ``alpha``
(:func:`alpha_for_prior_k`, and the paper's :func:`crp_oracle_alpha`), and offers
the paper's sequential seating process (:func:`sequential_seating`), which is a
*different* distribution when ``r != 1``.
:func:`pymc_pcrp.plots.plot_prior_num_clusters` draws the distribution.

The generalised Stirling numbers do not depend on ``alpha``; they are computed
once per ``(n, r)`` and cached, so repeated calls with other values of ``alpha``
(root finding, plots, a sampler updating ``alpha``) are cheap. The number of
columns ``k`` is truncated with the certified rule of
:func:`pymc_pcrp._kernels.partitions.log_prior_k`: the omitted prior mass is below
``n * exp(-50)``.
"""

from __future__ import annotations

import math

import numba
import numpy as np
import scipy.optimize

from pymc_pcrp._kernels._config import NJIT_KWARGS
from pymc_pcrp._validation import check_positive_scalar
from pymc_pcrp.distributions.normaliser import log_prior_weights, prior_k_moments

__all__ = [
    "alpha_for_prior_k",
    "crp_oracle_alpha",
    "prior_mean_num_clusters",
    "prior_mode_num_clusters",
    "prior_num_clusters",
    "sequential_seating",
]


def check_n(n, name: str = "n") -> int:
    """Return ``n`` as an int, requiring a positive integer."""
    arr = np.asarray(n)
    if arr.ndim != 0 or not np.issubdtype(arr.dtype, np.number) or int(arr) != arr or arr < 1:
        raise ValueError(f"Argument '{name}' must be a positive integer, but got {n!r}.")
    return int(arr)


def _check_args(n, alpha, power) -> tuple[int, float, float]:
    """Return ``n``, ``alpha`` and ``power`` checked: an integer ``n >= 1``, positive scalars."""
    return check_n(n), check_positive_scalar(alpha, "alpha"), check_positive_scalar(power, "power")


def _pmf(n: int, alpha: float, power: float) -> np.ndarray:
    """Prior on ``K`` for ``k = 0..k_max`` (certified truncation), normalised in linear space.

    Normalising after the exponential makes the entries sum to one to rounding,
    even at large ``n`` where the log weights are large numbers whose rounding
    (``~1e-11`` relative at ``n = 5000``) is inherited by each probability.
    """
    log_w = log_prior_weights(n, alpha, power)
    w = np.exp(log_w - np.max(log_w))
    return w / math.fsum(w)


def prior_num_clusters(n: int, alpha: float, power: float, k_max: int | None = None) -> np.ndarray:
    r"""Exact prior distribution of the number of clusters ``K`` under the pCRP.

    .. math::

        p(K = k \mid n, \alpha, r) = \frac{\alpha^k S_r(n, k)}{Z_n(\alpha, r)}

    Parameters
    ----------
    n : int
        Number of items, ``n >= 1``.
    alpha : float
        Concentration, ``alpha > 0``.
    power : float
        Power ``r > 0``; ``1`` gives the CRP.
    k_max : int, optional
        Length of the result minus one. By default the result has length
        ``n + 1`` (every possible ``K``). A smaller ``k_max`` cuts the array: the
        entries are still the unconditional probabilities, so they sum to
        ``P(K <= k_max)``.

    Returns
    -------
    numpy.ndarray
        Array ``p`` with ``p[k] = P(K = k)``; ``p[0] = 0``. Values of ``k`` beyond
        the certified truncation (omitted mass below ``n * exp(-50)``) are 0.

    Notes
    -----
    Computed in log space from the generalised Stirling numbers, which are
    cached per ``(n, power)``; the first call for a given ``(n, power)`` costs
    ``O(n**2)`` per column of the Stirling table that is needed (about a second
    per ten columns at ``n = 5000``), later calls with other ``alpha`` reuse them.

    Examples
    --------
    >>> import numpy as np
    >>> from pymc_pcrp.prior import prior_num_clusters
    >>> np.round(prior_num_clusters(3, 1.0, 1.0), 4)  # CRP: 2/6, 3/6, 1/6
    array([0.    , 0.3333, 0.5   , 0.1667])
    """
    n, alpha, power = _check_args(n, alpha, power)
    length = n + 1
    if k_max is not None:
        if int(k_max) != k_max or k_max < 0:
            raise ValueError(f"Argument 'k_max' must be a non-negative integer, got {k_max!r}.")
        length = int(k_max) + 1
    pmf = _pmf(n, alpha, power)
    out = np.zeros(length)
    m = min(length, pmf.size)
    out[:m] = pmf[:m]
    return out


def prior_mean_num_clusters(n: int, alpha: float, power: float) -> float:
    """Exact prior mean of the number of clusters, ``E[K | n, alpha, r]``.

    Parameters as in :func:`prior_num_clusters` (``n >= 1``, ``alpha > 0``, ``power > 0``).

    Returns
    -------
    float
        The mean; for ``power = 1`` it equals
        ``sum_{i=1}^n alpha / (alpha + i - 1)``.
    """
    n, alpha, power = _check_args(n, alpha, power)
    return prior_k_moments(n, alpha, power)[0]


def prior_mode_num_clusters(n: int, alpha: float, power: float) -> int:
    """Most probable number of clusters under the pCRP prior.

    Parameters as in :func:`prior_num_clusters` (``n >= 1``, ``alpha > 0``, ``power > 0``).

    Returns
    -------
    int
        ``argmax_k P(K = k)`` (the smallest such ``k`` on a tie). For ``power > 1``
        the prior on ``K`` can be bimodal; this is the higher mode.
    """
    n, alpha, power = _check_args(n, alpha, power)
    return int(np.argmax(log_prior_weights(n, alpha, power)))


def _alpha_for_mean(n: int, power: float, mean: float) -> float:
    """Root of ``E[K](alpha) = mean`` in ``log(alpha)`` (the mean increases with alpha)."""
    if not (1.0 < mean < n):
        raise ValueError(
            f"Argument 'mean' must lie strictly between 1 and n = {n} (the limits of E[K] as "
            f"alpha -> 0 and alpha -> infinity), but got {mean!r}."
        )

    def gap(log_alpha: float) -> float:
        return prior_k_moments(n, math.exp(log_alpha), power)[0] - mean

    # E[K] is strictly increasing in log(alpha) (its derivative is Var[K]): bracket
    # the root by steps of one in log(alpha) from alpha = 1, so that no alpha much
    # larger than the answer (which could need many more Stirling columns) is tried.
    lo = hi = 0.0
    if gap(0.0) < 0:
        while gap(hi) < 0:
            lo, hi = hi, hi + 1.0
            if hi > 700:
                raise ValueError(f"No finite alpha gives a prior mean of {mean} clusters.")
    else:
        while gap(lo) > 0:
            hi, lo = lo, lo - 1.0
            if lo < -700:
                raise ValueError(f"No positive alpha gives a prior mean of {mean} clusters.")
    return math.exp(scipy.optimize.brentq(gap, lo, hi, xtol=1e-13, rtol=1e-13))


def _alpha_for_mode(n: int, power: float, mode: int) -> float:
    """Geometric midpoint of the ``alpha`` interval on which the prior mode of ``K`` is ``mode``.

    The mode maximises ``k log(alpha) + log S_r(n, k)``; ``mode`` is the maximiser
    exactly for ``log(alpha)`` between ``max_{j < mode} (s_j - s_mode) / (mode - j)``
    and ``min_{j > mode} (s_mode - s_j) / (j - mode)`` (``s_k = log S_r(n, k)``).
    """
    if int(mode) != mode or not 1 <= mode <= n:
        raise ValueError(f"Argument 'mode' must be an integer in 1..n = {n}, but got {mode!r}.")
    mode = int(mode)

    def log_stirling(log_alpha: float) -> np.ndarray:
        # Certify the columns for alpha = exp(log_alpha), then read every column
        # built so far (at alpha = 1 the weights are exactly log S_r(n, k)).
        log_prior_weights(n, math.exp(log_alpha), power)
        return log_prior_weights(n, 1.0, power)

    # Columns up to one past ``mode``: raise alpha by factors of e until they exist.
    need = min(mode + 2, n + 1)
    t = 0.0
    s = log_stirling(t)
    while s.size < need:
        t += 1.0
        s = log_stirling(t)
    lo = -math.inf
    if mode > 1:
        j = np.arange(1, mode)
        lo = float(np.max((s[1:mode] - s[mode]) / (mode - j)))
    hi = math.inf
    while mode < n:
        j = np.arange(mode + 1, s.size)
        hi = float(np.min((s[mode] - s[mode + 1 :]) / (j - mode)))
        # Columns certified at alpha = exp(hi) contain every k that could beat
        # ``mode`` there; if new ones appear, the upper end is recomputed.
        s_new = log_stirling(min(hi, 700.0))
        if s_new.size == s.size:
            break
        s = s_new
    if not lo < hi:
        raise ValueError(
            f"No alpha gives a prior mode of {mode} clusters at n = {n}, power = {power}: the "
            "prior on K jumps over that value (it is bimodal for power > 1). Choose another "
            "mode, or target the mean instead."
        )
    if math.isinf(lo) and math.isinf(hi):  # n = 1: every alpha has mode 1
        return 1.0
    if math.isinf(lo):
        return math.exp(hi) / 2.0
    if math.isinf(hi):
        return math.exp(lo) * 2.0
    return math.exp(0.5 * (lo + hi))


def alpha_for_prior_k(
    n: int, power: float, *, mean: float | None = None, mode: int | None = None
) -> float:
    """Concentration ``alpha`` that gives a chosen prior mean or mode of ``K``.

    Give exactly one of ``mean`` and ``mode``.

    Parameters
    ----------
    n : int
        Number of items, ``n >= 1``.
    power : float
        Power ``r > 0``.
    mean : float, optional
        Target prior mean of ``K``, strictly between 1 and ``n``. The prior mean
        increases strictly with ``alpha`` (its derivative in ``log(alpha)`` is
        ``Var[K]``), so the answer is unique; it is found by Brent's method on
        ``log(alpha)``. It is also the ``alpha`` that maximises ``P(K = mean)``
        when ``mean`` is an integer.
    mode : int, optional
        Target prior mode of ``K``, in ``1..n``. The mode is a step function of
        ``alpha``; the result is the geometric midpoint of the interval of
        ``alpha`` with that mode (for ``mode = 1`` or ``mode = n``, whose interval
        is unbounded, a factor 2 inside its finite end).

    Returns
    -------
    float
        The concentration.

    Raises
    ------
    ValueError
        If neither or both targets are given, the target is out of range, or no
        ``alpha`` has the requested mode (for ``power > 1`` the prior on ``K`` can
        jump over some values).

    Examples
    --------
    >>> from pymc_pcrp.prior import alpha_for_prior_k, prior_mean_num_clusters
    >>> alpha = alpha_for_prior_k(300, 1.0, mean=3.0)
    >>> round(prior_mean_num_clusters(300, alpha, 1.0), 6)
    3.0
    """
    n = check_n(n)
    power = check_positive_scalar(power, "power")
    if (mean is None) == (mode is None):
        raise ValueError("Give exactly one of the arguments 'mean' and 'mode'.")
    if mean is not None:
        return _alpha_for_mean(n, power, float(mean))
    return _alpha_for_mode(n, power, mode)


def crp_oracle_alpha(k_true: int, n: int) -> float:
    """Return the paper's CRP-Oracle concentration, ``alpha = K_true / log(n)``.

    Lu, Li & Dunson (2018) give the CRP an "unfair advantage" by matching the
    approximate prior mean ``alpha log(n)`` to the true number of clusters.

    Parameters
    ----------
    k_true : int
        True number of clusters, ``>= 1``.
    n : int
        Number of items, ``n >= 2``.

    Returns
    -------
    float
        ``k_true / log(n)``.

    Notes
    -----
    This reproduces, within 0.01, every value the paper quotes: 0.52 and 0.40
    for three clusters at ``n = 300`` and 2000, 0.58 and 0.50 for four at 1000
    and 3000, 0.39 for two at 172. (Rounded to two decimals the formula gives
    0.53 and 0.39 in the first two cases.) The exact CRP prior mean at this
    ``alpha`` is larger than ``k_true``; :func:`alpha_for_prior_k` matches it
    exactly.

    Examples
    --------
    >>> from pymc_pcrp.prior import crp_oracle_alpha
    >>> round(crp_oracle_alpha(4, 1000), 2)
    0.58
    """
    k_true = check_n(k_true, "k_true")
    n = check_n(n)
    if n < 2:
        raise ValueError(f"Argument 'n' must be at least 2 (log(1) = 0), but got {n}.")
    return k_true / math.log(n)


@numba.njit(**NJIT_KWARGS)
def _sequential_seating(
    rng: np.random.Generator, n: int, alpha: float, power: float, size: int
) -> np.ndarray:
    """Numba kernel of :func:`sequential_seating`: ``size`` label vectors of length ``n``."""
    out = np.empty((size, n), dtype=np.int64)
    counts = np.zeros(n, dtype=np.int64)
    weights = np.zeros(n)
    for s in range(size):
        k = 0
        for i in range(n):
            total = 0.0
            for j in range(k):
                total += weights[j]
            u = rng.random() * (total + alpha)
            choice = k
            acc = 0.0
            for j in range(k):
                acc += weights[j]
                if u < acc:
                    choice = j
                    break
            if choice == k:
                counts[k] = 0
                k += 1
            counts[choice] += 1
            weights[choice] = counts[choice] ** power
            out[s, i] = choice
    return out


def sequential_seating(
    rng: int | np.random.Generator | None,
    n: int,
    alpha: float,
    power: float,
    size: int | None = None,
) -> np.ndarray:
    """Seat customers one at a time with the paper's pCRP rule (an illustration).

    Customer ``i`` joins occupied table ``k`` with probability proportional to
    ``n_k**power`` (``n_k`` customers already there) and opens a new table with
    probability proportional to ``alpha``.

    .. warning::

       For ``power != 1`` this is **not** the distribution the library targets.
       The sequential process depends on the arrival order and is not
       exchangeable; the pCRP prior of :class:`~pymc_pcrp.PowerCRP` (and the
       stationary distribution of :class:`~pymc_pcrp.PCRPGibbs`) is the
       exchangeable distribution whose full conditionals are the same rule,
       ``alpha**K prod_k Gamma(n_k)**power / Z_n``. Use ``pm.draw`` or
       ``pm.sample_prior_predictive`` for prior draws, and this function only to
       show what the paper's definition does. For ``power = 1`` the two coincide
       (the CRP).

    Parameters
    ----------
    rng : int, numpy.random.Generator or None
        Seed or generator (passed to :func:`numpy.random.default_rng`).
    n : int
        Number of customers, ``n >= 1``.
    alpha : float
        Concentration, ``alpha > 0``.
    power : float
        Power ``r > 0``.
    size : int, optional
        Number of independent seatings; by default one.

    Returns
    -------
    numpy.ndarray
        ``int64`` label vector(s) of shape ``(n,)``, or ``(size, n)`` when
        ``size`` is given; tables are numbered in order of opening, so each row
        is in canonical form.

    Examples
    --------
    >>> from pymc_pcrp.prior import sequential_seating
    >>> sequential_seating(0, 8, 1.0, 1.5).shape
    (8,)
    """
    rng = np.random.default_rng(rng)
    n, alpha, power = _check_args(n, alpha, power)
    count = 1
    if size is not None:
        if int(size) != size or size < 0:
            raise ValueError(f"Argument 'size' must be a non-negative integer, got {size!r}.")
        count = int(size)
    draws = _sequential_seating(rng, n, alpha, power, count)
    return draws[0] if size is None else draws
