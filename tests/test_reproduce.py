"""The ``reproduce`` command: its quick run writes every table and figure."""

import inspect
import io
import re
import sys

import numpy as np
import pytest

from pymc_pcrp import NIWPrior, PCRPGibbs
from pymc_pcrp import fitting as _fitting
from pymc_pcrp.cli import reproduce
from pymc_pcrp.cli.reproduce import moves as _moves
from pymc_pcrp.cli.reproduce import protocol as _protocol
from pymc_pcrp.cli.reproduce import run as _run
from pymc_pcrp.prior import crp_oracle_alpha

K_TRUE = {"Sim 1": 3, "Sim 2": 2, "Digits 1-4": 4, "Old Faithful": 2}


def _spy(calls, where, function):
    """Wrap ``function`` so that each call's data and keyword arguments land in ``calls``."""

    def spy(*args, **kwargs):
        calls.append((where, args, kwargs))
        return function(*args, **kwargs)

    return spy


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    """One quick run (a minute or two) shared by the tests below.

    The run's calls of ``fit`` (main fits and, through ``cross_validate_power``,
    the cross-validation fits) and of ``cross_validate_power`` are recorded in
    ``result.spied`` (the quick protocol cross-validates in this process).
    """
    out = tmp_path_factory.mktemp("repro")
    stream = io.StringIO()
    calls = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_run, "fit", _spy(calls, "main", _run.fit))
        patch.setattr(_fitting, "fit", _spy(calls, "cv", _fitting.fit))
        cv = _spy(calls, "cross_validate_power", _run.cross_validate_power)
        patch.setattr(_run, "cross_validate_power", cv)
        result = reproduce.run_reproduction(out, quick=True, stream=stream)
    result.spied = calls
    return result, stream.getvalue(), out


def test_paper_values_are_complete_and_consistent():
    # Table 1: 2 simulations x 2 sizes x 3 methods; Table 2: 2 sizes x 3 methods.
    assert len(reproduce.PAPER_TABLE_1) == 12
    assert len(reproduce.PAPER_TABLE_2) == 6
    for (name, n, method), row in {**reproduce.PAPER_TABLE_1, **reproduce.PAPER_TABLE_2}.items():
        assert method in reproduce.METHODS
        assert n in reproduce.PAPER_SETTINGS[name]["n"]
        assert 0 < row.nmi < 1 and row.vi > 0 and row.k >= 1 and row.k_max >= row.k
    # The oracle concentrations the paper quotes follow K_true / log N within 0.01,
    # except Sim 2, whose quoted values are those of K = 3 (the paper's own inconsistency).
    for name in ("Sim 1", "Digits 1-4", "Old Faithful"):
        settings = reproduce.PAPER_SETTINGS[name]
        for n, alpha in zip(settings["n"], settings["oracle_alpha"], strict=True):
            assert abs(crp_oracle_alpha(settings["k_true"], n) - alpha) <= 0.011


def test_quick_run_prints_progress(quick):
    _, printed, _ = quick
    # One line per run with data set, N, method, r and elapsed seconds.
    assert re.search(r"\[ 1/28\] Sim 1, N = 100, CRP-Oracle: alpha = 0\.651, r = 1, seed", printed)
    assert re.search(r"\[27/28\] Old Faithful, N = 172, pCRP: \d+\.\d s; K ", printed)
    assert re.search(
        r"\[28/28\] Old Faithful, N = 172, pCRP \(default moves\): \d+\.\d s; K ", printed
    )
    assert "Default moves of PCRPGibbs (extra pCRP fit): " in printed
    assert printed.count("chosen r =") == 4
    assert "Total wall time" in printed


