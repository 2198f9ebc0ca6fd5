"""The ``cluster`` subcommand: reading data, clustering, writing outputs, and refusing bad input."""

import argparse
import errno

import arviz as az
import numpy as np
import pytest

import pymc_pcrp as pcrp

from pymc_pcrp.cli import cluster as cluster_command
from pymc_pcrp.cli.cluster import add_cluster_parser, run_cluster
from pymc_pcrp.cli.publish import MARKER_NAME
from pymc_pcrp.sampler.options import auto_sweeps_per_draw
from pymc_pcrp.stats.cross_validation import CVResult

SEED = sum(ord(c) for c in "test_cluster_command")


def _parser():
    parser = argparse.ArgumentParser(prog="python -m pymc_pcrp")
    sub = parser.add_subparsers(dest="command", required=True)
    add_cluster_parser(sub)
    return parser


def _args(*argv):
    return _parser().parse_args(["cluster", *map(str, argv)])


def _two_clusters(n_per=30, d=2, seed=SEED):
    rng = np.random.default_rng(seed)
    centre = np.full(d, 6.0)
    x = np.r_[rng.normal(-centre, 1.0, (n_per, d)), rng.normal(centre, 1.0, (n_per, d))]
    return x, np.repeat([0, 1], n_per)


def _write_csv(path, x, header=("id", "x", "y", "note")):
    lines = [",".join(header)]
    lines += [f"{i},{float(row[0])!r},{float(row[1])!r},item {i}" for i, row in enumerate(x)]
    path.write_text("\n".join(lines) + "\n")
    return path


def _read_labels(path):
    table = np.loadtxt(path, delimiter=",", skiprows=1, dtype=np.int64)
    assert path.read_text().splitlines()[0] == "row,label"
    return table[:, 0], table[:, 1]


def _assert_recovers(labels, truth):
    first, second = labels[truth == 0], labels[truth == 1]
    assert np.all(first == first[0]) and np.all(second == second[0])
    assert first[0] != second[0]


def _earlier_result(out, text="old"):
    """Make ``out`` look like an earlier result of the command (its marker file included)."""
    out.mkdir(exist_ok=True)
    (out / "summary.md").write_text(text)
    (out / MARKER_NAME).write_text('{"written_by": "pymc_pcrp cluster", "format": 1}\n')


def _leftovers(directory):
    return [p.name for p in directory.iterdir() if "incomplete" in p.name or ".old-" in p.name]


