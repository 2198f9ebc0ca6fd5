r"""Normal-Inverse-Wishart algebra on plain arrays, compiled with numba.

Conventions used by every function here:

* Data are *centred at the prior mean*: the caller passes ``x - mu0``, so the
  prior mean is the origin and the posterior mean of a cluster is
  ``sum_c / (kappa0 + n)``. This removes the large cancellations that appear
  when ``Psi_n`` is assembled from raw second moments far from the origin.
* A cluster is summarised by its size ``n``, the sum ``s`` of its centred
  points and the sum ``Q`` of their outer products. Its posterior scale matrix is

  .. math:: \Psi_n = \Psi_0 + Q - s s^\top / \kappa_n ,

  which equals the textbook form ``Psi0 + S + (kappa0 n / kappa_n)(xbar - mu0)(xbar - mu0)^T``.
* ``L`` is the lower Cholesky factor of ``Psi_n``; adding or removing one point
  changes ``Psi_n`` by a rank-one term, so ``L`` is updated in ``O(D^2)``.

References
----------
K. P. Murphy (2007), "Conjugate Bayesian analysis of the Gaussian distribution".
"""

import math

import numba
import numpy as np

from pymc_pcrp._kernels._config import NJIT_KWARGS

__all__ = [
    "chol_rank_one_at",
    "cholesky_lower",
    "log_det_at",
    "log_det_chol",
    "log_marginal_from_logdet",
    "log_multigamma",
    "log_predictive",
    "predictive_constants",
    "scale_matrix",
]

LOG_PI = math.log(math.pi)


@numba.njit(**NJIT_KWARGS)
def cholesky_lower(a: np.ndarray, out: np.ndarray) -> bool:
    """Write the lower Cholesky factor of the symmetric matrix ``a`` into ``out``.

    Returns ``False`` (leaving ``out`` partly written) when ``a`` is not
    numerically positive definite.
    """
    d = a.shape[0]
    for j in range(d):
        acc = a[j, j]
        for k in range(j):
            acc -= out[j, k] * out[j, k]
        if not acc > 0.0:
            return False
        ljj = math.sqrt(acc)
        out[j, j] = ljj
        for i in range(j + 1, d):
            acc = a[i, j]
            for k in range(j):
                acc -= out[i, k] * out[j, k]
            out[i, j] = acc / ljj
        for i in range(j):
            out[i, j] = 0.0
    return True


@numba.njit(**NJIT_KWARGS)
def solve_lower(chol: np.ndarray, b: np.ndarray, out: np.ndarray) -> float:
    """Solve ``L y = b`` into ``out`` and return ``y^T y`` (``= b^T (L L^T)^{-1} b``)."""
    d = b.shape[0]
    acc = 0.0
    for i in range(d):
        t = b[i]
        for j in range(i):
            t -= chol[i, j] * out[j]
        out[i] = t / chol[i, i]
        acc += out[i] * out[i]
    return acc


@numba.njit(**NJIT_KWARGS)
def chol_rank_one_at(chol: np.ndarray, slot: int, v: np.ndarray, sign: float) -> bool:
    """Update the factor ``L = chol[slot]`` in place so that ``L L^T`` gains ``sign * v v^T``.

    ``chol`` is the 3-D array of every slot's factor; indexing it by ``slot``
    rather than taking a view spares numba's reference counting on the hot path.
    ``sign`` is ``+1.0`` (update) or ``-1.0`` (downdate). ``v`` is overwritten.
    Returns ``False`` if a downdate would leave a matrix that is not positive
    definite; the caller must then rebuild the factor from sufficient statistics.
    """
    d = chol.shape[1]
    for k in range(d):
        lkk = chol[slot, k, k]
        r2 = lkk * lkk + sign * v[k] * v[k]
        if not r2 > 0.0:
            return False
        r = math.sqrt(r2)
        c = r / lkk
        s = v[k] / lkk
        chol[slot, k, k] = r
        for i in range(k + 1, d):
            chol[slot, i, k] = (chol[slot, i, k] + sign * s * v[i]) / c
            v[i] = c * v[i] - s * chol[slot, i, k]
    return True


@numba.njit(**NJIT_KWARGS)
def log_det_chol(chol: np.ndarray) -> float:
    """Return ``log det(L L^T)`` from a lower Cholesky factor ``L``."""
    acc = 0.0
    for k in range(chol.shape[0]):
        acc += math.log(chol[k, k])
    return 2.0 * acc


