"""The ``cluster`` command on tables: text and true/false columns, missing cells, --kinds."""

import arviz as az
import numpy as np
import pandas as pd
import pytest

from test_cli_cluster import _args, _read_labels

import pymc_pcrp as pcrp

from pymc_pcrp._table_record import stored_table_parameters
from pymc_pcrp.cli import main
from pymc_pcrp.cli.cluster import run_cluster
from pymc_pcrp.cli.io import load_data
from pymc_pcrp.cli.publish import MARKER_NAME

SEED = 7


def _mixed_csv(path, n=40, seed=SEED):
    """Two groups of rows (even and odd); row 3 misses its age, row 6 its region."""
    rng = np.random.default_rng(seed)
    lines = ["region,smoker,visits,age"]
    for i in range(n):
        g = i % 2
        region = rng.choice(["north", "east"]) if g == 0 else "south"
        smoker = "true" if rng.random() < (0.9 if g == 0 else 0.1) else "False"
        visits = rng.poisson(1 if g == 0 else 6)
        age = "" if i == 3 else f"{rng.normal(30 if g == 0 else 60, 4):.2f}"
        lines.append(f"{'NA' if i == 6 else region},{smoker},{visits},{age}")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_mixed_csv_with_missing_cells_is_clustered_as_a_table(tmp_path, capsys):
    data = _mixed_csv(tmp_path / "mixed.csv")
    out = tmp_path / "res"
    args = _args(
        data, "--out", out, "--kinds", "visits=poisson", "--power", 1.1, "--draws", 60,
        "--tune", 30, "--chains", 2, "--seed", 1,
    )  # fmt: skip
    assert run_cluster(args) == 0, capsys.readouterr().err
    expected = {
        "labels.csv", "idata.nc", "summary.md", "k_trace.png", "k_posterior.png",
        "similarity.png", MARKER_NAME,
    }  # fmt: skip
    assert {p.name for p in out.iterdir()} == expected
    rows, labels = _read_labels(out / "labels.csv")
    np.testing.assert_array_equal(rows, np.arange(40))
    group = np.arange(40) % 2
    assert len(set(labels[group == 0]) & set(labels[group == 1])) == 0  # groups apart
    idata = az.from_netcdf(out / "idata.nc")
    record = stored_table_parameters(idata)
    kinds = [c.kind for c in record["spec"].columns]
    assert kinds == ["categorical", "bernoulli", "poisson", "gaussian"]  # as fit infers them
    assert record["spec"].columns[0].levels == ("east", "north", "south")
    assert record["mask"].sum() == 40 * 4 - 2  # the two missing cells
    assert record["power"] == 1.1
    # predict needs nothing but idata.nc; X_new may miss cells
    new = pd.DataFrame(
        {"age": [30.0, 60.0], "visits": [1, np.nan], "smoker": [True, False],
         "region": ["north", "south"]}
    )  # fmt: skip
    np.testing.assert_array_equal(pcrp.predict(idata, new).labels, labels[[0, 1]])
    summary = (out / "summary.md").read_text()
    assert "- family: table (`pymc_pcrp.TableMixture`" in summary
    assert "`region` categorical (3 levels), `smoker` bernoulli, `visits` poisson" in summary
    assert "- 2 missing cell(s), integrated out" in summary
    assert "`clusters_2d.png`, `chain_groups.png` and `density_1d.png` are skipped" in summary
    assert "--kinds visits=poisson" in summary  # the reproducing command
    assert "min(40, K^2 / 6), K when tuning ends, informed proposal(s) per sweep" in summary


