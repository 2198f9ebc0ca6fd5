"""``tables.md``: the paper's values beside ours, and the paper's claims checked."""

from __future__ import annotations

import math

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from pymc_pcrp.cli.reproduce import paper_values
from pymc_pcrp.cli.reproduce.data import SEED_OFFSETS
from pymc_pcrp.cli.reproduce.moves import (
    ALGORITHM_1_LABEL,
    DEFAULT_MOVES,
    PRIOR_SCALE,
    moves_section,
)
from pymc_pcrp.cli.reproduce.paper_values import K_TRUE, METHODS, TABLE_TITLES, PaperRow
from pymc_pcrp.cli.reproduce.protocol import (
    ReproductionResult,
    RunResult,
)

# --------------------------------------------------------------------------- tables


def _sci(value: float) -> str:
    if not np.isfinite(value):
        return "-"
    return f"{value:.1e}"


def _fmt(value: float, digits: int) -> str:
    return "-" if not np.isfinite(value) else f"{value:.{digits}f}"


def _paper_cell(mean: float, se: float, digits: int) -> str:
    return f"{mean:.{digits}f} ({se:.1e})"


def _our_cell(mean: float, se: float, mcse: float, digits: int) -> str:
    return f"{mean:.{digits}f} ({_sci(se)} / {_sci(mcse)})"


