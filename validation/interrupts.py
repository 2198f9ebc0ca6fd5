"""Interrupt the ``cluster`` command at random moments and tally how it ends.

Each run starts ``python -m pymc_pcrp cluster`` on two Gaussian blobs (80 rows,
2 chains of 3,000 draws, one core), sends SIGINT after a delay drawn uniformly
between ``--low`` and ``--high`` seconds from the start, and records the exit
status. An interrupted run must end with status 130 with the earlier result
at ``--out`` exactly as it was (its files' contents compared before and after),
or 0 if it had finished before the signal.
A signal during the start-up imports also gives 130 (one line, "Interrupted
while starting up"); only one that lands before the package's first line runs,
while Python itself starts (importing runpy, or the package's first module
that installs the handler), ends the process as Python does (status 1, or
killed by SIGINT, -2 here), tallied apart. Anything else (a traceback, a crash such as
SIGSEGV, status -11, status 0 more than a second after the signal: an interrupt
that was lost, or a 130 that changed the result) is a fault: its stderr is kept
in ``--out``.

Run from the repository root::

    python validation/interrupts.py --runs 30 --low 0 --high 16 --seed 1
"""

from __future__ import annotations

import argparse
import collections
import os
import random
import signal
import subprocess
import sys
import tempfile
import time

from pathlib import Path

import numpy as np

EXPECTED = {130: "interrupted, nothing written", 0: "finished before the signal"}


def _snapshot(folder: Path) -> dict[str, bytes] | None:
    """The contents of every file of a result folder, or None when there is none."""
    if not folder.is_dir():
        return None
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # a background shell may ignore SIGINT


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--low", type=float, default=4.0, help="shortest delay, seconds")
    parser.add_argument("--high", type=float, default=16.0, help="longest delay, seconds")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", default="interrupt_faults", help="folder for faults' stderr")
    args = parser.parse_args(argv)
    delays = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="pcrp_interrupts_"))
    rng = np.random.default_rng(4)
    data = np.vstack([rng.normal(-3, 1, size=(40, 2)), rng.normal(3, 1, size=(40, 2))])
    csv = work / "blobs.csv"
    np.savetxt(csv, data, delimiter=",", header="a,b", comments="")
    command = [sys.executable, "-m", "pymc_pcrp", "cluster", str(csv), "--power", "1.1",
               "--tune", "10", "--draws", "3000", "--chains", "2", "--cores", "1",
               "--seed", "1", "--out", str(work / "result"), "--overwrite"]  # fmt: skip
    env = dict(os.environ, PYTHONFAULTHANDLER="1")
    # an earlier, complete result for the interrupted runs to leave alone (short draws)
    short = [
        *command[: command.index("--draws") + 1],
        "20",
        *command[command.index("--draws") + 2 :],
    ]
    subprocess.run(short, cwd=work, env=env, check=True, capture_output=True)
    tally: collections.Counter = collections.Counter()
    for run in range(args.runs):
        delay = delays.uniform(args.low, args.high)
        before = _snapshot(work / "result")
        proc = subprocess.Popen(
            command,
            cwd=work,
            env=env,
            preexec_fn=_default_sigint,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(delay)
        sent = proc.poll() is None
        if sent:
            proc.send_signal(signal.SIGINT)
        signalled = time.monotonic()
        _, stderr = proc.communicate()
        after = time.monotonic() - signalled
        status = proc.returncode
        # finished although interrupted: the signal was sent more than a second before the end
        ignored = status == 0 and sent and after > 1.0
        changed = status == 130 and _snapshot(work / "result") != before
        start_up = status == 130 and "while starting up" in stderr
        # before the package's first line: Python's own start-up (runpy, or the import of
        # pymc_pcrp._startup itself); Python then exits 1 or dies of the signal (-2)
        python_start = status in (1, -2) and (
            "Could not import runpy module" in stderr or "pymc_pcrp._startup" in stderr
        )
        kind = "ignored" if ignored else "130 but result changed" if changed else status
        kind = "before the package's first line" if python_start else kind
        tally[kind] += 1
        tally["130 during start-up imports"] += int(start_up)
        note = "  SIGNAL IGNORED" if ignored else "  RESULT CHANGED" if changed else ""
        note += "  (start-up)" if start_up else ""
        print(
            f"run {run:3d}  delay {delay:6.2f} s  status {status}  exit {after:5.2f} s after"
            f" the signal{'' if sent else ' (not sent: already done)'}{note}",
            flush=True,
        )
        if status not in EXPECTED or ignored or changed:  # kept for reading
            Path(args.out).mkdir(exist_ok=True)
            (Path(args.out) / f"run{run}_status{status}.txt").write_text(stderr)
    print("status counts:", dict(tally))
    tallies = ("130 during start-up imports", "before the package's first line")
    faults = {s: n for s, n in tally.items() if s not in EXPECTED and s not in tallies}
    print("faults:", faults or "none")
    return 1 if faults else 0


if __name__ == "__main__":
    sys.exit(main())
