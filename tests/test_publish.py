"""Publishing at ``--out`` (pymc_pcrp.cli.publish): no user file lost, no silent replacement.

A kill is simulated by raising ``Killed`` (not an ``Exception``, so nothing catches it)
from the step where it should land, then dropping the run's lock as the kernel would,
without any of the run's own clean-up.
"""

import os
import signal
import subprocess

from pathlib import Path

import pytest

from pymc_pcrp.cli import publish as publishing
from pymc_pcrp.cli.publish import MARKER_NAME, OutputError, is_result

DATA = Path("data.csv")


class Killed(BaseException):
    """Stands for SIGKILL: ends the run at this instant, no clean-up runs."""


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    DATA.write_text("x\n1\n2\n")


def _result(folder: Path, text: str) -> Path:
    """Write a complete-looking result of this command into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / MARKER_NAME).write_text('{"written_by": "pymc_pcrp cluster", "format": 1}\n')
    (folder / "summary.md").write_text(text)
    (folder / "labels.csv").write_text(f"row,label\n0,{text}\n")
    return folder


def _finish(plan, text: str) -> None:
    """What a run writes into its temporary folder."""
    (plan.tmp / "summary.md").write_text(text)
    (plan.tmp / "labels.csv").write_text(f"row,label\n0,{text}\n")


def _is_complete(folder: Path, text: str) -> bool:
    return (
        is_result(folder)
        and (folder / "summary.md").read_text() == text
        and (folder / "labels.csv").read_text() == f"row,label\n0,{text}\n"
    )


def _hidden(parent: Path = Path()) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if p.name.startswith("."))


def _die(plan) -> None:
    """The kernel's part of a kill: the lock is dropped, nothing else is cleaned."""
    os.close(plan.lock_fd)


def _run(given="res", overwrite=False, text="new", **kwargs):
    plan = publishing.prepare(given, overwrite, DATA, **kwargs)
    _finish(plan, text)
    return plan


def test_new_folder_is_published_with_its_marker_and_nothing_left_beside():
    plan = _run()
    published = publishing.publish(plan)
    publishing.release(plan)
    assert published.where == Path("res").absolute() or published.where == Path("res")
    assert published.instead is None and not published.replaced
    assert _is_complete(Path("res"), "new")
    assert _hidden() == []  # no temporary folder, no lock file


def test_a_second_run_on_the_same_out_is_refused_while_the_first_runs():
    first = _run()
    with pytest.raises(OutputError, match=rf"another run \(pid {os.getpid()}\) is writing"):
        publishing.prepare("res", False, DATA)
    publishing.publish(first)
    publishing.release(first)
    # once the first has published, a second run without --overwrite is refused too
    with pytest.raises(OutputError, match=r"holds an earlier result; .* --overwrite"):
        publishing.prepare("res", False, DATA)
    assert _is_complete(Path("res"), "new")


def test_a_folder_that_appears_during_the_run_is_left_alone():
    plan = _run()
    Path("res").mkdir()
    Path("res", "notes.txt").write_text("my thesis")
    published = publishing.publish(plan)
    publishing.release(plan)
    assert Path("res", "notes.txt").read_text() == "my thesis"
    assert sorted(p.name for p in Path("res").iterdir()) == ["notes.txt"]
    assert published.where.name == "res-2" and _is_complete(Path("res-2"), "new")
    assert "changed while this run was working" in published.instead
    assert "a folder this run did not write" in published.instead
    assert _hidden() == []


def test_an_empty_folder_that_fills_up_during_the_run_is_left_alone():
    Path("res").mkdir()
    plan = _run()
    Path("res", "notes.txt").write_text("mine")
    published = publishing.publish(plan)
    publishing.release(plan)
    assert Path("res", "notes.txt").read_text() == "mine"
    assert published.where.name == "res-2"
    # an empty folder that stays empty is simply filled
    Path("other").mkdir()
    plan = _run("other")
    assert publishing.publish(plan).where.name == "other"
    publishing.release(plan)
    assert _is_complete(Path("other"), "new")


@pytest.mark.parametrize("exchange", [True, False], ids=["renameat2", "two renames"])
def test_overwrite_replaces_an_earlier_result(monkeypatch, exchange):
    if not exchange:
        monkeypatch.setattr(publishing, "_RENAMEAT2", None)
    _result(Path("res"), "old")
    plan = _run(overwrite=True)
    published = publishing.publish(plan)
    publishing.release(plan)
    assert published.replaced and published.where.name == "res"
    assert _is_complete(Path("res"), "new")
    assert _hidden() == []


