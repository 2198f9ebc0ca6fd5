"""``summary.md`` of the ``cluster`` command: data, settings, posterior of K, diagnostics."""

from __future__ import annotations

import argparse
import shlex
import sys

from pathlib import Path
from typing import NamedTuple

import arviz as az
import numpy as np

from pymc_pcrp._runtime.logging import quiet_loggers
from pymc_pcrp.cli.cluster_table import SKIPPED_FIGURES, table_model_lines
from pymc_pcrp.cli.io import ClusterData
from pymc_pcrp.posterior import PointEstimate
from pymc_pcrp.sampler.options import (
    SPECK_SIZE,
    auto_informed_moves,
    auto_pair_moves,
    auto_speck_moves,
)
from pymc_pcrp.stats.chain_comparison import ChainComparison
from pymc_pcrp.stats.convergence import ConvergenceReport
from pymc_pcrp.stats.cross_validation import CVResult
from pymc_pcrp.stats.power_choice import AUTO_POWERS, SPECK, PowerSensitivity


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
    if getattr(args, "family", "auto") != "auto":
        parts += ["--family", args.family]
    if getattr(args, "kinds", None):
        parts += ["--kinds", ",".join(f"{name}={kind}" for name, kind in args.kinds.items())]
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
    if args.informed_moves is not None:
        parts += ["--informed-moves", f"{args.informed_moves:g}"]
    if args.pair_moves is not None:
        parts += ["--pair-moves", f"{args.pair_moves:g}"]
    if args.template_jumps is not None:
        parts += ["--template-jumps", f"{args.template_jumps:g}"]
    parts += ["--seed", str(seed)]
    if power_text == "cv":
        grid = ",".join(f"{r:g}" for r in args.cv_grid)
        parts += ["--cv-grid", grid, "--cv-fraction", repr(args.cv_fraction)]
        parts += ["--cv-draws", str(args.cv_draws), "--cv-tune", str(args.cv_tune)]
        parts += ["--cv-chains", str(args.cv_chains), "--cv-jump-tol", repr(args.cv_jump_tol)]
        parts += ["--n-jobs", str(args.n_jobs)]
    return shlex.join(parts)


def _data_section(args, data: ClusterData, scaling) -> list[str]:
    n, d = data.shape
    lines = ["", "### Data", ""]
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


def power_choice(cv: CVResult | None, sensitivity: PowerSensitivity | None = None) -> str:
    """How ``r`` was set: given, by the default rule, by cross-validation, or the top of a grid."""
    if sensitivity is not None:
        grid = ", ".join(f"{r:g}" for r in sensitivity.powers)
        return f"--power auto: {sensitivity.rule}; fitted at r = {grid}"
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
    sensitivity: PowerSensitivity | None = None,
    table_lines: list[str] | None = None,
) -> list[str]:
    lines = ["", "### Model and sampler", ""]
    how = power_choice(cv, sensitivity)
    lines.append(f"- power r = {power:g} ({how}); alpha = {args.alpha:g}")
    if table_lines is None:
        lines.append("- NIW prior: `NIWPrior.from_data` of the clustered data (defaults)")
    else:  # the table family: no pair moves
        lines += table_lines
    on = args.split_merge is None or args.split_merge > 0
    specks = auto_speck_moves(float(on)) if args.speck_moves is None else args.speck_moves
    pairs = auto_pair_moves(float(on), *shape, table_lines is None)
    pairs = pairs if args.pair_moves is None else args.pair_moves
    moves = f"{rate} split-merge proposal(s) per sweep" + (
        f" and {specks:g} among the clusters of at most {SPECK_SIZE} points" if specks else ""
    )
    if pairs:
        moves += f", {pairs:g} pair move(s) per sweep"
    if table_lines is not None:
        if args.informed_moves is not None:
            informed = f"{args.informed_moves:g}" if args.informed_moves else ""
        else:
            cap = auto_informed_moves(float(on))
            informed = f"min({cap:g}, K^2 / 6), K when tuning ends," if cap else ""
        if informed:
            moves += f", {informed} informed proposal(s) per sweep (merges of similar clusters)"
    moves += _jumps_text(args, idata)
    given = (args.split_merge, args.speck_moves, args.informed_moves, args.pair_moves)
    given += (args.template_jumps,)
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
    lines = ["", "### Cross-validation of r", ""]
    lines.append(
        f"Random split: {cv_sizes[0]} training rows, {cv_sizes[1]} held-out rows. Each r was "
        f"fitted on the training rows ({args.cv_chains} chain(s) x {args.cv_draws} draws "
        f"after {args.cv_tune}); the held-out loss is averaged over draws. The chosen r is "
        f"the last before the loss first rises by more than {cv.jump_tol:.0%}. All {n} rows "
        "were then clustered with it."
    )
    if cv.jumped:  # otherwise the warning at the top says it, once
        lines += ["", cv.conclusion()]
    lines.append("")
    rows = []
    for i, r in enumerate(cv.powers):
        mark = "chosen" if r == cv.chosen_power else ("jump" if i == cv.jump_index else "")
        rows.append(
            [f"{r:g}", f"{cv.loss[i]:.4g}", f"{cv.loss_se[i]:.2g}", f"{cv.mean_k[i]:.2f}", mark]
        )
    header = ["r", "held-out loss", "MC s.e.", "mean K (training)", "chosen / jump"]
    return lines + _markdown_table(header, rows)


