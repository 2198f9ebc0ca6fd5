"""``summary.md`` of the ``cluster`` command: data, settings, posterior of K, diagnostics."""

from __future__ import annotations

import argparse
import shlex
import sys

from pathlib import Path
from typing import NamedTuple

import arviz as az
import numpy as np

from pymc_pcrp._kernels.moves import SMALL_SIZE
from pymc_pcrp._runtime.logging import quiet_loggers
from pymc_pcrp.cli.io import ClusterData
from pymc_pcrp.diagnostics import ChainComparison, ConvergenceReport
from pymc_pcrp.model_selection import CVResult
from pymc_pcrp.posterior import PointEstimate
from pymc_pcrp.sampler.options import (
    auto_pair_moves,
    auto_speck_moves,
)


def _fmt(value: float, digits: int = 2) -> str:
    return "n/a" if not np.isfinite(value) else f"{value:.{digits}f}"


def _markdown_table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def _invoked_command() -> str:
    """Return the process command line, spelling the module entry point ``python -m pymc_pcrp``."""
    program = Path(sys.argv[0]).name if sys.argv else ""
    if program == "__main__.py" and Path(sys.argv[0]).parent.name == "pymc_pcrp":
        return shlex.join(["python", "-m", "pymc_pcrp", *sys.argv[1:]])
    return shlex.join(sys.argv)


def _full_command(args: argparse.Namespace, seed: int, power_text: str) -> str:
    """Return a command line that reproduces this run, with every option spelled out."""
    parts = ["python", "-m", "pymc_pcrp", "cluster", str(args.data), "--out", str(args.out)]
    parts += ["--power", power_text, "--alpha", repr(args.alpha)]
    if args.columns:
        parts += ["--columns", args.columns]
    if args.standardize:
        parts.append("--standardize")
    parts += ["--header", args.header]
    if args.delimiter is not None:
        parts += ["--delimiter", args.delimiter]
    parts += ["--draws", str(args.draws), "--tune", str(args.tune), "--chains", str(args.chains)]
    parts += ["--cores", str(args.cores), "--sweeps-per-draw", str(args.sweeps_per_draw)]
    parts += ["--init", args.init]
    if args.split_merge is not None:
        parts += ["--split-merge", f"{args.split_merge:g}"]
    if args.speck_moves is not None:
        parts += ["--speck-moves", f"{args.speck_moves:g}"]
    if args.pair_moves is not None:
        parts += ["--pair-moves", f"{args.pair_moves:g}"]
    if args.template_jumps is not None:
        parts += ["--template-jumps", f"{args.template_jumps:g}"]
    parts += ["--seed", str(seed)]
    if power_text == "auto":
        grid = ",".join(f"{r:g}" for r in args.cv_grid)
        parts += ["--cv-grid", grid, "--cv-fraction", repr(args.cv_fraction)]
        parts += ["--cv-draws", str(args.cv_draws), "--cv-tune", str(args.cv_tune)]
        parts += ["--cv-chains", str(args.cv_chains), "--cv-jump-tol", repr(args.cv_jump_tol)]
        parts += ["--n-jobs", str(args.n_jobs)]
    return shlex.join(parts)


def _data_section(args, data: ClusterData, scaling) -> list[str]:
    n, d = data.x.shape
    lines = ["## Data", ""]
    lines.append(f"- file: `{args.data}` ({'with' if data.has_header else 'no'} header row)")
    lines.append(f"- N = {n} rows, D = {d} column(s): {', '.join(f'`{c}`' for c in data.names)}")
    if scaling is None:
        lines.append("- columns used as they are (no standardisation)")
    else:
        mean, sd = scaling
        lines.append(
            "- standardised to mean 0 and sd 1 (sd with ddof=1); means "
            + ", ".join(f"{v:.6g}" for v in mean)
            + "; sds "
            + ", ".join(f"{v:.6g}" for v in sd)
        )
    return lines


def power_choice(cv: CVResult | None) -> str:
    """How ``r`` was set: given, chosen by cross-validation, or the top of a grid without a jump."""
    if cv is None:
        return "given"
    if cv.jumped:
        return "chosen by cross-validation"
    return "top of the cross-validation grid: the loss never jumped"


def _split_merge_text(args, idata: az.InferenceData) -> str:
    """Return the split-merge rate of the run: given, or what each chain set after tuning."""
    if args.split_merge is not None:
        return f"{args.split_merge:g}"
    rates = np.unique(np.round(idata.sample_stats["split_merge_rate"].values[:, -1], 3))
    text = f"{rates[0]:.3g}" if len(rates) == 1 else f"{rates.min():.3g}-{rates.max():.3g}"
    return f"{text} (set from each chain's partition at the end of tuning)"


def _jumps_text(args, idata: az.InferenceData | None) -> str:
    """Return the run's template jumps (proposed and accepted over all chains), or ``""``."""
    stats = None if idata is None else idata.get("sample_stats")
    if stats is None or "jump_proposed" not in stats:
        return ""
    proposed = int(stats["jump_proposed"].sum())
    if proposed == 0:
        why = "turned off" if args.template_jumps == 0 else "fewer than two distinct templates"
        return f", no template jumps ({why})"
    accepted = int(stats["jump_accepted"].sum())
    return f", template jumps: {accepted} of {proposed} proposals accepted"


