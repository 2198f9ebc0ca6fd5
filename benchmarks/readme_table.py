"""The README's results table, from the latest recorded real-data panel.

Run from the repository root after ``benchmarks/real_data.py --out
benchmarks/results/real_data.md --json benchmarks/results/real_data.json``::

    python benchmarks/readme_table.py                  # print the table
    python benchmarks/readme_table.py --update-readme  # also write it into README.md

The table has one row per data set: the pCRP point estimate's K and ARI at each power
of the run, how many of those fits converged (R-hat <= 1.01 and bulk ESS >= 400 for K
and the log joint), the slowest fit's seconds, and each peer's K and ARI. Its first line
is the run's header (date, commit, machine), read from the markdown file the run wrote
(or stored in the JSON, for a file that keeps an earlier recorded run).
"""

from __future__ import annotations

import argparse
import json
import sys

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benchmarks" / "results"
BEGIN = "<!-- results: begin (benchmarks/readme_table.py --update-readme) -->"
END = "<!-- results: end -->"
# Number of classes the ARI is computed against (Old Faithful: short/long eruptions).
TRUE_K = {"iris": 3, "wine": 3, "breast_cancer": 2, "old_faithful": 2, "digits": 4, "sim2": 2}
NAMES = {"breast_cancer": "breast cancer", "old_faithful": "Old Faithful", "sim2": "Sim 2"}
PEERS = (("sklearn", "scikit-learn DP"), ("mclust", "mclust"), ("rdpgibbs", "rDPGibbs"))


def _header(md: Path) -> str:
    fields = {}
    for line in md.read_text().splitlines():
        for key in ("date", "git commit", "machine"):
            if line.startswith(f"- {key}: "):
                fields[key] = line.split(": ", 1)[1]
    return (
        f"Run of {fields.get('date', '?')}, commit `{fields.get('git commit', '?')}`, "
        f"{fields.get('machine', '?')}."
    )


def load_panel(path: Path) -> tuple[list[dict], dict | None]:
    """The panel's data sets, and the header stored with them (None: read the markdown).

    ``benchmarks/real_data.py --json`` writes a list of data sets; a file that keeps an
    earlier recorded run holds ``{"source", "header", "datasets"}``.
    """
    raw = json.loads(path.read_text())
    if isinstance(raw, dict):
        return raw["datasets"], raw.get("header")
    return raw, None


def _converged(row: dict) -> bool:
    if "rhat_k" in row:
        return bool(
            max(row["rhat_k"], row["rhat_lj"]) <= 1.01 and min(row["ess_k"], row["ess_lj"]) >= 400
        )
    return bool(row["converged"])


def _fmt_ari(value) -> str:
    return "-" if value is None else f"{value:.3f}"


def table(panel: list[dict], header: str, powers=(1.0, 1.1, 1.3)) -> str:
    shown = " / ".join(f"{p:g}" for p in powers)
    lines = [
        header,
        "",
        f"| data (N x D, classes) | pCRP K at r = {shown} | pCRP ARI | converged | s per fit "
        "| " + " | ".join(f"{label}: K, ARI" for _, label in PEERS) + " |",
        "|---" * (5 + len(PEERS)) + "|",
    ]
    for data in panel:
        rows = {r["power"]: r for r in data["rows"] if r["label"] != "CV r"}
        rows = [rows[p] for p in powers if p in rows]
        if not rows:
            continue
        done = sum(_converged(r) for r in rows)
        cells = [
            f"{NAMES.get(data['name'], data['name'])} ({data['n']} x {data['d']}, "
            f"{TRUE_K.get(data['name'], '?')})",
            " / ".join(str(r["pe_k"]) for r in rows),
            " / ".join(_fmt_ari(r["ari"]) for r in rows),
            f"{done} of {len(rows)}",
            f"{max(r['seconds'] for r in rows):.0f}",
        ]
        for key, _ in PEERS:
            peer = next((p for p in data["peers"] if key in p["method"].lower()), None)
            if peer is None:
                cells.append("not run")
            else:
                cells.append(f"{peer['k']}, {_fmt_ari(peer['ari'])}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, default=RESULTS / "real_data.json")
    parser.add_argument("--md", type=Path, default=RESULTS / "real_data.md")
    parser.add_argument("--update-readme", action="store_true")
    args = parser.parse_args(argv)
    if not args.json.is_file():
        parser.error(f"{args.json} is missing: run benchmarks/real_data.py with --json")
    panel, stored = load_panel(args.json)
    if stored is not None:
        header = f"Run of {stored['date']}, commit `{stored['git commit']}`, {stored['machine']}."
    elif args.md.is_file():
        header = _header(args.md)
    else:
        parser.error(f"{args.md} is missing: run benchmarks/real_data.py with --out")
    text = table(panel, header)
    print(text)
    if args.update_readme:
        readme = REPO / "README.md"
        old = readme.read_text()
        if BEGIN not in old or END not in old:
            parser.error(f"README.md has no {BEGIN} ... {END} block")
        head, rest = old.split(BEGIN, 1)
        _, tail = rest.split(END, 1)
        readme.write_text(head + BEGIN + "\n" + text + "\n" + END + tail)
    return 0


if __name__ == "__main__":
    sys.exit(main())
