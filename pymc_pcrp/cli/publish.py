"""Publishing the ``cluster`` command's results at ``--out`` without ever losing a user's files.

The rules, in the order a run meets them:

1. **Before any work** (:func:`prepare`): the folder that holds ``--out`` must
   be a writable directory (missing folders are created, except on a path with
   ``..``, which the system would resolve differently once they exist);
   ``--out`` must not be a symbolic-link loop, the current folder or one of
   its parents, nor hold the data file; the file system must have room for
   the result's estimated size. ``--out`` itself must be missing, an empty
   folder, or (with ``--overwrite``) a folder this command wrote, recognised by
   its marker file :data:`MARKER_NAME` (a format version inside). Anything else
   is refused, before the fit.
2. **One run per ``--out``**: a lock (``flock`` on ``.NAME.lock`` beside it) is
   held from the checks to the end; a second run on the same ``--out`` is refused
   at once.
3. **Leftovers of killed runs** (``.NAME.incomplete-*`` and ``.NAME.old-*``
   folders holding the marker) are removed by the next run on the same
   ``--out``; an earlier result that a kill left aside as ``.NAME.old-*`` while
   ``--out`` is missing is put back first.
4. **At the end** (:func:`publish`) the state of ``--out`` is looked at again.
   Whatever appeared there during the run, or replaced the earlier result, is
   left alone, and the results go to a free sibling name instead (``NAME-2``,
   ``NAME-3``, ...), which the command reports. Only a folder carrying the
   marker is ever replaced, and only with ``--overwrite``.
5. **The swap is atomic**: on Linux, ``renameat2(RENAME_EXCHANGE)`` swaps the new
   and the old folder in one step, so ``--out`` holds the old or the new result,
   complete, at every instant. Where the exchange is not available the old
   result is first renamed aside, then the new one renamed in; a kill between
   the two leaves the old result complete as ``.NAME.old-*``, and the next run
   puts it back. Ctrl-C is blocked while the renames run.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import fcntl
import json
import os
import re
import secrets
import shutil
import signal

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "MARKER_FORMAT",
    "MARKER_NAME",
    "InterruptedAfterPublishing",
    "OutputError",
    "OutputPlan",
    "Published",
    "estimated_result_bytes",
    "is_result",
    "prepare",
    "publish",
    "release",
]

#: The file that marks a folder as a result of ``python -m pymc_pcrp cluster``.
MARKER_NAME = ".pymc_pcrp-result"
#: Version of the marker's content; a result with a newer one is never replaced.
MARKER_FORMAT = 1
_MARKER_TEXT = json.dumps({"written_by": "pymc_pcrp cluster", "format": MARKER_FORMAT}) + "\n"

# renameat2 flags (linux/fs.h) and the "current directory" file descriptor
_AT_FDCWD = -100
_RENAME_NOREPLACE = 1
_RENAME_EXCHANGE = 2


class OutputError(Exception):
    """A problem with ``--out`` found before any work: reported as bad input (exit 2)."""


class _NoRenameat2(Exception):
    """``renameat2`` or the flag asked is not available on this system or file system."""


@dataclass
class OutputPlan:
    """Where a run will publish, what was at ``--out`` when it started, and its lock."""

    out: Path  # symbolic links followed: the folder that will hold the result
    overwrite: bool
    start_state: str  # "missing", "empty" or "result"
    tmp: Path | None = None
    lock_fd: int | None = None
    lock_path: Path | None = None
    notes: list[str] = field(default_factory=list)  # what the start-up cleaning did


@dataclass(frozen=True)
class Published:
    """Where the results went and what, if anything, they replaced."""

    where: Path
    replaced: bool  # an earlier result at --out was replaced
    instead: str | None = None  # why the results are not at --out (None: they are)
    leftover: Path | None = None  # the earlier result, if it could not be removed


# -- renameat2 through ctypes ---------------------------------------------------------------


def _load_renameat2():
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        function = libc.renameat2  # glibc >= 2.28
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p]
    function.argtypes += [ctypes.c_uint]
    function.restype = ctypes.c_int
    return function


_RENAMEAT2 = _load_renameat2()


def _renameat2(src: Path, dst: Path, flags: int) -> None:
    """``renameat2(src, dst, flags)``; :class:`_NoRenameat2` if the system lacks it."""
    if _RENAMEAT2 is None:
        raise _NoRenameat2
    if _RENAMEAT2(_AT_FDCWD, os.fsencode(src), _AT_FDCWD, os.fsencode(dst), flags) == 0:
        return
    code = ctypes.get_errno()
    # ENOSYS: kernel before 3.15; EINVAL: the file system does not support the flag
    if code in (errno.ENOSYS, errno.EINVAL):
        raise _NoRenameat2
    raise OSError(code, os.strerror(code), str(src), None, str(dst))


def _exchange(a: Path, b: Path) -> None:
    _renameat2(a, b, _RENAME_EXCHANGE)


def _rename_no_replace(src: Path, dst: Path) -> None:
    """Rename ``src`` to ``dst``; ``FileExistsError`` if anything is at ``dst``."""
    try:
        _renameat2(src, dst, _RENAME_NOREPLACE)
    except _NoRenameat2:
        if os.path.lexists(dst):
            raise FileExistsError(errno.EEXIST, "File exists", str(dst)) from None
        os.rename(src, dst)  # a folder appearing in this instant makes it fail (ENOTEMPTY)


# -- the marker --------------------------------------------------------------------------


def _marker_format(folder: Path) -> int | None:
    """Return the marker's format version in ``folder``, None without a valid marker."""
    try:
        with open(folder / MARKER_NAME, encoding="utf-8") as handle:
            content = json.loads(handle.read(4096))
    except (OSError, ValueError):
        return None
    if not isinstance(content, dict) or content.get("written_by") != "pymc_pcrp cluster":
        return None
    version = content.get("format")
    return version if isinstance(version, int) else None


