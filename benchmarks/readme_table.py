"""The README's results table, from the latest recorded real-data panel.

Run from the repository root after ``benchmarks/real_data.py --out
benchmarks/results/real_data.md --json benchmarks/results/real_data.json``::

    python benchmarks/readme_table.py                  # print the table
    python benchmarks/readme_table.py --update-readme  # also write it into README.md

The table has one row per data set: the pCRP point estimate's K and ARI at each power
of the run, the worst R-hat of K and of the log joint over those powers, the slowest
fit's seconds, and each peer's K, ARI and seconds. Its first line is the run's header
(date, commit, machine), read from the markdown file the run wrote.
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


def _fmt_ari(value) -> str:
    return "-" if value is None else f"{value:.2f}"


def table(panel: list[dict], header: str, powers=(1.0, 1.1, 1.3)) -> str:
    shown = " / ".join(f"{p:g}" for p in powers)
    lines = [
        header,
        "",
        f"| data (N x D, classes) | pCRP K at r = {shown} | pCRP ARI | worst R-hat | s per fit "
        "| " + " | ".join(f"{label}: K, ARI, s" for _, label in PEERS) + " |",
        "|---" * (5 + len(PEERS)) + "|",
    ]
    for data in panel:
        rows = {r["power"]: r for r in data["rows"] if r["label"] != "CV r"}
        rows = [rows[p] for p in powers if p in rows]
        if not rows:
            continue
        rhat = max(max(r["rhat_k"], r["rhat_lj"]) for r in rows)
        cells = [
            f"{NAMES.get(data['name'], data['name'])} ({data['n']} x {data['d']}, "
            f"{TRUE_K.get(data['name'], '?')})",
            " / ".join(str(r["pe_k"]) for r in rows),
            " / ".join(_fmt_ari(r["ari"]) for r in rows),
            f"{rhat:.3f}",
            f"{max(r['seconds'] for r in rows):.0f}",
        ]
        for key, _ in PEERS:
            peer = next((p for p in data["peers"] if key in p["method"].lower()), None)
            if peer is None:
                cells.append("not run")
            else:
                secs = "-" if peer["seconds"] is None else f"{peer['seconds']:.1f}"
                cells.append(f"{peer['k']}, {_fmt_ari(peer['ari'])}, {secs}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, default=RESULTS / "real_data.json")
    parser.add_argument("--md", type=Path, default=RESULTS / "real_data.md")
    parser.add_argument("--update-readme", action="store_true")
    args = parser.parse_args(argv)
    for path in (args.json, args.md):
        if not path.is_file():
            parser.error(f"{path} is missing: run benchmarks/real_data.py with --out and --json")
    text = table(json.loads(args.json.read_text()), _header(args.md))
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