def _model_section(
    args,
    shape: tuple[int, int],
    power: float,
    seed: int,
    cv: CVResult | None,
    rate: str,
    idata: az.InferenceData | None = None,
) -> list[str]:
    lines = ["", "## Model and sampler", ""]
    how = power_choice(cv)
    lines.append(f"- power r = {power:g} ({how}); alpha = {args.alpha:g}")
    lines.append("- NIW prior: `NIWPrior.from_data` of the clustered data (defaults)")
    on = args.split_merge is None or args.split_merge > 0
    specks = auto_speck_moves(float(on)) if args.speck_moves is None else args.speck_moves
    pairs = auto_pair_moves(float(on), *shape) if args.pair_moves is None else args.pair_moves
    moves = f"{rate} split-merge proposal(s) per sweep" + (
        f" and {specks:g} among the clusters of at most {SMALL_SIZE} points" if specks else ""
    )
    if pairs:
        moves += f", {pairs:g} pair move(s) per sweep"
    moves += _jumps_text(args, idata)
    given = (args.split_merge, args.speck_moves, args.pair_moves, args.template_jumps)
    if all(option is None for option in given):
        moves = f"the step's default moves (PCRPGibbs without options: {moves})"
    lines.append(
        f"- {args.chains} chain(s) x {args.draws} draws after {args.tune} burn-in draws, "
        f"{args.sweeps_per_draw} Gibbs sweep(s) per draw, {moves}, initial partition "
        f"'{args.init}'; "
        f"seed {seed}"
    )
    return lines


def _cv_section(args, n: int, cv: CVResult, cv_sizes, cv_warnings: list[str]) -> list[str]:
    lines = ["", "## Cross-validation of r", ""]
    lines.append(
        f"Random split: {cv_sizes[0]} training rows, {cv_sizes[1]} held-out rows. Each r was "
        f"fitted on the training rows ({args.cv_chains} chain(s) x {args.cv_draws} draws "
        f"after {args.cv_tune}); the held-out loss is averaged over draws. The chosen r is "
        f"the last before the loss first rises by more than {cv.jump_tol:.0%}. All {n} rows "
        "were then clustered with it."
    )
    lines += ["", f"**{cv.conclusion()}**"]
    lines.append("")
    rows = []
    for i, r in enumerate(cv.powers):
        mark = "chosen" if r == cv.chosen_power else ("jump" if i == cv.jump_index else "")
        rows.append(
            [f"{r:g}", f"{cv.loss[i]:.4g}", f"{cv.loss_se[i]:.2g}", f"{cv.mean_k[i]:.2f}", mark]
        )
    lines += _markdown_table(["r", "held-out loss", "MC s.e.", "mean K (training)", ""], rows)
    lines += [f"\n> Warning: {message}" for message in cv_warnings]
    return lines


def _k_section(idata: az.InferenceData) -> list[str]:
    k = np.asarray(idata.posterior["n_clusters"].values)
    values = np.arange(int(k.min()), int(k.max()) + 1)
    lines = ["", "## Posterior of the number of clusters K", ""]
    header = ["K", "all chains"]
    per_chain = k.shape[0] > 1
    if per_chain:
        header += [f"chain {c}" for c in range(k.shape[0])]
    rows = []
    for value in values:
        row = [str(value), f"{np.mean(k == value):.3f}"]
        if per_chain:
            row += [f"{np.mean(k[c] == value):.3f}" for c in range(k.shape[0])]
        rows.append(row)
    return lines + _markdown_table(header, rows)


def convergence_advice(report: ConvergenceReport) -> str:
    """Return what failed and what to do, in the terms of the command's options."""
    return (
        "the chains have not converged. "
        + " ".join(report.problems)
        + " Remedy: more draws (--draws), more chains (--chains), or another r (--power), "
        "or more split-merge proposals (--split-merge 1); "
        "until then, do not trust the posterior of K or the point estimate."
    )


def _warnings_section(report: ConvergenceReport, cv_info) -> list[str]:
    """Warnings shown at the top of summary.md: no convergence, no jump of the CV loss."""
    lines = []
    if not report.converged:
        lines += [f"> **Warning:** {convergence_advice(report)}", ""]
    if cv_info is not None and not cv_info[0].jumped:
        lines += [f"> **Warning:** {cv_info[0].conclusion()} (--cv-grid)", ""]
    return lines


