"""Which rule for the power r gives the right answer on the real-data panel?

For every data set of the real-data panel (``benchmarks/real_data.py``: iris, wine,
breast cancer, Old Faithful, the digits 1-4 embedding and Sim 2, each column
standardised) and every seed of ``--seeds``, the script fits the pCRP once at each
``r`` of ``--grid`` and lets each candidate rule pick one of those fits:

* ``cv_jump``: the paper's rule, :func:`pymc_pcrp.model_selection.find_jump` on the
  held-out loss of :func:`~pymc_pcrp.model_selection.cross_validate_power`, averaged
  over ``--folds`` folds (the data split in ``--folds`` parts, each held out in turn);
* ``cv_min``: the ``r`` of the lowest held-out loss on the same curve;
* ``loo``: the ``r`` ranked first by ``az.compare`` (PSIS-LOO, from the pointwise
  log-likelihood of :func:`pymc_pcrp.posterior.log_likelihood`);
* ``r=1`` and ``r=1.1``: fixed powers;
* ``agree`` and ``agree_short``: :func:`pymc_pcrp.model_selection.agreeing_power`, the
  largest ``r`` of the grid (``agree_short``: of 1, 1.1, 1.3) up to which every point
  estimate agrees with the one at r = 1 up to the merging of specks (clusters of less
  than 5% of the points).

Every figure is the VI point estimate of the fit the rule picks: its K, its cluster
sizes and its ARI to the known classes (Old Faithful: eruptions of at least 3 minutes,
a proxy). Seconds are those a user of the rule pays: the chosen fit for a fixed r, the
grid's fits for ``loo`` (plus the log-likelihood) and ``agree``, the cross-validation
fits plus the chosen fit for ``cv_*``. ``confident merge`` flags a rule whose point
estimate puts two clusters of a smaller grid r's point estimate (neither a speck) into
one when that smaller r keeps them apart in more than half of its draws.

The fits are cheaper than the panel's (``--chains`` chains of ``--draws`` draws after
``--tune``; the cross-validation fits one chain of ``--cv-draws`` after ``--cv-tune``
on each training part), so that the whole study runs on a small shared machine.

Run from the repository root::

    PYTHONPATH=. nice -n 10 python validation/choice_of_r.py \\
        --json benchmarks/results/choice_of_r.json --md benchmarks/results/choice_of_r.md
    PYTHONPATH=. python validation/choice_of_r.py --tables-only \\
        --json benchmarks/results/choice_of_r.json --md benchmarks/results/choice_of_r.md

The JSON is rewritten after every (data set, seed), so an interrupted run keeps what
it finished; ``--tables-only`` rebuilds the markdown from it.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import datetime  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import platform  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

import real_data  # noqa: E402

RULES = ("cv_jump", "cv_min", "loo", "r=1", "r=1.1", "agree", "agree_short", "default")
SHORT_GRID = (1.0, 1.1, 1.3)
#: Rules as ``choose_power`` implements them: they report every merge against a smaller r
#: of (1, 1.1, 1.3) in the sensitivity table and its warning.
REPORTING = ("agree_short", "default")


def derived_rules(cell: dict) -> dict:
    """The cell's rules plus ``default``: r = 1.1, with the fits at 1 and 1.3 as its check."""
    rules = dict(cell["rules"])
    if "r=1.1" in rules:
        seconds = sum(f["seconds"] for f in cell["fits"] if f["r"] in SHORT_GRID)
        rules["default"] = {**rules["r=1.1"], "seconds": seconds}
    return rules


def _split_mass(draws: np.ndarray, a: np.ndarray, b: np.ndarray) -> float:
    """Posterior probability that a random point of ``a`` and one of ``b`` are apart."""
    together = 0.0
    for z in draws:
        _, inv = np.unique(z, return_inverse=True)
        ca = np.bincount(inv[a], minlength=inv.max() + 1)
        cb = np.bincount(inv[b], minlength=inv.max() + 1)
        together += float(ca @ cb) / (a.size * b.size)
    return 1.0 - together / len(draws)


