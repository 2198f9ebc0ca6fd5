"""Ctrl-C from the first instant of the command line (``python -m pymc_pcrp``, ``pymc-pcrp``).

``pymc_pcrp/__init__.py`` imports this module before anything else. When the
process is the command line, not a program importing the library, it installs
a SIGINT handler that ends the process at once, with status 130 and one line
on stderr, while the package's imports run: nothing has been written yet, and
a ``KeyboardInterrupt`` raised inside the import machinery could be printed and
ignored ("Exception ignored in ... _get_module_lock") and the run go on.

:func:`command_handler` then replaces it when the command starts
(:func:`pymc_pcrp.cli.main`): from there, SIGINT raises ``KeyboardInterrupt``
as usual and is also recorded, so that a Ctrl-C that some library swallowed can
still stop the command from publishing (:func:`interrupt_seen`).

When the command ends, :func:`restore` makes a Ctrl-C during the interpreter's
shutdown end the process at once with the command's own status, instead of
Python dying of the signal.

A program that imports the library is left alone: its SIGINT handling is its own.
"""

from __future__ import annotations

import os
import signal
import sys
import threading

__all__ = ["command_handler", "interrupt_seen", "is_command_line", "restore"]

_SEEN = [False]
_START_UP_MESSAGE = b"error: Interrupted while starting up; nothing was written.\n"


def is_command_line() -> bool:
    """Whether this process was started as ``python -m pymc_pcrp`` or as ``pymc-pcrp``."""
    argv0 = sys.argv[0] if sys.argv else ""
    if argv0 == "-m":  # python -m NAME, while NAME is being located and imported
        words = list(getattr(sys, "orig_argv", []))
        for i, word in enumerate(words[:-1]):
            if word == "-m":
                return words[i + 1] == "pymc_pcrp"
        return any(word == "-mpymc_pcrp" for word in words)
    return os.path.basename(argv0).removesuffix(".exe") == "pymc-pcrp"


def _during_start_up(signum, frame) -> None:
    _SEEN[0] = True
    os.write(2, _START_UP_MESSAGE)
    os._exit(130)


def _install_start_up_handler() -> None:
    # only over Python's own handler: a SIGINT ignored by the caller stays ignored
    if _COMMAND_LINE[0] and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _during_start_up)


def _record_and_raise(signum, frame) -> None:
    _SEEN[0] = True
    signal.default_int_handler(signum, frame)


def restore(previous, status: int | None = None) -> None:
    """Put back the handler :func:`command_handler` returned, when the command ends.

    In the command-line process, a Ctrl-C after the command's end (while the
    interpreter shuts down, when Python would die of the signal, status -2)
    instead ends the process at once with the command's ``status``: its work is
    done and its result, if any, complete.

    The record of a Ctrl-C (:func:`interrupt_seen`) belongs to the command that
    ended: it is cleared, so that nothing run after it in the same process
    (another command, a library call) takes it for its own interrupt.
    """
    _SEEN[0] = False
    if previous is None or threading.current_thread() is not threading.main_thread():
        return
    if status is not None and _COMMAND_LINE[0] and previous is signal.default_int_handler:

        def after_the_end(signum, frame) -> None:
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except (OSError, ValueError, AttributeError):
                    pass
            os._exit(status)

        signal.signal(signal.SIGINT, after_the_end)
        return
    signal.signal(signal.SIGINT, previous)


def command_handler():
    """Install the command's SIGINT handler; return the one to restore when it ends.

    The start-up handler, or Python's default, is replaced by one that records
    the interrupt and raises ``KeyboardInterrupt``; an ignored SIGINT stays
    ignored. The record starts empty.
    """
    _SEEN[0] = False
    if threading.current_thread() is not threading.main_thread():
        return None  # signal handlers belong to the main thread
    previous = signal.getsignal(signal.SIGINT)
    if previous in (signal.default_int_handler, _during_start_up):
        signal.signal(signal.SIGINT, _record_and_raise)
    if previous is _during_start_up:
        previous = signal.default_int_handler
    return previous


def interrupt_seen() -> bool:
    """Whether SIGINT reached the command's handler since :func:`command_handler`.

    False again once the command has ended (:func:`restore`).
    """
    return _SEEN[0]


# decided at the package's first import: once runpy runs __main__, sys.argv[0] is its path
_COMMAND_LINE = [is_command_line()]
_install_start_up_handler()
