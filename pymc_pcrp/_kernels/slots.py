"""Slot bookkeeping shared by the cluster families' sweep states, in numba.

Both sweep states, :class:`~pymc_pcrp._kernels.state.SweepState` (full
covariance) and :class:`~pymc_pcrp._kernels.diag_state.DiagState` (diagonal
covariance), keep their clusters in *slots* with the same family-agnostic
fields:

* ``labels[i]``, the slot of point ``i``;
* ``order[:k[0]]``, the occupied slots, and ``order[k[0]:]``, the free ones,
  with ``where[slot]`` the position of a slot in ``order``;
* ``counts``, ``sums`` and ``sumsq``, the per-slot sizes and sums of the
  centred points (and of their squares: outer products for the full family,
  per dimension for the diagonal one).

Each family adds its own per-slot caches (Cholesky factors, rates, ...). The
functions here touch only the shared fields and take either state: numba
compiles one specialisation per state type. See the module docstring of
:mod:`pymc_pcrp._kernels.state` for the capacity rule (``k[0] < capacity``)
that :func:`grow_slots` keeps.
"""

import numba
import numpy as np

from numba.core import types

from pymc_pcrp._kernels._config import NJIT_KWARGS

__all__ = [
    "SlotStateProxy",
    "SlotStateType",
    "clear_occupied",
    "close_slot",
    "free_slot",
    "grow_slots",
    "grown",
    "initial_capacity",
    "member_lists",
    "open_slot",
]


class SlotStateType(types.StructRef):
    """Base of the numba types of the sweep states (fields typed without literals)."""

    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(typ)) for name, typ in fields)


class SlotStateProxy:
    """Python side of a sweep state: readers of the shared fields and pickling.

    Mixed into each family's :class:`numba.experimental.structref.StructRefProxy`
    subclass, which lists its fields in ``_fields``. The fields read as NumPy
    arrays that share memory with the state; after a kernel grew the capacity,
    read them again rather than keep an old array. ``labels`` and ``k`` keep
    their arrays for the life of the state (growing replaces only the per-slot
    arrays), so Python reads them once: the step reads both at every draw, and
    a jitted getter costs microseconds. Pickling copies the arrays.
    """

    _fields: tuple[str, ...] = ()

    def __reduce__(self):
        return (type(self), tuple(getattr(self, name) for name in self._fields))

    @property
    def labels(self) -> np.ndarray:
        try:
            return self._labels
        except AttributeError:
            self._labels = _get_labels(self)
            return self._labels

    @property
    def counts(self) -> np.ndarray:
        return _get_counts(self)

    @property
    def sums(self) -> np.ndarray:
        return _get_sums(self)

    @property
    def sumsq(self) -> np.ndarray:
        return _get_sumsq(self)

    @property
    def order(self) -> np.ndarray:
        return _get_order(self)

    @property
    def where(self) -> np.ndarray:
        return _get_where(self)

    @property
    def k(self) -> np.ndarray:
        try:
            return self._k
        except AttributeError:
            self._k = _get_k(self)
            return self._k


# One reader per field for Python (numba reads the fields directly).
@numba.njit(**NJIT_KWARGS)
def _get_labels(state):
    return state.labels


@numba.njit(**NJIT_KWARGS)
def _get_counts(state):
    return state.counts


@numba.njit(**NJIT_KWARGS)
def _get_sums(state):
    return state.sums


@numba.njit(**NJIT_KWARGS)
def _get_sumsq(state):
    return state.sumsq


@numba.njit(**NJIT_KWARGS)
def _get_order(state):
    return state.order


@numba.njit(**NJIT_KWARGS)
def _get_where(state):
    return state.where


@numba.njit(**NJIT_KWARGS)
def _get_k(state):
    return state.k


