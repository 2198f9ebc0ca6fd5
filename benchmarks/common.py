"""Shared pieces of the benchmark suite: the data set, the model and small helpers.

The data are a fixed-seed mixture of three Gaussians, the same at every size
(each size draws its own points from the same mixture with the same seed):

* weights ``(0.5, 0.3, 0.2)``;
* centres: in ``D = 1`` at ``-8, 0, 8``; in ``D >= 2`` at ``(0, 0)``, ``(8, 0)``
  and ``(4, 4 sqrt(3))`` in the first two coordinates (an equilateral triangle of
  side 8) and ``0`` in every other coordinate;
* covariances ``s_k^2 R_k`` with scales ``s = (1.0, 0.7, 1.2)``, ``R_1 = R_2 = I``
  and ``R_3`` the identity with correlation ``0.5`` between the first two
  coordinates (``D >= 2``).

The labels are drawn independently from the weights and returned in canonical
form (numbered in order of first appearance), as the step stores them.
"""

from __future__ import annotations

import math

from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
ALPHA = 1.0
POWER = 1.1
DATA_SEED = 0
WEIGHTS = (0.5, 0.3, 0.2)
SCALES = (1.0, 0.7, 1.2)
RHO = 0.5


def mixture_params(d: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Weights ``(3,)``, centres ``(3, d)`` and covariances ``(3, d, d)`` of the data."""
    centres = np.zeros((3, d))
    if d == 1:
        centres[:, 0] = [-8.0, 0.0, 8.0]
    else:
        centres[:, :2] = [[0.0, 0.0], [8.0, 0.0], [4.0, 4.0 * math.sqrt(3.0)]]
    covs = np.empty((3, d, d))
    for k, s in enumerate(SCALES):
        r = np.eye(d)
        if k == 2 and d >= 2:
            r[0, 1] = r[1, 0] = RHO
        covs[k] = s * s * r
    return np.asarray(WEIGHTS), centres, covs


def canonical(labels: np.ndarray) -> np.ndarray:
    """Relabel ``0..K-1`` in order of first appearance."""
    _, first, inv = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first)] = np.arange(len(first))
    return rank[inv.ravel()]


def mixture_data(n: int, d: int, seed: int = DATA_SEED) -> tuple[np.ndarray, np.ndarray]:
    """``n`` points of the three-component mixture in ``d`` dimensions: ``(X, true labels)``."""
    weights, centres, covs = mixture_params(d)
    rng = np.random.default_rng([seed, n, d])
    z = rng.choice(3, size=n, p=weights)
    chol = np.linalg.cholesky(covs)
    x = rng.standard_normal((n, d))
    # A block of rows at a time: chol[z] holds D^2 numbers per point.
    block = max(1, (1 << 22) // (d * d))
    for start in range(0, n, block):
        rows = slice(start, start + block)
        x[rows] = centres[z[rows]] + np.einsum("nij,nj->ni", chol[z[rows]], x[rows])
    return np.ascontiguousarray(x), canonical(z)