def confident_merge(chosen: int, labels: dict, draws: dict, speck: float) -> float:
    """Largest posterior mass with which a smaller r keeps apart two clusters merged at ``chosen``.

    For every grid index below ``chosen``, the pairs of non-speck clusters of that point
    estimate whose majorities fall in one cluster of the chosen point estimate; returns the
    largest probability, under that smaller r's draws, that the two are apart (0 if none).
    """
    from pymc_pcrp.stats.power_choice import merged_pairs

    worst = 0.0
    for i in range(chosen):
        for a, b in merged_pairs(labels[i], labels[chosen], speck=speck):
            mass = _split_mass(
                draws[i], np.flatnonzero(labels[i] == a), np.flatnonzero(labels[i] == b)
            )
            worst = max(worst, mass)
    return worst


def fit_grid(data, grid, args, seed):
    """One fit per r: seconds, PE, ARI, K, LOO; keeps label draws for the merge check."""
    import arviz as az

    from pymc_pcrp._idata import label_draws
    from pymc_pcrp.posterior import log_likelihood

    fits, draws = [], {}
    for i, r in enumerate(grid):
        start = time.perf_counter()
        idata = real_data.pcrp_fit(
            data.X,
            r,
            draws=args.draws,
            tune=args.tune,
            chains=args.chains,
            cores=args.cores,
            seed=seed + 1000 * i,
            step_kwargs={},
        )
        seconds = time.perf_counter() - start
        labels = real_data.pcrp_point_labels(idata, seed)
        start = time.perf_counter()
        log_likelihood(idata)
        loo_seconds = time.perf_counter() - start
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            loo = az.loo(idata)
        k, _ = real_data.pcrp_k_and_logjoint(idata)
        fits.append(
            {
                "r": r,
                "seconds": seconds,
                "loglik_seconds": loo_seconds,
                "mean_k": float(k.mean()),
                "pe_k": real_data.n_distinct(labels),
                "pe_sizes": real_data.top_sizes(labels),
                "ari": real_data.ari(data.truth, labels),
                "elpd_loo": float(loo.elpd_loo),
                "elpd_se": float(loo.se),
                "pareto_k_bad": int(np.sum(np.asarray(loo.pareto_k) > 0.7)),
                "labels": [int(v) for v in labels],
            }
        )
        draws[i] = label_draws(idata).reshape(-1, data.X.shape[0])[:: max(1, args.draws // 100)]
        draws[i] = np.asarray(draws[i])
        fits[-1]["idata"] = idata
        print(
            f"  [{data.name} seed {seed}] r={r:g}: PE K={fits[-1]['pe_k']} "
            f"ARI={fits[-1]['ari']:.3f} {seconds:.1f}s (+{loo_seconds:.1f}s loglik)",
            flush=True,
        )
    return fits, draws


def cross_validate(data, grid, args, seed) -> dict:
    """The held-out loss over the grid, averaged over folds, and its seconds."""
    from pymc_pcrp.stats.cross_validation import cross_validate_power

    rng = np.random.default_rng(seed)
    parts = np.array_split(rng.permutation(data.X.shape[0]), args.folds)
    losses, mean_k = [], []
    start = time.perf_counter()
    for f, test in enumerate(parts):
        train = np.setdiff1d(np.arange(data.X.shape[0]), test)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cv = cross_validate_power(
                data.X[train],
                data.X[test],
                grid,
                draws=args.cv_draws,
                tune=args.cv_tune,
                chains=1,
                random_seed=seed + f,
                n_jobs=1,
            )
        losses.append(cv.loss)
        mean_k.append(cv.mean_k)
    seconds = time.perf_counter() - start
    loss = np.mean(losses, axis=0)
    print(f"  [{data.name} seed {seed}] CV {seconds:.0f}s: loss {np.round(loss, 1)}", flush=True)
    return {
        "loss": [float(v) for v in loss],
        "fold_loss": [[float(v) for v in fold] for fold in losses],
        "mean_k": [float(v) for v in np.mean(mean_k, axis=0)],
        "seconds": seconds,
    }


def apply_rules(grid, fits, draws, cv, speck) -> dict:
    """Index into ``grid`` and seconds of every rule."""
    import arviz as az

    from pymc_pcrp.stats.cross_validation import find_jump
    from pymc_pcrp.stats.power_choice import agreeing_power

    grid = list(grid)
    fit_seconds = [f["seconds"] for f in fits]
    loglik_seconds = [f["loglik_seconds"] for f in fits]
    labels = {i: np.asarray(f["labels"]) for i, f in enumerate(fits)}
    out = {}
    if cv is not None:
        r_jump, _ = find_jump(grid, cv["loss"])
        i_jump = grid.index(r_jump)
        i_min = int(np.argmin(cv["loss"]))
        out["cv_jump"] = (i_jump, cv["seconds"] + fit_seconds[i_jump])
        out["cv_min"] = (i_min, cv["seconds"] + fit_seconds[i_min])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = az.compare({f"{r:g}": f["idata"] for r, f in zip(grid, fits, strict=True)})
    i_loo = grid.index(float(table.index[0]))
    out["loo"] = (i_loo, sum(fit_seconds) + sum(loglik_seconds))
    out["r=1"] = (grid.index(1.0), fit_seconds[grid.index(1.0)])
    out["r=1.1"] = (grid.index(1.1), fit_seconds[grid.index(1.1)])
    r_agree = agreeing_power(grid, [labels[i] for i in range(len(grid))], speck=speck)
    out["agree"] = (grid.index(r_agree), sum(fit_seconds))
    short = [grid.index(r) for r in SHORT_GRID]
    r_short = agreeing_power(SHORT_GRID, [labels[i] for i in short], speck=speck)
    out["agree_short"] = (grid.index(r_short), sum(fit_seconds[i] for i in short))
    rules = {}
    for name, (i, seconds) in out.items():
        rules[name] = {
            "r": grid[i],
            "pe_k": fits[i]["pe_k"],
            "pe_sizes": fits[i]["pe_sizes"],
            "ari": fits[i]["ari"],
            "seconds": seconds,
            "merge_mass": confident_merge(i, labels, draws, speck),
        }
    return rules


def _commit() -> str:
    try:
        return subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _header(meta: dict) -> str:
    """Date, the commit the run started from, machine and load: the table's one header line."""
    now = datetime.datetime.now(datetime.timezone.utc)
    load = os.getloadavg()
    return (
        f"{now:%Y-%m-%d %H:%M} UTC, commit {meta.get('commit') or _commit()}, "
        f"{os.cpu_count()} CPUs {platform.machine()}, load average {load[0]:.1f} at the end"
    )


def tables(results: dict) -> str:
    """Markdown: one header line, then per data set and seed the rules' table and the grid."""
    meta = results["meta"]
    lines = [
        f"Generated {meta['header']}; command `{meta['command']}`; fits of {meta['chains']} "
        f"chains x {meta['draws']} draws after {meta['tune']} tune; CV {meta['folds']} folds, "
        f"1 chain x {meta['cv_draws']} draws after {meta['cv_tune']} tune per training part.",
        "",
    ]
    for cell in results["cells"]:
        lines.append(
            f"### {cell['dataset']}, seed {cell['seed']} (N = {cell['n']}, D = {cell['d']})"
        )
        lines.append("")
        lines.append("| rule | r | K | sizes | ARI | seconds | confident merge |")
        lines.append("|---|---|---|---|---|---|---|")
        rules = derived_rules(cell)
        for name in RULES:
            rule = rules.get(name)
            if rule is None:
                continue
            mass = rule["merge_mass"]
            flag = "no"
            if mass > 0.5:
                flag = f"{'reported' if name in REPORTING else 'yes'} ({mass:.2f})"
            lines.append(
                f"| {name} | {rule['r']:g} | {rule['pe_k']} | {rule['pe_sizes']} "
                f"| {real_data.fmt(rule['ari'], 3)} | {rule['seconds']:.0f} | {flag} |"
            )
        lines.append("")
        lines.append("| grid r | PE K | ARI | mean K | elpd_loo (se) | CV loss | s/fit |")
        lines.append("|---|---|---|---|---|---|---|")
        cv = cell.get("cv")
        for i, f in enumerate(cell["fits"]):
            loss = f"{cv['loss'][i]:.1f}" if cv else "-"
            lines.append(
                f"| {f['r']:g} | {f['pe_k']} | {real_data.fmt(f['ari'], 3)} | {f['mean_k']:.2f} "
                f"| {f['elpd_loo']:.1f} ({f['elpd_se']:.1f}) | {loss} | {f['seconds']:.1f} |"
            )
        lines.append("")
    return "\n".join(lines)


def requirement(results: dict, rule: str) -> list[str]:
    """Cells where ``rule`` misses ARI >= max(ARI(1), ARI(1.1)) - 0.02 or merges confidently."""
    misses = []
    for cell in results["cells"]:
        rules = derived_rules(cell)
        target = max(rules["r=1"]["ari"], rules["r=1.1"]["ari"]) - 0.02
        got = rules[rule]
        silent_merge = got["merge_mass"] > 0.5 and rule not in REPORTING
        if got["ari"] < target or silent_merge:
            misses.append(f"{cell['dataset']}/{cell['seed']}")
    return misses


def summary(results: dict) -> str:
    lines = [
        "| rule | cells meeting the requirement | misses | total seconds |",
        "|---|---|---|---|",
    ]
    for rule in RULES:
        if not all(rule in derived_rules(c) for c in results["cells"]):
            continue
        misses = requirement(results, rule)
        total = sum(derived_rules(c)[rule]["seconds"] for c in results["cells"])
        n = len(results["cells"])
        lines.append(
            f"| {rule} | {n - len(misses)} of {n} | {', '.join(misses) or '-'} | {total:.0f} |"
        )
    return "\n".join(lines)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", default=",".join(real_data.ALL_DATASETS))
    parser.add_argument("--seeds", default="20261126,1")
    parser.add_argument("--grid", default="1,1.1,1.2,1.3,1.5,1.8")
    parser.add_argument("--chains", type=int, default=2)
    parser.add_argument("--draws", type=int, default=500)
    parser.add_argument("--tune", type=int, default=500)
    parser.add_argument("--cores", type=int, default=1)
    parser.add_argument("--folds", type=int, default=2)
    parser.add_argument("--cv-draws", type=int, default=200)
    parser.add_argument("--cv-tune", type=int, default=200)
    parser.add_argument("--no-cv", dest="cv", action="store_false")
    parser.add_argument("--speck", type=float, default=0.05)
    parser.add_argument("--json", required=True)
    parser.add_argument("--md", default=None)
    parser.add_argument("--tables-only", action="store_true")
    args = parser.parse_args(argv)
    args.datasets = [d for d in args.datasets.split(",") if d]
    args.seeds = [int(s) for s in args.seeds.split(",") if s]
    args.grid = sorted(real_data.parse_powers(args.grid))
    for r in (1.0, 1.1, *SHORT_GRID):
        if r not in args.grid:
            parser.error(f"--grid must hold {r:g}")
    return args


def write(results: dict, args, *, stamp: bool = True) -> None:
    if stamp:
        results["meta"]["header"] = _header(results["meta"])
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(results, separators=(",", ":")) + "\n")
    if args.md:
        Path(args.md).write_text(
            tables(results) + "\n### The requirement, rule by rule\n\n" + summary(results) + "\n"
        )


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.tables_only:
        results = json.loads(Path(args.json).read_text())
        write(results, args, stamp=False)  # the header of the run that made the JSON
        print(summary(results))
        return 0
    real_data.pcrp_quiet()
    warnings.filterwarnings("ignore", category=FutureWarning)
    command = "python validation/choice_of_r.py " + " ".join(sys.argv[1:] if argv is None else argv)
    results = {
        "meta": {
            "command": command.strip(),
            "commit": _commit(),
            **{
                k: getattr(args, k)
                for k in ("chains", "draws", "tune", "folds", "cv_draws", "cv_tune", "speck")
            },
            "grid": args.grid,
        },
        "cells": [],
    }
    # warm-up (not timed): compile or load every kernel the fits use
    warm = real_data.standardise(np.random.default_rng(0).normal(size=(40, 2)))
    real_data.pcrp_fit(
        warm, 1.1, draws=10, tune=10, chains=args.chains, cores=args.cores, seed=0, step_kwargs={}
    )
    real_data.pcrp_point_labels(np.zeros((2, 40), dtype=np.int64), 0)
    for seed in args.seeds:
        for name in args.datasets:
            data = real_data.load_dataset(name, None)
            fits, draws = fit_grid(data, args.grid, args, seed)
            cv = cross_validate(data, args.grid, args, seed) if args.cv else None
            rules = apply_rules(args.grid, fits, draws, cv, args.speck)
            for f in fits:
                del f["idata"]
            results["cells"].append(
                {
                    "dataset": name,
                    "seed": seed,
                    "n": int(data.X.shape[0]),
                    "d": int(data.X.shape[1]),
                    "fits": fits,
                    "cv": cv,
                    "rules": rules,
                }
            )
            write(results, args)
            print(
                f"[{name} seed {seed}] "
                + ", ".join(f"{k}: r={v['r']:g} ARI={v['ari']:.3f}" for k, v in rules.items()),
                flush=True,
            )
    print(summary(results))
    return 0


if __name__ == "__main__":
    logging.getLogger("pymc").setLevel(logging.ERROR)
    sys.exit(main())