def test_csv_with_named_columns_and_overwrite(tmp_path, capsys):
    x, truth = _two_clusters()
    data = _write_csv(tmp_path / "data.csv", x)
    out = tmp_path / "result"
    _earlier_result(out)  # an earlier result, replaced because of --overwrite
    (out / "stale.txt").write_text("old")
    # Seed 2: with the learned NIW scale, one of the two 60-draw chains of seed 1 stays
    # in one cluster (plain Gibbs rarely splits a cluster holding both blobs; the report
    # of the hyperprior branch describes it). This test is about the files written.
    args = _args(
        data, "--columns", "x,y", "--power", "1.2", "--draws", 60, "--tune", 60,
        "--chains", 2, "--seed", 2, "--out", out, "--overwrite", "--split-merge", 0,
    )  # fmt: skip
    # (--split-merge 0: Algorithm 1 alone, whose chains here do not settle in 60 draws,
    # so that the not-converged report below is exercised; with the default moves both
    # chains sit on the same partition and the report finds nothing to warn about)
    assert run_cluster(args) == 0
    expected = {
        "labels.csv", "idata.nc", "summary.md", "k_trace.png", "k_posterior.png",
        "clusters_2d.png", "similarity.png", MARKER_NAME,
    }  # fmt: skip
    assert {p.name for p in out.iterdir()} == expected
    assert _leftovers(tmp_path) == []
    rows, labels = _read_labels(out / "labels.csv")
    np.testing.assert_array_equal(rows, np.arange(60))
    _assert_recovers(labels, truth)
    idata = az.from_netcdf(out / "idata.nc")
    assert idata.posterior["z"].shape == (2, 60, 60)
    np.testing.assert_allclose(idata.observed_data["x"].values, x)
    assert idata.posterior.attrs["pcrp_power"] == 1.2
    assert idata.posterior.attrs["pcrp_columns"] == "x, y"
    # r, alpha and the prior travel with idata.nc: predict needs nothing else
    assert float(idata.constant_data["power"]) == 1.2
    np.testing.assert_array_equal(
        idata.constant_data["psi0"].values, pcrp.NIWPrior.from_data(x).psi0
    )
    np.testing.assert_array_equal(pcrp.predict(idata, x[[0, -1]]).labels, labels[[0, -1]])
    # 2 chains x 60 draws cannot reach a bulk ESS of 200: stdout and summary.md say so
    stdout = capsys.readouterr().out
    report = pcrp.check_convergence(idata)
    assert not report.converged
    numbers = report.summary().splitlines()[0]
    assert f"Convergence: {numbers}" in stdout
    assert "WARNING: the chains have not converged." in stdout
    assert "Remedy: more draws (--draws), more chains (--chains), or another r" in stdout
    assert "more split-merge proposals (--split-merge 1)" in stdout
    summary = (out / "summary.md").read_text()
    top = summary.split("## Data")[0]
    assert top.startswith(
        "# pCRP clustering of `data.csv`\n\n> **Warning:** the chains have not converged."
    )
    for problem in report.problems:
        assert problem in top and problem in stdout
    assert "bulk ESS" in top and "| FAIL |" in summary
    # not converged: how the two chains' clusterings differ, on stdout and in summary.md
    comparison = pcrp.diagnostics.compare_chains(idata)
    assert "How the chains differ: Each chain's own point estimate" in stdout
    assert "## How the chains differ" in summary
    assert "| chain | clusters | largest sizes | mean K | mean log joint |" in summary
    assert f"| 0 | 0 | {comparison.n_different[0, 1]} |" in summary
    for text in (
        "power r = 1.2 (given)",
        "## Posterior of the number of clusters K",
        "| n_clusters |",
        "| log_joint |",
        "R-hat",
        "--seed 2",
        "--columns x,y",
        "**2 cluster(s)** in the point estimate: 30 and 30 rows",
    ):
        assert text in summary
    assert "Cross-validation" not in summary
    for png in expected - {"labels.csv", "idata.nc", "summary.md", MARKER_NAME}:
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_auto_power_on_npy_with_three_standardised_columns(tmp_path, capsys):
    x, truth = _two_clusters(d=3, seed=SEED + 1)
    np.save(tmp_path / "data.npy", x)
    out = tmp_path / "sub" / "auto"  # the parent is created
    args = _args(
        tmp_path / "data.npy", "--columns", "0,1,2", "--standardize", "--power", "cv",
        "--cv-grid", "1.0,1.2", "--cv-draws", 30, "--cv-tune", 30, "--cv-chains", 1,
        "--draws", 40, "--tune", 40, "--chains", 1, "--seed", 2, "--out", out,
        # Plain Gibbs started in one cluster (init "random" draws K0 = 1 with
        # probability 1/8 here) stays there for 80 sweeps about half the time;
        # split-merge moves make the recovery check independent of the seed.
        "--split-merge", 1,
    )  # fmt: skip
    assert run_cluster(args) == 0
    stdout = capsys.readouterr().out
    assert (out / "cv_curve.png").is_file() and (out / "clusters_2d.png").is_file()
    _, labels = _read_labels(out / "labels.csv")
    _assert_recovers(labels, truth)
    idata = az.from_netcdf(out / "idata.nc")
    chosen = idata.posterior.attrs["pcrp_power"]
    assert chosen in (1.0, 1.2)
    how = idata.posterior.attrs["pcrp_power_choice"]
    if how == "chosen by cross-validation":
        assert f"Chosen r = {chosen:g}" in stdout and "No jump" not in stdout
    else:  # two clusters 12 sd apart are not merged at r = 1.2: usually no jump
        assert how == "top of the cross-validation grid: the loss never jumped" and chosen == 1.2
        assert "No jump: the held-out loss never rose" in stdout and "Chosen r" not in stdout
    assert "R-hat needs at least 2 chains" in stdout
    standardised = (x - x.mean(axis=0)) / x.std(axis=0, ddof=1)
    np.testing.assert_allclose(idata.observed_data["x"].values, standardised)
    summary = (out / "summary.md").read_text()
    assert f"power r = {chosen:g} ({how})" in summary
    assert "## Cross-validation of r" in summary and "| 1.2 |" in summary
    assert "30 training rows, 30 held-out rows" in summary
    assert "R-hat needs at least two chains" in summary
    assert "How the chains differ" not in summary + stdout  # one chain: nothing to compare
    assert _leftovers(tmp_path / "sub") == []