def is_result(folder: Path) -> bool:
    """Whether ``folder`` is a result of this command that this version may replace."""
    version = _marker_format(folder)
    return version is not None and version <= MARKER_FORMAT and not folder.is_symlink()


def _write_marker(folder: Path) -> None:
    with open(folder / MARKER_NAME, "w", encoding="utf-8") as handle:
        handle.write(_MARKER_TEXT)


def _remove_result(folder: Path) -> None:
    """Delete a result folder, its marker last: a kill midway leaves it recognisable."""
    for entry in os.scandir(folder):
        if entry.name == MARKER_NAME:
            continue
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path)
        else:
            os.unlink(entry.path)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(folder / MARKER_NAME)
    os.rmdir(folder)


# -- checks before the fit -----------------------------------------------------------------


def estimated_result_bytes(n_rows: int, n_columns: int, chains: int, draws: int) -> int:
    """Return a generous estimate of the size of a result folder (idata.nc dominates)."""
    labels = 8 * chains * draws * n_rows  # the label draws, int64
    per_draw = 8 * 16 * chains * draws  # n_clusters, log_joint and the other statistics
    data = 8 * n_rows * n_columns
    figures = 4 << 20
    return int(1.2 * (labels + per_draw + data + 24 * n_rows) + figures)


def _describe_size(n: float) -> str:
    for unit in ("bytes", "kB", "MB", "GB", "TB"):
        if n < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1000
    raise AssertionError  # pragma: no cover


