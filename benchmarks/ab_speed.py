"""Speed of the sampler at two revisions, side by side: per-draw time through ``pm.sample``.

Measures, for a baseline revision (``--base``, a git revision checked out into a
temporary worktree) and the working tree, in alternating child processes on the
same machine, the in-loop seconds per draw (the time between the first and the
last kept draw, from ``pm.sample``'s callback, after 100 tuning draws, so set-up,
compilation and tuning are excluded) of:

plain    Algorithm 1 alone (``split_merge=0``): N = 2,000, D = 2, r = 1.1, 5 sweeps per
         draw, 2,000 draws (10,000 sweeps), the well separated three-cluster data of
         ``benchmarks/common.py``, under the baseline's default prior (``nu0 = D + 2``
         and a fixed scale of 0.1, which ``NIWPrior.from_data`` reads the same way at
         both revisions), so that both run the same model;
default  the default move set on the same model, beside ``plain`` of the same revision;
learned  ``plain`` under today's default prior, which learns the scale and ``nu0``
         (two extra draws per draw; reported, not held to a goal);
alpha    Old Faithful (standardised), 5 sweeps per draw, 2,000 draws: ``alpha ~ Gamma(2, 1)``
         (owned by ``PCRPGibbs``) against a fixed ``alpha = 1``;
sweep    the compiled Gibbs sweep alone, called directly (no ``pm.sample``, no step): the
         same data started at the true three clusters, ``kappa0 = 0.01``, ``nu0 = 4``,
         ``Psi0`` 0.1 times the data's covariance; the best of 11 calls of 500 sweeps,
         CPU time, given per 10,000 point updates (one ``plain`` draw's sweeps), so
         that the part of ``plain`` that is the sweep can be told from the rest of a draw.

Each child runs every case once after a warm-up; the best of ``--repeats`` children
per revision is reported (the least disturbed run on a noisy machine). Run from the
repository root::

    python benchmarks/ab_speed.py --base ae1b15d --repeats 3

``--head REV`` measures a committed revision (in a second worktree) instead of the
working tree, so the working tree may change while the benchmark runs.

The baseline runs ``plain`` and ``sweep`` only (a revision that predates an option
runs without it). It prints one table with the ratios the sampler is held to: the working
tree's ``plain`` against the baseline's (at most 1), ``default`` against ``plain``
(at most 1.3) and random against fixed ``alpha`` (at most 1.2).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DRAWS = 2000
SWEEPS = 5
# Tuning draws before the timed ones: the automatic split-merge rate is set at the first
# draw after tuning from the partition the chain has reached (sampler/options.py,
# auto_split_merge). Without tuning it would be set from the random initial partition,
# whose many small clusters give a far higher rate than a tuned chain settles on.
TUNE = 100


def _child(names: list[str]) -> None:
    """Run the cases ``names`` once (after a warm-up) and print the seconds per draw as JSON."""
    import inspect
    import warnings

    import numpy as np
    import pymc as pm

    warnings.simplefilter("ignore")
    import pymc_pcrp as pcrp

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from common import mixture_data  # the fixed-seed three-cluster mixture

    # a baseline from before the restarts existed has none to turn off
    no_restarts = (
        {"restarts": 1} if "restarts" in inspect.signature(pcrp.PCRPGibbs).parameters else {}
    )

    def per_draw(model, draws=DRAWS, **step) -> float:
        stamps: list[float] = []

        def stamp(trace, draw):
            if not draw.tuning:  # kept draws only
                stamps.append(time.perf_counter())

        with model:
            pm.sample(
                draws=draws,
                tune=TUNE,
                chains=1,
                cores=1,
                random_seed=11,
                progressbar=False,
                compute_convergence_checks=False,
                callback=stamp,
                pcrp_gibbs={"sweeps_per_draw": SWEEPS, **no_restarts, **step},
            )
        return (stamps[-1] - stamps[0]) / (len(stamps) - 1)

    x, truth = mixture_data(2000, 2)

    def random_alpha_model():
        faithful = pcrp.datasets.load_old_faithful(standardize=True)
        with pm.Model() as model:
            alpha = pm.Gamma("alpha", 2.0, 1.0)
            z = pcrp.PowerCRP("z", alpha=alpha, power=1.1, n=len(faithful))
            prior = pcrp.NIWPrior.from_data(faithful)
            pcrp.NIWMixture("x", z=z, prior=prior, observed=faithful)
        return model

    fixed = pcrp.NIWPrior.from_data(x, nu0=x.shape[1] + 2.0, scale=0.1)
    cases = {
        "plain": lambda draws: per_draw(
            pcrp.build_model(x, power=1.1, prior=fixed), draws, split_merge=0
        ),
        "default": lambda draws: per_draw(pcrp.build_model(x, power=1.1, prior=fixed), draws),
        "learned": lambda draws: per_draw(pcrp.build_model(x, power=1.1), draws, split_merge=0),
        "alpha_fixed": lambda draws: per_draw(
            pcrp.build_model(pcrp.datasets.load_old_faithful(standardize=True), power=1.1), draws
        ),
        "alpha_random": lambda draws: per_draw(random_alpha_model(), draws),
    }

    def sweep_only(draws: int) -> float:
        # the sweep's entry point and arguments at this revision (ae1b15d took them unpacked)
        from pymc_pcrp._kernels.partitions import canonical_labels
        from pymc_pcrp._kernels.sweep import gibbs_sweeps, init_state, make_params, sweep_tables

        xc = x - x.mean(axis=0)
        params = make_params(1.0, 1.1, 0.01, 4.0, 0.1 * np.cov(xc.T))
        state = init_state(xc, canonical_labels(np.asarray(truth, dtype=np.int64)), params)
        tables = sweep_tables(xc, params)
        rng = np.random.default_rng(11)
        packed = "chain" in inspect.signature(gibbs_sweeps.py_func).parameters

        def sweeps(count: int) -> None:
            if packed:
                gibbs_sweeps(rng, (xc, state, params, tables), np.int64(count))
            else:
                gibbs_sweeps(rng, xc, state, params, tables, count)

        sweeps(1)
        count = 500 if draws == DRAWS else 5
        best = math.inf
        for _ in range(11 if draws == DRAWS else 1):
            start = time.process_time()
            sweeps(count)
            best = min(best, time.process_time() - start)
        return best / count * SWEEPS  # per draw's worth of sweeps

    cases["sweep"] = sweep_only
    for name in names:  # compile or load every kernel first
        cases[name](20)
    print(json.dumps({name: cases[name](DRAWS) for name in names}))


def _run(tree: Path, cases: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--child", cases],
        env=env,
        cwd=tree,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="ae1b15d", help="baseline git revision")
    parser.add_argument("--head", help="revision to measure instead of the working tree")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", help="also write the header line and the table (markdown)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(args.child.split(","))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base"
        head = Path(tmp) / "head" if args.head else ROOT
        trees = [(base, args.base)] + ([(head, args.head)] if args.head else [])
        for path, rev in trees:
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(path), rev],
                check=True,
                capture_output=True,
            )
        try:
            runs: dict[str, list[dict]] = {"base": [], "tree": []}
            for _ in range(args.repeats):  # alternate, so both see the same machine
                runs["base"].append(_run(base, "plain,sweep"))
                cases = "plain,sweep,default,learned,alpha_fixed,alpha_random"
                runs["tree"].append(_run(head, cases))
                print(f"run {len(runs['tree'])}: {runs['base'][-1]} {runs['tree'][-1]}", flush=True)
        finally:
            for path, _ in trees:
                subprocess.run(
                    ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(path)],
                    check=False,
                )
    best = {side: {k: min(r[k] for r in rs) for k in rs[0]} for side, rs in runs.items()}
    rows = [
        ("plain, tree / base", best["tree"]["plain"] / best["base"]["plain"], 1.0),
        ("sweep alone, tree / base", best["tree"]["sweep"] / best["base"]["sweep"], None),
        ("default / plain (tree)", best["tree"]["default"] / best["tree"]["plain"], 1.3),
        ("learned prior / plain (tree)", best["tree"]["learned"] / best["tree"]["plain"], None),
        (
            "random / fixed alpha (tree)",
            best["tree"]["alpha_random"] / best["tree"]["alpha_fixed"],
            1.2,
        ),
    ]
    head = args.head or "HEAD"
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", head], capture_output=True, text=True
    ).stdout.strip()
    lines = [
        f"date {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; base {args.base}; "
        f"head {commit}; machine {os.cpu_count()} CPUs {platform.machine()}",
        "",
        f"best of {args.repeats} alternating runs per revision; ms per draw (sweep: per "
        "10,000 point updates):",
        "",
    ]
    for side in ("base", "tree"):
        cells = ", ".join(f"{k} {1e3 * v:.3f}" for k, v in best[side].items())
        lines.append(f"- {side}: {cells}")
    spread = "; ".join(
        f"{side} {1e3 * min(r['plain'] for r in rs):.3f} to {1e3 * max(r['plain'] for r in rs):.3f}"
        for side, rs in runs.items()
    )
    lines += ["", f"plain, fastest to slowest run (ms per draw): {spread}"]
    lines += ["", "| ratio | value | goal |", "| --- | --- | --- |"]
    for name, value, goal in rows:
        verdict = "-" if goal is None else f"<= {goal} ({'met' if value <= goal else 'missed'})"
        lines.append(f"| {name} | {value:.3f} | {verdict} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    print(json.dumps(runs))  # every run, for the record
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
