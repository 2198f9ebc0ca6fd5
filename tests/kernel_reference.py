"""Test-only numba kernels: the plain way of scoring one point, for comparison with the sweep.

:func:`conditional_log_weights` takes a point out of its cluster, scores every
option with the textbook posterior predictive and puts the point back. The
sweep (:func:`pymc_pcrp._kernels.sweep.gibbs_sweeps`) never does this: it
scores a point against its own cluster with leave-one-out formulas and skips
far clusters by bounds. The tests and the benchmark check compare the two.

:func:`step_labels_out` gives the labels buffer that tests pass to
:func:`~pymc_pcrp._kernels.chain.advance` and
:func:`~pymc_pcrp._kernels.hyper.advance_scaled`.
"""

import math

import numba
import numpy as np

from pymc_pcrp._kernels._config import NJIT_KWARGS
from pymc_pcrp._kernels.scores import _mahalanobis, sweep_tables
from pymc_pcrp._kernels.state import NIWParams, SweepState, place_point

__all__ = ["conditional_log_weights", "log_weights_after_removal", "step_labels_out"]


def step_labels_out(n: int) -> np.ndarray:
    """An empty labels buffer of ``n`` items with the dtype the step passes (``int64``).

    numba compiles a kernel once per combination of argument types, and the chain
    kernels are the slowest to compile (10-60 s each on a cold cache). The step hands
    the kernels an ``int64`` buffer whatever its variable's dtype (int16 up to 32768
    items, int32 above) and copies the labels over. Tests that call ``advance`` or
    ``advance_scaled`` with the step's argument types (this buffer, a float
    ``n_split_merge``, integer ``n_sweeps`` and ``n_scans``) reuse the compilation
    the sampler needs anyway instead of adding their own.
    """
    return np.empty(n, dtype=np.int64)


@numba.njit(**NJIT_KWARGS)
def log_weights_after_removal(
    state: SweepState,
    x: np.ndarray,
    params: NIWParams,
    log_new: float,
    pred_const: np.ndarray,
    out: np.ndarray,
    y: np.ndarray,
) -> int:
    """Log weights of every occupied cluster (``out[:K]``) and a new one (``out[K]``).

    ``log_new`` is the precomputed ``log alpha + log prior predictive(x)``.
    Returns ``K``.
    """
    k = state.k[0]
    nu0 = params.nu0
    for p in range(k):
        slot = state.order[p]
        n = state.counts[slot]
        kappa_n = params.kappa0 + n
        u = _mahalanobis(state.chol[slot], x, state.sums[slot], kappa_n, y)
        out[p] = (
            params.power * math.log(n)
            + pred_const[n]
            - 0.5 * state.logdet[slot]
            - 0.5 * (nu0 + n + 1.0) * math.log1p(u * kappa_n / (kappa_n + 1.0))
        )
    out[k] = log_new
    return k


@numba.njit(**NJIT_KWARGS)
def conditional_log_weights(
    xc: np.ndarray, state: SweepState, params: NIWParams, i: int
) -> tuple[np.ndarray, np.ndarray]:
    """Unnormalised log conditional of point ``i`` given the others, without moving it.

    Returns ``(slots, logw)``: the occupied slots after removing ``i`` followed
    by ``-1`` for a new cluster, and their log weights. The state is restored.
    """
    n, d = xc.shape
    log_new, pred_const, _ = sweep_tables(xc, params)
    logw = np.empty(n + 1)
    y = np.empty(d)
    v = np.empty(d)
    buf = np.empty((d, d))
    x = xc[i]
    old = state.labels[i]
    place_point(state, xc, i, old, -1, params, v, buf)
    k = log_weights_after_removal(state, x, params, log_new[i], pred_const, logw, y)
    slots = np.empty(k + 1, dtype=np.int64)
    slots[:k] = state.order[:k]
    slots[k] = -1
    out = logw[: k + 1].copy()
    place_point(state, xc, i, old, 1, params, v, buf)
    return slots, out
