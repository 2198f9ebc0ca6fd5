r"""Kernels of the pCRP normaliser ``log Z_n(alpha, r)`` for the hyper-parameter updates.

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

**From a Stirling row** (:func:`row_log_normaliser`): a log-sum-exp over a row built
by :mod:`pymc_pcrp.distributions.normaliser`, with the truncation re-certified for each
``alpha``. The public, memoised functions are in :mod:`pymc_pcrp.distributions.normaliser`.
"""

import math

import numba
import numpy as np

from pymc_pcrp._kernels._config import NJIT_KWARGS

# Terms of the recursion this far below the largest are skipped (see the recursion).
SKIP_NATS = 60.0

__all__ = ["SKIP_NATS", "log_normaliser_recursion", "normaliser_recursion", "row_log_normaliser"]


@numba.njit(**NJIT_KWARGS)
def normaliser_recursion(n: int, log_alpha: float, r: float, moments: bool) -> tuple:
    r"""``log Z_n(alpha, r)`` by the recursion of the module docstring, and its derivatives.

    Differentiating the recursion term by term gives the prior means of the two
    statistics the pCRP weights depend on, ``K`` and ``T = sum_k log Gamma(n_k)``:
    with ``p_{m,j}`` the share of term ``j`` in ``Z_m`` (the prior probability that
    the last of ``m`` items sits in a block of size ``j``),

    .. math::

        E_m[K] = \sum_j p_{m,j} (1 + E_{m-j}[K]), \qquad
        E_m[T] = \sum_j p_{m,j} (\log\Gamma(j) + E_{m-j}[T]),

    and ``d log Z_n / d log(alpha) = E_n[K]``, ``d log Z_n / d r = E_n[T]``.

    Parameters
    ----------
    n : int
        Number of items, ``n >= 0``.
    log_alpha : float
        Finite log concentration.
    r : float
        Finite power.
    moments : bool
        Whether to compute ``E[K]`` and ``E[T]`` as well (about a third more work);
        when ``False`` both are returned as ``nan``.

    Returns
    -------
    log_z, mean_k, mean_t : float
        ``log Z_n``, ``E[K]`` and ``E[T]`` under the pCRP prior of ``n`` items.
    """
    # lgam[i] = log Gamma(i) for i = 1..n+1
    lgam = np.empty(n + 2)
    lgam[0] = math.inf
    for i in range(1, n + 2):
        lgam[i] = math.lgamma(i)
    log_z = np.empty(n + 1)
    log_z[0] = 0.0
    mean_k = np.zeros(n + 1)
    mean_t = np.zeros(n + 1)
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
        acc_k = 0.0
        acc_t = 0.0
        for j in range(1, m + 1):
            if terms[j] > floor:
                w = math.exp(terms[j] - top)
                acc += w
                if moments:
                    acc_k += w * (1.0 + mean_k[m - j])
                    acc_t += w * (lgam[j] + mean_t[m - j])
        log_z[m] = log_alpha + lgam[m] + top + math.log(acc)
        if moments:
            mean_k[m] = acc_k / acc
            mean_t[m] = acc_t / acc
    if not moments:
        return log_z[n], math.nan, math.nan
    return log_z[n], mean_k[n], mean_t[n]


@numba.njit(**NJIT_KWARGS)
def log_normaliser_recursion(n: int, log_alpha: float, r: float) -> float:
    """``log Z_n(alpha, r)`` alone: :func:`normaliser_recursion` without the moments.

    Parameters as in :func:`normaliser_recursion`; returns the log normalising constant.
    """
    return normaliser_recursion(n, log_alpha, r, False)[0]


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
