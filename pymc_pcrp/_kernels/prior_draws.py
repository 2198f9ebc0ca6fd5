"""Exact draws of partitions from the pCRP prior.

The prior ``p(z) = alpha**K prod_k Gamma(n_k)**r / Z_n(alpha, r)`` is sampled
without any Markov chain: ``K`` is drawn from its exact distribution
(:func:`pymc_pcrp._kernels.partitions.log_prior_k`), then the blocks are built
one at a time from the generalised Stirling table, see :func:`sample_partitions`.
These draws seed chains (``init="prior"``) and are ``PowerCRP``'s forward sampler.
"""

import math

import numba
import numpy as np

from pymc_pcrp._kernels._config import NJIT_KWARGS
from pymc_pcrp._kernels.partitions import (
    canonical_labels,
    log_gamma_table,
    normalise_log,
    table_and_log_weights,
)

__all__ = ["sample_partition", "sample_partitions", "sample_partitions_from_table"]


@numba.njit(**NJIT_KWARGS)
def _draw_index(rng: np.random.Generator, weights: np.ndarray, count: int) -> int:
    """Draw an index ``i < count`` with probability proportional to ``weights[i]``.

    Parameters
    ----------
    rng : numpy.random.Generator
        Source of randomness; advanced by one uniform draw.
    weights : numpy.ndarray
        Non-negative weights, at least one positive among the first ``count``.
    count : int
        Number of leading entries of ``weights`` to use.

    Returns
    -------
    int
        The drawn index.
    """
    total = 0.0
    for i in range(count):
        total += weights[i]
    u = rng.random() * total
    cum = 0.0
    last = 0
    for i in range(count):
        if weights[i] > 0.0:
            last = i
            cum += weights[i]
            if u < cum:
                return i
    return last


@numba.njit(**NJIT_KWARGS)
def _sample_partitions_from_table(
    rng: np.random.Generator,
    table: np.ndarray,
    log_pk: np.ndarray,
    r: float,
    size: int,
) -> np.ndarray:
    """Draw exact pCRP partitions given the Stirling table and the law of ``K``.

    Parameters
    ----------
    rng : numpy.random.Generator
        Source of randomness; the caller's generator is advanced.
    table : numpy.ndarray
        ``log S_r(m, k)`` of shape ``(n + 1, k_max + 1)``.
    log_pk : numpy.ndarray
        Normalised ``log p(K = k)`` for ``k = 0..k_max``.
    r : float
        Power of the pCRP.
    size : int
        Number of independent draws.

    Returns
    -------
    numpy.ndarray
        ``int64`` array of shape ``(size, n)`` of canonical label vectors.
    """
    n = table.shape[0] - 1
    k_max = table.shape[1] - 1
    lgam = log_gamma_table(n)
    out = np.empty((size, n), dtype=np.int64)
    pk = np.empty(k_max + 1)
    for k in range(k_max + 1):
        pk[k] = math.exp(log_pk[k])
    probs = np.empty(n + 1)
    remaining = np.empty(n, dtype=np.int64)
    scratch = np.empty(n, dtype=np.int64)
    taken = np.empty(n, dtype=np.bool_)
    labels = np.empty(n, dtype=np.int64)
    for s in range(size):
        k = _draw_index(rng, pk, k_max + 1)
        m = n
        for i in range(n):
            remaining[i] = i
            taken[i] = False
        block = 0
        while m > 0:
            # Size j of the block holding the highest remaining item.
            n_sizes = m - k + 1
            base = lgam[m] - table[m, k]
            for j in range(1, n_sizes + 1):
                probs[j - 1] = math.exp(
                    base + (r - 1.0) * lgam[j] - lgam[m - j + 1] + table[m - j, k - 1]
                )
            j = _draw_index(rng, probs, n_sizes) + 1
            top = remaining[m - 1]
            labels[top] = block
            taken[top] = True
            # Its other j - 1 members: uniform among the other m - 1 items.
            for i in range(m - 1):
                scratch[i] = remaining[i]
            for t in range(j - 1):
                pick = t + int(rng.random() * (m - 1 - t))
                if pick > m - 2:
                    pick = m - 2
                chosen = scratch[pick]
                scratch[pick] = scratch[t]
                scratch[t] = chosen
                labels[chosen] = block
                taken[chosen] = True
            # Keep the remaining items sorted so the last one is the highest.
            kept = 0
            for i in range(m):
                item = remaining[i]
                if not taken[item]:
                    remaining[kept] = item
                    kept += 1
            m = kept
            k -= 1
            block += 1
        out[s] = canonical_labels(labels)
    return out


