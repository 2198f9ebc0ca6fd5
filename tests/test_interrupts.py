"""An interrupted run never looks complete: SIGINT sent to real processes.

PyMC catches ``KeyboardInterrupt`` inside ``pm.sample`` and returns the draws it
has. ``fit`` must then raise ``SamplingInterrupted`` and the ``cluster`` command
must publish nothing, keep an earlier result and exit with status 130.
"""

import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time

from pathlib import Path

import numpy as np
import pytest

import pymc_pcrp as pcrp

from pymc_pcrp import _startup
from pymc_pcrp._runtime.interrupts import (
    caused_by_interrupt,
    inside_compiler,
    passes_interrupts,
    watch_interrupts,
)
from pymc_pcrp.cli import cluster as cluster_command
from pymc_pcrp.cli import main
from pymc_pcrp.cli.publish import MARKER_NAME
from pymc_pcrp.sampler.chain import Chain

FIT_SCRIPT = textwrap.dedent(
    """
    import os, signal
    import numpy as np
    import pymc_pcrp as pcrp

    sent = []

    def interrupt_after_some_draws(trace, draw):
        if draw.draw_idx == 30 and not sent:
            sent.append(True)
            os.kill(os.getpid(), signal.SIGINT)

    x = np.random.default_rng(0).normal(size=(60, 2))
    try:
        pcrp.fit(x, power=1.1, draws=5000, tune=10, chains=2, cores=1, random_seed=1,
                 callback=interrupt_after_some_draws, compute_convergence_checks=False)
    except pcrp.SamplingInterrupted as err:
        sizes = err.idata.posterior.sizes
        print("INTERRUPTED", sizes["chain"], sizes["draw"])
        print(err)
    else:
        print("COMPLETE")
    """
)


