"""Checks of user input at the public boundary, with messages that name the fix."""

from __future__ import annotations

import numpy as np

from pytensor.graph.basic import Variable
from pytensor.graph.traversal import ancestors
from pytensor.tensor.random.op import RandomVariable

__all__ = [
    "check_data",
    "check_positive_scalar",
    "check_prior_scale",
    "check_spd",
    "depends_on_random_variable",
]


def check_data(x, name: str = "observed") -> np.ndarray:
    """Return ``x`` as a float64 array of shape ``(N, D)``.

    A 1-D input of shape ``(N,)`` is read as ``N`` one-dimensional points.

    Raises
    ------
    ValueError
        If ``x`` is not 1-D or 2-D, is empty, holds complex numbers, NaN or
        infinite values, or has a column whose magnitude the NIW arithmetic
        cannot represent (above ``1e100`` or, when not all zero, below ``1e-100``:
        sums of squares would overflow or underflow).
    """
    if np.iscomplexobj(np.asarray(x)):
        raise ValueError(
            f"Argument '{name}' holds complex numbers; pass real data (for example the real "
            "and imaginary parts as separate columns)."
        )
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise ValueError(
            f"Argument '{name}' must have shape (N,) or (N, D), but got shape {np.shape(x)}."
        )
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(
            f"Argument '{name}' is empty (shape {np.shape(x)}); pass at least one point."
        )
    bad = ~np.isfinite(arr)
    if bad.any():
        rows = np.flatnonzero(bad.any(axis=1))
        raise ValueError(
            f"Argument '{name}' contains {int(bad.sum())} NaN or infinite value(s), first in "
            f"row(s) {rows[:5].tolist()}. Drop or impute those rows before clustering."
        )
    _check_magnitude(arr, name)
    return arr


#: Column magnitudes outside [_TINY, _HUGE] make sums of squares overflow or underflow.
_HUGE, _TINY = 1e100, 1e-100


def _check_magnitude(arr: np.ndarray, name: str) -> None:
    """Refuse columns too large or too small for sums of squares in double precision."""
    size = np.abs(arr).max(axis=0)
    huge = np.flatnonzero(size > _HUGE)
    tiny = np.flatnonzero((size > 0) & (size < _TINY))
    for columns, what in ((huge, f"above {_HUGE:g}"), (tiny, f"below {_TINY:g}")):
        if columns.size:
            raise ValueError(
                f"Argument '{name}' has column(s) {columns[:5].tolist()} with values {what} in "
                "magnitude, which sums of squares cannot represent in double precision. "
                "Rescale the data (for example standardise each column) before clustering."
            )


#: Largest ``sum_i x_i^T Psi_0^{-1} x_i`` (points centred at ``mu0``) the kernels accept.
#: The cluster statistics are sums of squares and their rounding errors grow like
#: ``eps`` times this sum relative to ``Psi_0``; a scan of far-apart centres,
#: identical points and single outliers (N = 20 to 2,000) first lost positive
#: definiteness at 1e16, so the limit keeps a factor of 10 below that.
MAX_SCATTER_OVER_PSI0 = 1e15