def _results_table(
    result: ReproductionResult,
    datasets: Sequence[str],
    paper: dict[tuple[str, int, str], PaperRow],
    paper_sizes: Sequence[int],
) -> list[str]:
    lines = [
        "| N (paper) | Data | Method | NMI paper | NMI ours | VI paper | VI ours | "
        "K paper | K ours | K_max paper | K_max ours |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for position, paper_n in enumerate(paper_sizes):
        for name in datasets:
            sizes = sorted({r.n for r in result.runs if r.dataset == name})
            if position >= len(sizes):
                continue
            n = sizes[position]
            k_true = paper_values.PAPER_SETTINGS[name]["k_true"]
            n_label = f"{n}" if n == paper_n else f"{n} ({paper_n})"
            lines.append(
                f"| {n_label} | {name} | Ground truth | 1.0 | 1.000 | 0.0 | 0.000 | "
                f"{k_true} | {k_true} | - | - |"
            )
            for method in METHODS:
                run = result.run(name, n, method)
                s = run.summary
                row = paper.get((name, paper_n, method))
                pnmi = _paper_cell(row.nmi, row.nmi_se, 3) if row else "-"
                pvi = _paper_cell(row.vi, row.vi_se, 3) if row else "-"
                k_digits = 2 if name == "Digits 1-4" else 1
                pk = _paper_cell(row.k, row.k_se, k_digits) if row else "-"
                pkmax = str(row.k_max) if row else "-"
                lines.append(
                    f"| {n_label} | {name} | {method} | {pnmi} | "
                    f"{_our_cell(s.nmi_mean, s.nmi_se, s.nmi_mcse, 3)} | {pvi} | "
                    f"{_our_cell(s.vi_mean, s.vi_se, s.vi_mcse, 3)} | {pk} | "
                    f"{_our_cell(s.k_mean, s.k_se, s.k_mcse, 2)} | {pkmax} | {s.k_max} |"
                )
            lines += _default_moves_row(result, name, n, n_label)
    return lines


def _default_moves_row(result: ReproductionResult, name: str, n: int, n_label: str) -> list[str]:
    """Return the row of the pCRP with the step's default moves, if the run has one."""
    try:
        run = result.run(name, n, DEFAULT_MOVES)
    except KeyError:
        return []
    s = run.summary
    return [
        f"| {n_label} | {name} | {_default_label(result)} | - | "
        f"{_our_cell(s.nmi_mean, s.nmi_se, s.nmi_mcse, 3)} | - | "
        f"{_our_cell(s.vi_mean, s.vi_se, s.vi_mcse, 3)} | - | "
        f"{_our_cell(s.k_mean, s.k_se, s.k_mcse, 2)} | - | {s.k_max} |"
    ]


def _default_label(result: ReproductionResult) -> str:
    return f"{DEFAULT_MOVES}: {result.default_moves}"


def _tolerance(*runs_and_fields: tuple[RunResult, str]) -> float:
    """Twice the combined Monte Carlo standard error of several posterior means."""
    total = 0.0
    for run, name in runs_and_fields:
        mcse = getattr(run.summary, f"{name}_mcse")
        total += 0.0 if not np.isfinite(mcse) else mcse**2
    return 2.0 * math.sqrt(total)


_RHAT_LIMIT = 1.1
"""Above this R-hat of ``K`` the two chains disagree and a verdict is marked unreliable."""


class _Check(NamedTuple):
    claim: str
    dataset: str
    n: str
    values: str
    holds: bool
    runs: tuple[RunResult, ...]


def _unconverged(runs: Sequence[RunResult]) -> list[RunResult]:
    return [r for r in runs if np.isfinite(r.k_rhat) and r.k_rhat > _RHAT_LIMIT]


def _verdict(check: _Check) -> str:
    text = "holds" if check.holds else "**fails**"
    bad = _unconverged(check.runs)
    if bad:
        where = ", ".join(f"{r.method} N={r.n} R-hat(K) {r.k_rhat:.2f}" for r in bad)
        text += f" (unreliable: chains disagree, {where})"
    return text


def _per_size_checks(result: ReproductionResult) -> list[_Check]:
    """Claims 1, 3, 4 and 5: one check per data set and size."""
    checks: list[_Check] = []
    groups = sorted(
        {(r.dataset, r.n) for r in result.runs},
        key=lambda g: (list(K_TRUE).index(g[0]), g[1]),
    )
    for name, n in groups:
        k_true = K_TRUE[name]
        runs = {m: result.run(name, n, m) for m in METHODS}
        involved = tuple(runs.values())
        p = runs["pCRP"]
        others = [runs["CRP"], runs["CRP-Oracle"]]
        gaps = {m: abs(run.summary.k_mean - k_true) for m, run in runs.items()}
        checks.append(
            _Check(
                "1. pCRP's mean K closer to the true K than CRP's and CRP-Oracle's",
                name,
                str(n),
                "abs(K - K_true): " + ", ".join(f"{m} {g:.2f}" for m, g in gaps.items()),
                gaps["pCRP"] < min(gaps["CRP"], gaps["CRP-Oracle"]),
                involved,
            )
        )
        checks.append(
            _Check(
                "3. pCRP's K_max lower than CRP's and CRP-Oracle's",
                name,
                str(n),
                "K_max: " + ", ".join(f"{m} {r.summary.k_max}" for m, r in runs.items()),
                p.summary.k_max < min(o.summary.k_max for o in others),
                involved,
            )
        )
        nmi_ok = all(
            p.summary.nmi_mean >= o.summary.nmi_mean - _tolerance((p, "nmi"), (o, "nmi"))
            for o in others
        )
        vi_ok = all(
            p.summary.vi_mean <= o.summary.vi_mean + _tolerance((p, "vi"), (o, "vi"))
            for o in others
        )
        checks.append(
            _Check(
                "4. pCRP's NMI and VI no worse than CRP's and CRP-Oracle's (2 MCSE)",
                name,
                str(n),
                "NMI / VI: "
                + ", ".join(
                    f"{m} {r.summary.nmi_mean:.3f} / {r.summary.vi_mean:.3f}"
                    for m, r in runs.items()
                ),
                nmi_ok and vi_ok,
                involved,
            )
        )
        probs = {m: r.k_probability(k_true) for m, r in runs.items()}
        checks.append(
            _Check(
                "5. pCRP puts the most posterior probability on the true K",
                name,
                str(n),
                f"P(K = {k_true}): " + ", ".join(f"{m} {v:.3f}" for m, v in probs.items()),
                probs["pCRP"] > max(probs["CRP"], probs["CRP-Oracle"]),
                involved,
            )
        )
    return checks


def _growth_checks(result: ReproductionResult) -> list[_Check]:
    """Claim 2: CRP's mean K grows from the smallest to the largest size, pCRP's does not."""
    checks: list[_Check] = []
    for name in K_TRUE:
        sizes = sorted({r.n for r in result.runs if r.dataset == name})
        if len(sizes) < 2:
            continue
        small, large = sizes[0], sizes[-1]
        crp = (result.run(name, small, "CRP"), result.run(name, large, "CRP"))
        pcrp = (result.run(name, small, "pCRP"), result.run(name, large, "pCRP"))
        crp_growth = crp[1].summary.k_mean - crp[0].summary.k_mean
        pcrp_growth = pcrp[1].summary.k_mean - pcrp[0].summary.k_mean
        crp_tol = _tolerance((crp[0], "k"), (crp[1], "k"))
        pcrp_tol = _tolerance((pcrp[0], "k"), (pcrp[1], "k"))
        checks.append(
            _Check(
                "2. CRP's mean K grows with N (by more than 2 MCSE), pCRP's does not",
                name,
                f"{small} -> {large}",
                f"change of K: CRP {crp_growth:+.2f} (2 MCSE {crp_tol:.2f}), "
                f"pCRP {pcrp_growth:+.2f} (2 MCSE {pcrp_tol:.2f})",
                crp_growth > crp_tol and pcrp_growth <= pcrp_tol,
                crp + pcrp,
            )
        )
    return checks


def _faithful_checks(result: ReproductionResult) -> list[_Check]:
    """Claim 6: two clusters for pCRP on Old Faithful, more for CRP."""
    checks: list[_Check] = []
    faithful = sorted({r.n for r in result.runs if r.dataset == "Old Faithful"})
    for n in faithful:
        runs = {m: result.run("Old Faithful", n, m) for m in METHODS}
        point = {m: len(r.point_sizes) for m, r in runs.items()}
        mode = {m: int(np.bincount(r.k_draws.ravel()).argmax()) for m, r in runs.items()}
        involved = (runs["CRP"], runs["pCRP"])
        # the same rule on two counts of clusters: the point estimate's and the mode of K
        for claim, what, count in (
            (
                "6. Old Faithful: two clusters for pCRP, more for CRP (point estimate)",
                "clusters",
                point,
            ),
            ("6'. Old Faithful: the same with the posterior mode of K", "mode of K", mode),
        ):
            found = f"{what}: " + ", ".join(f"{m} {k}" for m, k in count.items())
            holds = count["pCRP"] == 2 and count["CRP"] > 2
            checks.append(_Check(claim, "Old Faithful", str(n), found, holds, involved))
    return checks


def _claims(result: ReproductionResult) -> list[str]:
    """Check each of the paper's claims on every data set and size; one table row per check.

    "No worse" and "does not grow" allow twice the combined Monte Carlo standard
    error (MCSE) of the two means compared, so that sampling noise alone does not
    decide a verdict; "closer", "lower" and "more" are strict. A verdict that
    rests on a run whose chains disagree (R-hat of ``K`` above 1.1) is marked
    unreliable, whatever it says.
    """
    checks = _per_size_checks(result) + _growth_checks(result) + _faithful_checks(result)
    checks.sort(key=lambda check: check.claim)
    lines = [
        "Each claim of the paper is tested on each data set and size with the rule in its "
        "name; tolerances are twice the combined MCSE of the two means compared. A verdict "
        f"that rests on a run whose two chains disagree (R-hat(K) > {_RHAT_LIMIT:g}) is "
        "marked unreliable: the pooled numbers then describe where the chains got stuck, "
        "not the posterior.",
        "",
        "| Claim | Data | N | Values (ours) | Verdict |",
        "|---|---|---|---|---|",
    ]
    lines += [f"| {c.claim} | {c.dataset} | {c.n} | {c.values} | {_verdict(c)} |" for c in checks]
    reliable = [c for c in checks if not _unconverged(c.runs)]
    held = sum(c.holds for c in reliable)
    lines += [
        "",
        f"Of {len(checks)} checks, {len(checks) - len(reliable)} rest on a run whose chains "
        f"disagree; of the other {len(reliable)}, {held} hold and {len(reliable) - held} fail.",
    ]
    return lines


def _table_start(title_index: int | None, header: str) -> list[str]:
    """Return a section title (or a blank line) and the header and rule of a Markdown table."""
    rule = "|---" * (header.count("|") - 1) + "|"
    if title_index is None:
        return ["", header, rule]
    return ["", "## " + TABLE_TITLES[title_index], "", header, rule]


def _sampler_line(result: ReproductionResult) -> str:
    """Return the header line naming the sampler of the paper's fits and of the extra ones."""
    if not result.default_moves:  # a result pickled before the sampler was pinned
        return (
            "- Sampler: PCRPGibbs with the options it had at the time of the run (this "
            "result predates the explicit Algorithm 1 and the default-moves rows)."
        )
    return (
        f"- Sampler: the paper's {ALGORITHM_1_LABEL}, passed explicitly to every fit of the "
        "paper's protocol (main and cross-validation fits). Beside each pCRP fit, one more "
        f"with PCRPGibbs's default options at the time of the run ({result.default_moves}), "
        f"same data, prior, r, seed and sweeps: the rows '{DEFAULT_MOVES}', which the "
        "claims below do not use."
    )


def _header(result: ReproductionResult, digits_text: str) -> list[str]:
    """Return the opening lines: command, machine, code, protocol, prior and seeds."""
    p = result.protocol
    lines = [
        "# Reproduction of Lu, Li & Dunson (2018): the paper's values and ours",
        "",
        f"- Command: `{result.command}`",
        f"- Started: {result.started}; wall time {result.seconds:.0f} s "
        f"({result.seconds / 60:.1f} min)",
        f"- Machine: {result.machine}",
        f"- Code: {result.code}",
        f"- Protocol: **{p.name}**. Main fits: {p.chains} chains, each {p.sweeps} Gibbs sweeps "
        f"({p.tune * p.sweeps_per_draw} burn-in, then one sweep in {p.sweeps_per_draw} kept: "
        f"{p.draws} draws per chain, {p.chains * p.draws} in all), chains run on "
        f"{p.cores} core(s), random initial partitions. The paper: one chain of 20000 sweeps, "
        "10000 burn-in, every 5th kept.",
        f"- Cross-validation fits: {p.cv_chains} chain(s) of {p.cv_sweeps} sweeps per r "
        f"({p.cv_tune * p.cv_sweeps_per_draw} burn-in, then one sweep in "
        f"{p.cv_sweeps_per_draw} kept), "
        f"grid r = {', '.join(f'{r:g}' for r in p.powers)}, {p.n_jobs} grid point(s) in "
        "parallel; r is the last grid point before the held-out loss first rises by more "
        "than 10% (`find_jump`).",
        f"- Prior: `NIWPrior.from_data(X, scale={PRIOR_SCALE:g})`, fixed (mu0 = mean of X, "
        f"kappa0 = 0.01, nu0 = D + 2, psi0 = {PRIOR_SCALE:g} diag(var X)), for every fit.",
        _sampler_line(result),
        f"- Digits 1-4 data: **{digits_text}**.",
        f"- Seeds: base {result.seed}; data seeds below; sampler seed of each run in the "
        "diagnostics table.",
        "- Our cells read `mean (naive SE / MCSE)`: the naive SE sd/sqrt(draws) is what the "
        "paper reports; the MCSE (ArviZ, accounts for autocorrelation) is the honest one. "
        "VI is in bits. NMI uses the arithmetic normaliser.",
    ]
    if p.name != "full":
        lines.append(
            "- **Quick protocol: small data and few sweeps; the numbers are a smoke test, "
            "not results.** Paper columns refer to the paper's N (in brackets)."
        )
    return lines


def _settings_section(result: ReproductionResult) -> list[str]:
    """Sizes, true K, oracle alpha, r and CV data: the paper's and ours; data seeds."""
    lines = _table_start(
        0,
        "| Data | N paper | N ours | K true | oracle alpha paper | oracle alpha ours | "
        "r paper | r ours | CV data paper | CV data ours |",
    )
    for name, settings in paper_values.PAPER_SETTINGS.items():
        sizes = sorted({r.n for r in result.runs if r.dataset == name})
        alphas = [result.run(name, n, "CRP-Oracle").alpha for n in sizes]
        cv = result.cv[name]
        power = settings["power"]
        lines.append(
            f"| {name} | {', '.join(str(n) for n in settings['n'])} | "
            f"{', '.join(str(n) for n in sizes)} | {settings['k_true']} | "
            f"{', '.join(f'{a:.2f}' for a in settings['oracle_alpha'])} | "
            f"{', '.join(f'{a:.2f}' for a in alphas)} | "
            f"{'figure only' if power is None else f'{power:g}'} | "
            f"{cv.result.chosen_power:g} | {settings['cv']} | "
            f"{cv.n_train} train / {cv.n_test} held out |"
        )
    lines += ["", "Data:", ""]
    lines += [f"- {note}" for note in result.notes.values()]
    lines += ["", "Data seeds (base seed plus a fixed offset per sample):", ""]
    for name, key in (("Sim 1", "sim1"), ("Sim 2", "sim2"), ("Digits 1-4", "digits")):
        sizes = sorted({r.n for r in result.runs if r.dataset == name})
        offsets = SEED_OFFSETS[key]
        parts = [f"N = {n}: {result.seed + o}" for n, o in zip(sizes, offsets, strict=False)]
        parts.append(f"CV sample: {result.seed + offsets[-1]}")
        lines.append(f"- {name}: " + ", ".join(parts))
    lines.append(
        f"- Old Faithful: CV/clustered split: {result.seed + SEED_OFFSETS['old_faithful'][0]}"
    )
    return lines


def _cv_section(result: ReproductionResult) -> list[str]:
    """Return the held-out loss at every r of the grid, per data set."""
    lines = ["", "## " + TABLE_TITLES[1], ""]
    grid = result.protocol.powers
    lines.append(
        "| Data | " + " | ".join(f"r={r:g}" for r in grid) + " | chosen r | jump at | seconds |"
    )
    lines.append("|---" * (len(grid) + 4) + "|")
    for name, cv in result.cv.items():
        res = cv.result
        cells = [f"{loss:.3f} (K {k:.1f})" for loss, k in zip(res.loss, res.mean_k, strict=True)]
        jump = (
            "none (largest r returned)"
            if res.jump_index is None
            else f"r={res.powers[res.jump_index]:g}"
        )
        lines.append(
            f"| {name} | " + " | ".join(cells) + f" | {res.chosen_power:g} | {jump} | "
            f"{cv.seconds:.0f} |"
        )
    lines += [
        "",
        "Cells: held-out loss averaged over kept draws (posterior mean K of the training "
        "data in brackets). The paper quotes, before the jump, losses from "
        "14.9020 to 15.5260 (Sim 1) and 14.2005 to 14.2595 (Sim 2), on held-out data of "
        "unstated size, so only the shape of the curves is comparable.",
    ]
    return lines


def _tables_1_and_2(result: ReproductionResult, digits_text: str) -> list[str]:
    """Return the paper's Tables 1 and 2 with our numbers beside them."""
    lines = ["", "## " + TABLE_TITLES[2], ""]
    lines += _results_table(result, ("Sim 1", "Sim 2"), paper_values.PAPER_TABLE_1, (300, 2000))
    lines += ["", "## " + TABLE_TITLES[3], ""]
    lines += _results_table(result, ("Digits 1-4",), paper_values.PAPER_TABLE_2, (1000, 3000))
    lines += ["", f"Digits source: {digits_text}."]
    return lines


def _faithful_section(result: ReproductionResult) -> list[str]:
    """Old Faithful: components per method, posterior of K, NMI and VI."""
    lines = ["", "## " + TABLE_TITLES[4], ""]
    lines += [
        "The paper gives no table for Old Faithful; it reports the number of components "
        "per method, read from its Fig. 7. Ours: the components of the point estimate, the "
        "posterior of K, and NMI/VI against the manual clustering.",
    ]
    lines += _table_start(
        None,
        "| Method | components paper | components ours (point estimate sizes) | K ours | "
        "K_max ours | P(K = 2) | NMI ours | VI ours |",
    )
    (n_faithful,) = sorted({r.n for r in result.runs if r.dataset == "Old Faithful"})
    rows = [(m, result.run("Old Faithful", n_faithful, m)) for m in METHODS]
    rows += [
        (_default_label(result), r)
        for r in result.runs
        if (r.dataset, r.n, r.method) == ("Old Faithful", n_faithful, DEFAULT_MOVES)
    ]
    paper_k = paper_values.PAPER_OLD_FAITHFUL
    for label, run in rows:
        s = run.summary
        lines.append(
            f"| {label} | {paper_k.get(run.method, '-')} | {len(run.point_sizes)} "
            f"({', '.join(str(x) for x in run.point_sizes)}) | "
            f"{_our_cell(s.k_mean, s.k_se, s.k_mcse, 2)} | {s.k_max} | "
            f"{run.k_probability(2):.3f} | {_our_cell(s.nmi_mean, s.nmi_se, s.nmi_mcse, 3)} | "
            f"{_our_cell(s.vi_mean, s.vi_se, s.vi_mcse, 3)} |"
        )
    lines.append(
        f"| Manual (N = {n_faithful}) | {paper_k['Manual']} | 2 | 2 | - | - | 1.000 | 0.000 |"
    )
    return lines


def _k_probability_section(result: ReproductionResult) -> list[str]:
    """Return the posterior probabilities of K quoted in the paper's text."""
    lines = _table_start(
        5,
        "| Data | Method | K | N | paper | ours |",
    )
    for (name, method, k), values in paper_values.PAPER_K_PROBABILITIES.items():
        sizes = sorted({r.n for r in result.runs if r.dataset == name})
        for n, paper_value, paper_n in zip(sizes, values, (300, 2000), strict=False):
            n_label = f"{n}" if n == paper_n else f"{n} ({paper_n})"
            ours = result.run(name, n, method).k_probability(k)
            lines.append(
                f"| {name} | {method} | {k} | {n_label} | {paper_value:.2f} | {ours:.3f} |"
            )
    return lines


def _diagnostics_section(result: ReproductionResult) -> list[str]:
    """R-hat and ESS of K, seeds and run time of every fit."""
    lines = _table_start(
        8,
        "| Data | N | Method | alpha | r | seed | R-hat(K) | bulk ESS(K) | tail ESS(K) | "
        "point estimate K | seconds |",
    )
    for run in result.runs:
        lines.append(
            f"| {run.dataset} | {run.n} | {run.method} | {run.alpha:.3f} | {run.power:g} | "
            f"{run.seed} | {_fmt(run.k_rhat, 3)} | {_fmt(run.k_ess_bulk, 0)} | "
            f"{_fmt(run.k_ess_tail, 0)} | {len(run.point_sizes)} | {run.seconds:.1f} |"
        )
    methods = {run.point_method for run in result.runs}
    lines += [
        "",
        f"Point estimates: {', '.join(sorted(methods))}. CV seeds: "
        + ", ".join(f"{name} {cv.seed}" for name, cv in result.cv.items())
        + ".",
    ]
    return lines


def _figures_section(result: ReproductionResult) -> list[str]:
    """Links to the figures."""
    lines = ["", "## " + TABLE_TITLES[9], ""]
    for path in result.figures:
        lines.append(f"- [{path.name}]({path.name})")
    lines.append("")
    return lines


def format_tables(result: ReproductionResult) -> str:
    """Render ``tables.md``: the paper's reported values and ours, side by side.

    Parameters
    ----------
    result : ReproductionResult

    Returns
    -------
    str
        Markdown with one section per entry of :data:`TABLE_TITLES`.
    """
    digits_text = (
        "MNIST (training file)"
        if result.digits_source == "mnist-train"
        else "scikit-learn 8x8 digits (offline stand-in, not MNIST)"
    )
    lines = _header(result, digits_text)
    lines += _settings_section(result)
    lines += _cv_section(result)
    lines += _tables_1_and_2(result, digits_text)
    lines += _faithful_section(result)
    lines += _k_probability_section(result)
    lines += moves_section(result, TABLE_TITLES[6], tuple(K_TRUE))
    lines += ["", "## " + TABLE_TITLES[7], ""]
    lines += _claims(result)
    lines += _diagnostics_section(result)
    lines += _figures_section(result)
    return "\n".join(lines)