def test_renameat2_is_available_here():
    """The atomic exchange must be what runs on this Linux machine, not the fallback."""
    if not os.uname().sysname == "Linux":
        pytest.skip("renameat2 is Linux's")
    assert publishing._RENAMEAT2 is not None


@pytest.mark.parametrize("exchange", [True, False], ids=["renameat2", "two renames"])
def test_overwrite_leaves_a_result_replaced_by_someone_else_alone(monkeypatch, exchange):
    if not exchange:
        monkeypatch.setattr(publishing, "_RENAMEAT2", None)
    _result(Path("res"), "old")
    plan = _run(overwrite=True)
    # meanwhile the user moves the old result away and puts notes in its place
    Path("res").rename("kept")
    Path("res").mkdir()
    Path("res", "summary.md").write_text("my notes")
    published = publishing.publish(plan)
    publishing.release(plan)
    assert Path("res", "summary.md").read_text() == "my notes"
    assert published.where.name == "res-2" and not published.replaced
    assert _is_complete(Path("res-2"), "new") and _is_complete(Path("kept"), "old")


def test_overwrite_refuses_a_folder_this_command_did_not_write():
    notes = Path("notes")
    notes.mkdir()
    (notes / "summary.md").write_text("my thesis")
    with pytest.raises(OutputError, match=f"was not written by this command .*{MARKER_NAME}"):
        publishing.prepare("notes", True, DATA)
    assert (notes / "summary.md").read_text() == "my thesis"
    assert _hidden() == []  # no lock file, no temporary folder left


def test_overwrite_refuses_a_result_of_a_newer_format():
    _result(Path("res"), "old")
    Path("res", MARKER_NAME).write_text('{"written_by": "pymc_pcrp cluster", "format": 99}')
    with pytest.raises(OutputError, match=r"newer pymc_pcrp .*format 99"):
        publishing.prepare("res", True, DATA)


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ("nonexistent/../res", "'nonexistent/..', does not exist"),
        ("data.csv/res", "does not exist \\(or a part of the path is not a folder\\)"),
        ("data.csv", "exists and is not a directory"),
        (".", "current directory"),
    ],
)
def test_an_out_that_cannot_be_published_to_is_refused_before_the_fit(given, message):
    with pytest.raises(OutputError, match=message):
        publishing.prepare(given, True, DATA)


def test_missing_folders_on_the_way_are_created():
    plan = _run("a/b/res")
    assert publishing.publish(plan).where == Path("a/b/res")
    publishing.release(plan)
    assert _is_complete(Path("a/b/res"), "new")


def test_a_symbolic_link_loop_is_refused():
    os.symlink("loop_b", "loop_a")
    os.symlink("loop_a", "loop_b")
    with pytest.raises(OutputError, match="symbolic link that leads back to itself"):
        publishing.prepare("loop_a", True, DATA)


def test_too_little_free_space_is_refused_before_the_fit():
    with pytest.raises(OutputError, match=r"free, but this run's result needs about .* TB"):
        publishing.prepare("res", False, DATA, needed_bytes=10**18)
    assert _hidden() == []


def _chattr(flag: str, path: Path) -> bool:
    try:
        done = subprocess.run(["chattr", flag, str(path)], capture_output=True, check=False)
    except FileNotFoundError:
        return False
    return done.returncode == 0


def test_an_immutable_earlier_result_is_refused_before_the_fit():
    old = _result(Path("res"), "old")
    if not _chattr("+i", old):
        pytest.skip("chattr +i is not possible here (needs root and a supporting file system)")
    try:
        with pytest.raises(OutputError, match="cannot be replaced: 'res' is read-only or immut"):
            publishing.prepare("res", True, DATA)
    finally:
        _chattr("-i", old)
    assert _is_complete(old, "old")


def test_a_read_only_parent_is_refused_before_the_fit():
    parent = Path("ro")
    parent.mkdir()
    if not _chattr("+i", parent):
        pytest.skip("chattr +i is not possible here (needs root and a supporting file system)")
    try:
        with pytest.raises(OutputError, match="'ro' that would hold it is not writable"):
            publishing.prepare("ro/res", False, DATA)
    finally:
        _chattr("-i", parent)


# -- kills at each step -------------------------------------------------------------------


