"""Small dense linear algebra of the scale update, in numba: whitening and eigenvalues."""

import math

import numba
import numpy as np

from pymc_pcrp._kernels._config import NJIT_KWARGS

__all__ = ["symmetric_eigenvalues", "whiten"]


@numba.njit(**NJIT_KWARGS)
def whiten(linv: np.ndarray, b: np.ndarray, t: np.ndarray, out: np.ndarray) -> None:
    """Write ``L0^{-1} B L0^{-T}`` (symmetric) into ``out``; ``t`` is scratch, ``L0^{-1}`` lower."""
    d = linv.shape[0]
    for i in range(d):
        for j in range(d):
            acc = 0.0
            for a in range(i + 1):
                acc += linv[i, a] * b[a, j]
            t[i, j] = acc
    for i in range(d):
        for j in range(i + 1):
            acc = 0.0
            for a in range(j + 1):
                acc += t[i, a] * linv[j, a]
            out[i, j] = acc
            out[j, i] = acc


@numba.njit(**NJIT_KWARGS)
def symmetric_eigenvalues(m: np.ndarray, out: np.ndarray) -> None:
    """Write the eigenvalues of the symmetric matrix ``m`` into ``out``, ascending.

    ``D = 1`` and ``D = 2`` in closed form (the larger root of the 2 x 2
    characteristic polynomial, then the smaller as determinant over it, which
    keeps its relative accuracy when the two differ by orders of magnitude);
    LAPACK (``np.linalg.eigvalsh``) otherwise, whose call costs more than the
    arithmetic at these sizes. The scale update asks for them once per cluster
    and sweep.
    """
    d = m.shape[0]
    if d == 1:
        out[0] = m[0, 0]
    elif d == 2:
        a, b, c = m[0, 0], m[0, 1], m[1, 1]
        half = 0.5 * (a - c)
        root = math.sqrt(half * half + b * b)
        top = 0.5 * (a + c) + root
        out[1] = top
        out[0] = (a * c - b * b) / top if top > 0.0 else 0.5 * (a + c) - root
    else:
        out[:] = np.linalg.eigvalsh(m)
