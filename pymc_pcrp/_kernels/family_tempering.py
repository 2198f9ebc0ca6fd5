r"""Parallel tempering for a family of the generic moves: a hot replica's kernel, in numba.

The same replicas and swaps as for the full family
(:mod:`pymc_pcrp._kernels.tempering`, :mod:`pymc_pcrp.sampler.tempering`), for any
family registered with :func:`~pymc_pcrp._kernels.family_moves.register_family`
(the table family). Replica ``m`` targets

.. math::

    \pi_m(z) \propto p(z)\, p(X \mid z)^{\beta_m},

and makes its draws by single-site Gibbs sweeps of the tempered full
conditional

.. math::

    p_\beta(z_i = k \mid z_{-i}) \propto n_k^r\, f(x_i \mid X_k)^{\beta},
    \qquad p_\beta(z_i = \text{new}) \propto \alpha\, f_0(x_i)^{\beta},

every option scored (no skip bounds), the row's own cluster with the row left
out. ``p(X | z)^beta`` factorises over the clusters as ``prod_k m(X_k)^beta``
and ``m(X_k) = prod_i f(x_i | rows of k before i)``, so this conditional is
exactly ``pi_m``'s: the kernel leaves ``pi_m`` invariant. The swap test needs
``L = log p(X | z) = sum_k log m(X_k)`` (:func:`log_likelihood`).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from pymc_pcrp._kernels._config import NJIT_KWARGS
from pymc_pcrp._kernels.draws import shuffle_in_place, sweep_order
from pymc_pcrp._kernels.family_moves import (
    block_marginal,
    draw_choice,
    move_row,
    resync,
    score_slots,
)

__all__ = ["advance_hot", "log_likelihood", "tempered_sweeps"]


@numba.njit(**NJIT_KWARGS)
def tempered_sweeps(rng, chain, beta, n_sweeps):
    """Run ``n_sweeps`` sweeps of the tempered full conditional in place.

    ``chain`` is ``(data, state, params, tables)`` as for
    :func:`~pymc_pcrp._kernels.family_moves.sweeps`; ``beta = 1`` is that sweep.
    Each sweep visits the rows in a fresh uniformly random order; a singleton
    drawing a new cluster stays where it is.
    """
    data, state, params, tables = chain
    n = data.shape[0]
    log_new, _, by_size = tables
    log_alpha = params[0]
    labels, counts, stats, cache = state.labels, state.counts, state.sums, state.cache
    order, where, k_arr = state.order, state.where, state.k
    logw = np.empty(n + 1)
    perm = sweep_order(n)
    for _ in range(n_sweeps):
        shuffle_in_place(rng, perm)
        for i in perm:
            old = labels[i]
            single = counts[old] == 1
            k = k_arr[0]
            score_slots(stats, cache, order, k, old, data, i, params, logw)
            for p in range(k):
                slot = order[p]
                logw[p] = beta * logw[p] + by_size[counts[slot] - (slot == old), 0]
            if single:
                logw[where[old]] = -math.inf
            logw[k] = log_alpha + beta * (log_new[i] - log_alpha)
            choice = draw_choice(rng, logw, k + 1)
            if choice == where[old] or (choice == k and single):
                continue
            # ``order[choice]`` is read before freeing a slot reorders ``order``
            move_row(state, data, i, old, order[choice], params)


@numba.njit(**NJIT_KWARGS)
def log_likelihood(state, params):
    """``sum_k log m(X_k)`` of the state's partition, from its statistics."""
    total = 0.0
    for p in range(state.k[0]):
        total += block_marginal(state.sums, state.order[p], params)
    return total


@numba.njit(**NJIT_KWARGS)
def advance_hot(rng, chain, beta, n_sweeps):
    """One draw of a hot replica: ``n_sweeps`` tempered sweeps; returns its ``L``.

    The state's statistics are rebuilt from its labels afterwards (so that
    rounding cannot accumulate in the Gaussian cells), as for the full family's
    :func:`~pymc_pcrp._kernels.tempering.advance_hot`.
    """
    data, state, params, _ = chain
    tempered_sweeps(rng, chain, beta, n_sweeps)
    resync(data, state, params)
    return log_likelihood(state, params)