def _check_parent(out: Path, given: str, needed_bytes: int | None) -> None:
    parent = out.parent
    shown = os.path.dirname(given) or "."
    if not os.path.isdir(parent) and ".." not in Path(given).parts:
        # missing folders are created (mkdir -p), unless a part of the path is a file
        with contextlib.suppress(OSError):
            os.makedirs(parent, exist_ok=True)
    if not os.path.isdir(parent):
        raise OutputError(
            f"--out '{given}': the folder that would hold it, '{shown}', does not exist (or a "
            "part of the path is not a folder); create it first or choose another --out"
        )
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputError(
            f"--out '{given}': the folder '{shown}' that would hold it is not writable "
            "(permissions, a read-only file system or an immutable folder); choose another --out"
        )
    if needed_bytes is not None:
        try:
            stats = os.statvfs(parent)
        except OSError:
            return
        free = stats.f_bavail * stats.f_frsize
        if free < needed_bytes:
            raise OutputError(
                f"--out '{given}': the file system holding '{shown}' has {_describe_size(free)} "
                f"free, but this run's result needs about {_describe_size(needed_bytes)} "
                "(mostly the label draws in idata.nc: chains x draws x rows); free some space, "
                "choose another --out, or ask for fewer --draws or --chains"
            )


def _check_place(out: Path, given: str, data_file: Path) -> None:
    resolved = Path(os.path.realpath(out))
    cwd = Path.cwd().resolve()
    if not out.name or resolved == cwd or resolved in cwd.parents:
        raise OutputError(
            f"--out '{given}' is the current directory or one of its parents; name a new "
            "directory for the results"
        )
    if resolved in data_file.resolve().parents:
        raise OutputError(f"--out '{given}' contains the data file; name another directory")


def _out_state(out: Path, given: str, overwrite: bool) -> str:
    """Return "missing", "empty" or "result"; raise OutputError for anything in the way."""
    if not os.path.lexists(out):
        return "missing"
    if not out.is_dir():
        raise OutputError(f"--out '{given}' exists and is not a directory; choose another --out")
    if not any(out.iterdir()):
        return "empty"
    version = _marker_format(out)
    if not overwrite:
        what = "an earlier result" if version is not None else "files this command did not write"
        raise OutputError(
            f"output directory '{given}' already exists and holds {what}; choose another --out"
            + (" or pass --overwrite to replace it" if version is not None else "")
        )
    if version is None:
        raise OutputError(
            f"output directory '{given}' is not empty and was not written by this command (it "
            f"has no {MARKER_NAME} marker file); refusing to overwrite it: choose another --out, "
            "or move its contents away yourself"
        )
    if version > MARKER_FORMAT:
        raise OutputError(
            f"output directory '{given}' holds a result of a newer pymc_pcrp (result format "
            f"{version}, this version writes {MARKER_FORMAT}); upgrade, or choose another --out"
        )
    blocked = [p.name for p in (out, *out.iterdir()) if not os.access(p, os.W_OK)]
    if blocked:
        raise OutputError(
            f"--out '{given}' cannot be replaced: {', '.join(map(repr, blocked[:3]))} is "
            "read-only or immutable (see lsattr); make it writable or choose another --out"
        )
    return "result"


def _resolve_out(given: str) -> Path:
    out = Path(given)
    try:
        os.stat(out)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise OutputError(
                f"--out '{given}' is a symbolic link that leads back to itself (a loop); "
                "remove the link or choose another --out"
            ) from None
    if out.is_symlink():
        # Work on the link's target (existing or not): the temporary folder is made beside
        # the target and renamed onto it, so the link keeps pointing at the result.
        out = Path(os.path.realpath(out))
    return out


# -- the lock -------------------------------------------------------------------------------


def _lock(out: Path, given: str) -> tuple[int, Path]:
    """Lock ``.NAME.lock`` beside ``out`` for this run; refuse if another run holds it."""
    path = out.parent / f".{out.name}.lock"
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip()
            os.close(fd)
            raise OutputError(
                f"another run (pid {holder or 'unknown'}) is writing to --out '{given}'; wait "
                "for it to finish or choose another --out"
            ) from None
        # the holder before us may have removed the file after we opened it: then retry
        try:
            same = os.path.samestat(os.fstat(fd), os.stat(path))
        except FileNotFoundError:
            same = False
        if same:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
            return fd, path
        os.close(fd)


