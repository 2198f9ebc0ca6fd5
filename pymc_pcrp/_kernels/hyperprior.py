r"""The pCRP normaliser at one ``(alpha, r)`` in ``O(n^2)``, for a power that keeps changing.

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
"""

import math

import numba
import numpy as np

from pymc_pcrp._kernels._config import NJIT_KWARGS

__all__ = ["log_normaliser_recursion", "row_log_normaliser"]


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
        acc = 0.0
        for j in range(1, m + 1):
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
    acc = 0.0
    for k in range(k_built + 1):
        acc += math.exp(k * log_alpha + row[k] - top)
    certified = True
    for k in range(k_built + 1, bound.shape[0]):
        if k * log_alpha + bound[k] >= top - nats:
            certified = False
            break
    return top + math.log(acc), certified