def test_one_column_and_progress_flag(tmp_path, monkeypatch):
    rng = np.random.default_rng(SEED + 2)
    x = np.r_[rng.normal(-5, 1, 20), rng.normal(5, 1, 20)]
    path = tmp_path / "one.csv"
    path.write_text("\n".join(f"{float(v)!r}" for v in x) + "\n")  # no header
    seen = {}
    real_fit = cluster_command.fit

    def spy(*args, **kwargs):
        seen.update(kwargs)
        return real_fit(*args, **kwargs)

    monkeypatch.setattr(cluster_command, "fit", spy)
    out = tmp_path / "one"
    args = _args(
        path, "--power", 1.1, "--draws", 30, "--tune", 30, "--chains", 1, "--seed", 3,
        "--progress", "--out", out,
    )  # fmt: skip
    assert run_cluster(args) == 0
    assert seen["progressbar"] is True and seen["power"] == 1.1
    # no --split-merge: the step runs its own default moves; convergence is reported here
    assert "pcrp_gibbs" not in seen and seen["compute_convergence_checks"] is False
    assert (out / "density_1d.png").is_file() and not (out / "clusters_2d.png").exists()
    _, labels = _read_labels(out / "labels.csv")
    _assert_recovers(labels, np.repeat([0, 1], 20))
    assert "(no header row)" in (out / "summary.md").read_text()


def test_split_merge_option_reaches_the_step(tmp_path):
    x, truth = _two_clusters(seed=SEED + 3)
    np.save(tmp_path / "data.npy", x)
    out = tmp_path / "sm"
    args = _args(
        tmp_path / "data.npy", "--power", 1.2, "--split-merge", 2, "--speck-moves", 0,
        "--pair-moves", 3, "--template-jumps", 0, "--init", "one",
        "--draws", 30, "--tune", 10, "--chains", 1, "--seed", 4, "--out", out,
    )  # fmt: skip
    assert run_cluster(args) == 0
    stats = az.from_netcdf(out / "idata.nc").sample_stats
    # Two proposals after each sweep; by default a draw has several sweeps at this size,
    # and summary.md states how many.
    sweeps = auto_sweeps_per_draw(*x.shape)
    assert sweeps > 1
    assert int(stats["split_proposed"].sum() + stats["merge_proposed"].sum()) == 60 * sweeps
    assert 0 < int(stats["pair_proposed"].sum()) <= 3 * 30 * sweeps
    assert int(stats["jump_proposed"].sum()) == 0  # --template-jumps 0
    _, labels = _read_labels(out / "labels.csv")
    _assert_recovers(labels, truth)
    summary_text = (out / "summary.md").read_text()
    assert "2 split-merge proposal(s) per sweep" in summary_text
    assert "among the clusters" not in summary_text  # --speck-moves 0
    assert "--split-merge 2 --speck-moves 0 --pair-moves 3 --template-jumps 0" in summary_text
    assert "no template jumps" in summary_text
    assert "3 pair move(s) per sweep" in summary_text
    assert f"{sweeps} Gibbs sweep(s) per draw" in summary_text
    assert f"--sweeps-per-draw {sweeps}" in summary_text


