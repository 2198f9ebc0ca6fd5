"""Every bad input of ``cluster`` and of ``fit`` is refused with one clear message.

The command's promise: exit status 2, one line on stderr naming the argument, the
column or the line, and the fix; nothing written. ``fit`` raises ``ValueError``
naming the argument and the column or the rows.
"""

import pickle
import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from test_cli_cluster import _args

import pymc_pcrp as pcrp

from pymc_pcrp._validation import check_data, max_power
from pymc_pcrp.cli import main
from pymc_pcrp.cli.io import load_data, standardize
from pymc_pcrp.fitting import choose_family


def _two_blobs(n=30, seed=5):
    rng = np.random.default_rng(seed)
    return np.r_[rng.normal(-4, 1, (n // 2, 2)), rng.normal(4, 1, (n - n // 2, 2))]


def _refused(tmp_path, capsys, data, *extra):
    out = tmp_path / "out"
    status = main(["cluster", str(data), "--out", str(out), *map(str, extra)])
    err = capsys.readouterr().err
    assert status == 2, err
    assert err.startswith("pymc_pcrp cluster: error: ") and err.count("\n") == 1, err
    assert not out.exists() and not list(tmp_path.glob(".out.*"))
    return err


def _csv(tmp_path, text, name="data.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


def _table(x, header="a,b"):
    return header + "\n" + "".join(f"{float(u)!r},{float(v)!r}\n" for u, v in x)


# -- magnitudes, shapes, powers --------------------------------------------------------------


@pytest.mark.parametrize(("value", "what"), [(1e200, "above 1e+100"), (1e-200, "below 1e-100")])
def test_a_csv_column_too_large_or_too_small_is_refused(tmp_path, capsys, value, what):
    x = _two_blobs()
    x[:, 1] = x[:, 1] * value
    path = _csv(tmp_path, _table(x))
    err = _refused(tmp_path, capsys, path, "--power", 1.1)
    assert f"column 'b' of '{path}' has values of magnitude" in err
    assert what in err and "pass --standardize" in err
    # --standardize makes such a column usable: no error before the fit
    from pymc_pcrp.cli import cluster as cluster_command

    args = _args(path, "--out", tmp_path / "o", "--power", 1.1, "--standardize")
    _, z, (mean, sd), _, _ = cluster_command._check_inputs(args)
    np.testing.assert_allclose(z.std(axis=0, ddof=1), 1.0)
    np.testing.assert_allclose(z * sd + mean, x, rtol=1e-12)


def test_standardize_is_exact_at_ordinary_scales_and_finite_at_huge_ones():
    x = _two_blobs()
    z, mean, sd = standardize(x)
    np.testing.assert_allclose(z, (x - x.mean(0)) / x.std(0, ddof=1), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(mean, x.mean(0), rtol=1e-12)
    z, _, sd = standardize(x * 1e300)
    assert np.all(np.isfinite(z)) and np.all(np.isfinite(sd))


def test_an_npy_without_columns_is_refused(tmp_path, capsys):
    path = tmp_path / "data.npy"
    np.save(path, np.zeros((5, 0)))
    err = _refused(tmp_path, capsys, path, "--power", 1.1)
    assert "shape (5, 0): 5 rows but no columns" in err


def test_a_huge_power_is_refused_with_the_bound_for_these_rows(tmp_path, capsys):
    path = _csv(tmp_path, _table(_two_blobs(60)))
    err = _refused(tmp_path, capsys, path, "--power", 1e308)
    assert "--power = 1e+308 is too large for 60 rows" in err
    assert f"above r = {max_power(60):.4g}" in err
    err = _refused(tmp_path, capsys, path, "--power", "cv", "--cv-grid", "1,1000")
    assert "--cv-grid reaches r = 1000, too large for 60 rows" in err
    with pytest.raises(ValueError, match=r"Argument 'power' = 1e\+308 is too large for 60"):
        pcrp.fit(_two_blobs(60), power=1e308, draws=5, tune=5, chains=1)
    # the bound is where 60^r stops being a finite double
    assert 173 < max_power(60) < 174


# -- missing values: masked arrays, pd.NA, NA cells ------------------------------------------


def test_a_masked_value_is_missing_not_data():
    x = np.ma.masked_array(_two_blobs(), mask=False)
    x[3, 1] = 1e6
    x[3, 1] = np.ma.masked
    with pytest.raises(ValueError, match=r"'X' is a masked array with 1 masked .* row\(s\) \[3\]"):
        pcrp.fit(x, power=1.1, draws=5, tune=5, chains=1)
    np.testing.assert_array_equal(check_data(np.ma.masked_array(x.data, mask=False)), x.data)


def test_pd_na_and_none_are_missing_values_named_by_row():
    frame = pd.DataFrame(_two_blobs(), columns=["a", "b"])
    frame["b"] = frame["b"].astype("Float64")
    frame.loc[7, "b"] = pd.NA
    with pytest.raises(ValueError, match=r"1 row\(s\) with missing values .* position\(s\) \[7\]"):
        pcrp.fit(frame, power=1.1, draws=5, tune=5, chains=1)
    objects = np.array([[1.0, None], [2.0, 3.0], [4.0, 5.0]], dtype=object)
    with pytest.raises(ValueError, match=r"NaN or infinite value\(s\), first in row\(s\) \[0\]"):
        check_data(objects, "X")


def test_na_cells_of_a_csv_are_refused_naming_the_line(tmp_path, capsys):
    path = _csv(tmp_path, "a,b\n1,2\n3,NA\n5,7\n8,1\n")
    err = _refused(tmp_path, capsys, path, "--power", 1.1)
    assert "line 3 (data row 1), column 'b' is empty or NA" in err
    assert "Gaussian family cannot marginalise missing values: pass --family table" in err


# -- column types ----------------------------------------------------------------------------

COLUMNS = {
    "datetime": (pd.to_datetime([f"2024-01-0{i % 9 + 1}" for i in range(30)]), "dates"),
    "timedelta": (pd.to_timedelta(np.arange(30), unit="s"), "dates or durations"),
    "categorical": (pd.Categorical(["u", "v"] * 15), "is categorical"),
    "text": (np.array(["u", "v"] * 15, dtype=object), "holds text (for example 'u')"),
}


@pytest.mark.parametrize("kind", ["datetime", "timedelta"])
def test_a_column_of_another_type_is_refused_by_fit_naming_it(kind):
    values, message = COLUMNS[kind]
    frame = pd.DataFrame(_two_blobs(), columns=["a", "b"])
    frame["odd"] = values
    with pytest.raises(ValueError, match=f"Argument 'X': column 'odd' .*{re.escape(message)}"):
        pcrp.fit(frame, power=1.1, draws=5, tune=5, chains=1)


@pytest.mark.parametrize("kind", ["categorical", "text"])
def test_a_categorical_or_text_column_makes_fit_cluster_a_table(kind):
    frame = pd.DataFrame(_two_blobs(), columns=["a", "b"])
    frame["odd"] = COLUMNS[kind][0]
    assert choose_family(frame, None) == "table"
    with pytest.raises(ValueError, match="Argument 'X': column 'odd'"):
        pcrp.fit(frame, family="gaussian", power=1.1, draws=5, tune=5, chains=1)


def test_a_frame_of_only_dates_is_refused_not_clustered_as_numbers():
    frame = pd.DataFrame({"when": COLUMNS["datetime"][0]})
    with pytest.raises(ValueError, match=r"column 'when' .*holds dates"):
        pcrp.fit(frame, power=1.1, draws=5, tune=5, chains=1)


@pytest.mark.parametrize("kind", [*COLUMNS, "nullable with NA"])
def test_a_parquet_column_of_another_type_is_refused_naming_it(tmp_path, capsys, kind):
    pytest.importorskip("pyarrow", reason="reading Parquet needs pyarrow")
    frame = pd.DataFrame(_two_blobs(), columns=["a", "b"])
    if kind == "nullable with NA":
        frame["odd"] = pd.array([1, None] + [2] * 28, dtype="Int64")
        message = "with missing values (NaN, pd.NA or None), first at position(s) [1]"
    else:
        frame["odd"], message = COLUMNS[kind]
    path = tmp_path / "data.parquet"
    frame.to_parquet(path)
    err = _refused(tmp_path, capsys, path, "--power", 1.1)
    assert message in err
    if kind != "nullable with NA":
        assert "column 'odd'" in err
    # leaving the column out makes the file usable
    data = load_data(_args(path, "--out", "o", "--columns", "a,b"))
    np.testing.assert_allclose(data.x, frame[["a", "b"]].to_numpy())


@pytest.mark.parametrize(
    ("cell", "message"),
    [
        ("2024-01-05", "'2024-01-05' is not a number (column 'when' holds a date or a time"),
        ("12:30", "holds a date or a time"),
        # a text column is clustered with the table family (tests/test_cli_table.py),
        # unless the Gaussian family is asked for
        ("red --family gaussian", "'red' is not a number (column 'when' holds text"),
    ],
)
def test_a_csv_column_of_dates_or_text_is_refused_naming_it(tmp_path, capsys, cell, message):
    cell, *extra = cell.split()
    rows = "".join(f"{float(u)!r},{cell}\n" for u, _ in _two_blobs())
    path = _csv(tmp_path, "a,when\n" + rows)
    err = _refused(tmp_path, capsys, path, "--power", 1.1, *extra)
    assert "line 2 (data row 0), column 'when'" in err and message in err
    assert "leave it out with --columns" in err


# -- files that are not what their name says -----------------------------------------------


def test_a_pickle_named_npy_is_refused_without_numpys_pickle_advice(tmp_path, capsys):
    path = tmp_path / "data.npy"
    path.write_bytes(pickle.dumps(_two_blobs()))
    err = _refused(tmp_path, capsys, path)
    assert "is a Python pickle, not a .npy array" in err and "allow_pickle" not in err
    np.save(path, np.array([[1, "a"], [2, None]], dtype=object), allow_pickle=True)
    err = _refused(tmp_path, capsys, path)
    assert "array of Python objects (dtype object)" in err and "allow_pickle" not in err


def test_a_csv_named_npy_is_refused_with_the_fix(tmp_path, capsys):
    path = _csv(tmp_path, _table(_two_blobs()), name="data.npy")
    err = _refused(tmp_path, capsys, path)
    assert "is text, not a .npy array (a CSV file named .npy?); rename it to .csv" in err
    assert "allow_pickle" not in err


# -- real files: delimiters, quotes, BOM, header or not -------------------------------------


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("a;b\n1;2\n3;5\n", ["a", "b"]),
        ("a\tb\n1\t2\n3\t5\n", ["a", "b"]),
        ("a|b\n1|2\n3|5\n", ["a", "b"]),
        ("a b\n1   2\n3 5\n", ["a", "b"]),
        ('"a","b"\n"1","2"\n"3","5"\n', ["a", "b"]),
        ("\ufeffa,b\r\n1,2\r\n3,5\r\n", ["a", "b"]),
        ("1,2\n3,5\n", ["0", "1"]),
    ],
    ids=["semicolon", "tab", "pipe", "spaces", "quoted", "bom-crlf", "no-header"],
)
def test_common_csv_dialects_are_read(tmp_path, text, names):
    path = _csv(tmp_path, text)
    data = load_data(_args(path, "--out", "o"))
    assert data.names == names
    np.testing.assert_array_equal(data.x, [[1, 2], [3, 5]])


def test_the_command_refuses_bad_input_as_a_user_runs_it(tmp_path):
    path = _csv(tmp_path, "a,b\n1,2\n3,1e200\n4,5\n")
    done = subprocess.run(
        [sys.executable, "-m", "pymc_pcrp", "cluster", str(path), "--power", "1.1",
         "--out", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert "column 'b'" in done.stderr and "--standardize" in done.stderr
    assert not (tmp_path / "out").exists()
