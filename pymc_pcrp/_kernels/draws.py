"""Draws the kernels share: an index below a bound, Fisher-Yates shuffles, an index by log weights.

``rng.integers`` and ``rng.permutation`` do the same jobs in numba, but were a
visible share of a sweep and of a split-merge proposal (a call per element, and a
new array per permutation). Here each index comes from one ``rng.random()``: its
top 32 bits (a double's 53 random bits scaled by ``2**32`` are exact) are
mapped below the bound by Lemire's multiply-and-reject method, which is exactly
uniform. :func:`draw_log_index` draws an index by unnormalised log weights (the
scale and ``nu0`` grids, the tempering ladder).
"""

import math

import numba
import numpy as np

from pymc_pcrp._kernels._config import NJIT_KWARGS

__all__ = [
    "draw_log_index",
    "log_sum_exp",
    "shuffle_in_place",
    "shuffle_pair_prefix",
    "sweep_order",
    "uniform_below",
]


@numba.njit(**NJIT_KWARGS)
def uniform_below(rng: np.random.Generator, bound: int) -> int:
    """Return an integer uniform on ``0..bound-1`` (``1 <= bound <= 2**32``), exactly."""
    two32 = 4294967296.0
    prod = np.uint64(rng.random() * two32) * np.uint64(bound)
    low = prod & np.uint64(0xFFFFFFFF)
    if low < np.uint64(bound):
        threshold = np.uint64((4294967296 - bound) % bound)
        while low < threshold:
            prod = np.uint64(rng.random() * two32) * np.uint64(bound)
            low = prod & np.uint64(0xFFFFFFFF)
    return np.int64(prod >> np.uint64(32))


@numba.njit(**NJIT_KWARGS)
def shuffle_in_place(rng: np.random.Generator, perm: np.ndarray) -> None:
    """Put ``perm`` in a uniformly random order (Fisher-Yates), exactly.

    Any starting order gives a uniform permutation, so the sweep reshuffles the
    previous one instead of allocating a new one.
    """
    for j in range(perm.shape[0] - 1, 0, -1):
        r = uniform_below(rng, j + 1)
        tmp = perm[j]
        perm[j] = perm[r]
        perm[r] = tmp


@numba.njit(**NJIT_KWARGS)
def shuffle_pair_prefix(rng: np.random.Generator, a: np.ndarray, b: np.ndarray, m: int) -> None:
    """Put ``a[:m]`` in a uniformly random order (Fisher-Yates), ``b[:m]`` in the same order."""
    for j in range(m - 1, 0, -1):
        r = uniform_below(rng, j + 1)
        a[j], a[r] = a[r], a[j]
        b[j], b[r] = b[r], b[j]


@numba.njit(**NJIT_KWARGS)
def sweep_order(n: int) -> np.ndarray:
    """Return the points a sweep visits, ``0..n-1``; the sweep reshuffles them before each pass."""
    return np.arange(n)


@numba.njit(**NJIT_KWARGS)
def log_sum_exp(v: np.ndarray) -> float:
    """Return ``log(sum(exp(v)))``, computed from the largest entry."""
    top = v[0]
    for j in range(1, v.shape[0]):
        if v[j] > top:
            top = v[j]
    acc = 0.0
    for j in range(v.shape[0]):
        acc += math.exp(v[j] - top)
    return top + math.log(acc)


@numba.njit(**NJIT_KWARGS)
def draw_log_index(rng: np.random.Generator, logp: np.ndarray, top: float) -> int:
    """Index ``g`` drawn with probability ``exp(logp[g] - top)`` (``top`` = log-sum-exp)."""
    u = rng.random()
    acc = 0.0
    last = logp.shape[0] - 1
    for g in range(last):
        acc += math.exp(logp[g] - top)
        if u < acc:
            return g
    return last
