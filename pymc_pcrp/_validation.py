"""Checks of user input at the public boundary, with messages that name the fix."""

from __future__ import annotations

import numpy as np

from pytensor.graph.basic import Variable
from pytensor.graph.traversal import ancestors
from pytensor.tensor.random.op import RandomVariable

__all__ = [
    "LARGEST_MAGNITUDE",
    "SMALLEST_MAGNITUDE",
    "check_data",
    "check_positive_scalar",
    "check_power",
    "check_power_grid",
    "check_prior_scale",
    "check_spd",
    "depends_on_random_variable",
    "frame_to_array",
    "max_power",
]


def check_data(x, name: str = "observed") -> np.ndarray:
    """Return ``x`` as a float64 array of shape ``(N, D)``.

    A 1-D input of shape ``(N,)`` is read as ``N`` one-dimensional points. A
    pandas ``DataFrame`` or ``Series`` is checked column by column first
    (:func:`frame_to_array`); a masked array is accepted when nothing is masked.

    Raises
    ------
    ValueError
        If ``x`` is not 1-D or 2-D, is empty, holds complex numbers, NaN or
        infinite values, missing values (a masked entry, ``pd.NA``, ``None``),
        non-numeric values or columns (dates, times, categories, text), or has a
        column whose magnitude the NIW arithmetic cannot represent (above
        ``1e100`` or, when not all zero, below ``1e-100``: sums of squares would
        overflow or underflow). The message names the argument, the column or
        the rows, and the fix.
    """
    if _is_pandas(x):
        x = frame_to_array(x, name)
    elif np.ma.isMaskedArray(x):
        x = _unmasked(x, name)
    if np.iscomplexobj(np.asarray(x)):
        raise ValueError(
            f"Argument '{name}' holds complex numbers; pass real data (for example the real "
            "and imaginary parts as separate columns)."
        )
    arr = _as_float(x, name)
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
        if np.isinf(arr).any():
            advice = "Drop or impute those rows before clustering."
        else:  # NaN only: missing cells
            advice = _missing_advice()
            advice = advice[0].upper() + advice[1:] + "."
        raise ValueError(
            f"Argument '{name}' contains {int(bad.sum())} NaN or infinite value(s), first in "
            f"row(s) {rows[:5].tolist()}. {advice}"
        )
    _check_magnitude(arr, name)
    return arr


def _is_pandas(x) -> bool:
    module = type(x).__module__
    if not module.startswith("pandas"):
        return False
    import pandas as pd

    return isinstance(x, pd.DataFrame | pd.Series)


def _missing_advice(drop: str = "") -> str:
    """Return what to do with missing cells; ``drop`` shows how to drop those rows, if given."""
    how = f" ({drop})" if drop else ""
    return (
        f"the Gaussian families need complete rows: drop those rows{how} or impute them, or "
        "cluster with the table family, which integrates missing cells out "
        "(fit(X, family='table'), or TableMixture in a model; docs/tables.md)"
    )


def _unmasked(x: np.ma.MaskedArray, name: str) -> np.ndarray:
    """Return the data of a masked array with nothing masked; refuse masked entries by row."""
    mask = np.ma.getmaskarray(x)
    if mask.any():
        rows = np.flatnonzero(mask.reshape(mask.shape[0], -1).any(axis=1)) if mask.ndim else [0]
        raise ValueError(
            f"Argument '{name}' is a masked array with {int(mask.sum())} masked (missing) "
            f"value(s), first in row(s) {list(map(int, rows[:5]))}; "
            f"{_missing_advice(f'{name}[~{name}.mask.any(axis=1)]')}."
        )
    return np.ma.getdata(x)


def _as_float(x, name: str) -> np.ndarray:
    """``np.asarray(x, float64)``, refusing missing and non-numeric entries by name."""
    try:
        return np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as err:
        arr = np.asarray(x, dtype=object)
        if arr.ndim >= 1:
            import pandas as pd

            missing = np.asarray(pd.isna(arr)).reshape(arr.shape[0], -1).any(axis=1)
            if missing.any():
                rows = np.flatnonzero(missing)
                raise ValueError(
                    f"Argument '{name}' holds {int(missing.sum())} row(s) with missing values "
                    f"(None, pd.NA or NaN), first in row(s) {rows[:5].tolist()}; "
                    f"{_missing_advice()}."
                ) from None
        raise ValueError(
            f"Argument '{name}' holds values that are not numbers ({err}); pass numeric data "
            "(encode text or categories as numbers, or leave those columns out)."
        ) from None