def _k_section(idata: az.InferenceData) -> list[str]:
    k = np.asarray(idata.posterior["n_clusters"].values)
    values = np.arange(int(k.min()), int(k.max()) + 1)
    lines = ["", "### Posterior of the number of clusters K, by chain", ""]
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


def sensitivity_advice(sensitivity: PowerSensitivity) -> str:
    """Return the sensitivity warning with its remedy, in the terms of the command's options."""
    return (
        f"{sensitivity.warning()} Remedy: look at the table 'Sensitivity to r' and the "
        "figures before relying on those clusters; domain knowledge decides between the "
        "answers (--power R gives any of them)."
    )


def _warnings_section(report: ConvergenceReport, cv_info, sensitivity) -> list[str]:
    """Warnings at the top of summary.md, each once: convergence, sensitivity to r, CV."""
    lines = []
    if not report.converged:
        lines += [f"> **Warning:** {convergence_advice(report)}", ""]
    if sensitivity is not None and sensitivity.material:
        lines += [f"> **Warning:** {sensitivity_advice(sensitivity)}", ""]
    if cv_info is not None:
        cv, _, messages = cv_info
        if not cv.jumped:
            lines += [f"> **Warning:** {cv.conclusion()} (--cv-grid)", ""]
        for message in messages:
            if "never rose" not in message:  # the no-jump warning is the one above
                lines += [f"> **Warning:** {message}", ""]
    return lines


def _convergence_section(idata: az.InferenceData, report: ConvergenceReport) -> list[str]:
    lines = ["", "### Convergence", ""]
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
    lines = ["", "### How the chains differ", ""]
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


def _sizes_text(sizes) -> str:
    sizes = [int(v) for v in sizes]
    if len(sizes) == 1:
        return f"one cluster of {sizes[0]} rows"
    return ", ".join(str(v) for v in sizes[:-1]) + f" and {sizes[-1]} rows"


def _answer_section(idata: az.InferenceData, estimate: PointEstimate, power: float, how: str):
    """Return the answer: K, sizes, P(K) and r, in a few lines."""
    sizes = np.sort(estimate.sizes)[::-1]
    k = np.asarray(idata.posterior["n_clusters"].values).ravel()
    values, counts = np.unique(k, return_counts=True)
    order = np.argsort(counts)[::-1]
    shown = [i for i in order if counts[i] / k.size >= 0.01][:5]
    pk = ", ".join(f"P(K = {values[i]}) = {counts[i] / k.size:.3f}" for i in shown)
    rest = 1.0 - sum(counts[i] for i in shown) / k.size
    if rest > 0.0005:
        pk += f", other values {rest:.3f}"
    return [
        "## The answer",
        "",
        f"**{estimate.n_clusters} cluster(s)** in the point estimate: {_sizes_text(sizes)} "
        "(`labels.csv` gives each row's cluster; clusters are numbered by first appearance).",
        "",
        f"- Posterior of the number of clusters K: {pk} ({k.size} draws).",
        f"- Power r = {power:g} ({how}).",
    ]


def _trust_section(report: ConvergenceReport, sensitivity, estimate: PointEstimate, power):
    """How far to trust the answer: convergence, sensitivity to r, spread of the posterior."""
    lines = ["", "## How far to trust it", ""]
    k, lj = report["n_clusters"], report["log_joint"]

    def numbers(q) -> str:
        if q.constant:
            return "the same in every draw"
        return f"R-hat {_fmt(q.r_hat, 3)}, bulk ESS {_fmt(q.ess_bulk, 0)}"

    verdict = "passed" if report.converged else "FAILED (see the warning above)"
    lines.append(
        f"- **Convergence** {verdict}: K {numbers(k)}; log joint {numbers(lj)} "
        f"(checks: R-hat <= {report.rhat_max:g}, bulk ESS >= {report.ess_min:g})."
    )
    if sensitivity is None:
        lines.append(
            f"- **Sensitivity to r** not measured: r = {power:g} was given. `--power auto` "
            f"fits r = {', '.join(f'{r:g}' for r in AUTO_POWERS)} and compares the answers."
        )
    else:
        verdict = (
            "the answer changes materially (see the warning above)"
            if sensitivity.material
            else "no material change: the answers merge at most specks (clusters under "
            f"{SPECK:.0%} of the rows)"
        )
        lines += [f"- **Sensitivity to r**: {verdict}.", ""]
        lines += _markdown_table(list(PowerSensitivity.HEADER), sensitivity.rows())
        lines.append("")
    lines.append(
        "- **Spread of the posterior around the answer**: expected VI "
        f"{estimate.expected_loss:.3f} bits over {estimate.n_draws} draws."
    )
    return lines