def _convergence_section(idata: az.InferenceData, report: ConvergenceReport) -> list[str]:
    lines = ["", "## Convergence", ""]
    # One chain or a constant K: R-hat and MCSE are undefined.
    with quiet_loggers("arviz"):
        post = az.summary(idata, var_names=["n_clusters"], kind="all")
        stats = az.summary(idata, group="sample_stats", var_names=["log_joint"], kind="all")
    rows = []
    for name, s in (("n_clusters", post.loc["n_clusters"]), ("log_joint", stats.loc["log_joint"])):
        q = report[name]
        rows.append(
            [
                name,
                _fmt(s["mean"]),
                _fmt(s["sd"]),
                "constant" if q.constant and q.ok else _fmt(q.r_hat, 3),
                "constant" if q.constant else _fmt(q.ess_bulk, 0),
                _fmt(s["ess_tail"], 0),
                "ok" if q.ok else "FAIL",
            ]
        )
    header = ["quantity", "mean", "sd", "R-hat", "bulk ESS", "tail ESS", "check"]
    lines += _markdown_table(header, rows)
    lines.append("")
    lines.append(
        f"Checks: R-hat <= {report.rhat_max:g} and bulk ESS >= {report.ess_min:g} (100 per "
        "chain). A quantity that is the same constant in every chain passes."
    )
    if report.n_chains == 1:
        lines.append("\nR-hat needs at least two chains; only the ESS was checked.")
    if not report.converged:
        lines.append("\n" + " ".join(report.problems))
    return lines


def _chains_section(comparison: ChainComparison) -> list[str]:
    """Each chain's own point estimate, the points two chains place differently, the verdict."""
    lines = ["", "## How the chains differ", ""]
    lines.append(
        "Each chain's draws summarised by their own point estimate (VI loss, "
        f"{comparison.n_draws} draws per chain), and by the estimates of its two halves:"
    )
    lines.append("")
    header = ["chain", "clusters", "largest sizes", "mean K", "mean log joint", "halves differ"]
    rows = []
    for c, labels in enumerate(comparison.estimates):
        joint = comparison.mean_log_joint
        rows.append(
            [
                str(c),
                str(np.unique(labels).size),
                comparison.sizes_text(c),
                _fmt(comparison.mean_k[c]),
                "n/a" if joint is None else _fmt(joint[c], 1),
                str(comparison.within[c]),
            ]
        )
    lines += _markdown_table(header, rows)
    n_chains = comparison.estimates.shape[0]
    lines += ["", "Points that two chains' estimates place differently (clusters matched):", ""]
    rows = [[str(c)] + [str(v) for v in comparison.n_different[c]] for c in range(n_chains)]
    lines += _markdown_table(["chain"] + [str(c) for c in range(n_chains)], rows)
    return [*lines, "", comparison.verdict(shown=50)]


def _point_estimate_section(estimate: PointEstimate) -> list[str]:
    sizes = np.sort(estimate.sizes)[::-1]
    return [
        "",
        "## Point estimate",
        "",
        f"The clustering minimising the posterior expected variation of information has "
        f"{estimate.n_clusters} cluster(s) (expected VI {estimate.expected_loss:.3f} bits, "
        f"from {estimate.n_draws} draws). Sizes, largest first: "
        + ", ".join(str(s) for s in sizes)
        + ". Labels per row are in `labels.csv`.",
    ]


class ClusterRun(NamedTuple):
    """What a ``cluster`` run was asked and chose, before any output is written."""

    args: argparse.Namespace
    data: ClusterData
    scaling: tuple[np.ndarray, np.ndarray] | None  # (mean, sd) when standardised
    power: float
    seed: int
    cv_info: tuple[CVResult, tuple[int, int], list[str]] | None  # when r was chosen by CV


def summary(
    run: ClusterRun,
    idata: az.InferenceData,
    results: tuple[ConvergenceReport, PointEstimate, list[str], ChainComparison | None],
    seconds: float,
) -> str:
    """Return the text of ``summary.md``.

    ``results`` is the convergence report, the point estimate, the names of
    the figure files written and the comparison of the chains (``None`` when it
    was not made: converged or a single chain).
    """
    args, data, scaling, power, seed, cv_info = run
    report, estimate, files, comparison = results
    lines = ["# pCRP clustering", ""]
    lines += _warnings_section(report, cv_info)
    lines += _data_section(args, data, scaling)
    lines += _model_section(
        args,
        data.x.shape,
        power,
        seed,
        None if cv_info is None else cv_info[0],
        _split_merge_text(args, idata),
        idata,
    )
    if cv_info is not None:
        lines += _cv_section(args, data.x.shape[0], *cv_info)
    lines += _k_section(idata)
    lines += _convergence_section(idata, report)
    if comparison is not None:
        lines += _chains_section(comparison)
    lines += _point_estimate_section(estimate)
    lines += ["", "## Files", ""]
    lines += [f"- `{name}`" for name in ["labels.csv", "idata.nc", "summary.md", *files]]
    power_text = "auto" if cv_info is not None else repr(power)
    lines += ["", "## Command", ""]
    lines += ["As invoked:", "", "```", _invoked_command(), "```", ""]
    lines += ["With every setting spelled out (reproduces this run):", ""]
    lines += ["```", _full_command(args, seed, power_text), "```", ""]
    lines.append(f"Run time: {seconds:.1f} s.")
    return "\n".join(lines) + "\n"
