"""Time and peak memory of the ``cluster`` command's CSV loading on a ~1 GB numeric file.

Writes a numeric CSV of about ``--gigabytes`` GB (a header row, ``--columns``
columns of normally distributed values with 10 significant digits, eight
distinct blocks of 100,000 rows written in turn) into a
temporary folder under ``/tmp``, loads it with the command's own reader
(:func:`pymc_pcrp.cli.io.load_data`) in a fresh process, and prints the load
time and the peak resident memory the load added (Linux ``VmHWM``, reset after
the imports), against the budget: at most 30 s and at most twice the array's
size. The file is deleted at the end. Exit status 1 when over budget.

Run from the repository root (a few minutes, most of it writing the file)::

    nice -n 10 python benchmarks/load_csv.py
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

from pathlib import Path

import numpy as np

BUDGET_SECONDS = 30.0
BUDGET_MEMORY_RATIO = 2.0


def _write_csv(path: Path, gigabytes: float, columns: int, seed: int) -> int:
    """Write rows until the file reaches ``gigabytes``; return the number of rows."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    target = gigabytes * 1e9
    # formatting numbers is the slow part: 8 distinct blocks of rows, written in turn
    blocks = []
    for _ in range(8):
        values = rng.normal(size=(100_000, columns)) * rng.uniform(0.5, 50.0, columns)
        text = pd.DataFrame(values).to_csv(header=False, index=False, float_format="%.10g")
        blocks.append(text)
    rows = 0
    with path.open("w", newline="") as handle:
        handle.write(",".join(f"x{j}" for j in range(columns)) + "\n")
        while handle.tell() < target:
            handle.write(blocks[(rows // 100_000) % len(blocks)])
            rows += 100_000
    return rows


def _memory_kb(field: str) -> int:
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def _child(path: str) -> None:
    """Load ``path`` as the command does; print seconds, peak added memory and array size."""
    from pymc_pcrp.cli.io import load_data

    args = argparse.Namespace(data=path, columns=None, header="auto", delimiter=None)
    with open("/proc/self/clear_refs", "w") as handle:
        handle.write("5")  # reset the peak resident size (VmHWM) to the current one
    before = _memory_kb("VmRSS")
    start = time.perf_counter()
    data = load_data(args)
    seconds = time.perf_counter() - start
    peak = _memory_kb("VmHWM")
    result = {
        "seconds": seconds,
        "peak_added_bytes": (peak - before) * 1024,
        "array_bytes": data.x.nbytes,
        "shape": list(data.x.shape),
    }
    print(json.dumps(result))


def _commit() -> str:
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        )
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return done.stdout.strip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gigabytes", type=float, default=1.0, help="file size (default 1)")
    parser.add_argument("--columns", type=int, default=10, help="columns (default 10)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(args.child)
        return 0
    folder = Path(tempfile.mkdtemp(prefix="pcrp_load_csv_", dir="/tmp"))
    try:
        path = folder / "numbers.csv"
        start = time.perf_counter()
        rows = _write_csv(path, args.gigabytes, args.columns, args.seed)
        written = time.perf_counter() - start
        size = path.stat().st_size
        done = subprocess.run(
            [sys.executable, __file__, "--child", str(path)],
            capture_output=True,
            text=True,
            check=True,
        )
        result = json.loads(done.stdout.strip().splitlines()[-1])
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    ratio = result["peak_added_bytes"] / result["array_bytes"]
    within = result["seconds"] <= BUDGET_SECONDS and ratio <= BUDGET_MEMORY_RATIO
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    print(
        f"{now}, commit {_commit()}, {platform.node()} ({os.cpu_count()} CPUs, "
        f"Python {platform.python_version()})"
    )
    print(
        f"file: {size / 1e9:.2f} GB, {rows:,} rows x {args.columns} columns "
        f"(written in {written:.0f} s)"
    )
    added, array = result["peak_added_bytes"] / 1e6, result["array_bytes"] / 1e6
    print(
        f"load: {result['seconds']:.1f} s; peak memory added {added:,.0f} MB = {ratio:.2f} x "
        f"the array ({array:,.0f} MB)"
    )
    print(
        f"budget: <= {BUDGET_SECONDS:g} s and <= {BUDGET_MEMORY_RATIO:g} x the array: "
        + ("within" if within else "OVER")
    )
    return 0 if within else 1


if __name__ == "__main__":
    sys.exit(main())