@numba.njit(**NJIT_KWARGS)
def initial_capacity(labels: np.ndarray, capacity: int) -> int:
    """Slots of a fresh state for labels ``0..K-1``: ``min(N + 1, 2 K + 8)``, or ``capacity``.

    ``K`` is the largest label plus one; the result is at least ``K + 1``.
    """
    n = labels.shape[0]
    n_labels = 0
    for i in range(n):
        n_labels = max(n_labels, labels[i] + 1)
    cap = capacity if capacity > 0 else min(n + 1, 2 * n_labels + 8)
    return max(cap, n_labels + 1)


@numba.njit(**NJIT_KWARGS)
def open_slot(state, slot: int) -> None:
    """Move ``slot`` into the occupied prefix of ``order``."""
    k = state.k[0]
    pos = state.where[slot]
    other = state.order[k]
    state.order[k] = slot
    state.order[pos] = other
    state.where[slot] = k
    state.where[other] = pos
    state.k[0] = k + 1


@numba.njit(**NJIT_KWARGS)
def close_slot(state, slot: int) -> None:
    """Move an emptied ``slot`` out of the occupied prefix of ``order``."""
    last = state.k[0] - 1
    pos = state.where[slot]
    other = state.order[last]
    state.order[last] = slot
    state.order[pos] = other
    state.where[slot] = last
    state.where[other] = pos
    state.k[0] = last


@numba.njit(**NJIT_KWARGS)
def free_slot(state, slot: int) -> None:
    """Empty ``slot`` (size and sums) and move it out of the occupied prefix of ``order``."""
    state.counts[slot] = 0
    state.sums[slot] = 0.0
    state.sumsq[slot] = 0.0
    close_slot(state, slot)


@numba.njit(**NJIT_KWARGS)
def clear_occupied(state) -> None:
    """Zero the sizes and sums of the occupied slots (before they are rebuilt from labels)."""
    for p in range(state.k[0]):
        slot = state.order[p]
        state.counts[slot] = 0
        state.sums[slot] = 0.0
        state.sumsq[slot] = 0.0


@numba.njit(**NJIT_KWARGS)
def grown(a: np.ndarray, new_cap: int, fill: float) -> np.ndarray:
    """Copy of the per-slot array ``a`` with ``new_cap`` slots, the new ones set to ``fill``."""
    out = np.full((new_cap, *a.shape[1:]), fill, dtype=a.dtype)
    out[: a.shape[0]] = a
    return out


@numba.njit(**NJIT_KWARGS)
def _grown_positions(a: np.ndarray, new_cap: int) -> np.ndarray:
    """``order`` or ``where`` with ``new_cap`` slots: the new slots are free, in slot order."""
    out = np.arange(new_cap)
    out[: a.shape[0]] = a
    return out


@numba.njit(**NJIT_KWARGS)
def grow_slots(state) -> int:
    """Double the capacity of the shared fields when every slot is occupied.

    Returns the new capacity, or 0 when a slot was free (nothing changed); the
    caller then grows its family's own per-slot arrays to the returned size.
    The new slots are free (zero counts and sums) and come after the old ones
    in ``order``; occupied slots keep their numbers, so labels stay valid. The
    capacity never exceeds ``N + 1``, which ``N`` points can never fill.
    """
    cap = state.counts.shape[0]
    if state.k[0] < cap:
        return 0
    new_cap = min(2 * cap, state.labels.shape[0] + 1)
    state.counts = grown(state.counts, new_cap, 0)
    state.sums = grown(state.sums, new_cap, 0.0)
    state.sumsq = grown(state.sumsq, new_cap, 0.0)
    state.order = _grown_positions(state.order, new_cap)
    state.where = _grown_positions(state.where, new_cap)
    return new_cap


@numba.njit(**NJIT_KWARGS)
def member_lists(labels: np.ndarray, capacity: int) -> tuple[np.ndarray, np.ndarray]:
    """Linked lists of the members of every slot: ``head[slot] -> nxt[point] -> ... -> -1``.

    Points are listed in increasing index order.
    """
    n = labels.shape[0]
    head = np.full(capacity, -1, dtype=np.int64)
    nxt = np.full(n, -1, dtype=np.int64)
    for p in range(n - 1, -1, -1):
        nxt[p] = head[labels[p]]
        head[labels[p]] = p
    return head, nxt
