"""summary.md of the cluster command as a one-page answer, and the default choice of r."""

import argparse
import dataclasses
import re

import arviz as az
import numpy as np

from pymc_pcrp.cli import cluster as cluster_command
from pymc_pcrp.cli.cluster import add_cluster_parser, run_cluster
from pymc_pcrp.stats.power_choice import PowerSensitivity

SEED = sum(ord(c) for c in "test_cli_report")


def _args(*argv):
    parser = argparse.ArgumentParser(prog="python -m pymc_pcrp")
    add_cluster_parser(parser.add_subparsers(dest="command", required=True))
    return parser.parse_args(["cluster", *map(str, argv)])


def _three_clusters_in_3d(n_per=25):
    rng = np.random.default_rng(SEED)
    centres = np.array([[0.0, 0.0, 0.0], [7.0, 0.0, 0.0], [0.0, 7.0, 0.0]])
    return np.concatenate([rng.normal(c, 1.0, (n_per, 3)) for c in centres])


def _tables(text):
    """Every markdown table of ``text`` as (header cells, rows of cells)."""
    lines = text.splitlines()
    out = []
    for i, line in enumerate(lines[:-1]):
        if line.startswith("|") and lines[i + 1].startswith("|---"):
            header = [c.strip() for c in line.strip("|").split("|")]
            rows = []
            for row in lines[i + 2 :]:
                if not row.startswith("|"):
                    break
                rows.append([c.strip() for c in row.strip("|").split("|")])
            out.append((header, rows))
    return out


def _run(tmp_path, monkeypatch=None, material=False):
    x = _three_clusters_in_3d()
    path = tmp_path / "three.csv"
    rows = [",".join(repr(float(v)) for v in row) for row in x]
    path.write_text("a,b,c\n" + "\n".join(rows) + "\n")
    if material:
        real = cluster_command.choose_power

        def with_a_change(*args, **kwargs):
            choice = real(*args, **kwargs)
            changed = dataclasses.replace(
                choice.sensitivity,
                changes=("At r = 1.3 the point estimate joins clusters 0 and 1 of the answer.",),
            )
            return dataclasses.replace(choice, sensitivity=changed)

        monkeypatch.setattr(cluster_command, "choose_power", with_a_change)
    out = tmp_path / "out"
    args = _args(path, "--draws", 60, "--tune", 60, "--chains", 2, "--seed", 4, "--out", out)
    assert run_cluster(args) == 0
    return out, (out / "summary.md").read_text()


def test_default_run_chooses_r_among_three_and_reports_the_answer_first(tmp_path, capsys):
    out, summary = _run(tmp_path)
    stdout = capsys.readouterr().out
    idata = az.from_netcdf(out / "idata.nc")
    chosen = idata.attrs["pcrp_chosen_power"]
    assert chosen in (1.0, 1.1, 1.3) and float(idata.constant_data["power"]) == chosen
    assert np.asarray(idata.attrs["pcrp_sensitivity_powers"]).tolist() == [1.0, 1.1, 1.3]
    assert len(np.asarray(idata.attrs["pcrp_sensitivity_n_clusters"])) == 3
    assert f"Reported: r = {chosen:g}. The point estimate at each r:" in stdout
    # the page: answer, trust, figures, terms, command, then the details
    heads = [line for line in summary.splitlines() if line.startswith("## ")]
    assert heads == [
        "## The answer", "## How far to trust it", "## Figures", "## Terms", "## Command",
        "## Details",
    ]  # fmt: skip
    answer = summary.split("## How far to trust it")[0]
    assert summary.startswith("# pCRP clustering of `three.csv`")
    assert "**3 cluster(s)** in the point estimate: 25, 25 and 25 rows" in answer
    assert re.search(r"P\(K = 3\) = \d\.\d\d", answer)
    assert f"Power r = {chosen:g} (--power auto: " in answer
    trust = summary.split("## How far to trust it")[1].split("## Figures")[0]
    assert "**Convergence**" in trust and "**Sensitivity to r**" in trust
    assert "| r | K | cluster sizes | mean K | ARI to reported | VI to reported (bits) |" in trust
    assert "expected VI" in trust
    # every figure written is described, wide data on the discriminant axes
    figures = summary.split("## Figures")[1].split("## Terms")[0]
    for png in ("clusters_2d.png", "k_posterior.png", "k_trace.png", "similarity.png"):
        assert (out / png).is_file() and f"- `{png}`:" in figures
    assert "linear discriminant axes" in figures
    terms = summary.split("## Terms")[1].split("## Command")[0]
    assert "**expected VI**" in terms and "**VI (variation of information), in bits**" in terms
    assert "--power auto" in summary.split("## Command")[1]
    # no table has a column without a header
    for header, rows in _tables(summary):
        assert all(header), header
        assert all(len(row) == len(header) for row in rows)
    assert "The answer depends on r" not in summary  # three clusters 7 sd apart at every r
    warnings = [line for line in summary.splitlines() if line.startswith("> **Warning:**")]
    assert len(warnings) == len(set(warnings))  # each warning once


def test_a_material_change_with_r_is_said_once_at_the_top(tmp_path, monkeypatch, capsys):
    _, summary = _run(tmp_path, monkeypatch, material=True)
    stdout = capsys.readouterr().out
    top = summary.split("## The answer")[0]
    assert "> **Warning:** The answer depends on r. At r = 1.3 the point estimate joins" in top
    assert "Remedy:" in top
    assert summary.count("The answer depends on r.") == 1
    assert "WARNING: The answer depends on r." in stdout
    assert "the answer changes materially (see the warning above)" in summary


def test_given_power_says_that_sensitivity_was_not_measured(tmp_path):
    x = _three_clusters_in_3d(15)
    np.save(tmp_path / "x.npy", x)
    out = tmp_path / "given"
    args = _args(tmp_path / "x.npy", "--power", 1.2, "--draws", 40, "--tune", 40, "--out", out)
    assert run_cluster(args) == 0
    summary = (out / "summary.md").read_text()
    assert "**Sensitivity to r** not measured: r = 1.2 was given." in summary
    assert "Power r = 1.2 (given)" in summary
    assert "pcrp_sensitivity_powers" not in az.from_netcdf(out / "idata.nc").attrs


def test_sensitivity_rows_have_one_cell_per_header():
    sens = PowerSensitivity(
        powers=np.array([1.0, 1.1]),
        chosen_power=1.1,
        n_clusters=np.array([9, 2]),
        sizes=((50, 40, 3, 2, 1, 1, 1, 1, 1), (55, 45)),
        mean_k=np.array([9.1, 2.0]),
        ari=np.array([0.95, 1.0]),
        vi=np.array([0.2, 0.0]),
        changes=(),
    )
    rows = sens.rows()
    assert all(len(row) == len(PowerSensitivity.HEADER) for row in rows)
    assert rows[0][2] == "50, 40, 3, 2, 1, 1, +3 more" and rows[1][0] == "1.1 (reported)"