def test_power_auto_on_a_table_and_family_table_on_numbers_with_a_missing_cell(tmp_path):
    data = _mixed_csv(tmp_path / "mixed.csv", n=24)
    out = tmp_path / "auto"
    args = _args(data, "--out", out, "--draws", 30, "--tune", 20, "--chains", 1, "--seed", 2)
    assert run_cluster(args) == 0
    assert "Sensitivity to r" in (out / "summary.md").read_text()
    # a numeric file with a missing cell: refused by the Gaussian family, a table with
    # --family table
    numbers = tmp_path / "numbers.csv"
    rng = np.random.default_rng(3)
    x = np.r_[rng.normal(-5, 1, (12, 2)), rng.normal(5, 1, (12, 2))]
    cells = [[f"{float(v)!r}" for v in row] for row in x]
    cells[4][1] = ""
    numbers.write_text("a,b\n" + "".join(",".join(row) + "\n" for row in cells))
    loaded = load_data(_args(numbers, "--out", "o", "--family", "table"))
    assert loaded.frame["b"].isna().sum() == 1 and loaded.x is None
    out = tmp_path / "numbers"
    args = _args(numbers, "--out", out, "--family", "table", "--power", 1.1, "--draws", 30,
                 "--tune", 20, "--chains", 1, "--seed", 2)  # fmt: skip
    assert run_cluster(args) == 0
    rows, _ = _read_labels(out / "labels.csv")
    assert rows.size == 24
    record = stored_table_parameters(az.from_netcdf(out / "idata.nc"))
    assert [c.kind for c in record["spec"].columns] == ["gaussian", "gaussian"]
    assert not record["mask"][4, 1] and record["mask"].sum() == 47


@pytest.mark.parametrize(
    ("extra_column", "options", "message"),
    [
        (["2024-01-0{}"], [], "'2024-01-01' is a date or a time; no column kind models dates"),
        (
            ["{}.5"] * 10 + ["oops"],
            [],
            "line 12 (data row 10), column 'odd': 'oops' is not a number, in a column whose "
            "other cells are mostly numbers; fix the cell, make it missing (empty), or pass "
            "--kinds odd=categorical",
        ),
        (["{}"], ["--standardize"], "--standardize: for the Gaussian family only"),
        (["{}"], ["--power", "cv"], "--power cv: for the Gaussian family only"),
        (["{}"], ["--kinds", "nope=poisson"], "--kinds names the column(s) ['nope']"),
        (["u", "v"], ["--kinds", "odd=poisson"], "'u' is not a number, but --kinds makes"),
        (["{}"], ["--kinds", "visits=bernoulli"], "Column 'visits' holds the level"),
    ],
    ids=[
        "date",
        "stray-text",
        "standardize",
        "cv",
        "unknown-kind-column",
        "text-poisson",
        "bernoulli-counts",
    ],
)
def test_what_a_table_cannot_hold_is_refused_naming_it(
    tmp_path, capsys, extra_column, options, message
):
    data = _mixed_csv(tmp_path / "mixed.csv", n=20)
    lines = data.read_text().splitlines()
    cells = [extra_column[i % len(extra_column)].format(i % 9 + 1) for i in range(20)]
    if len(extra_column) > 2:  # the stray text cell is the 11th row only
        cells = [f"{i % 9 + 1}.5" for i in range(20)]
        cells[10] = "oops"
    lines = [lines[0] + ",odd"] + [f"{row},{c}" for row, c in zip(lines[1:], cells, strict=True)]
    data.write_text("\n".join(lines) + "\n")
    out = tmp_path / "out"
    status = main(["cluster", str(data), "--out", str(out), *options])
    err = capsys.readouterr().err
    assert status == 2, err
    assert err.startswith("pymc_pcrp cluster: error: ") and err.count("\n") == 1, err
    assert message in err, err
    assert not out.exists()


def test_kinds_option_parsing(capsys):
    args = _args("d.csv", "--out", "o", "--kinds", "visits=poisson, smoker=Bernoulli")
    assert args.kinds == {"visits": "poisson", "smoker": "bernoulli"}
    assert args.family == "auto" and _args("d.csv", "--out", "o").kinds is None
    with pytest.raises(SystemExit):
        _args("d.csv", "--out", "o", "--kinds", "visits=normal")
    assert "the kind must be one of bernoulli, categorical, poisson, gaussian" in (
        capsys.readouterr().err
    )