def release(plan: OutputPlan) -> None:
    """Remove the temporary folder if still there, then remove and release the lock."""
    if plan.tmp is not None and os.path.lexists(plan.tmp):
        with contextlib.suppress(OSError):
            _remove_result(plan.tmp)
        plan.tmp = None
    if plan.lock_fd is not None:
        with contextlib.suppress(OSError):
            os.unlink(plan.lock_path)  # while still holding it (see _lock)
        os.close(plan.lock_fd)
        plan.lock_fd = None


# -- leftovers of killed runs ------------------------------------------------------------------


def _leftovers(out: Path) -> list[Path]:
    pattern = re.compile(rf"^\.{re.escape(out.name)}\.(incomplete|old)-[0-9a-f]{{8}}$")
    try:
        names = os.listdir(out.parent)
    except OSError:
        return []
    return sorted(out.parent / name for name in names if pattern.match(name))


def _clean_leftovers(out: Path, given: str) -> list[str]:
    """Remove what killed runs on ``out`` left behind; put back an earlier result left aside."""
    notes = []
    leftovers = _leftovers(out)
    aside = [p for p in leftovers if ".old-" in p.name and is_result(p)]
    if not os.path.lexists(out) and len(aside) == 1:
        os.rename(aside[0], out)
        notes.append(
            f"A killed run had left the earlier result at '{aside[0].name}'; it is back at "
            f"'{given}'."
        )
        leftovers.remove(aside[0])
    for path in leftovers:
        if path.is_symlink() or not path.is_dir():
            continue
        try:
            if _marker_format(path) is not None:
                _remove_result(path)
            elif not any(path.iterdir()):
                path.rmdir()
            else:
                continue
        except OSError:
            continue
        notes.append(
            f"Removed '{path.name}', left behind by an earlier run that was killed or interrupted."
        )
    return notes


# -- the two entry points --------------------------------------------------------------------


def prepare(
    given: str, overwrite: bool, data_file: Path, needed_bytes: int | None = None
) -> OutputPlan:
    """Check ``--out`` before any work, lock it, clean leftovers, make the temporary folder.

    Raises
    ------
    OutputError
        For any ``--out`` that this run could not publish to, with the reason and
        the fix.
    """
    out = _resolve_out(given)
    _check_place(out, given, data_file)
    _check_parent(out, given, needed_bytes)
    fd, lock_path = _lock(out, given)
    plan = OutputPlan(out=out, overwrite=overwrite, start_state="missing")
    plan.lock_fd, plan.lock_path = fd, lock_path
    try:
        plan.notes = _clean_leftovers(out, given)
        plan.start_state = _out_state(out, given, overwrite)
        plan.tmp = _make_temporary_dir(out)
    except BaseException:
        release(plan)
        raise
    return plan


def _make_temporary_dir(out: Path) -> Path:
    """Create ``.NAME.incomplete-XXXXXXXX`` beside ``out``, with the marker in it."""
    while True:
        tmp = out.parent / f".{out.name}.incomplete-{secrets.token_hex(4)}"
        try:
            tmp.mkdir()  # honours the umask, unlike mkdtemp
        except FileExistsError:
            continue
        _write_marker(tmp)
        return tmp


@contextlib.contextmanager
def sigint_blocked() -> Iterator[None]:
    """Hold SIGINT back (it stays pending) while the renames run."""
    try:
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    except (AttributeError, ValueError, OSError):  # not the main thread, or no pthreads
        yield
        return
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _free_sibling(out: Path) -> Path:
    for n in range(2, 10_000):
        candidate = out.with_name(f"{out.name}-{n}")
        if not os.path.lexists(candidate):
            return candidate
    raise OSError(errno.EEXIST, f"no free name beside '{out}'")


def _publish_elsewhere(plan: OutputPlan, why: str) -> Published:
    """Leave ``--out`` alone; move the results to a free sibling name."""
    while True:
        target = _free_sibling(plan.out)
        try:
            _rename_no_replace(plan.tmp, target)
        except (FileExistsError, OSError) as err:
            if isinstance(err, FileExistsError) or err.errno in (errno.ENOTEMPTY, errno.EEXIST):
                continue
            raise
        plan.tmp = None
        return Published(where=target, replaced=False, instead=why)