def check_prior_scale(
    data: np.ndarray,
    mu0: np.ndarray,
    psi0: np.ndarray,
    smallest_scale: float = 1.0,
    name: str = "prior",
) -> None:
    """Refuse a prior scale matrix that the data's sums of squares would swamp.

    ``data`` is ``(N, D)``; ``Psi_0 = smallest_scale * psi0`` is the smallest
    scale matrix the model uses (the smallest grid value of a learned scale).
    The test is ``sum_i (x_i - mu0)^T Psi_0^{-1} (x_i - mu0) <=``
    :data:`MAX_SCATTER_OVER_PSI0`: beyond it, double precision cannot keep the
    posterior scale matrices of the clusters positive definite (points far from
    ``mu0`` or from each other on the scale of ``Psi_0``, or ``Psi_0`` itself
    tiny). Memory ``O(D^2)`` beyond the data, a block of points at a time.
    """
    from scipy.linalg import solve_triangular

    try:
        chol = np.linalg.cholesky(smallest_scale * np.asarray(psi0, dtype=np.float64))
    except np.linalg.LinAlgError:
        chol = None
    total = np.inf
    if chol is not None and np.all(np.isfinite(chol)) and np.all(np.diag(chol) > 0):
        total = 0.0
        block = max(1, (1 << 20) // max(data.shape[1], 1))
        with np.errstate(over="ignore", invalid="ignore"):
            for start in range(0, data.shape[0], block):
                centred = (data[start : start + block] - mu0).T
                y = solve_triangular(chol, centred, lower=True)
                total += float(np.sum(y * y))
    if not total <= MAX_SCATTER_OVER_PSI0:
        which = (
            "psi0"
            if smallest_scale == 1.0
            else f"psi0 (times its smallest scale {smallest_scale:.3g})"
        )
        raise ValueError(
            f"Argument '{name}': {which} is too small for these data for PCRPGibbs. The "
            "points' sum of "
            f"squared distances from mu0 measured in units of psi0 is {total:.3g}, above "
            f"{MAX_SCATTER_OVER_PSI0:.0e}: the cluster statistics (sums of squares) would "
            "swamp psi0 beyond double precision and the posterior scale matrices lose "
            "positive definiteness. Standardise the data (each column to mean 0 and "
            "variance 1), or use a larger psi0, e.g. NIWPrior.from_data(X)."
        )


def check_positive_scalar(value, name: str) -> float:
    """Return ``value`` as a float, requiring a finite number ``> 0`` (not a string)."""
    if isinstance(value, str | bytes):
        raise ValueError(
            f"Argument '{name}' must be a number (or a PyMC variable), but got the string "
            f"{value!r}; write {name}={value.strip() if isinstance(value, str) else value!r} "
            "without quotes."
        )
    arr = np.asarray(value, dtype=np.float64)
    if arr.ndim != 0:
        raise ValueError(f"Argument '{name}' must be a scalar, but got shape {arr.shape}.")
    v = float(arr)
    if not np.isfinite(v) or v <= 0:
        raise ValueError(f"Argument '{name}' must be a finite number > 0, but got {v}.")
    return v


def check_spd(matrix, name: str, dim: int | None = None) -> np.ndarray:
    """Return ``matrix`` as a symmetric positive definite float64 array of shape ``(D, D)``."""
    arr = np.atleast_2d(np.asarray(matrix, dtype=np.float64))
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1]:
        raise ValueError(f"Argument '{name}' must be a square matrix, but got shape {arr.shape}.")
    if dim is not None and arr.shape[0] != dim:
        raise ValueError(
            f"Argument '{name}' must have shape ({dim}, {dim}) to match the data dimension, "
            f"but got {arr.shape}."
        )
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"Argument '{name}' contains NaN or infinite values.")
    if not np.allclose(arr, arr.T, rtol=1e-10, atol=1e-12 * max(1.0, np.abs(arr).max())):
        raise ValueError(f"Argument '{name}' must be symmetric.")
    try:
        np.linalg.cholesky(arr)
    except np.linalg.LinAlgError:
        eig = np.linalg.eigvalsh(arr).min()
        raise ValueError(
            f"Argument '{name}' must be positive definite, but its smallest eigenvalue is "
            f"{eig:.3g}. A scaled identity or the data covariance are valid choices."
        ) from None
    return arr


def depends_on_random_variable(var: Variable) -> bool:
    """Whether a PyTensor graph has a random variable among its ancestors."""
    from pymc.distributions.distribution import SymbolicRandomVariable

    for node_var in ancestors([var]):
        owner = node_var.owner
        if owner is not None and isinstance(owner.op, RandomVariable | SymbolicRandomVariable):
            return True
    return False


def rebuild_message(data_name: str, rows: int, labels_name: str, n: int) -> str:
    """Error text for data whose number of points differs from the label vector's length."""
    return (
        f"The data of '{data_name}' have {rows} rows but '{labels_name}' labels {n} points. "
        "A PowerCRP built with an integer n has labels of that length for good, so "
        "pm.set_data cannot change the number of points; build a new model for the new data, "
        "e.g. pymc_pcrp.build_model(X_new, power=..., alpha=...) or "
        f"PowerCRP('{labels_name}', ..., n=len(X_new)) with NIWMixture(..., observed=X_new), "
        "or build it once with X = pm.Data(...) and n=X.shape[0] (fixed alpha), whose labels "
        "follow pm.set_data. To assign new points to the clusters of a fitted model, use "
        "pymc_pcrp.predict."
    )
