r"""The log joint of a partition, computed afresh from the labels in a fixed order.

The sweep keeps per-cluster statistics up to date with rank-one changes, and
its running log joint (:func:`~pymc_pcrp._kernels.sweep.log_joint`) carries the
rounding of every move since the state was built. Two chains that sit in the
same partition therefore report values that differ in the last few digits, and
the rank-normalised R-hat, which ranks the draws of all chains together, reads
those differences as a disagreement between the chains (on iris at ``r = 1.3``,
where every chain holds one partition in nearly every draw, R-hat of the log
joint came out at 2.46 from differences of about ``1e-13``; docs/mixing.md).

The functions here (and
:func:`~pymc_pcrp._kernels.hyper.partition_log_joint_scaled` for a learned NIW
scale) make the reported value a function of the partition alone:
for labels in canonical form (blocks numbered in order of first appearance)
they visit the points in index order, form each cluster's mean and then its
scatter about the mean (two passes, so a cluster far from the prior mean loses
no digits to cancellation), and add the clusters in label order. The same
partition gives the same number, bit for bit, in every chain.

For a cluster with ``n`` points, mean ``m`` (of the data centred at the prior
mean) and scatter ``W = sum_i (x_i - m)(x_i - m)^T``, the NIW posterior scale is
``Psi_n = Psi_0 + W + c m m^T`` with ``c = kappa0 n / (kappa0 + n)``, and its
determinant is taken as ``|A| (1 + c m^T A^{-1} m)`` with ``A = Psi_0 + W``:
for a cluster far from the prior mean the rank-one term dominates ``Psi_n``,
and a factorisation of ``Psi_n`` itself would lose the digits of ``A``.

:func:`resync_state` rebuilds a sweep state's statistics from its own labels in
place; the chain calls it when the running value has drifted from the fresh one.
"""

import math

import numba
import numpy as np

from pymc_pcrp._kernels._config import NJIT_KWARGS
from pymc_pcrp._kernels.niw import (
    cholesky_lower,
    log_det_chol,
    log_marginal_from_logdet,
    solve_lower,
)
from pymc_pcrp._kernels.slots import clear_occupied
from pymc_pcrp._kernels.state import NIWParams, SweepState, refresh_slot, shift_stats

__all__ = [
    "DRIFT_TOLERANCE",
    "add_state_prior_terms",
    "block_log_marginal",
    "cluster_means",
    "cluster_scatter",
    "drifted",
    "mean_weight",
    "n_blocks",
    "partition_log_joint",
    "prior_terms",
    "resync_state",
]

# Relative difference between the running and the fresh log joint above which
# the chain rebuilds its statistics from the labels.
DRIFT_TOLERANCE = 1e-9