def _default_sigint() -> None:
    """In the child before exec: SIGINT back to its default disposition.

    A test suite started in the background by a non-interactive shell inherits
    SIGINT ignored, and Python then installs no KeyboardInterrupt handler, so the
    signal these tests send would be dropped (the run completes).
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    # A crash instead of a clean exit (seen twice in full-tier runs: status -11 after SIGINT)
    # then prints the Python stack of every thread into the assertion's message.
    env["PYTHONFAULTHANDLER"] = "1"
    return env


def _crash_report(stderr: str) -> str:
    """The end of a child's stderr, or from the fault handler's report on when it crashed.

    The report ends with a long list of extension modules; the thread stacks before it
    are what tells where the crash was.
    """
    start = stderr.find("Fatal Python error")
    return stderr[start : start + 6000] if start >= 0 else stderr[-3000:]


def test_fit_raises_when_sampling_is_interrupted(tmp_path):
    done = subprocess.run(
        [sys.executable, "-c", FIT_SCRIPT],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
        env=_env(),
        preexec_fn=_default_sigint,
    )
    assert done.returncode == 0, _crash_report(done.stderr)
    first, *rest = done.stdout.splitlines()
    word, _chains, draws = first.split()
    assert word == "INTERRUPTED", done.stdout
    # one SIGINT stops both chains (PyMC alone would run the second chain to its end)
    assert int(draws) < 5000, done.stdout
    assert "Sampling stopped early" in "\n".join(rest)


def test_cluster_command_interrupted_publishes_nothing(tmp_path):
    rng = np.random.default_rng(4)
    data = np.vstack([rng.normal(-3, 1, size=(40, 2)), rng.normal(3, 1, size=(40, 2))])
    csv = tmp_path / "mid.csv"
    np.savetxt(csv, data, delimiter=",", header="a,b", comments="")
    out = tmp_path / "result"
    out.mkdir()
    (out / "summary.md").write_text("an earlier, complete result\n")
    (out / MARKER_NAME).write_text('{"written_by": "pymc_pcrp cluster", "format": 1}\n')
    (out / "labels.csv").write_text("label\n0\n")
    base = [sys.executable, "-m", "pymc_pcrp", "cluster", str(csv), "--power", "1.1",
            "--tune", "10", "--chains", "2", "--cores", "1", "--seed", "1"]  # fmt: skip
    # A short run first, so that the kernels are compiled (or loaded from numba's cache)
    # before the interrupted run: the signal must land while chains sample.
    warm = subprocess.run(
        [*base, "--draws", "5", "--out", str(tmp_path / "warm")],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert warm.returncode == 0, warm.stderr[-3000:]
    proc = subprocess.Popen(
        [*base, "--draws", "200000", "--out", str(out), "--overwrite"],
        cwd=tmp_path,
        env=_env(),
        preexec_fn=_default_sigint,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stderr), daemon=True)
    reader.start()
    # PyMC logs "Sequential sampling ..." as the chains start; then interrupt as Ctrl-C would.
    deadline = time.monotonic() + 300
    while not any("sampling" in line.lower() for line in list(lines)):
        assert proc.poll() is None, "".join(lines)[-3000:]
        assert time.monotonic() < deadline, "the run never started sampling"
        time.sleep(0.2)
    time.sleep(3.0)
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=300)
    reader.join(timeout=60)
    stderr = "".join(lines)
    stdout = proc.stdout.read()
    assert proc.returncode == 130, _crash_report(stderr)
    assert "Nothing was written to" in stderr
    # both chains stopped early: PyMC alone would have run the second one to its end
    came_back = re.search(r"(\d+) chain\(s\) x (\d+) draws came back", stderr)
    assert came_back is not None and int(came_back.group(2)) < 200000, stderr[-3000:]
    assert (out / "summary.md").read_text() == "an earlier, complete result\n"
    assert sorted(p.name for p in out.iterdir()) == [MARKER_NAME, "labels.csv", "summary.md"]
    assert not list(tmp_path.glob(".result.incomplete-*"))
    assert "results written" not in stdout


# -- Ctrl-C inside a compiled kernel ------------------------------------------
# Numba unpickles a cached kernel's constants at its first call; an interrupt
# that lands there leaves the dispatcher as SystemError caused by the
# KeyboardInterrupt (seen in CI: the interrupted `cluster` run above exited 1).


def _kernel_error(cause: BaseException | None) -> SystemError:
    err = SystemError("CPUDispatcher(<function k>) returned a result with an exception set")
    err.__cause__ = cause
    return err


def _fail_after_draw(monkeypatch, draw_idx: int, cause: BaseException | None):
    """Make the chain's template jump raise the kernel's error once, after ``draw_idx``.

    Returns the ``pm.sample`` callback that arms it (steps outside ``pm.sample``,
    such as the scouting of templates, must not fail).
    """
    original = Chain.template_jump
    armed = []

    def template_jump(self, inputs, new_labels):
        if armed == [True]:
            armed.append(False)
            raise _kernel_error(cause)
        return original(self, inputs, new_labels)

    def arm(trace, draw):
        if draw.draw_idx == draw_idx and not armed:
            armed.append(True)

    monkeypatch.setattr(Chain, "template_jump", template_jump)
    return arm


def test_caused_by_interrupt_follows_causes_and_contexts():
    assert caused_by_interrupt(KeyboardInterrupt())
    assert caused_by_interrupt(_kernel_error(KeyboardInterrupt()))
    assert not caused_by_interrupt(_kernel_error(None))
    assert not caused_by_interrupt(_kernel_error(ValueError("other")))
    try:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt:
            raise RuntimeError("while handling Ctrl-C")  # noqa: B904 (the context is the point)
    except RuntimeError as err:
        assert caused_by_interrupt(err)
    looped = RuntimeError("a")
    looped.__context__ = RuntimeError("b")
    looped.__context__.__context__ = looped
    assert not caused_by_interrupt(looped)


def test_interrupt_inside_a_kernel_stops_fit_as_an_interrupt(monkeypatch):
    arm = _fail_after_draw(monkeypatch, 30, KeyboardInterrupt())
    x = np.random.default_rng(0).normal(size=(40, 2))
    with pytest.raises(pcrp.SamplingInterrupted) as caught:
        pcrp.fit(x, power=1.1, draws=300, tune=10, chains=2, cores=1, random_seed=1,
                 callback=arm, compute_convergence_checks=False)  # fmt: skip
    sizes = caught.value.idata.posterior.sizes
    assert sizes["draw"] < 300  # the interrupted chain's draws came back, short


def test_other_kernel_errors_are_not_taken_for_interrupts(monkeypatch):
    arm = _fail_after_draw(monkeypatch, 15, ValueError("a real bug"))
    x = np.random.default_rng(0).normal(size=(40, 2))
    with pytest.raises(SystemError):
        pcrp.fit(x, power=1.1, draws=30, tune=10, chains=1, cores=1, random_seed=1,
                 callback=arm, compute_convergence_checks=False)  # fmt: skip


def _cluster_over_an_earlier_result(tmp_path) -> tuple[int, Path]:
    """Run a short ``cluster`` into a folder that holds an earlier result; status and folder."""
    data = np.random.default_rng(4).normal(size=(30, 2))
    csv = tmp_path / "d.csv"
    np.savetxt(csv, data, delimiter=",", header="a,b", comments="")
    out = tmp_path / "result"
    out.mkdir()
    (out / "summary.md").write_text("an earlier, complete result\n")
    (out / MARKER_NAME).write_text('{"written_by": "pymc_pcrp cluster", "format": 1}\n')
    status = main(["cluster", str(csv), "--power", "1.1", "--draws", "20", "--tune", "5",
                   "--chains", "1", "--seed", "1", "--out", str(out), "--overwrite"])  # fmt: skip
    return status, out


def test_cluster_command_reports_an_interrupt_inside_a_kernel(monkeypatch, tmp_path, capsys):
    def fit_interrupted_in_a_kernel(*args, **kwargs):
        raise _kernel_error(KeyboardInterrupt())

    monkeypatch.setattr(cluster_command, "fit", fit_interrupted_in_a_kernel)
    status, out = _cluster_over_an_earlier_result(tmp_path)
    assert status == 130
    assert "Nothing was written to" in capsys.readouterr().err
    assert sorted(p.name for p in out.iterdir()) == [MARKER_NAME, "summary.md"]
    assert (out / "summary.md").read_text() == "an earlier, complete result\n"
    assert not list(tmp_path.glob(".result.incomplete-*"))


# -- Ctrl-C during tuning, and while numba loads a kernel ----------------------


def test_interrupt_during_tuning_raises_sampling_interrupted():
    # PyMC's documented way to stop: KeyboardInterrupt from the callback; at tuning draw 3
    # no chain has kept a draw, and pm.sample itself fails ("Not enough samples").
    def stop_in_tuning(trace, draw):
        if draw.draw_idx == 3:
            raise KeyboardInterrupt

    x = np.random.default_rng(0).normal(size=(40, 2))
    with pytest.raises(pcrp.SamplingInterrupted, match="during tuning") as caught:
        pcrp.fit(x, power=1.1, draws=50, tune=20, chains=2, cores=1, random_seed=1,
                 callback=stop_in_tuning, compute_convergence_checks=False)  # fmt: skip
    assert caught.value.idata is None


def _fake_numba_function():
    """A function whose code claims to live in numba's package (as its loader's does)."""
    import numba

    source = textwrap.dedent(
        """
        import signal

        def load_kernel(n):
            signal.raise_signal(signal.SIGINT)  # Ctrl-C lands while "numba" works
            total = 0
            for k in range(n):
                total += k
            return total
        """
    )
    path = os.path.join(os.path.dirname(numba.__file__), "_pcrp_test_loader.py")
    namespace: dict = {}
    exec(compile(source, path, "exec"), namespace)
    return namespace["load_kernel"]


@pytest.fixture
def python_sigint_handler():
    """Python's own SIGINT handler for the test (a background run may have SIGINT ignored)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_ctrl_c_waits_until_numba_is_done_then_arrives(python_sigint_handler):
    load_kernel = _fake_numba_function()
    # without the watch the interrupt lands inside numba's code
    with pytest.raises(KeyboardInterrupt):
        load_kernel(200_000)
    with watch_interrupts() as watch:
        assert load_kernel(200_000) == sum(range(200_000))  # not cut short
        assert watch.seen and watch.held_back >= 1
        with pytest.raises(KeyboardInterrupt):
            for _ in range(400):  # delivered once control is back in this frame
                time.sleep(0.005)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_ctrl_c_outside_numba_is_delivered_at_once(python_sigint_handler):
    with watch_interrupts() as watch:
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)
            for _ in range(1000):
                pass
    assert watch.seen and watch.held_back == 0
    assert not inside_compiler(sys._getframe())


