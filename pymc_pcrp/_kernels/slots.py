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

import functools

import numba
import numpy as np

from numba.core import types

from pymc_pcrp._kernels._config import NJIT_KWARGS

__all__ = [
    "SlotStateProxy",
    "SlotStateType",
    "clear_occupied",
    "close_slot",
    "field_reader",
    "free_slot",
    "grow_slots",
    "grown",
    "initial_capacity",
    "open_occupied",
    "open_slot",
]


class SlotStateType(types.StructRef):
    """Base of the numba types of the sweep states (fields typed without literals)."""

    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(typ)) for name, typ in fields)


@numba.njit(**NJIT_KWARGS)
def _shared_fields(state):
    """Return the shared fields of a state, for Python (numba reads them directly)."""
    return state.labels, state.counts, state.sums, state.sumsq, state.order, state.where, state.k


def field_reader(reader, index: int) -> property:
    """Read-only property ``reader(state)[index]``, for a jitted ``reader`` of fields."""
    return property(lambda self: reader(self)[index])


class SlotStateProxy:
    """Python side of a sweep state: readers of the shared fields and pickling.

    Mixed into each family's :class:`numba.experimental.structref.StructRefProxy`
    subclass, which lists its fields in ``_fields``. The fields read as NumPy
    arrays that share memory with the state; after a kernel grew the capacity,
    read them again rather than keep an old array. ``labels`` and ``k`` keep
    their arrays for the life of the state (growing replaces only the per-slot
    arrays), so Python reads them once: the step reads both at every draw, and
    a jitted reader costs microseconds. Pickling copies the arrays.
    """

    _fields: tuple[str, ...] = ()

    def __reduce__(self):
        return (type(self), tuple(getattr(self, name) for name in self._fields))

    labels = functools.cached_property(lambda self: _shared_fields(self)[0])
    counts = field_reader(_shared_fields, 1)
    sums = field_reader(_shared_fields, 2)
    sumsq = field_reader(_shared_fields, 3)
    order = field_reader(_shared_fields, 4)
    where = field_reader(_shared_fields, 5)
    k = functools.cached_property(lambda self: _shared_fields(self)[6])


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
def _place(state, slot: int, pos: int) -> None:
    """Swap ``slot`` with the slot at position ``pos`` of ``order``."""
    other = state.order[pos]
    old = state.where[slot]
    state.order[pos] = slot
    state.order[old] = other
    state.where[slot] = pos
    state.where[other] = old


@numba.njit(**NJIT_KWARGS)
def open_slot(state, slot: int) -> None:
    """Move ``slot`` into the occupied prefix of ``order``."""
    k = state.k[0]
    _place(state, slot, k)
    state.k[0] = k + 1


@numba.njit(**NJIT_KWARGS)
def close_slot(state, slot: int) -> None:
    """Move an emptied ``slot`` out of the occupied prefix of ``order``."""
    last = state.k[0] - 1
    _place(state, slot, last)
    state.k[0] = last


@numba.njit(**NJIT_KWARGS)
def open_occupied(state) -> None:
    """Open every slot that holds points, in slot order (a fresh state's ``order``)."""
    for slot in range(state.counts.shape[0]):
        if state.counts[slot] > 0:
            open_slot(state, slot)


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
