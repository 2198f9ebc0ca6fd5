"""Ctrl-C inside a compiled kernel reaches PyMC as the interrupt it is.

Numba loads a cached kernel lazily, at its first call, and unpickles the
kernel's constants with Python code. A ``KeyboardInterrupt`` that lands there
comes out of the dispatcher as ``SystemError("... returned a result with an
exception set")`` whose ``__cause__`` is the interrupt. PyMC stops a chain and
returns the draws it has only for ``KeyboardInterrupt``; any other exception
ends ``pm.sample`` with a traceback, so ``fit`` and the ``cluster`` command
would report a crash instead of an interrupted run. :func:`passes_interrupts`
turns such an error back into ``KeyboardInterrupt``.

Worse, an interrupt raised while numba loads or compiles a kernel can leave
that kernel half registered with LLVM; the next call (PyMC starts the next
chain with a step before any callback can stop it) may then crash the process
with a segmentation fault (seen three times in CI: the interrupted ``cluster``
command died with SIGSEGV). :func:`watch_interrupts`, which ``fit`` wraps
around its sampling, therefore holds a Ctrl-C back while Python code of numba
or llvmlite runs and delivers it as soon as control is back in other code
(within :data:`RETRY_SECONDS` of leaving numba). A compiled kernel itself is
never interrupted (Python runs signal handlers between bytecodes only), so
what is held back is only numba's own loading and compiling. A step of
:class:`~pymc_pcrp.PCRPGibbs` or :class:`~pymc_pcrp.PCRPHyper` is also run to its
end, and the interrupt raised the moment it returns (see :func:`passes_interrupts`):
the segmentation fault was seen again on 2026-11-29 with loading held back, in the
first compiled call of a step right after an interrupt.
"""

from __future__ import annotations

import _thread
import functools
import inspect
import os
import signal
import threading

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import FrameType
from typing import TypeVar

import llvmlite
import numba

__all__ = [
    "RETRY_SECONDS",
    "InterruptWatch",
    "caused_by_interrupt",
    "inside_compiler",
    "passes_interrupts",
    "watch_interrupts",
]

F = TypeVar("F", bound=Callable)

#: How long a held-back Ctrl-C waits before it is tried again.
RETRY_SECONDS = 0.05

# Steps (wrapped by passes_interrupts) running now in the main thread; a Ctrl-C is held
# back while any runs.
_STEPS_RUNNING = [0]
# The delivery of a Ctrl-C held back by a running step: called when the outermost step
# returns (or when the watch ends first); None when nothing is held back by a step.
_PENDING: list[Callable[[], None] | None] = [None]

_COMPILER_DIRS = tuple(
    os.path.dirname(os.path.abspath(module.__file__)) + os.sep for module in (numba, llvmlite)
)


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
    Under :func:`watch_interrupts` a Ctrl-C that comes while the step runs is
    held back until it has finished its work, then raised as the step returns
    (the draw it made is not returned): a step stopped halfway could leave its
    cached state (cluster statistics, scale tables, the compiled call's types)
    out of step with the labels, and PyMC calls it again when the next chain
    starts.
    """

    @functools.wraps(step)
    def step_passing_interrupts(self, point):
        # only the main thread's steps count: Ctrl-C is handled there, and steps running in
        # other threads (a threaded Dask worker) must not hold it back for ever
        counted = int(threading.current_thread() is threading.main_thread())
        _STEPS_RUNNING[0] += counted
        try:
            return step(self, point)
        except KeyboardInterrupt:
            raise
        except Exception as err:
            if caused_by_interrupt(err):
                raise KeyboardInterrupt from err
            raise
        finally:
            _STEPS_RUNNING[0] -= counted
            if counted and _STEPS_RUNNING[0] == 0:
                _deliver_pending()

    return step_passing_interrupts  # type: ignore[return-value]


def _deliver_pending() -> None:
    """Deliver a Ctrl-C held back by a step, if any (raises ``KeyboardInterrupt``)."""
    deliver, _PENDING[0] = _PENDING[0], None
    if deliver is not None:
        deliver()


def inside_compiler(frame: FrameType | None) -> bool:
    """Whether ``frame`` or a frame that called it runs Python code of numba or llvmlite."""
    while frame is not None:
        if os.path.abspath(frame.f_code.co_filename).startswith(_COMPILER_DIRS):
            return True
        frame = frame.f_back
    return False


@dataclass
class InterruptWatch:
    """What :func:`watch_interrupts` saw.

    Attributes
    ----------
    seen : bool
        Whether SIGINT arrived while the watch was on.
    held_back : int
        How many times its delivery was put off because numba was loading or
        compiling a kernel or a step was running.
    """

    seen: bool = False
    held_back: int = 0


@contextmanager
def watch_interrupts() -> Iterator[InterruptWatch]:
    """Record Ctrl-C and keep it out of numba's loading and compiling.

    Inside the ``with`` block SIGINT goes to a handler that records it and, when
    the interrupted code is not numba's or llvmlite's, hands it to the handler
    that was installed before (Python's default raises ``KeyboardInterrupt``).
    While a step method wrapped by :func:`passes_interrupts` runs in the main
    thread, the signal is handed on the moment the step returns. When numba is
    at work outside a step, the signal is raised again in the main thread after
    :data:`RETRY_SECONDS`, until it lands outside numba. The previous handler is
    restored on exit; a Ctrl-C still held back then is handed on at that moment.

    Nothing is changed outside the main thread (Python runs signal handlers
    there only) or when SIGINT is ignored or left to the operating system's
    default: the watch then records nothing.

    Yields
    ------
    InterruptWatch
    """
    watch = InterruptWatch()
    previous = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread() or not callable(previous):
        yield watch
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        watch.seen = True
        if _STEPS_RUNNING[0] > 0:  # handed on when the outermost step returns
            watch.held_back += 1
            _PENDING[0] = lambda: previous(signum, inspect.currentframe())
            return
        if inside_compiler(frame):
            watch.held_back += 1
            retry = threading.Timer(RETRY_SECONDS, _thread.interrupt_main)
            retry.daemon = True
            retry.start()
            return
        previous(signum, frame)

    signal.signal(signal.SIGINT, handler)
    try:
        yield watch
    finally:
        signal.signal(signal.SIGINT, previous)
        _deliver_pending()
