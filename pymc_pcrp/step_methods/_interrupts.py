"""Ctrl-C inside a compiled kernel reaches PyMC as the interrupt it is.

Numba loads a cached kernel lazily, at its first call, and unpickles the
kernel's constants with Python code. A ``KeyboardInterrupt`` that lands there
comes out of the dispatcher as ``SystemError("... returned a result with an
exception set")`` whose ``__cause__`` is the interrupt. PyMC stops a chain and
returns the draws it has only for ``KeyboardInterrupt``; any other exception
ends ``pm.sample`` with a traceback, so ``fit`` and the ``cluster`` command
would report a crash instead of an interrupted run. :func:`passes_interrupts`
turns such an error back into ``KeyboardInterrupt``.
"""

from __future__ import annotations

import functools

from collections.abc import Callable
from typing import TypeVar

__all__ = ["caused_by_interrupt", "passes_interrupts"]

F = TypeVar("F", bound=Callable)


def caused_by_interrupt(err: BaseException) -> bool:
    """Whether ``err`` is, or was raised because of, a ``KeyboardInterrupt``."""
    seen: set[int] = set()
    current: BaseException | None = err
    while current is not None and id(current) not in seen:
        if isinstance(current, KeyboardInterrupt):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


def passes_interrupts(step: F) -> F:
    """Wrap a step method's ``step`` so an interrupt seen by a kernel stays one.

    Any exception caused by a ``KeyboardInterrupt`` is raised again as
    ``KeyboardInterrupt`` (chained to it); every other exception passes unchanged.
    """

    @functools.wraps(step)
    def step_passing_interrupts(self, point):
        try:
            return step(self, point)
        except KeyboardInterrupt:
            raise
        except Exception as err:
            if caused_by_interrupt(err):
                raise KeyboardInterrupt from err
            raise

    return step_passing_interrupts  # type: ignore[return-value]