def _figure_notes(d: int, k: int) -> dict[str, str]:
    """Return what each figure of a run with ``d`` columns and ``k`` clusters shows."""
    if d == 2:
        plane = "on the two columns"
    elif k >= 3:
        plane = (
            "on the two linear discriminant axes of the point estimate (LD1, LD2: the plane "
            "in which its clusters are best separated relative to their spread)"
        )
    else:
        plane = "on the first two principal components (fewer than 3 clusters)"
    return {
        "clusters_2d.png": f"every row {plane}, coloured by its cluster in `labels.csv` "
        "(legend: label and size), with each cluster's 2-sd ellipse",
        "k_posterior.png": "the posterior probability of each number of clusters K, as bars",
        "k_trace.png": "K in every draw, one line per chain: chains that overlap without "
        "drifting have mixed",
        "similarity.png": "the posterior probability that two rows share a cluster, rows "
        "grouped by the point estimate: bright blocks on the diagonal are clusters the "
        "posterior is sure of, stripes between blocks are rows it hesitates over",
        "density_1d.png": "the posterior predictive density over the data's histogram",
        "chain_groups.png": "one panel per group of chains that cluster the rows differently "
        f"({plane}), disputed rows ringed",
        "cv_curve.png": "the held-out loss of the cross-validation against r",
    }


_TERMS = [
    "**point estimate**: the one clustering closest, on average, to the posterior's "
    "sampled clusterings in variation of information (VI).",
    "**VI (variation of information), in bits**: a distance between two clusterings; 0 "
    "when they are the same, 1 bit about the cost of splitting every cluster in two halves.",
    "**expected VI**: the average VI between the point estimate and a posterior draw; "
    "near 0 means the draws agree with it.",
    "**ARI (adjusted Rand index)**: agreement between two clusterings, 1 when they are the "
    "same, near 0 when they are unrelated.",
    "**R-hat**: compares the chains; values above 1.01 mean they have not reached the same "
    "distribution.",
    "**bulk ESS**: the number of independent draws the correlated draws are worth.",
    "**power r**: the pCRP's penalty on small clusters; r = 1 is the Dirichlet process, a "
    "larger r gives fewer, larger clusters.",
    "**speck**: a cluster of less than 5% of the rows.",
]


class ClusterRun(NamedTuple):
    """What a ``cluster`` run was asked and chose, before any output is written."""

    args: argparse.Namespace
    data: ClusterData
    scaling: tuple[np.ndarray, np.ndarray] | None  # (mean, sd) when standardised
    power: float
    seed: int
    cv_info: tuple[CVResult, tuple[int, int], list[str]] | None  # when r was chosen by CV
    sensitivity: PowerSensitivity | None = None  # when r was chosen by the default rule


def summary(
    run: ClusterRun,
    idata: az.InferenceData,
    results: tuple[ConvergenceReport, PointEstimate, list[str], ChainComparison | None],
    seconds: float,
) -> str:
    """Return the text of ``summary.md``: one page of answer, then the details.

    ``results`` is the convergence report, the point estimate, the names of
    the figure files written and the comparison of the chains (``None`` when it
    was not made: converged or a single chain).
    """
    args, data, scaling, power, seed, cv_info = run[:6]
    report, estimate, files, comparison = results
    cv = None if cv_info is None else cv_info[0]
    lines = [f"# pCRP clustering of `{Path(str(args.data)).name}`", ""]
    lines += _warnings_section(report, cv_info, run.sensitivity)
    lines += _answer_section(idata, estimate, power, power_choice(cv, run.sensitivity))
    lines += _trust_section(report, run.sensitivity, estimate, power)
    lines += ["", "## Figures", ""]
    notes = _figure_notes(data.shape[1], estimate.n_clusters)
    lines += [f"- `{name}`: {notes[name]}." for name in files if name in notes]
    if data.frame is not None:
        lines.append(f"- {SKIPPED_FIGURES}.")
    lines += ["", "## Terms", ""] + [f"- {term}" for term in _TERMS]
    power_text = {"auto": "auto", "cv": "cv"}.get(str(args.power), repr(power))
    lines += ["", "## Command", ""]
    lines += ["As invoked:", "", "```", _invoked_command(), "```", ""]
    lines += ["With every setting spelled out (reproduces this run):", ""]
    lines += ["```", _full_command(args, seed, power_text), "```", ""]
    lines.append(f"Run time: {seconds:.1f} s.")
    lines += ["", "## Details"]
    lines += _data_section(args, data, scaling)
    lines += _model_section(
        args,
        data.shape,
        power,
        seed,
        cv,
        _split_merge_text(args, idata),
        idata,
        run.sensitivity,
        None if data.frame is None else table_model_lines(data),
    )
    if cv_info is not None:
        lines += _cv_section(args, data.shape[0], *cv_info)
    lines += _k_section(idata)
    lines += _convergence_section(idata, report)
    if comparison is not None:
        lines += _chains_section(comparison)
    lines += ["", "### Files", ""]
    lines += [f"- `{name}`" for name in ["labels.csv", "idata.nc", "summary.md", *files]]
    return "\n".join(lines) + "\n"