@numba.njit(**NJIT_KWARGS)
def cluster_means(xc: np.ndarray, labels: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Sizes and means of the clusters of canonical labels, points in index order."""
    n, d = xc.shape
    sizes = np.zeros(k, dtype=np.int64)
    means = np.zeros((k, d))
    for i in range(n):
        c = labels[i]
        sizes[c] += 1
        for a in range(d):
            means[c, a] += xc[i, a]
    for c in range(k):
        for a in range(d):
            means[c, a] /= sizes[c]
    return sizes, means


@numba.njit(**NJIT_KWARGS)
def cluster_scatter(xc: np.ndarray, labels: np.ndarray, k: int):
    """Sizes, means and scatter matrices ``W`` of the clusters of canonical labels.

    Returns ``(sizes, means, w)``, ``w`` of shape ``(k, D, D)``; two passes over
    the points in index order.
    """
    n, d = xc.shape
    sizes, means = cluster_means(xc, labels, k)
    w = np.zeros((k, d, d))
    # Each point's deviations once, then the lower triangle of their outer product
    # (the same operations in the same order as one product at a time, so the same
    # bits). D = 2 is written out: the loops' bookkeeping cost more than the arithmetic.
    if d == 2:
        for i in range(n):
            c = labels[i]
            d0 = xc[i, 0] - means[c, 0]
            d1 = xc[i, 1] - means[c, 1]
            w[c, 0, 0] += d0 * d0
            w[c, 1, 0] += d1 * d0
            w[c, 1, 1] += d1 * d1
        w[:, 0, 1] = w[:, 1, 0]
        return sizes, means, w
    dev = np.empty(d)
    for i in range(n):
        c = labels[i]
        for a in range(d):
            dev[a] = xc[i, a] - means[c, a]
        for a in range(d):
            da = dev[a]
            for e in range(a + 1):
                w[c, a, e] += da * dev[e]
    for c in range(k):
        for a in range(d):
            for e in range(a):
                w[c, e, a] = w[c, a, e]
    return sizes, means, w


@numba.njit(**NJIT_KWARGS)
def mean_weight(kappa0: float, n: int) -> float:
    """``kappa0 n / (kappa0 + n)``: the weight of ``m m^T`` in ``B``."""
    return kappa0 * n / (kappa0 + n)


@numba.njit(**NJIT_KWARGS)
def prior_terms(sizes: np.ndarray, params: NIWParams) -> float:
    """``K log alpha + r sum_k log Gamma(n_k)``, clusters in label order."""
    acc = 0.0
    for c in range(sizes.shape[0]):
        acc += params.log_alpha + params.power * math.lgamma(sizes[c])
    return acc


@numba.njit(**NJIT_KWARGS)
def add_state_prior_terms(acc: float, state, log_alpha: float, power: float) -> float:
    """``acc + K log alpha + r sum_k log Gamma(n_k)`` over a state's occupied slots.

    Terms are added to ``acc`` one by one in the order of ``state.order``; takes
    either family's state.
    """
    for p in range(state.k[0]):
        acc += log_alpha + power * math.lgamma(state.counts[state.order[p]])
    return acc


@numba.njit(**NJIT_KWARGS)
def n_blocks(labels: np.ndarray) -> int:
    """Count the blocks of canonical labels (the largest label plus one)."""
    top = -1
    for i in range(labels.shape[0]):
        if labels[i] > top:
            top = labels[i]
    return top + 1


@numba.njit(**NJIT_KWARGS)
def partition_log_joint(xc: np.ndarray, labels: np.ndarray, params: NIWParams) -> float:
    """``K log alpha + r sum_k log Gamma(n_k) + sum_k log m(X_k)`` from scratch.

    ``labels`` must be canonical. Equals :func:`~pymc_pcrp._kernels.sweep.log_joint`
    of any state holding this partition, up to that state's rounding.
    """
    k = n_blocks(labels)
    d = xc.shape[1]
    sizes, means, w = cluster_scatter(xc, labels, k)
    acc = prior_terms(sizes, params)
    if d == 0:
        return acc
    a = np.empty((d, d))
    chol = np.empty((d, d))
    y = np.empty(d)
    for c in range(k):
        acc += block_log_marginal(sizes[c], w[c], means[c], params, a, chol, y)
    return acc


@numba.njit(**NJIT_KWARGS)
def block_log_marginal(
    size: int,
    scatter: np.ndarray,
    mean: np.ndarray,
    params: NIWParams,
    a: np.ndarray,
    chol: np.ndarray,
    y: np.ndarray,
) -> float:
    """``log m(X)`` of a block of ``size`` points from its scatter ``W`` and mean ``m``.

    ``m`` is the mean of the centred data and ``W`` the scatter about it (both
    triangles); ``a``, ``chol`` (``D x D``) and ``y`` (``D``) are work space.
    """
    d = mean.shape[0]
    # |Psi_0 + W + w m m^T| = |A| (1 + w m^T A^{-1} m) with A = Psi_0 + W: the
    # factor of A keeps its digits when the cluster is far from the prior mean.
    for i in range(d):
        for j in range(d):
            a[i, j] = params.psi0[i, j] + scatter[i, j]
    if not cholesky_lower(a, chol):
        raise FloatingPointError("posterior scale matrix is not positive definite")
    yy = solve_lower(chol, mean, y)
    logdet = log_det_chol(chol) + math.log1p(mean_weight(params.kappa0, size) * yy)
    return log_marginal_from_logdet(size, logdet, d, params.kappa0, params.nu0, params.logdet0)


@numba.njit(**NJIT_KWARGS)
def drifted(running: float, fresh: float) -> bool:
    """Whether the running log joint is off the fresh one by more than the tolerance."""
    return not abs(running - fresh) <= DRIFT_TOLERANCE * max(1.0, abs(fresh))


@numba.njit(**NJIT_KWARGS)
def resync_state(xc: np.ndarray, state: SweepState, params: NIWParams) -> None:
    """Rebuild the occupied slots' statistics and factors from ``state.labels`` in place."""
    d = xc.shape[1]
    clear_occupied(state)
    for i in range(xc.shape[0]):
        slot = state.labels[i]
        state.counts[slot] += 1
        shift_stats(state.sums, state.sumsq, slot, xc, i, 1.0)
    buf = np.empty((d, d))
    for p in range(state.k[0]):
        refresh_slot(state, state.order[p], params, buf)