def test_watch_leaves_an_ignored_sigint_alone():
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with watch_interrupts() as watch:
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        assert not watch.seen
    finally:
        signal.signal(signal.SIGINT, previous)


# -- a Ctrl-C that a library swallows or garbles --------------------------------------
# Seen with validation/interrupts.py: matplotlib's renderer called back into Python when
# SIGINT landed and turned the KeyboardInterrupt into "ValueError: Invalid bounding box".


def _cluster_with_figures_that(monkeypatch, tmp_path, then: str) -> tuple[int, Path]:
    """Run ``cluster`` while writing figures swallows a Ctrl-C, then ``then`` happens."""
    original = cluster_command.write_figures

    def write_figures(*args, **kwargs):
        swallowed = False
        try:
            signal.raise_signal(signal.SIGINT)
            for _ in range(1000):  # the handler runs at the next bytecode
                pass
        except KeyboardInterrupt:
            swallowed = True
        if swallowed and then == "garbled":  # outside the handler: no trace of the interrupt
            raise ValueError("Invalid bounding box")
        return original(*args, **kwargs)  # "swallowed": carries on as if nothing happened

    monkeypatch.setattr(cluster_command, "write_figures", write_figures)
    return _cluster_over_an_earlier_result(tmp_path)


@pytest.mark.parametrize("then", ["swallowed", "garbled"])
def test_cluster_command_publishes_nothing_after_a_ctrl_c_a_library_swallowed(
    monkeypatch, tmp_path, capsys, python_sigint_handler, then
):
    status, out = _cluster_with_figures_that(monkeypatch, tmp_path, then)
    assert status == 130
    assert "Nothing was written to" in capsys.readouterr().err
    assert sorted(p.name for p in out.iterdir()) == [MARKER_NAME, "summary.md"]
    assert (out / "summary.md").read_text() == "an earlier, complete result\n"
    assert not list(tmp_path.glob(".result.incomplete-*"))
    # the record ended with its command: a `cluster` run next in this process (as the
    # next test on this pytest worker) must not refuse to publish for this Ctrl-C
    assert not _startup.interrupt_seen()


