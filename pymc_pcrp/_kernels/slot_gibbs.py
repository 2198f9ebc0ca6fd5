"""Gibbs sweep over labelled slots, given every point's log-likelihood under every slot.

The kernel of :class:`~pymc_pcrp.PCRPSlotGibbs`. The labels ``z`` of a
``PowerCRP(..., max_clusters=K)`` are slots ``0..K-1``; with the cluster
parameters fixed, point ``i`` is seated again with weight

    n_{s,-i}**r * exp(loglik[s, i])              for an occupied slot s,
    alpha / (K - K_{-i}) * exp(loglik[s, i])     for each empty slot s,

``K_{-i}`` the number of slots the other points occupy. These are the full
conditionals of the slot prior times a likelihood in which point ``i`` depends
on the labels through ``z[i]`` only. The parameters do not move during a sweep,
so one matrix ``loglik`` of shape ``(K, N)`` serves the whole sweep.
"""

import math

import numba
import numpy as np

from pymc_pcrp._kernels._config import NJIT_KWARGS

__all__ = ["slot_counts", "slot_gibbs_sweep"]


@numba.njit(**NJIT_KWARGS)
def slot_counts(labels: np.ndarray, n_slots: int) -> np.ndarray:
    """Return ``counts[s] = #{i: labels[i] == s}`` for ``s = 0..n_slots-1`` (``int64``)."""
    counts = np.zeros(n_slots, dtype=np.int64)
    for i in range(labels.size):
        counts[labels[i]] += 1
    return counts


@numba.njit(**NJIT_KWARGS)
def slot_gibbs_sweep(
    rng: np.random.Generator,
    labels: np.ndarray,
    loglik: np.ndarray,
    log_alpha: float,
    power: float,
    order: np.ndarray,
) -> tuple[int, int]:
    """Seat every point of ``order`` again from its full conditional over slots, in place.

    Parameters
    ----------
    rng : numpy.random.Generator
        Source of randomness; one uniform draw per point.
    labels : numpy.ndarray
        Integer slot labels in ``0..K-1`` of the ``N`` points; updated in place.
    loglik : numpy.ndarray
        ``float64`` array of shape ``(K, N)``: ``loglik[s, i]`` is the log-likelihood
        of point ``i`` when it sits in slot ``s``.
    log_alpha : float
        Log concentration of the pCRP.
    power : float
        Power ``r`` of the pCRP.
    order : numpy.ndarray
        The points to visit, in this order (a permutation of ``0..N-1`` for a
        full sweep).

    Returns
    -------
    n_moved, n_occupied : int
        Number of points whose slot changed, and number of occupied slots after
        the sweep.
    """
    n_slots = loglik.shape[0]
    counts = slot_counts(labels, n_slots)
    occupied = 0
    for s in range(n_slots):
        if counts[s] > 0:
            occupied += 1
    log_w = np.empty(n_slots)
    moved = 0
    for t in range(order.size):
        i = order[t]
        old = labels[i]
        counts[old] -= 1
        if counts[old] == 0:
            occupied -= 1
        empty = n_slots - occupied
        log_new = log_alpha - math.log(empty) if empty > 0 else -np.inf
        top = -np.inf
        for s in range(n_slots):
            c = counts[s]
            prior = power * math.log(c) if c > 0 else log_new
            log_w[s] = prior + loglik[s, i]
            if log_w[s] > top:
                top = log_w[s]
        if top == -np.inf:  # no slot can hold the point (an impossible state): leave it
            counts[old] += 1
            if counts[old] == 1:
                occupied += 1
            continue
        total = 0.0
        for s in range(n_slots):
            log_w[s] = math.exp(log_w[s] - top)
            total += log_w[s]
        u = rng.random() * total
        new = n_slots - 1
        cum = 0.0
        for s in range(n_slots):
            cum += log_w[s]
            if u < cum:
                new = s
                break
        while log_w[new] == 0.0 and new > 0:  # rounding at the top end: the last positive slot
            new -= 1
        labels[i] = new
        if counts[new] == 0:
            occupied += 1
        counts[new] += 1
        if new != old:
            moved += 1
    return moved, occupied
