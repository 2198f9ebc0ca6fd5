"""Time the same fit with two checkouts of the package, alternately, and compare the draws.

Run from the repository root::

    git worktree add /tmp/before HEAD~1
    python benchmarks/ab_trees.py /tmp/before . breast_cancer 1.0 --rounds 3

Each run is a fresh process whose ``sys.path`` starts with one checkout (and its
``benchmarks/``), which fits one chain on one core (``cores=1``) with the
package's defaults: a short warm-up fit of the same data first (60 tuning draws
and 5 kept, so that every kernel the timed fit calls, the template jumps'
included, is compiled or loaded from numba's cache), then the timed fit of
``--draws`` kept and ``--tune`` tuning draws at ``--seed``. The runs alternate
A, B, A, B, ... so that a slow spell of a shared machine falls on both. Printed
per run: the seconds, the mean number of clusters and the sum of the log joints
(which identify the draws); then the median seconds of each checkout, their
ratio B / A and whether every run made the same draws. A change meant to leave
the chain as it is must show identical draws.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

from pathlib import Path

CHILD = """
import json, sys, time
root = sys.argv[1]
sys.path[:0] = [root + "/benchmarks", root]
import real_data as rd
rd.pcrp_quiet()
name, power, draws, tune, seed = sys.argv[2], float(sys.argv[3]), *map(int, sys.argv[4:7])
X = rd.load_dataset(name, None).X
rd.pcrp_fit(X, power, draws=5, tune=60, chains=1, cores=1, seed=1, step_kwargs={})
start = time.perf_counter()
idata = rd.pcrp_fit(X, power, draws=draws, tune=tune, chains=1, cores=1, seed=seed, step_kwargs={})
sec = time.perf_counter() - start
k, lj = rd.pcrp_k_and_logjoint(idata)
print(json.dumps({"seconds": sec, "k": float(k.mean()), "lj": float(lj.sum())}))
"""


def run(root: Path, args) -> dict:
    """One timed fit in a fresh process with ``root`` first on its path."""
    cmd = [sys.executable, "-c", CHILD, str(root.resolve()), args.dataset, str(args.power)]
    cmd += [str(args.draws), str(args.tune), str(args.seed)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    """Parse the arguments, alternate the runs and print the comparison."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("a", type=Path, help="the baseline checkout")
    parser.add_argument("b", type=Path, help="the checkout compared with it")
    parser.add_argument("dataset", help="a data set of benchmarks/real_data.py")
    parser.add_argument("power", type=float)
    parser.add_argument("--draws", type=int, default=600)
    parser.add_argument("--tune", type=int, default=500)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    seconds: dict[str, list[float]] = {"A": [], "B": []}
    draws = set()
    for _ in range(args.rounds):
        for tag, root in (("A", args.a), ("B", args.b)):
            out = run(root, args)
            seconds[tag].append(out["seconds"])
            draws.add((round(out["k"], 9), round(out["lj"], 6)))
            print(
                f"{tag} {root}: {out['seconds']:6.1f} s  mean K {out['k']:.4f}  "
                f"sum of log joints {out['lj']:.6f}",
                flush=True,
            )
    a, b = statistics.median(seconds["A"]), statistics.median(seconds["B"])
    print(f"median seconds: A {a:.1f}, B {b:.1f}; B / A = {b / a:.2f}")
    print(f"the same draws in every run: {len(draws) == 1}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
