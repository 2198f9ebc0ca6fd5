"""Say so when the numba kernels are being compiled, and show how far it has got.

The first model sampled in a new environment compiles the kernels before its first
draw. numba caches the result on disk, so this happens once per environment (or in
every process when no cache folder is writable, see :mod:`pymc_pcrp._kernels._config`).
:func:`announce_compilation` logs one line when it starts, with the one measured
estimate of how long it takes (:data:`COMPILE_SECONDS`), and then, on a terminal,
writes a progress line to stderr every 15 seconds or so: how many kernels are
compiled, the one being compiled, the seconds so far.

Progress lines (here and while :func:`pymc_pcrp.stats.power_choice.choose_power` or
:func:`~pymc_pcrp.stats.cross_validation.cross_validate_power` fit their grids) go to stderr
when it is a terminal. The environment variable ``PYMC_PCRP_PROGRESS`` overrides
that: ``1`` shows them everywhere (in a log file, say), ``0`` never.
"""

from __future__ import annotations

import logging
import os
import sys
import time

from glob import glob

from pymc_pcrp._kernels._config import CACHING

__all__ = ["COMPILE_KERNELS", "COMPILE_SECONDS", "announce_compilation", "progress_wanted"]

_log = logging.getLogger("pymc_pcrp")
_announced = False

#: Wall seconds and numba compilations (kernels and the functions they call, each
#: signature counted) of a first default fit into an empty cache: ``pymc_pcrp.fit`` of
#: 200 two-dimensional points, measured with ``python benchmarks/compile_first_fit.py``
#: on a 2-core x86_64 machine at a load average of about 8 (287 s, 137 compilations);
#: an idle machine of the kind takes less.
COMPILE_SECONDS = 290
COMPILE_KERNELS = 137


def progress_wanted(stream=None) -> bool:
    """Whether to write progress lines to ``stream`` (stderr by default).

    ``PYMC_PCRP_PROGRESS=1`` (or ``true``, ``yes``) forces them and ``0`` (``false``,
    ``no``) silences them; otherwise they are shown only when the stream is a terminal.
    """
    value = os.environ.get("PYMC_PCRP_PROGRESS", "").strip().lower()
    if value in ("1", "true", "yes", "always"):
        return True
    if value in ("0", "false", "no", "never"):
        return False
    stream = sys.stderr if stream is None else stream
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # a closed or unusual stream
        return False


def _kernel_name(event) -> str | None:
    """``module.function`` of a compile event's function, or None for code outside the package."""
    func = getattr(event.data.get("dispatcher"), "py_func", None)
    module = getattr(func, "__module__", "") or ""
    if not module.startswith("pymc_pcrp"):
        return None
    return f"{module.rsplit('.', 1)[-1]}.{getattr(func, '__qualname__', '?')}"


class CompileProgress:
    """A numba compile-event listener that writes a progress line now and then.

    A line when the first package kernel starts compiling, then at most one every
    ``interval`` seconds (when a kernel, or a function it calls, starts), and one when about
    :data:`COMPILE_KERNELS` are done. Whole lines, never rewritten in place, so that
    they stay readable among PyMC's own messages, which the compilation overlaps.
    """

    def __init__(
        self, stream=None, expected: int = COMPILE_KERNELS, interval: float = 15.0
    ) -> None:
        self.stream = sys.stderr if stream is None else stream
        self.expected = expected
        self.interval = interval
        self.done = 0
        self.depth = 0
        self.start = time.perf_counter()
        self._last: float | None = None
        self._finished = False

    def _write(self, text: str) -> None:
        if progress_wanted(self.stream):
            self.stream.write(text + "\n")
            self.stream.flush()

    def started(self, name: str | None) -> None:
        # nested compilations count too: one entry kernel compiles most of the others
        if name is not None and not self._finished:
            now = time.perf_counter()
            if self._last is None:
                self.start = now
            if self._last is None or now - self._last >= self.interval:
                self._last = now
                self._write(
                    f"pymc_pcrp: compiling numba kernels: {min(self.done, self.expected)} of "
                    f"about {self.expected} done, {now - self.start:.0f} s of about "
                    f"{COMPILE_SECONDS} s; now {name}"
                )
        self.depth += 1

    def finished(self, name: str | None) -> None:
        self.depth -= 1
        if name is None:
            return
        self.done += 1
        if self.done == self.expected and not self._finished:
            self._finished = True
            seconds = time.perf_counter() - self.start
            self._write(f"pymc_pcrp: compiled {self.done} numba kernels in {seconds:.0f} s")

    def listener(self):
        """Return a :class:`numba.core.event.Listener` that feeds this object."""
        from numba.core import event

        progress = self

        class _Listener(event.Listener):
            def on_start(self, ev):
                progress.started(_kernel_name(ev))

            def on_end(self, ev):
                progress.finished(_kernel_name(ev))

        return _Listener()


_progress: CompileProgress | None = None


def watch_compilation(stream=None) -> CompileProgress:
    """Install the compile-progress listener for the rest of the process (once); return it."""
    global _progress
    if _progress is None:
        from numba.core import event

        _progress = CompileProgress(stream)
        event.register("numba:compile", _progress.listener())
    return _progress


def _kernels_cached() -> bool:
    """Whether the step's kernels are compiled in this process or have an on-disk cache index.

    ``run_moves`` (sweeps and split-merge moves) is compiled by both of the step's
    entry kernels, ``advance`` (fixed NIW scale) and ``advance_scaled`` (learned scale).
    """
    from pymc_pcrp._kernels.chain import run_moves

    if run_moves.signatures:
        return True
    if not CACHING:
        return False
    try:
        # numba names a kernel's cache index <module>.<function>-<line>.nbi
        return bool(glob(os.path.join(run_moves.stats.cache_path, "chain.run_moves-*.nbi")))
    except (AttributeError, OSError, TypeError):  # an unfamiliar numba: stay silent
        return True


def announce_compilation() -> bool:
    """Log one line, once per process, if the kernels still need compiling; say if it did.

    It also starts the progress line of :class:`CompileProgress` (shown as
    :func:`progress_wanted` says).
    """
    global _announced
    if _announced or _kernels_cached():
        return False
    _announced = True
    where = "once per environment" if CACHING else "in every new process: no writable cache"
    _log.warning(
        "pymc_pcrp: compiling the numba kernels before the first draw (%s; about %d s on "
        "a small machine).",
        where,
        COMPILE_SECONDS,
    )
    watch_compilation()
    return True