def test_cv_without_a_jump_is_reported_and_fits_use_the_step_defaults(
    tmp_path, monkeypatch, capsys
):
    x, _ = _two_clusters(seed=SEED + 4)
    np.save(tmp_path / "data.npy", x)
    seen = {}

    def no_jump(train, test, grid, **kwargs):
        seen.update(kwargs)
        loss = np.linspace(10.0, 10.5, grid.size)
        return CVResult(
            powers=grid, loss=loss, loss_se=np.zeros(grid.size), mean_k=np.full(grid.size, 2.0),
            loss_draws=loss[:, None, None], chosen_power=float(grid[-1]), jump_index=None,
            jump_tol=kwargs["jump_tol"],
        )  # fmt: skip

    monkeypatch.setattr(cluster_command, "cross_validate_power", no_jump)
    out = tmp_path / "nojump"
    args = _args(
        tmp_path / "data.npy", "--power", "cv", "--cv-grid", "1.0,1.1,1.2", "--draws", 20,
        "--tune", 10, "--chains", 1, "--seed", 5, "--out", out,
    )  # fmt: skip
    assert run_cluster(args) == 0
    # the cross-validation fits get no step options: PCRPGibbs's default moves
    assert "pcrp_gibbs" not in seen["fit_kwargs"]
    stdout = capsys.readouterr().out
    assert "No jump: the held-out loss never rose by more than 10% over the grid, so r = 1.2" in (
        stdout
    )
    summary = (out / "summary.md").read_text()
    top = summary.split("## Data")[0]
    assert "r was NOT chosen by cross-validation: r = 1.2 is just the top of the grid" in top
    assert "power r = 1.2 (top of the cross-validation grid: the loss never jumped)" in summary
    commands = [line for line in summary.splitlines() if line.startswith("python -m pymc_pcrp")]
    assert commands and not any("--split-merge" in line for line in commands)
    assert "the step's default moves" in summary
    # the automatic split-merge rate is read from the run: what the chain settled on
    idata = az.from_netcdf(out / "idata.nc")
    rate = float(idata.sample_stats["split_merge_rate"].values[0, -1])
    assert f"{rate:.3g} (set from each chain's partition at the end of tuning)" in summary
    assert float(idata.constant_data["power"]) == 1.2


def _good_rows(n=6):
    return [f"{i},{i * 0.5},{(-1) ** i * 2.0},note" for i in range(n)]


ERROR_CASES = {
    "missing file": (None, [], "does not exist"),
    "not text": (b"\x89PNG\r\n\x1a\n\x00\xff\xfe binary", [], "cannot read"),
    "unknown column": (["id,x,y,note", *_good_rows()], ["--columns", "x,zz"], "'zz' not found"),
    "index out of range": (["id,x,y,note", *_good_rows()], ["--columns", "1,7"], "out of range"),
    "non-numeric cell": (
        ["id,x,y,note", *_good_rows(3), "3,abc,1.0,note", *_good_rows(2)],
        ["--columns", "x,y"],
        "line 5 (data row 3), column 'x': 'abc' is not a number",
    ),
    "empty cell": (
        ["id,x,y,note", *_good_rows(2), "2,1.0,,note"],
        ["--columns", "x,y"],
        "line 4 (data row 2), column 'y' is empty",
    ),
    "nan cell": (
        ["id,x,y,note", *_good_rows(4), "4,nan,1.0,note"],
        ["--columns", "x,y"],
        "line 6 (data row 4), column 'x': 'nan' is not a finite number",
    ),
    "inf cell": (["1.0,2.0", "-inf,3.0", "2.0,1.0"], [], "'-inf' is not a finite number"),
    "one row": (["x,y", "1.0,2.0"], [], "has 1 data row(s); clustering needs at least 2"),
    "header only": (["x,y"], [], "has 0 data row(s)"),
    "empty file": ([], [], "is empty"),
    "ragged row": (["x,y", "1.0,2.0", "3.0"], [], "line 3 of"),
    "constant column": (["x,y", "1,5", "2,5", "3,5"], [], "'y'"),
    "duplicate column": (["x,y", "1,5", "2,6"], ["--columns", "x,0"], "more than once"),
    "cv with three rows": (["x,y", "1,5", "2,6", "3,8"], ["--power", "cv"], "at least 4 rows"),
}