def _column_problem(column, label: str) -> str | None:
    """Why a pandas column cannot be clustered, or None if it can (numbers or booleans)."""
    import pandas as pd

    dtype = column.dtype
    where = f"column {label!r} (dtype {dtype})"
    if isinstance(dtype, pd.CategoricalDtype):
        return (
            f"{where} is categorical: the current families cluster numeric columns only; "
            "leave it out, or encode it as numbers (for example pandas.get_dummies) if "
            "treating it as continuous makes sense"
        )
    if (
        pd.api.types.is_datetime64_any_dtype(dtype)
        or pd.api.types.is_timedelta64_dtype(dtype)
        or isinstance(dtype, pd.PeriodDtype)
    ):
        return (
            f"{where} holds dates or durations: the current families cluster numeric columns "
            "only; leave it out, or convert it to numbers (for example seconds since a "
            "reference time)"
        )
    if pd.api.types.is_bool_dtype(dtype) or pd.api.types.is_numeric_dtype(dtype):
        if pd.api.types.is_complex_dtype(dtype):
            return f"{where} holds complex numbers: split it into real and imaginary parts"
        return None
    values = column.dropna()
    numbers = pd.to_numeric(values, errors="coerce")
    text = values[numbers.isna()]
    if len(text):
        return (
            f"{where} holds text (for example {str(text.iloc[0])!r}): the current families "
            "cluster numeric columns only; leave it out, or encode it as numbers"
        )
    return None


def frame_to_array(frame, name: str = "X") -> np.ndarray:
    """Return a pandas ``DataFrame`` (or ``Series``) as a float64 array, column types checked.

    Numeric and boolean columns are kept (nullable ones too); a column of
    dates, durations, categories or text is refused naming the column, and
    missing values (``NaN``, ``pd.NA``, ``None``) are refused naming the rows.

    Raises
    ------
    ValueError
        With the column or the rows and the fix.
    """
    import pandas as pd

    one = isinstance(frame, pd.Series)
    table = frame.to_frame() if one else frame
    for label, (_, column) in zip(table.columns, table.items(), strict=True):
        problem = _column_problem(column, str(label))
        if problem is not None:
            raise ValueError(f"Argument '{name}': {problem}.")
    missing = table.isna().to_numpy().any(axis=1)
    if missing.any():
        rows = np.flatnonzero(missing)
        labels = [table.index[i] for i in rows[:5]]
        raise ValueError(
            f"Argument '{name}' has {int(missing.sum())} row(s) with missing values (NaN, "
            f"pd.NA or None), first at position(s) {rows[:5].tolist()} (index {labels}); "
            f"{_missing_advice(f'{name}.dropna()')}."
        )
    arr = table.apply(pd.to_numeric).to_numpy(dtype=np.float64)
    return arr[:, 0] if one else arr


def max_power(n: int) -> float:
    """Return the largest ``r`` with ``n ** r`` finite in double precision (``inf`` for n < 2)."""
    if n < 2:
        return float("inf")
    return float(np.log(np.finfo(np.float64).max) / np.log(n))


def check_power(value, n: int, name: str = "power") -> float:
    """Return ``value`` as a float ``> 0`` small enough that ``n ** value`` is finite.

    The pCRP weighs a cluster of ``m`` points by ``m ** r``; above
    :func:`max_power` of the number of points, ``n ** r`` overflows double
    precision and the sampler's weights are no longer numbers. Long before
    that the prior puts all points in one cluster (``r = 10`` already does on
    a few dozen points), so the bound refuses only meaningless values.
    """
    power = check_positive_scalar(value, name)
    limit = max_power(n)
    if power > limit:
        raise ValueError(
            f"Argument '{name}' = {power:g} is too large for {n} points: the pCRP weight n^r "
            f"of a cluster of {n} points overflows double precision above r = {limit:.4g} "
            "(log of the largest double over log n). Such powers put every point in one "
            "cluster anyway; usual values are between 1 and 2."
        )
    return power


#: Column magnitudes outside these bounds make sums of squares overflow or underflow.
LARGEST_MAGNITUDE, SMALLEST_MAGNITUDE = 1e100, 1e-100


def _check_magnitude(arr: np.ndarray, name: str) -> None:
    """Refuse columns too large or too small for sums of squares in double precision."""
    size = np.abs(arr).max(axis=0)
    huge = np.flatnonzero(size > LARGEST_MAGNITUDE)
    tiny = np.flatnonzero((size > 0) & (size < SMALLEST_MAGNITUDE))
    for columns, what in (
        (huge, f"above {LARGEST_MAGNITUDE:g}"),
        (tiny, f"below {SMALLEST_MAGNITUDE:g}"),
    ):
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


def check_power_grid(powers) -> np.ndarray:
    """Return the grid of powers sorted; refuse fewer than two distinct positive values."""
    grid = np.asarray(powers, dtype=np.float64)
    if grid.ndim != 1 or grid.size < 2:
        raise ValueError(f"Argument 'powers' must hold at least two values, got {powers!r}.")
    grid = np.sort(grid)
    if np.any(np.diff(grid) == 0):
        raise ValueError("Argument 'powers' holds repeated values.")
    for value in grid:
        check_positive_scalar(value, "powers")
    return grid
