"""Small data sets shipped with the package."""

from importlib.resources import files

import numpy as np

__all__ = ["load_old_faithful"]


def load_old_faithful() -> np.ndarray:
    """Load the Old Faithful geyser eruptions (R's ``datasets::faithful``).

    The file is bundled with the package, so no network access is needed. See
    ``pymc_pcrp/data/README.md`` for its provenance and checksum.

    Returns
    -------
    numpy.ndarray
        ``float64`` array of shape ``(272, 2)``. Column 0 is the eruption
        duration in minutes, column 1 the waiting time to the next eruption in
        minutes.

    References
    ----------
    Härdle, W. (1991). *Smoothing Techniques with Implementation in S*. Springer.

    Azzalini, A. and Bowman, A. W. (1990). A look at some data on the Old
    Faithful geyser. *Applied Statistics* 39, 357-365.

    Examples
    --------
    >>> from pymc_pcrp.datasets import load_old_faithful
    >>> X = load_old_faithful()
    >>> X.shape
    (272, 2)
    >>> X[0]
    array([ 3.6, 79. ])
    """
    resource = files("pymc_pcrp") / "data" / "old_faithful.csv"
    with resource.open("r", encoding="utf-8") as handle:
        data = np.loadtxt(handle, delimiter=",", skiprows=1, dtype=np.float64)
    return np.ascontiguousarray(data)