@pytest.mark.parametrize("case", ERROR_CASES)
def test_bad_csv_input_is_refused_with_a_message(tmp_path, capsys, case):
    content, extra, message = ERROR_CASES[case]
    path = tmp_path / "data.csv"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text("".join(line + "\n" for line in content))
    out = tmp_path / "out"
    assert run_cluster(_args(path, "--out", out, *extra)) == 2
    err = capsys.readouterr().err
    assert err.startswith("pymc_pcrp cluster: error: ")
    assert message in err
    assert not out.exists()
    expected = ["data.csv"] if content is not None else []
    assert sorted(p.name for p in tmp_path.iterdir()) == expected


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"this is not a numpy file", "is text, not a .npy array"),
        (None, "not a finite number"),
        ("strings", "dtype <U"),
        ("3d", "shape (2, 2, 2)"),
    ],
)
def test_bad_npy_input_is_refused_with_a_message(tmp_path, capsys, content, message):
    path = tmp_path / "data.npy"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content == "strings":
        np.save(path, np.array([["a", "b"], ["c", "d"]]))
    elif content == "3d":
        np.save(path, np.zeros((2, 2, 2)))
    else:
        x = np.arange(12.0).reshape(6, 2)
        x[4, 1] = np.inf
        np.save(path, x)
    out = tmp_path / "out"
    assert run_cluster(_args(path, "--power", 1.1, "--out", out)) == 2
    err = capsys.readouterr().err
    assert message in err
    if content is None:
        assert "row 4, column 1" in err
    assert not out.exists()


def test_output_directory_in_the_way(tmp_path, capsys):
    path = tmp_path / "data.csv"
    path.write_text("x,y\n1,2\n2,1\n3,5\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / "precious.txt").write_text("keep me")
    assert run_cluster(_args(path, "--power", 1.1, "--out", out)) == 2
    assert "already exists and holds files this command did not write" in capsys.readouterr().err
    assert run_cluster(_args(path, "--power", 1.1, "--out", out, "--overwrite")) == 2
    assert "was not written by this command" in capsys.readouterr().err
    assert [p.name for p in out.iterdir()] == ["precious.txt"]
    a_file = tmp_path / "file"
    a_file.write_text("")
    assert run_cluster(_args(path, "--power", 1.1, "--out", a_file)) == 2
    assert "is not a directory" in capsys.readouterr().err
    assert run_cluster(_args(path, "--power", 1.1, "--out", tmp_path)) == 2
    assert "contains the data file" in capsys.readouterr().err
    assert _leftovers(tmp_path) == []


@pytest.mark.parametrize("where", ["fit", "write_figures"])
def test_failure_midway_leaves_no_complete_looking_output(tmp_path, monkeypatch, where):
    x, _ = _two_clusters(n_per=5)
    data = _write_csv(tmp_path / "data.csv", x)

    def boom(*args, **kwargs):
        raise RuntimeError("boom")

    if where == "write_figures":  # sample for real but fail after labels and idata are written
        monkeypatch.setattr(cluster_command, "write_figures", boom)
    else:
        monkeypatch.setattr(cluster_command, "fit", boom)
    out = tmp_path / "out"
    with pytest.raises(RuntimeError, match="boom"):
        run_cluster(
            _args(data, "--columns", "x,y", "--power", 1.1, "--draws", 5, "--tune", 5,
                  "--chains", 1, "--out", out)
        )  # fmt: skip
    assert not out.exists()
    assert _leftovers(tmp_path) == []
    # an earlier result survives a failed --overwrite run untouched
    _earlier_result(out, "earlier")
    with pytest.raises(RuntimeError, match="boom"):
        run_cluster(
            _args(data, "--columns", "x,y", "--power", 1.1, "--draws", 5, "--tune", 5,
                  "--chains", 1, "--out", out, "--overwrite")
        )  # fmt: skip
    assert sorted(p.name for p in out.iterdir()) == sorted([MARKER_NAME, "summary.md"])
    assert (out / "summary.md").read_text() == "earlier"
    assert _leftovers(tmp_path) == []


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--power", "-1"], "--power"),
        (["--power", "often"], "'auto', 'cv' or a number"),
        (["--alpha", "0"], "--alpha"),
        (["--draws", "0"], "--draws"),
        (["--cv-grid", "1.0"], "at least two distinct powers"),
        (["--cv-grid", "1.5:1.0:0.1"], "STOP >= START"),
        (["--cv-grid", "1:1e9:0.01"], "at most 200 are allowed"),
        (["--cv-fraction", "1.5"], "strictly between 0 and 1"),
        (["--header", "maybe"], "--header"),
        (["--n-jobs", "0"], "non-zero"),
        ([], "--out"),
    ],
)
def test_invalid_options_exit_with_status_2(capsys, argv, message):
    full = ["data.csv", *argv] if not argv else ["data.csv", "--out", "o", *argv]
    with pytest.raises(SystemExit) as exc:
        _args(*full)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_option_defaults_and_grid_parsing():
    args = _args("data.csv", "--out", "o")
    assert args.power == "auto" and args.alpha == 1.0 and args.seed is None
    np.testing.assert_allclose(args.cv_grid, np.arange(1.0, 1.5001, 0.05))
    assert args.cv_grid.size == 11
    assert args.progress is None and args.cv_fraction == 0.5
    assert args.split_merge is None  # the step's own default moves
    assert _args("d", "--out", "o", "--power", "1.25").power == 1.25
    assert _args("d", "--out", "o", "--power", "AUTO").power == "auto"
    np.testing.assert_array_equal(
        _args("d", "--out", "o", "--cv-grid", "1.3,1.1, 1.2").cv_grid, [1.1, 1.2, 1.3]
    )