def test_ctrl_c_during_a_step_arrives_after_the_step_returns(python_sigint_handler):
    class Step:
        finished = False

        @passes_interrupts
        def step(self, point):
            signal.raise_signal(signal.SIGINT)  # Ctrl-C halfway through the step
            total = 0
            for k in range(200_000):
                total += k
            self.finished = True
            return total

    step = Step()
    with watch_interrupts() as watch:
        with pytest.raises(KeyboardInterrupt):  # raised the moment the step returns
            step.step({})
        assert step.finished and watch.held_back == 1
    # without the watch the step is cut short
    with pytest.raises(KeyboardInterrupt):
        Step().step({})


def test_ctrl_c_in_a_nested_step_arrives_when_the_outermost_returns(python_sigint_handler):
    done = []

    class Step:
        @passes_interrupts
        def inner(self, point):
            signal.raise_signal(signal.SIGINT)
            done.append("inner")

        @passes_interrupts
        def step(self, point):
            self.inner(point)  # as a compound step calls its parts
            done.append("outer")

    with watch_interrupts() as watch:
        with pytest.raises(KeyboardInterrupt):
            Step().step({})
    assert done == ["inner", "outer"] and watch.held_back == 1


def test_steps_in_other_threads_do_not_hold_ctrl_c_back(python_sigint_handler):
    running, stop = threading.Event(), threading.Event()

    class Step:
        @passes_interrupts
        def step(self, point):
            running.set()
            stop.wait(10)

    worker = threading.Thread(target=Step().step, args=({},))
    worker.start()
    try:
        running.wait(10)
        with watch_interrupts() as watch:
            with pytest.raises(KeyboardInterrupt):
                signal.raise_signal(signal.SIGINT)
                for _ in range(1000):
                    pass
        assert watch.held_back == 0
    finally:
        stop.set()
        worker.join(10)