def _what_is_at(out: Path) -> str:
    if not os.path.lexists(out):
        return "nothing"
    if out.is_symlink() or not out.is_dir():
        return "a file"
    return "a result of this command" if is_result(out) else "a folder this run did not write"


class InterruptedAfterPublishing(Exception):
    """Ctrl-C came after the results were published (it was held back during the renames)."""

    def __init__(self, published: Published) -> None:
        super().__init__(str(published.where))
        self.published = published


def publish(plan: OutputPlan, before_renaming=None) -> Published:
    """Move the finished temporary folder to ``--out`` under the rules of the module docstring.

    ``before_renaming`` is called with SIGINT already blocked, just before the
    first rename; it may raise (for example ``KeyboardInterrupt`` when an
    interrupt was seen) to publish nothing. A Ctrl-C that arrives after that
    (held back while the renames run) raises :class:`InterruptedAfterPublishing`,
    which says where the results are.
    """
    done: list[Published] = []
    old: list[Path] = []
    try:
        with sigint_blocked():
            if before_renaming is not None:
                before_renaming()
            done.append(_rename_into_place(plan, old))
        if old:
            try:
                _remove_result(old[0])
            except OSError:
                done[0] = Published(where=plan.out, replaced=True, leftover=old[0])
    except KeyboardInterrupt:
        if not done:
            raise
        published = done[0]
        if old and os.path.lexists(old[0]):
            published = Published(where=published.where, replaced=True, leftover=old[0])
        raise InterruptedAfterPublishing(published) from None
    return done[0]


def _rename_into_place(plan: OutputPlan, old: list[Path]) -> Published:
    """Do the renames of :func:`publish` (SIGINT blocked); the earlier result's place in ``old``."""
    out, tmp = plan.out, plan.tmp
    assert tmp is not None
    appeared = (
        f"'{out}' changed while this run was working (it now holds {_what_is_at(out)}, "
        f"but held {'an earlier result' if plan.start_state == 'result' else 'no result'} "
        "when the run started) and was left as it is"
    )
    state = _what_is_at(out)
    if state == "nothing":
        try:
            _rename_no_replace(tmp, out)
        except FileExistsError:
            return _publish_elsewhere(plan, appeared)
        plan.tmp = None
        return Published(where=out, replaced=False)
    if state == "a folder this run did not write" and plan.start_state == "empty":
        try:
            os.rename(tmp, out)  # replaces an empty folder, fails if it has filled up
        except OSError as err:
            if err.errno in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR, errno.EISDIR):
                return _publish_elsewhere(plan, appeared)
            raise
        plan.tmp = None
        return Published(where=out, replaced=False)
    if state != "a result of this command" or not plan.overwrite:
        return _publish_elsewhere(plan, appeared)
    aside = _swap(tmp, out)
    if aside is None:  # what was at --out stopped being a result in the last instant
        return _publish_elsewhere(plan, appeared)
    plan.tmp = None
    old.append(aside)
    return Published(where=out, replaced=True)


def _swap(tmp: Path, out: Path) -> Path | None:
    """Put ``tmp`` at ``out``; return where the earlier result is now (None: swapped back)."""
    aside = out.parent / f".{out.name}.old-{secrets.token_hex(4)}"
    try:
        _exchange(tmp, out)
    except _NoRenameat2:
        # rename the old result aside, then the new one in: a kill between the two leaves
        # the old result complete at `aside`, which the next run puts back (_clean_leftovers)
        os.rename(out, aside)
        if not is_result(aside):
            os.rename(aside, out)
            return None
        os.rename(tmp, out)
        return aside
    # tmp now holds what was at out: if it was replaced by something else in the instant
    # between the last look and the exchange, exchange back
    if not is_result(tmp):
        _exchange(tmp, out)
        return None
    os.rename(tmp, aside)
    return aside