def sample_partitions(
    rng: np.random.Generator, n: int, alpha: float, r: float, size: int
) -> np.ndarray:
    """Draw independent partitions exactly from the pCRP prior.

    The number of blocks ``K`` is drawn from :func:`log_prior_k`; then, while
    items remain, the size ``j`` of the block holding the highest remaining item
    is drawn with probability
    ``C(m-1, j-1) Gamma(j)**r S_r(m-j, k-1) / S_r(m, k)`` (``m`` items and ``k``
    blocks left), its other ``j - 1`` members are chosen uniformly among the
    remaining items, and the procedure recurses on ``(m - j, k - 1)``. The
    Stirling table is built once for all draws.

    Parameters
    ----------
    rng : numpy.random.Generator
        Source of randomness; it is advanced by the draws.
    n, alpha, r
        Number of items (``n >= 0``), concentration (``alpha > 0``) and power
        of the pCRP.
    size : int
        Number of draws, ``size >= 0``.

    Returns
    -------
    numpy.ndarray
        ``int64`` array of shape ``(size, n)``; each row is a canonical label
        vector (blocks numbered in order of first appearance).

    Notes
    -----
    The draws are exact up to the truncation of ``K`` described in the module
    docstring (omitted prior mass below ``n * exp(-50)``).
    """
    if int(size) != size or size < 0:
        raise ValueError(f"size must be a non-negative integer, got {size!r}")
    table, log_w = table_and_log_weights(n, alpha, r)
    log_pk = normalise_log(log_w)
    return _sample_partitions_from_table(rng, table, log_pk, float(r), int(size))


def sample_partitions_from_table(
    rng: np.random.Generator, table: np.ndarray, log_pk: np.ndarray, r: float, size: int
) -> np.ndarray:
    """Draw exact partitions given a Stirling table and a law of ``K`` on its columns.

    :func:`sample_partitions` with the table and the law of ``K`` given: a law
    on ``k <= k_max`` that is the pCRP prior restricted to at most ``k_max``
    blocks gives exact draws of the truncated pCRP.

    Parameters
    ----------
    rng : numpy.random.Generator
        Source of randomness; it is advanced by the draws.
    table : numpy.ndarray
        ``log S_r(m, k)`` of shape ``(n + 1, k_max + 1)``
        (:func:`~pymc_pcrp._kernels.partitions.table_and_log_weights`).
    log_pk : numpy.ndarray
        Normalised ``log p(K = k)`` for ``k = 0..k_max``.
    r : float
        Power of the pCRP.
    size : int
        Number of draws.

    Returns
    -------
    numpy.ndarray
        ``int64`` array of shape ``(size, n)`` of canonical label vectors.
    """
    return _sample_partitions_from_table(rng, table, log_pk, float(r), int(size))


def sample_partition(rng: np.random.Generator, n: int, alpha: float, r: float) -> np.ndarray:
    """Draw one partition exactly from the pCRP prior.

    Parameters
    ----------
    rng, n, alpha, r
        As in :func:`sample_partitions`.

    Returns
    -------
    numpy.ndarray
        ``int64`` canonical label vector of length ``n``.

    See Also
    --------
    sample_partitions : The batch version, which describes the algorithm.
    """
    return sample_partitions(rng, n, alpha, r, 1)[0]
