"""Cost of a table-family sweep against the diagonal Gaussian family's, per point and column.

Run from the repository root::

    PYTHONPATH=. python benchmarks/table_sweep_speed.py --n 2000 --d 8 --sweeps 200 --repeats 5

One process, one machine: for each family a table of ``N`` rows and ``D``
columns from 3 latent classes, the sweep state built at the true classes (the
chain is then in its stationary regime, with about as many clusters in every
family), a warm-up sweep (numba loading), then ``--repeats`` alternated timings
of ``--sweeps`` sweeps of each kernel called directly (no ``pm.sample``, no
split-merge). Families:

* ``diag``: Gaussian columns, the diagonal Normal-Inverse-Gamma family's own
  sweep (``_kernels.diag_sweep.diag_sweeps``);
* ``table-bernoulli``, ``table-categorical`` (5 levels), ``table-poisson``,
  ``table-gaussian``: the table family on the generic moves
  (``_kernels.family_moves.run_sweeps``: the family's own sweep,
  ``_kernels.table_sweep.table_sweeps``).

Prints the best CPU time per sweep, per point and column (nanoseconds), and each
table family's ratio to ``diag``; ``--out`` writes them as JSON, with a header line
(date, commit, machine).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import time

import numba
import numpy as np

from pymc_pcrp._kernels import family_moves
from pymc_pcrp._kernels.diag_state import diag_tables, init_diag_state, make_diag_params
from pymc_pcrp._kernels.diag_sweep import diag_sweeps
from pymc_pcrp._kernels.partitions import canonical_labels
from pymc_pcrp._kernels.table import make_table_params, table_tables
from pymc_pcrp.distributions.table import table_spec


@numba.njit
def family_sweeps(rng, chain, n_sweeps):
    """The sweep the sampler runs for the family of ``chain`` (its own or the generic one)."""
    return family_moves.run_sweeps(rng, chain, n_sweeps)


def _classes(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 3, n)


def diag_case(n: int, d: int, seed: int):
    """The diagonal family on Gaussian columns (class means 3 apart); returns a sweep callable."""
    rng = np.random.default_rng(seed)
    labels = _classes(n, seed)
    x = rng.normal(size=(n, d)) + 3.0 * labels[:, None]
    xc = np.ascontiguousarray(x - x.mean(axis=0))
    params = make_diag_params(1.0, 1.1, 0.01, 3.0, 0.25 * x.var(axis=0))
    state = init_diag_state(xc, canonical_labels(labels), params)
    chain = (xc, state, params, diag_tables(xc, params))
    return lambda rng, sweeps: diag_sweeps(rng, chain, sweeps), state


def table_case(kind: str, n: int, d: int, seed: int):
    """The table family on ``d`` columns of one kind from 3 classes; returns a sweep callable."""
    rng = np.random.default_rng(seed)
    labels = _classes(n, seed)
    if kind == "bernoulli":
        p = rng.choice([0.15, 0.85], size=(3, d))
        table = rng.random((n, d)) < p[labels]
    elif kind == "categorical":
        p = rng.dirichlet(np.full(5, 0.5), size=(3, d))
        table = np.array([[rng.choice(5, p=p[c, j]) for j in range(d)] for c in labels])
        table = table.astype(object)
    elif kind == "poisson":
        table = rng.poisson(1.0 + 4.0 * labels[:, None], size=(n, d))
    else:
        table = rng.normal(size=(n, d)) + 3.0 * labels[:, None]
    spec = table_spec(table, kind)
    values, mask = spec.encode(table)
    gaussian = spec.kind == 2
    values[:, gaussian] -= spec.hyp[gaussian, 3]
    values[~mask] = np.nan
    params = make_table_params(1.0, 1.1, spec.kind, spec.nlev, spec.conc, spec.hyp, n, values)
    state = family_moves.init_state(values, canonical_labels(labels), params)
    chain = (values, state, params, table_tables(values, params))
    return lambda rng, sweeps: family_sweeps(rng, chain, np.int64(sweeps)), state


def main(argv=None) -> dict:
    """Run the comparison and print (and optionally save) the results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--d", type=int, default=8)
    parser.add_argument("--sweeps", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None, help="JSON of the run")
    parser.add_argument("--md", default=None, help="markdown of the run (header and table)")
    args = parser.parse_args(argv)
    n, d = args.n, args.d
    cases = {"diag": diag_case(n, d, args.seed)}
    for kind in ("bernoulli", "categorical", "poisson", "gaussian"):
        cases[f"table-{kind}"] = table_case(kind, n, d, args.seed)
    best = dict.fromkeys(cases, np.inf)
    rng = np.random.default_rng(args.seed)
    for run, _ in cases.values():
        run(rng, 1)  # loads (or compiles) the kernel
    for _ in range(args.repeats):
        for name, (run, _) in cases.items():
            start = time.process_time()
            run(rng, args.sweeps)
            best[name] = min(best[name], time.process_time() - start)
    per_cell = {name: 1e9 * t / (args.sweeps * n * d) for name, t in best.items()}
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    header = (
        f"date {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; commit {commit or '?'}; "
        f"machine {os.cpu_count()} CPUs {platform.machine()}; python {platform.python_version()}"
    )
    result = {
        "header": header, "n": n, "d": d, "sweeps": args.sweeps, "repeats": args.repeats,
        "families": {},
    }  # fmt: skip
    print(header)
    print(f"N = {n}, D = {d}, best of {args.repeats} runs of {args.sweeps} sweeps (CPU time)")
    print(f"{'family':<20}{'ns / point / column':>22}{'ratio to diag':>16}{'K':>6}")
    for name, value in per_cell.items():
        ratio = value / per_cell["diag"]
        k = int(cases[name][1].k[0])
        result["families"][name] = {"ns_per_point_column": value, "ratio_to_diag": ratio, "k": k}
        print(f"{name:<20}{value:>22.2f}{ratio:>16.2f}{k:>6}")
    if args.out:
        with open(args.out, "w") as handle:
            json.dump(result, handle, indent=2)
    if args.md:
        rows = [
            f"| {name} | {row['ns_per_point_column']:.2f} | {row['ratio_to_diag']:.2f} "
            f"| {row['k']} |"
            for name, row in result["families"].items()
        ]
        table = [
            header,
            "",
            f"N = {n}, D = {d}, best of {args.repeats} runs of {args.sweeps} sweeps (CPU time)",
            "",
            "| family | ns per point and column | ratio to diag | K at the end |",
            "| --- | --- | --- | --- |",
            *rows,
        ]
        with open(args.md, "w") as handle:
            handle.write("\n".join(table) + "\n")
    return result


if __name__ == "__main__":
    main()