# -- Ctrl-C from the first instant: start-up imports, and a record that outlives a swallow ----


def test_ctrl_c_during_the_start_up_imports_exits_130_with_one_line(tmp_path):
    csv = tmp_path / "d.csv"
    np.savetxt(csv, np.random.default_rng(0).normal(size=(20, 2)), delimiter=",")
    out = tmp_path / "result"
    proc = subprocess.Popen(
        [sys.executable, "-X", "importtime", "-m", "pymc_pcrp", "cluster", str(csv),
         "--power", "1.1", "--out", str(out)],
        cwd=tmp_path, env=_env(), preexec_fn=_default_sigint,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    # -X importtime reports every import as it ends: wait until the package's own imports
    # run (its first module is pymc_pcrp._startup), then interrupt while pymc loads
    imported = []
    for line in proc.stderr:
        imported.append(line)
        if "pymc_pcrp._startup" in line:
            break
    time.sleep(0.3)
    assert proc.poll() is None, "".join(imported)[-2000:]
    proc.send_signal(signal.SIGINT)
    stdout, rest = proc.communicate(timeout=120)
    messages = [line for line in rest.splitlines() if not line.startswith("import time:")]
    assert proc.returncode == 130, rest[-3000:]
    assert messages == ["error: Interrupted while starting up; nothing was written."]
    assert stdout == "" and not out.exists() and not list(tmp_path.glob(".result*"))


def test_importing_the_library_leaves_sigint_alone():
    assert not _startup.is_command_line()  # pytest is not the command line
    assert _startup._COMMAND_LINE == [False]
    assert signal.getsignal(signal.SIGINT) is not _startup._during_start_up


def test_a_ctrl_c_swallowed_outside_every_watch_still_publishes_nothing(
    monkeypatch, tmp_path, capsys
):
    original = cluster_command.write_figures

    def write_figures(*args, **kwargs):
        # what the command's own handler records before a library swallows the interrupt
        _startup._SEEN[0] = True
        return original(*args, **kwargs)

    monkeypatch.setattr(cluster_command, "write_figures", write_figures)
    try:
        status, out = _cluster_over_an_earlier_result(tmp_path)
    finally:
        _startup._SEEN[0] = False
    assert status == 130
    assert "Nothing was written to" in capsys.readouterr().err
    assert (out / "summary.md").read_text() == "an earlier, complete result\n"
    assert not list(tmp_path.glob(".result.incomplete-*"))


def test_a_ctrl_c_during_shutdown_ends_with_the_commands_status(tmp_path):
    script = textwrap.dedent(
        """
        import signal, sys
        from pymc_pcrp import _startup

        _startup._COMMAND_LINE[0] = True  # as under python -m pymc_pcrp
        previous = _startup.command_handler()
        _startup.restore(previous, 7)  # the command ended with status 7
        print("ended", flush=True)
        signal.raise_signal(signal.SIGINT)  # lands while the interpreter shuts down
        print("not reached")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
        cwd=tmp_path, env=_env(), preexec_fn=_default_sigint,
    )  # fmt: skip
    assert done.returncode == 7, done.stderr[-3000:]
    assert done.stdout == "ended\n" and "Traceback" not in done.stderr