def test_quick_run_writes_every_table_and_figure(quick):
    result, _, out = quick
    tables = (out / "tables.md").read_text()
    for title in reproduce.TABLE_TITLES:
        assert f"## {title}" in tables
    assert "scikit-learn 8x8 digits (offline stand-in, not MNIST)" in tables
    assert "`python -m pymc_pcrp reproduce --out" in tables and "--quick`" in tables
    # The paper's values appear beside ours.
    assert "0.827 (7.0e-04)" in tables  # pCRP, Sim 1, N = 300
    assert "1.389 (1.1e-03)" in tables  # pCRP, digits, N = 3000
    # The protocol's sampler and prior are named, and the default-moves rows sit beside it.
    assert "`NIWPrior.from_data(X, scale=0.1)`, fixed" in tables
    assert "Algorithm 1 (init='random', restarts=1, split_merge=0)" in tables
    label = f"pCRP (default moves): {result.default_moves}"
    assert result.default_moves == _moves.describe_options(_moves.default_step_options())
    # Tables 1 and 2: one row per size of each data set; Old Faithful: one row.
    assert tables.count(f"| {label} |") == 7
    section = tables.split("## The default sampler beside Algorithm 1")[1].split("\n## ")[0]
    assert section.count("| Algorithm 1 (") == 7
    assert section.count(f"| default ({result.default_moves}) |") == 7

    linked = re.findall(r"\]\((fig[^)]+\.png)\)", tables)
    assert sorted(linked) == sorted(path.name for path in result.figures)
    expected = {
        "fig2_cv_sim1.png",
        "fig2_cv_sim2.png",
        "fig2_cv_digits.png",
        "fig2_cv_old_faithful.png",
        "fig3_k_trace_sim1_n200.png",
        "fig4_density_sim1_n200.png",
        "fig5_k_posterior_sim1.png",
        "fig5_k_posterior_old_faithful.png",
        "fig6_clusters_digits_n300.png",
        "fig6_clusters_old_faithful_n172.png",
        "fig7_cluster_sizes_digits_n300.png",
        "fig7_cluster_sizes_old_faithful_n172.png",
    }
    assert expected <= set(linked)
    for name in linked:
        path = out / name
        assert path.is_file() and path.stat().st_size > 1000
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_quick_run_methods_and_settings(quick):
    result, _, _ = quick
    assert len(result.runs) == 28
    assert set(result.cv) == set(K_TRUE)
    for cv in result.cv.values():
        assert cv.result.chosen_power in reproduce.QUICK_PROTOCOL.powers
    for run in result.runs:
        if run.method == "CRP-Oracle":
            assert run.alpha == pytest.approx(crp_oracle_alpha(K_TRUE[run.dataset], run.n))
        else:
            assert run.alpha == 1.0
        pcrp = run.method in ("pCRP", "pCRP (default moves)")
        expected_power = result.cv[run.dataset].result.chosen_power if pcrp else 1
        assert run.power == expected_power
        assert run.k_draws.shape == (2, reproduce.QUICK_PROTOCOL.draws)
        assert run.summary.k_mean == pytest.approx(np.mean(run.k_draws))
        assert run.summary.k_max == run.k_draws.max()
        assert sum(run.point_sizes) == run.n
        assert 0 <= run.summary.nmi_mean <= 1
    faithful = [run for run in result.runs if run.dataset == "Old Faithful"]
    assert {run.n for run in faithful} == {172}
    # The default-moves fit repeats the pCRP fit of each size with the same seed.
    extra = [run for run in result.runs if run.method == "pCRP (default moves)"]
    assert len(extra) == 7
    for run in extra:
        assert run.seed == result.run(run.dataset, run.n, "pCRP").seed


def _same_prior(prior, expected):
    assert isinstance(prior, NIWPrior)
    np.testing.assert_array_equal(prior.mu0, expected.mu0)
    np.testing.assert_array_equal(prior.psi0, expected.psi0)
    assert (prior.kappa0, prior.nu0) == (expected.kappa0, expected.nu0)