def test_help_documents_every_option(capsys):
    with pytest.raises(SystemExit) as exc:
        _parser().parse_args(["cluster", "--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    for option in (
        "--power", "--alpha", "--draws", "--tune", "--chains", "--cores", "--seed", "--columns",
        "--standardize", "--out", "--sweeps-per-draw", "--cv-grid", "--cv-fraction", "--n-jobs",
        "--progress", "--overwrite", "labels.csv", "idata.nc", "summary.md", "exit status",
    ):  # fmt: skip
        assert option in text


def test_header_detection_and_column_selection(tmp_path):
    load = cluster_command.load_data
    path = tmp_path / "t.csv"
    path.write_text("a,b,c\n1,2,3\n4,5,7\n")
    data = load(_args(path, "--out", "o"))
    assert data.has_header and data.names == ["a", "b", "c"]
    np.testing.assert_array_equal(data.x, [[1, 2, 3], [4, 5, 7]])
    data = load(_args(path, "--out", "o", "--columns", "c,0"))
    assert data.names == ["c", "a"]
    np.testing.assert_array_equal(data.x, [[3, 1], [7, 4]])
    path.write_text("1,2,3\n4,5,7\n")  # no header: every cell of the first line is a number
    data = load(_args(path, "--out", "o", "--columns", "2"))
    assert not data.has_header and data.names == ["2"]
    np.testing.assert_array_equal(data.x, [[3], [7]])
    path.write_text("\ufeff 10 ; 20\n\n30;40\n")  # BOM, spaces, a blank line, other delimiter
    data = load(_args(path, "--out", "o", "--delimiter", ";"))
    np.testing.assert_array_equal(data.x, [[10, 20], [30, 40]])
    tsv = tmp_path / "t.tsv"
    tsv.write_text("p\tq\n1\t2\n3\t5\n")
    assert load(_args(tsv, "--out", "o")).names == ["p", "q"]
    path.write_text("x,y\n1,2\n2,3\n")  # --header no turns the first line into data
    with pytest.raises(cluster_command.InputError, match=r"line 1 .*'x' is not a number"):
        load(_args(path, "--out", "o", "--header", "no"))


@pytest.mark.parametrize("target_state", ["empty", "missing", "earlier_result"])
def test_output_through_a_symbolic_link(tmp_path, target_state):
    x, truth = _two_clusters(n_per=15)
    data = _write_csv(tmp_path / "data.csv", x)
    target = tmp_path / "real" / "result"
    target.parent.mkdir()
    if target_state != "missing":
        target.mkdir()
    if target_state == "earlier_result":
        _earlier_result(target)
    link = tmp_path / "link"
    link.symlink_to(target, target_is_directory=True)
    args = _args(
        data, "--columns", "x,y", "--power", "1.2", "--draws", 30, "--tune", 30,
        "--chains", 1, "--seed", 1, "--out", link, "--overwrite",
    )  # fmt: skip
    assert run_cluster(args) == 0
    assert link.is_symlink() and link.resolve() == target.resolve()
    assert (link / "summary.md").read_text() != "old"
    rows, _ = _read_labels(link / "labels.csv")
    np.testing.assert_array_equal(rows, np.arange(truth.size))
    assert _leftovers(tmp_path) == [] and _leftovers(target.parent) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.csv", "link", "real"]


def test_auto_power_with_a_column_constant_in_the_training_half(tmp_path, capsys):
    """A rare binary flag can be constant in one cross-validation half: no crash."""
    rng = np.random.default_rng(7)
    x, _ = _two_clusters(n_per=30)
    flag = np.zeros(60)
    flag[[3, 41]] = 1.0  # two rows carry the flag
    rows = [f"{float(a)!r},{float(b)!r},{float(f)!r}" for (a, b), f in zip(x, flag, strict=True)]
    path = tmp_path / "flag.csv"
    path.write_text("x,y,flag\n" + "\n".join(rows) + "\n")
    seeds = rng.integers(0, 2**31, size=40)
    # Find a seed whose training half has the flag constant, so the case really happens.
    from pymc_pcrp.stats.cross_validation import split_train_test

    data = np.column_stack([x, flag])
    for seed in seeds:
        split = np.random.SeedSequence(int(seed)).spawn(4)[0]
        train, _ = split_train_test(data, 30, seed=cluster_command._seed_int(split))
        if np.ptp(train[:, 2]) == 0:
            break
    else:
        pytest.fail("no seed among 40 puts both flagged rows in the held-out half")
    args = _args(
        path, "--power", "cv", "--cv-grid", "1.0,1.3", "--cv-draws", 20, "--cv-tune", 20,
        "--draws", 30, "--tune", 30, "--chains", 1, "--seed", int(seed),
        "--out", tmp_path / "out",
    )  # fmt: skip
    assert run_cluster(args) == 0
    assert (tmp_path / "out" / "labels.csv").exists()


def test_chains_in_different_groups_get_a_figure_of_their_clusterings(tmp_path):
    rng = np.random.default_rng(SEED + 9)
    x = np.r_[rng.normal(0, 1, (30, 2)), rng.normal(6, 0.5, (20, 2))]
    a = np.r_[np.zeros(30, int), np.ones(20, int)]
    b = a.copy()
    b[:5] = 1
    z = np.stack([np.tile(p, (20, 1)) for p in (a, b)])
    k = np.full((2, 20), 2)
    idata = az.from_dict(posterior={"z": z, "n_clusters": k}, dims={"z": ["point"]})
    estimate = pcrp.point_estimate(idata, random_seed=0)
    prior = pcrp.NIWPrior.from_data(x)
    split = pcrp.diagnostics.compare_chains(idata)
    agree = pcrp.diagnostics.compare_chains(idata, tolerance=5)
    assert not split.agree and agree.agree
    for comparison, name in ((split, "two"), (agree, "one"), (None, "none")):
        out = tmp_path / name
        out.mkdir()
        files = cluster_command.write_figures(
            out, idata, x, ["u", "v"], estimate, prior, 1.1, 1.0, None, comparison
        )
        assert ("chain_groups.png" in files) == (comparison is split)
        assert (out / "chain_groups.png").is_file() == (comparison is split)
    assert (tmp_path / "two" / "chain_groups.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# -- publishing at --out: what appeared meanwhile is kept, messages say what is true -----------


def _small_run(data, out, *extra):
    return _args(
        data, "--columns", "x,y", "--power", 1.1, "--draws", 5, "--tune", 5, "--chains", 1,
        "--seed", 3, "--out", out, *extra,
    )  # fmt: skip


def test_a_folder_created_at_out_during_the_run_is_kept(tmp_path, monkeypatch, capsys):
    x, _ = _two_clusters(n_per=5)
    data = _write_csv(tmp_path / "data.csv", x)
    out = tmp_path / "res"
    original = cluster_command.write_figures

    def user_creates_out_meanwhile(*args, **kwargs):
        out.mkdir()
        (out / "notes.txt").write_text("my thesis")
        return original(*args, **kwargs)

    monkeypatch.setattr(cluster_command, "write_figures", user_creates_out_meanwhile)
    assert run_cluster(_small_run(data, out)) == 1
    err = capsys.readouterr().err
    assert "changed while this run was working" in err
    assert f"the results of this run are in '{tmp_path / 'res-2'}' instead" in err
    assert [p.name for p in out.iterdir()] == ["notes.txt"]
    assert (out / "notes.txt").read_text() == "my thesis"
    assert (tmp_path / "res-2" / "labels.csv").is_file()
    assert _leftovers(tmp_path) == [] and not (tmp_path / ".res.lock").exists()


def test_a_full_disk_while_writing_publishes_nothing_and_says_so(tmp_path, monkeypatch, capsys):
    x, _ = _two_clusters(n_per=5)
    data = _write_csv(tmp_path / "data.csv", x)
    out = tmp_path / "res"
    _earlier_result(out, "earlier")

    def disk_full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(cluster_command, "write_labels", disk_full)
    assert run_cluster(_small_run(data, out, "--overwrite")) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "could not write the results (No space left on device); nothing was published" in err
    assert "free some space or choose another --out" in err
    assert (out / "summary.md").read_text() == "earlier"
    assert _leftovers(tmp_path) == []


def test_an_interrupt_while_the_old_result_is_removed_says_the_new_one_is_in_place(
    tmp_path, monkeypatch, capsys
):
    x, _ = _two_clusters(n_per=5)
    data = _write_csv(tmp_path / "data.csv", x)
    out = tmp_path / "res"
    _earlier_result(out, "earlier")
    from pymc_pcrp.cli import publish as publishing

    original = publishing._remove_result
    calls = []

    def interrupted_once(path):
        calls.append(path)
        if len(calls) == 1:
            raise KeyboardInterrupt
        return original(path)

    monkeypatch.setattr(publishing, "_remove_result", interrupted_once)
    assert run_cluster(_small_run(data, out, "--overwrite")) == 130
    err = capsys.readouterr().err
    assert "Interrupted just after the results were published" in err
    assert "holds the new, complete result" in err
    assert "the next run on this --out removes it" in err
    assert "Nothing was written" not in err
    assert (out / "summary.md").read_text() != "earlier"
    assert (out / "labels.csv").is_file()
    assert len(_leftovers(tmp_path)) == 1
    monkeypatch.setattr(publishing, "_remove_result", original)
    assert run_cluster(_small_run(data, out, "--overwrite")) == 0
    assert "left behind by an earlier run" in capsys.readouterr().out
    assert _leftovers(tmp_path) == []


def test_a_rename_that_fails_at_the_end_keeps_the_results_and_names_them(
    tmp_path, monkeypatch, capsys
):
    x, _ = _two_clusters(n_per=5)
    data = _write_csv(tmp_path / "data.csv", x)
    from pymc_pcrp.cli import publish as publishing

    def permission_denied(src, dst):
        raise PermissionError(errno.EACCES, "Permission denied", str(src))

    monkeypatch.setattr(publishing, "_rename_no_replace", permission_denied)
    assert run_cluster(_small_run(data, tmp_path / "res")) == 1
    err = capsys.readouterr().err
    assert "could not publish the results at" in err and "(Permission denied)" in err
    (kept,) = tmp_path.glob(".res.incomplete-*")
    assert f"they are complete in '{kept}'" in err
    assert (kept / "labels.csv").is_file() and (kept / "summary.md").is_file()
    assert not (tmp_path / "res").exists()
