"""Is the scaling run's answer the posterior's, or a state the chains could not leave?

At N = 100,000 (docs/scaling.md) the four chains of ``pymc_pcrp.fit`` at r = 1.1 agree
on 9 clusters, while the data have 10 components. This script fits the same data
twice, with the same settings and seed: once from the default start, and once with
every chain started at the true components (``init="point"``, no restart
tournament). It prints, for each, the most frequent number of clusters of each chain,
the mean log joint of each chain and the ARI of the last draw to the components.
When the chains started at the truth keep 10 clusters at a clearly lower log joint
than the default chains' 9, the nine-cluster answer is the one the posterior
prefers at this r, not a trap of the sampler.

Run from the repository root::

    python validation/scaling_truth_start.py --n 100000 \\
        --out benchmarks/results/scaling_truth_start.md

``--out`` also writes the header line and the table (markdown), which docs/scaling.md
includes.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import subprocess
import sys
import time
import warnings

from pathlib import Path

import numpy as np

from sklearn.metrics import adjusted_rand_score

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from scaling import make_data  # noqa: E402  (the scaling run's data, same seeds)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=10)
    parser.add_argument("--case", default="separated")
    parser.add_argument("--seed", type=int, default=1, help="data seed (scaling.py's default)")
    parser.add_argument("--draws", type=int, default=250)
    parser.add_argument("--power", type=float, default=1.1)
    parser.add_argument("--out", help="also write the header and the table here (markdown)")
    args = parser.parse_args(argv)

    import pymc_pcrp as pcrp

    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    lines: list[str] = []

    def say(line: str) -> None:
        print(line, flush=True)
        lines.append(line)

    command = f"python validation/scaling_truth_start.py {' '.join(sys.argv[1:])}".rstrip()
    load = os.getloadavg()
    say(
        f"command: `{command}`; date {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M}"
        f" UTC; commit {commit}; machine {os.cpu_count()} CPUs, {platform.machine()}, load "
        f"average at start {load[0]:.2f}/{load[1]:.2f}/{load[2]:.2f}\n"
    )
    X, truth = make_data(args.n, args.dim, args.case, args.seed)
    starts = {
        "default start": {},
        "true components": {
            "init": "point",
            "initvals": {"z": truth},
            "pcrp_gibbs": {"restarts": 1},
        },
    }
    say(
        f"N = {args.n}, D = {args.dim}, {args.case}; r = {args.power}; 4 chains, "
        f"{args.draws} draws after {args.draws // 2} tuning draws\n"
    )
    say("| start | s | clusters per chain (mode) | mean log joint per chain | ARI, last draw |")
    say("|---|---|---|---|---|")
    for name, options in starts.items():
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            idata = pcrp.fit(
                X,
                power=args.power,
                draws=args.draws,
                tune=args.draws // 2,
                chains=4,
                cores=2,
                random_seed=3,
                **options,
            )
        seconds = time.perf_counter() - start
        ks = idata.posterior["n_clusters"].values
        log_joint = idata.sample_stats["log_joint"].values
        modes = ", ".join(str(int(np.bincount(k).argmax())) for k in ks)
        means = ", ".join(f"{v:,.0f}" for v in log_joint.mean(axis=1))
        last = idata.posterior["z"].values[:, -1]
        ari = ", ".join(f"{adjusted_rand_score(truth, z):.3f}" for z in last)
        say(f"| {name} | {seconds:.0f} | {modes} | {means} | {ari} |")
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
