"""Progress a person can see: compile progress, the fits of power="auto" and of the CV."""

import io

import numba
import numpy as np
import pytest

from numba.core import event

import pymc_pcrp as pcrp

from pymc_pcrp._runtime import compile_notice as notice

SEED = sum(ord(c) for c in "test_progress")


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def _package_kernel():
    """A fresh numba function that numba reports as a pymc_pcrp kernel."""

    def tiny(a):
        return a + 1

    tiny.__module__ = "pymc_pcrp._kernels.fake"
    return numba.njit(tiny)


@pytest.mark.parametrize(
    ("value", "terminal", "expected"),
    [("", True, True), ("", False, False), ("1", False, True), ("0", True, False)],
)
def test_progress_is_shown_on_a_terminal_unless_the_environment_says_otherwise(
    monkeypatch, value, terminal, expected
):
    monkeypatch.setenv("PYMC_PCRP_PROGRESS", value)
    stream = _Terminal() if terminal else io.StringIO()
    assert notice.progress_wanted(stream) is expected


def test_compile_progress_names_each_package_kernel_and_counts_them(monkeypatch):
    monkeypatch.setenv("PYMC_PCRP_PROGRESS", "1")
    stream = io.StringIO()
    progress = notice.CompileProgress(stream)
    kernel = _package_kernel()
    outside = numba.njit(lambda a: a * 2)  # not the package's: not counted
    with event.install_listener("numba:compile", progress.listener()):
        assert kernel(1) == 2 and outside(2) == 4
        _package_kernel()(2)  # within 15 s of the first line: no new line
    lines = stream.getvalue().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(
        f"pymc_pcrp: compiling numba kernels: 0 of about {notice.COMPILE_KERNELS} done"
    )
    assert (
        f"of about {notice.COMPILE_SECONDS} s; now fake._package_kernel.<locals>.tiny" in (lines[0])
    )
    assert progress.done == 2


def test_compile_progress_on_a_terminal_until_the_expected_count(monkeypatch):
    monkeypatch.delenv("PYMC_PCRP_PROGRESS", raising=False)
    stream = _Terminal()
    progress = notice.CompileProgress(stream, expected=2, interval=0.0)
    with event.install_listener("numba:compile", progress.listener()):
        for value in range(3):
            _package_kernel()(value)
    lines = stream.getvalue().splitlines()
    assert "\r" not in stream.getvalue()
    assert lines[0].startswith("pymc_pcrp: compiling numba kernels: 0 of about 2 done")
    assert lines[1].startswith("pymc_pcrp: compiling numba kernels: 1 of about 2 done")
    assert lines[2].startswith("pymc_pcrp: compiled 2 numba kernels in")
    assert len(lines) == 3  # nothing after the expected count
    # not a terminal and not asked: silent
    quiet = io.StringIO()
    progress = notice.CompileProgress(quiet, interval=0.0)
    with event.install_listener("numba:compile", progress.listener()):
        _package_kernel()(3)
    assert quiet.getvalue() == "" and progress.done == 1


def _two_blobs(n=40):
    rng = np.random.default_rng(SEED)
    return np.r_[rng.normal(0, 1, (n, 2)), rng.normal(0, 1, (n, 2)) + np.array([8.0, 0.0])]


def test_choose_power_and_cross_validation_report_each_fit(monkeypatch, capsys):
    monkeypatch.setenv("PYMC_PCRP_PROGRESS", "1")
    x = _two_blobs()
    pcrp.model_selection.choose_power(
        x, powers=(1.0, 1.3), rule="agree", draws=20, tune=20, chains=1, random_seed=1
    )
    err = capsys.readouterr().err
    assert "pymc_pcrp: choosing r, fit 1 of 2 (r = 1) ..." in err
    assert "pymc_pcrp: choosing r, fit 2 of 2 (r = 1.3) ..." in err
    pcrp.model_selection.cross_validate_power(
        x[::2], x[1::2], [1.0, 1.3], draws=20, tune=20, random_seed=1
    )
    err = capsys.readouterr().err
    assert "pymc_pcrp: cross-validation, r = 1 fitted (1 of 2," in err
    assert "pymc_pcrp: cross-validation, r = 1.3 fitted (2 of 2," in err
    monkeypatch.setenv("PYMC_PCRP_PROGRESS", "0")
    pcrp.model_selection.choose_power(
        x, powers=(1.0, 1.3), rule="agree", draws=20, tune=20, chains=1, random_seed=1
    )
    assert "choosing r" not in capsys.readouterr().err
