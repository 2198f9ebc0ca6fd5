"""Today's defaults against earlier ones, on cells of the real-data panel, side by side.

Run from the repository root (``PYTHONPATH=.`` when the package is not installed)::

    python benchmarks/defaults_ab.py --cells sim2:1 --baseline 2026-11-29-am --seeds 1
    python benchmarks/defaults_ab.py --cells digits:1.3,breast_cancer:1.1 --baseline 2026-11-28 \
        --seeds 2002,12002 --reps 2

Each cell (``data set:r``, the data sets of ``benchmarks/real_data.py``, standardised)
is fitted as the panel fits it (4 chains of 1,000 draws after 500 tuning draws on two
cores unless told otherwise) with the package's current defaults and with an earlier
set of defaults, alternately in one process, so that both see the same hour of a noisy
machine. The seeds are the fits' own seeds (the panel gives the cell of the ``i``-th
power ``seed + 1000 i``). For each fit it prints R-hat and bulk ESS of K and of the log
joint, the point estimate's K and ARI (the panel's, so that a faster default that
changes the answer shows) and the wall seconds of sampling; at the end, per cell, the
median seconds of each and their ratio (current / baseline).

An earlier set of defaults is imitated by setting the constants of
``pymc_pcrp.sampler.options`` that changed, and step options, back to their old
values (``BASELINES``). The chains must inherit those settings, so with ``cores > 1``
the script needs the ``fork`` start method of multiprocessing (the default on Linux
with Python < 3.14); it stops otherwise.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import contextlib  # noqa: E402
import datetime  # noqa: E402
import multiprocessing  # noqa: E402
import sys  # noqa: E402

from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))

import real_data  # noqa: E402

from pymc_pcrp.step_methods import _options  # noqa: E402

# name -> (what it was, constants of _options to set, whether tuning draws ran as many
# sweeps as kept draws)
BASELINES = {
    "2026-11-28": (
        "the defaults before commit 64aebbf: at most one split-merge proposal per sweep "
        "after tuning, tuning draws of sweeps_per_draw sweeps, min(30, ceil(45000 / (N D))) "
        "sweeps per draw",
        {"SPLIT_MERGE_MAX": 1.0, "AUTO_SWEEPS_MAX": 30, "AUTO_SWEEP_MIN_D": 1},
        True,
    ),
    "2026-11-29-am": (
        "the defaults before commit 1ed2256: min(20, ceil(45000 / (N D))) sweeps per draw "
        "(one dimension counted as one)",
        {"AUTO_SWEEP_MIN_D": 1},
        False,
    ),
}


@contextlib.contextmanager
def baseline_constants(constants: dict):
    """Set constants of ``_options`` for the duration of the block."""
    old = {name: getattr(_options, name) for name in constants}
    try:
        for name, value in constants.items():
            setattr(_options, name, value)
        yield
    finally:
        for name, value in old.items():
            setattr(_options, name, value)


def baseline_sweeps(data, baseline: str | None) -> int:
    """Sweeps per draw that ``sweeps_per_draw=None`` gives ``data`` under ``baseline``."""
    with baseline_constants(BASELINES[baseline][1] if baseline else {}):
        return _options.auto_sweeps_per_draw(*data.X.shape)


def fit_once(data, power: float, seed: int, args, baseline: str | None) -> real_data.FitRow:
    """One panel fit of a cell with the current defaults (``baseline=None``) or a baseline's.

    The fit and its diagnostics are the panel's own (``real_data.fit_row``), so both
    sides are measured exactly as ``benchmarks/real_data.py`` measures a cell.
    """
    step_kwargs: dict = {}
    constants: dict = {}
    if baseline is not None:
        _, constants, tune_as_kept = BASELINES[baseline]
        if tune_as_kept:
            step_kwargs["tune_sweeps"] = baseline_sweeps(data, baseline)
    panel_args = argparse.Namespace(
        **vars(args), step_kwargs=step_kwargs, covariance="full", nu0=None
    )
    with baseline_constants(constants):
        return real_data.fit_row(data, baseline or "current", power, panel_args, seed)


def parse_cells(text: str) -> list[tuple[str, float]]:
    """``"sim2:1,digits:1.3"`` -> ``[("sim2", 1.0), ("digits", 1.3)]``."""
    cells = []
    for item in text.split(","):
        name, _, power = item.strip().partition(":")
        if not name or not power:
            raise SystemExit(f"--cells: expected data set:r, got {item!r}")
        cells.append((name, float(power)))
    return cells


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cells", required=True, help="comma-separated data set:r")
    parser.add_argument("--baseline", required=True, choices=sorted(BASELINES))
    parser.add_argument("--seeds", default="20261126", help="comma-separated fit seeds")
    parser.add_argument("--reps", type=int, default=1, help="fits of each kind per seed")
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--tune", type=int, default=500)
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--cores", type=int, default=2)
    args = parser.parse_args(argv)
    if args.cores > 1 and multiprocessing.get_start_method() != "fork":
        raise SystemExit(
            "With --cores > 1 the chains must inherit the baseline's settings: this needs "
            f"the 'fork' start method, and this Python uses {multiprocessing.get_start_method()!r}."
            " Run with --cores 1."
        )
    cells = parse_cells(args.cells)
    seeds = [int(s) for s in args.seeds.split(",")]
    real_data.pcrp_quiet()
    what = BASELINES[args.baseline][0]
    print(f"# Current defaults against {args.baseline}: {what}")
    print(
        f"- date: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC; git commit "
        f"{real_data._git_commit()}; load average {os.getloadavg()[0]:.2f}"
    )
    print(
        f"- {args.chains} chains x {args.draws} draws after {args.tune}, cores={args.cores}; "
        f"fit seeds {seeds}, {args.reps} fit(s) of each kind per seed, baseline first"
    )
    datasets = {name: real_data.load_dataset(name, None) for name in {c[0] for c in cells}}
    warm = datasets[cells[0][0]]
    real_data.pcrp_fit(
        warm.X, 1.0, draws=20, tune=20, chains=2, cores=args.cores, seed=0, step_kwargs={}
    )
    print()
    print(
        "| cell | seed | defaults | sweeps | R-hat K | ESS K | R-hat logp | ESS logp "
        "| PE K | ARI | s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    times: dict = {}
    for name, power in cells:
        data = datasets[name]
        for seed in seeds:
            for _ in range(args.reps):
                for label, baseline in ((args.baseline, args.baseline), ("current", None)):
                    row = fit_once(data, power, seed, args, baseline)
                    times.setdefault((name, power, label), []).append(row.seconds)
                    print(
                        f"| {name} r={power:g} | {seed} | {label} | "
                        f"{baseline_sweeps(data, baseline)} | {row.rhat_k:.3f} | "
                        f"{row.ess_k:.0f} | {row.rhat_lj:.3f} | {row.ess_lj:.0f} | "
                        f"{row.pe_k} | {real_data.fmt(row.ari, 3)} | {row.seconds:.1f} |",
                        flush=True,
                    )
    print()
    for name, power in cells:
        base = float(np.median(times[(name, power, args.baseline)]))
        new = float(np.median(times[(name, power, "current")]))
        print(
            f"{name} r={power:g}: median {new:.1f} s current, {base:.1f} s {args.baseline}; "
            f"ratio {new / base:.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