@numba.njit(**NJIT_KWARGS)
def log_det_at(chol: np.ndarray, slot: int) -> float:
    """:func:`log_det_chol` of ``chol[slot]``, without taking a view."""
    acc = 0.0
    for k in range(chol.shape[1]):
        acc += math.log(chol[slot, k, k])
    return 2.0 * acc


@numba.njit(**NJIT_KWARGS)
def log_multigamma(a: float, d: int) -> float:
    """Log of the multivariate gamma function ``Gamma_d(a)``."""
    acc = 0.25 * d * (d - 1) * LOG_PI
    for j in range(d):
        acc += math.lgamma(a - 0.5 * j)
    return acc


@numba.njit(**NJIT_KWARGS)
def scale_matrix(
    n: int, s: np.ndarray, q: np.ndarray, kappa0: float, psi0: np.ndarray, out: np.ndarray
) -> None:
    """Write the posterior scale matrix ``Psi_n`` of a cluster into ``out``."""
    d = psi0.shape[0]
    inv_kappa = 1.0 / (kappa0 + n)
    for i in range(d):
        for j in range(d):
            out[i, j] = psi0[i, j] + q[i, j] - s[i] * s[j] * inv_kappa


@numba.njit(**NJIT_KWARGS)
def log_marginal_from_logdet(
    n: int, logdet_n: float, d: int, kappa0: float, nu0: float, logdet0: float
) -> float:
    """NIW log marginal likelihood of a block of ``n`` points (docs/model.md, NIW section).

    ``logdet_n`` is ``log|Psi_n|`` and ``logdet0`` is ``log|Psi_0|``. An empty
    block gives exactly zero.
    """
    if n == 0:
        return 0.0
    kappa_n = kappa0 + n
    nu_n = nu0 + n
    return (
        -0.5 * n * d * LOG_PI
        + log_multigamma(0.5 * nu_n, d)
        - log_multigamma(0.5 * nu0, d)
        + 0.5 * nu0 * logdet0
        - 0.5 * nu_n * logdet_n
        + 0.5 * d * math.log(kappa0 / kappa_n)
    )


@numba.njit(**NJIT_KWARGS)
def predictive_constants(n_max: int, d: int, kappa0: float, nu0: float) -> np.ndarray:
    """Size-dependent part of the log posterior predictive, for sizes ``0..n_max``.

    For a cluster of size ``n`` the predictive of a point ``x`` is a Student-t
    with ``df = nu_n - d + 1`` and scale ``Psi_n (kappa_n + 1) / (kappa_n df)``.
    Writing ``u = ||L^{-1}(x - mu_n)||^2`` its log density is

    ``const[n] - 0.5 log|Psi_n| - 0.5 (nu_n + 1) log(1 + u kappa_n / (kappa_n + 1))``

    and this function returns ``const``.
    """
    out = np.empty(n_max + 1)
    for n in range(n_max + 1):
        kappa_n = kappa0 + n
        nu_n = nu0 + n
        out[n] = (
            math.lgamma(0.5 * (nu_n + 1.0))
            - math.lgamma(0.5 * (nu_n - d + 1.0))
            - 0.5 * d * LOG_PI
            - 0.5 * d * math.log((kappa_n + 1.0) / kappa_n)
        )
    return out


@numba.njit(**NJIT_KWARGS)
def log_predictive(
    n: int, u: float, logdet: float, kappa0: float, nu0: float, const_n: float
) -> float:
    """Log posterior predictive of a point given a cluster of ``n`` points, plus a constant.

    ``const_n - 0.5 log|Psi_n| - 0.5 (nu_n + 1) log(1 + u kappa_n / (kappa_n + 1))``
    with ``u = ||L^{-1}(x - mu_n)||^2`` and ``logdet = log|Psi_n|`` (see
    :func:`predictive_constants`): ``const_n = const[n]`` gives the predictive
    itself, and adding ``r log n`` to it the pCRP-weighted seat of the
    split-merge move.
    """
    kappa_n = kappa0 + n
    return (
        const_n - 0.5 * logdet - 0.5 * (nu0 + n + 1.0) * math.log1p(u * kappa_n / (kappa_n + 1.0))
    )
