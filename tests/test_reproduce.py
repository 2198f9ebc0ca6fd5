"""The ``reproduce`` command: its quick run writes every table and figure."""

import io
import re
import sys

import numpy as np
import pytest

from pymc_pcrp.cli import reproduce
from pymc_pcrp.prior import crp_oracle_alpha

K_TRUE = {"Sim 1": 3, "Sim 2": 2, "Digits 1-4": 4, "Old Faithful": 2}


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    """One quick run (about 40 s) shared by the tests below."""
    out = tmp_path_factory.mktemp("repro")
    stream = io.StringIO()
    result = reproduce.run_reproduction(out, quick=True, stream=stream)
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
    assert re.search(r"\[ 1/21\] Sim 1, N = 100, CRP-Oracle: alpha = 0\.651, r = 1, seed", printed)
    assert re.search(r"\[21/21\] Old Faithful, N = 172, pCRP: \d+\.\d s; K ", printed)
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
    assert len(result.runs) == 21
    assert set(result.cv) == set(K_TRUE)
    for cv in result.cv.values():
        assert cv.result.chosen_power in reproduce.QUICK_PROTOCOL.powers
    for run in result.runs:
        if run.method == "CRP-Oracle":
            assert run.alpha == pytest.approx(crp_oracle_alpha(K_TRUE[run.dataset], run.n))
        else:
            assert run.alpha == 1.0
        expected_power = result.cv[run.dataset].result.chosen_power if run.method == "pCRP" else 1
        assert run.power == expected_power
        assert run.k_draws.shape == (2, reproduce.QUICK_PROTOCOL.draws)
        assert run.summary.k_mean == pytest.approx(np.mean(run.k_draws))
        assert run.summary.k_max == run.k_draws.max()
        assert sum(run.point_sizes) == run.n
        assert 0 <= run.summary.nmi_mean <= 1
    faithful = [run for run in result.runs if run.dataset == "Old Faithful"]
    assert {run.n for run in faithful} == {172}


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
