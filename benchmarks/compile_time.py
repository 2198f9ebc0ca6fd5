"""Where a cold test run spends its time compiling: numba's compile events, per function.

Runs pytest in this process (the fast tier by default) into an empty numba cache
folder and records numba's ``numba:compile`` events. A kernel's compilation
includes that of the kernels it calls the first time; the report gives each
function's exclusive time (its own, callees' compilations subtracted), its
inclusive time and its number of compiled signatures, then the total::

    python benchmarks/compile_time.py                 # the fast tier
    python benchmarks/compile_time.py -- tests/_kernels -q   # any pytest arguments

Use it to find the tests that compile a kernel for argument types nobody else
uses (each such signature is a whole second compilation) and what a cold run
costs. The numbers depend on the machine; compare runs made on the same one.
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import tempfile
import time


class CompileRecorder:
    """A numba event listener that times each compilation, nested ones subtracted."""

    def __init__(self) -> None:
        self.stack: list[list] = []
        self.exclusive: collections.Counter = collections.Counter()
        self.inclusive: collections.Counter = collections.Counter()
        self.signatures: collections.Counter = collections.Counter()

    def listener(self):
        from numba.core import event

        recorder = self

        class _Listener(event.Listener):
            def on_start(self, ev):
                func = getattr(ev.data.get("dispatcher"), "py_func", None)
                name = f"{getattr(func, '__module__', None)}.{getattr(func, '__qualname__', func)}"
                recorder.stack.append([name, time.perf_counter(), 0.0])

            def on_end(self, ev):
                name, start, children = recorder.stack.pop()
                elapsed = time.perf_counter() - start
                recorder.exclusive[name] += elapsed - children
                recorder.inclusive[name] += elapsed
                recorder.signatures[name] += 1
                if recorder.stack:
                    recorder.stack[-1][2] += elapsed

        return _Listener()

    def report(self, top: int) -> str:
        total = sum(self.exclusive.values())
        lines = [f"numba compilation, all functions: {total:.1f} s", ""]
        lines.append(f"{'exclusive':>10} {'inclusive':>10} {'sigs':>5}  function")
        for name, seconds in self.exclusive.most_common(top):
            lines.append(
                f"{seconds:9.1f}s {self.inclusive[name]:9.1f}s {self.signatures[name]:5d}  {name}"
            )
        return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--top", type=int, default=30, help="functions listed")
    ap.add_argument("pytest_args", nargs="*", help="arguments for pytest (after --)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="pcrp_numba_cold_") as cache:
        # before numba is imported: the package's cache locator reads it at import
        os.environ["NUMBA_CACHE_DIR"] = cache
        import pytest

        from numba.core import event

        recorder = CompileRecorder()
        event.register("numba:compile", recorder.listener())
        start = time.perf_counter()
        status = pytest.main(["-p", "no:cacheprovider", *(args.pytest_args or ["-q"])])
        wall = time.perf_counter() - start
    print()
    print(recorder.report(args.top))
    print(f"\npytest wall time {wall:.1f} s (exit status {int(status)})")
    return int(status)


if __name__ == "__main__":
    sys.exit(main())