def test_quick_run_pins_algorithm_1_and_the_fixed_prior(quick):
    result, _, _ = quick
    calls = result.spied
    main = [kwargs | {"X": args[0]} for where, args, kwargs in calls if where == "main"]
    cv_fits = [kwargs | {"X": args[0]} for where, args, kwargs in calls if where == "cv"]
    cv_calls = [(args, kwargs) for where, args, kwargs in calls if where == "cross_validate_power"]
    assert len(main) == 28 and len(cv_calls) == 4
    assert len(cv_fits) == 4 * len(reproduce.QUICK_PROTOCOL.powers)
    # Every fit, the cross-validation fits included, gets the fixed prior explicitly.
    for kwargs in main + cv_fits:
        _same_prior(kwargs["prior"], NIWPrior.from_data(kwargs["X"], scale=0.1))
    for args, kwargs in cv_calls:
        _same_prior(kwargs["prior"], NIWPrior.from_data(args[0], scale=0.1))
        assert kwargs["fit_kwargs"]["pcrp_gibbs"]["split_merge"] == 0
    # Algorithm 1 everywhere but in the default-moves fits, which pass no step options.
    pinned = [kwargs for kwargs in main if "pcrp_gibbs" in kwargs]
    unpinned = [kwargs for kwargs in main if "pcrp_gibbs" not in kwargs]
    assert len(pinned) == 21 and len(unpinned) == 7
    for kwargs in pinned + cv_fits:
        assert kwargs["pcrp_gibbs"] == {"split_merge": 0, "init": "random", "restarts": 1}
    chosen = {cv.result.chosen_power for cv in result.cv.values()}
    assert all(kwargs["alpha"] == 1.0 and kwargs["power"] in chosen for kwargs in unpinned)


def test_default_step_options_follow_the_step_signature(monkeypatch):
    defaults = inspect.signature(PCRPGibbs.__init__).parameters
    options = _moves.default_step_options()
    assert options["split_merge"] == defaults["split_merge"].default
    assert options["split_merge_scans"] == defaults["split_merge_scans"].default
    assert not {"model", "rng", "sweeps_per_draw", "compile_kwargs", "blocked"} & set(options)
    # A change of the step's defaults shows in the label at run time.
    monkeypatch.setitem(PCRPGibbs.__init__.__kwdefaults__, "split_merge", 7)
    assert "split_merge=7" in _moves.describe_options(_moves.default_step_options())


def test_select_protocol_replaces_only_n_jobs():
    assert _protocol.select_protocol(False) is reproduce.FULL_PROTOCOL
    assert _protocol.select_protocol(True) is reproduce.QUICK_PROTOCOL
    chosen = _protocol.select_protocol(True, 3)
    assert chosen.n_jobs == 3 and reproduce.QUICK_PROTOCOL.n_jobs == 1
    assert chosen == reproduce.Protocol(**{**reproduce.QUICK_PROTOCOL.__dict__, "n_jobs": 3})


@pytest.fixture
def fresh_cli():
    """Forget ``pymc_pcrp.cli`` after the test if it was not imported before.

    ``run_demo`` binds ``sys.stdout`` as a default argument when the module is
    imported, so an import here would send the demo's output in test_readme.py
    past its ``capsys``.
    """
    imported = "pymc_pcrp.cli" in sys.modules
    yield
    if not imported:
        sys.modules.pop("pymc_pcrp.cli", None)


def test_cli_passes_its_arguments(monkeypatch, tmp_path, fresh_cli):
    from pymc_pcrp.cli import main

    seen = {}

    def fake(out, **kwargs):
        seen.update(out=out, **kwargs)

    monkeypatch.setattr(reproduce, "run_reproduction", fake)
    argv = ["reproduce", "--out", str(tmp_path), "--mnist", "/data/mnist", "--seed", "3"]
    assert main(argv) == 0
    assert seen["out"] == str(tmp_path)
    assert seen["mnist"] == "/data/mnist" and seen["seed"] == 3 and seen["quick"] is False
    assert seen["command"] == "python -m pymc_pcrp " + " ".join(argv)


def test_missing_mnist_folder_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="not a folder"):
        reproduce.run_reproduction(
            tmp_path, quick=True, mnist=tmp_path / "absent", stream=io.StringIO()
        )