def _kill_at(monkeypatch, name: str, after: int = 0):
    """Make ``publishing.<name>`` raise Killed at its call number ``after + 1``."""
    original = getattr(publishing, name) if hasattr(publishing, name) else getattr(os, name)
    calls = []

    def killed(*args, **kwargs):
        calls.append(args)
        if len(calls) == after + 1:
            raise Killed
        return original(*args, **kwargs)

    if hasattr(publishing, name):
        monkeypatch.setattr(publishing, name, killed)
    else:
        monkeypatch.setattr(publishing.os, name, killed)


STEPS = {
    # renameat2: killed at the exchange, after it (before the old copy is renamed aside),
    # and while the old copy is deleted
    "renameat2 exchange": ("_exchange", 0, True, "old"),
    "renameat2 after exchange": ("rename", 0, True, "new"),
    "renameat2 removing old": ("unlink", 1, True, "new"),
    # two renames: killed before the first, between them, and while deleting the old copy
    "two renames, first": ("rename", 0, False, "old"),
    "two renames, between": ("rename", 1, False, None),
    "two renames, removing old": ("unlink", 1, False, "new"),
}


@pytest.mark.parametrize("step", STEPS)
def test_a_kill_at_any_step_leaves_a_complete_result_and_the_next_run_cleans_up(monkeypatch, step):
    name, after, exchange, at_out = STEPS[step]
    if not exchange:
        monkeypatch.setattr(publishing, "_RENAMEAT2", None)
    _result(Path("res"), "old")
    plan = _run(overwrite=True)
    with monkeypatch.context() as patch:
        _kill_at(patch, name, after)
        with pytest.raises(Killed):
            publishing.publish(plan)
    _die(plan)
    if at_out is None:
        # the one instant without an atomic exchange: the old result is complete beside
        assert not Path("res").exists()
        (aside,) = Path().glob(".res.old-*")
        assert _is_complete(aside, "old")
    else:
        assert _is_complete(Path("res"), at_out)
    assert any(name.startswith(".res.") for name in _hidden())  # what the kill left
    # the next run on the same --out puts things right before its own work
    plan = publishing.prepare("res", True, DATA)
    if at_out is None:
        assert any("it is back at 'res'" in note for note in plan.notes)
        assert _is_complete(Path("res"), "old")
    else:
        assert any("left behind by an earlier run" in note for note in plan.notes)
    assert [p for p in _hidden() if ".incomplete-" in p] == [plan.tmp.name]
    assert not [p for p in _hidden() if ".old-" in p]
    publishing.release(plan)
    assert _hidden() == []


def test_cleaning_removes_only_what_carries_the_marker():
    _result(Path(".res.incomplete-0123abcd"), "killed")
    _result(Path(".res.old-89abcdef"), "killed")
    Path(".res.incomplete-aaaaaaaa").mkdir()  # a kill between mkdir and the marker
    user = Path(".res.incomplete-bbbbbbbb")
    user.mkdir()
    (user / "mine.txt").write_text("not the command's")
    _result(Path(".other.incomplete-0123abcd"), "another --out")
    _result(Path("res"), "current")  # --out is there: nothing to put back
    plan = publishing.prepare("res", True, DATA)
    assert len(plan.notes) == 3
    publishing.release(plan)
    assert _is_complete(Path("res"), "current")
    assert _hidden() == [".other.incomplete-0123abcd", ".res.incomplete-bbbbbbbb"]
    assert (user / "mine.txt").read_text() == "not the command's"


# -- Ctrl-C around the renames ------------------------------------------------------------


@pytest.fixture
def python_sigint_handler():
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_an_interrupt_seen_at_the_last_look_publishes_nothing(python_sigint_handler):
    _result(Path("res"), "old")
    plan = _run(overwrite=True)

    def seen():
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        publishing.publish(plan, before_renaming=seen)
    publishing.release(plan)
    assert _is_complete(Path("res"), "old") and _hidden() == []


def test_a_ctrl_c_during_the_renames_waits_and_then_says_the_result_is_published(
    python_sigint_handler,
):
    _result(Path("res"), "old")
    plan = _run(overwrite=True)
    with pytest.raises(publishing.InterruptedAfterPublishing) as caught:
        publishing.publish(plan, before_renaming=lambda: signal.raise_signal(signal.SIGINT))
    publishing.release(plan)
    assert caught.value.published.replaced
    assert _is_complete(Path("res"), "new")
