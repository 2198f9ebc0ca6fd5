"""Fast checks of the pure helpers of benchmarks/real_data.py (no sampling, no R)."""

import importlib.util
import math
import os
import sys

from pathlib import Path

import numpy as np
import pytest

_PATH = Path(__file__).resolve().parent.parent / "benchmarks" / "real_data.py"
_SPEC = importlib.util.spec_from_file_location("real_data_panel", _PATH)
panel = importlib.util.module_from_spec(_SPEC)
sys.modules[_SPEC.name] = panel  # dataclasses look their module up there
_ENV = dict(os.environ)
_SPEC.loader.exec_module(panel)
# The script pins thread counts at import; do not let that leak into the other tests.
os.environ.clear()
os.environ.update(_ENV)


def test_standardise_gives_zero_mean_unit_sd_and_keeps_constant_columns_finite():
    x = np.column_stack([np.arange(10.0), np.full(10, 3.0), np.linspace(-5, 40, 10)])
    z = panel.standardise(x)
    np.testing.assert_allclose(z.mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(z.std(axis=0), [1.0, 0.0, 1.0], atol=1e-12)
    assert panel.standardise(np.arange(4.0)).shape == (4, 1)


def test_parse_powers_keeps_order_and_drops_duplicates():
    assert panel.parse_powers("1, 1.1,1.3,1.1,") == [1.0, 1.1, 1.3]
    with pytest.raises(ValueError):
        panel.parse_powers("1,0")
    with pytest.raises(ValueError):
        panel.parse_powers(" , ")


def test_bgm_k_counts_weights_of_at_least_one_point():
    assert panel.bgm_k([0.5, 0.3, 0.1, 0.1 - 1e-9, 1e-9], n=10) == 3
    assert panel.bgm_k([0.01] * 100, n=100) == 100


def test_chain_diagnostics_detect_disagreeing_chains_and_constant_draws():
    rng = np.random.default_rng(0)
    mixed = rng.normal(size=(4, 500))
    rhat, ess = panel.chain_diagnostics(mixed)
    assert rhat < 1.01
    assert ess > 1000
    stuck = mixed + np.array([0.0, 0.0, 0.0, 5.0])[:, None]
    rhat_stuck, _ = panel.chain_diagnostics(stuck)
    assert rhat_stuck > 1.5
    rhat_const, ess_const = panel.chain_diagnostics(np.full((4, 10), 3))
    assert rhat_const == 1.0 and ess_const == math.inf
    assert panel.meets_target(rhat_const, ess_const, 1.0, 450, 12.0)
    assert panel.diag(rhat_const, ess_const) == "const"
    each_stuck = np.repeat(np.array([[3.0], [3.0], [3.0], [4.0]]), 10, axis=1)
    rhat_each, ess_each = panel.chain_diagnostics(each_stuck)
    assert not panel.meets_target(rhat_each, ess_each, 1.0, 450, 12.0)


def test_meets_target_needs_every_criterion():
    assert panel.meets_target(1.005, 500, 1.0, 450, 12.0)
    assert not panel.meets_target(1.02, 500, 1.0, 450, 12.0)
    assert not panel.meets_target(1.005, 399, 1.0, 450, 12.0)
    assert not panel.meets_target(1.005, 500, 1.0, 450, 31.0)
    assert not panel.meets_target(float("nan"), 500, 1.0, 450, 12.0)


def test_top_sizes_and_fmt():
    labels = np.array([7] * 5 + [2] * 3 + [9] + [4] * 2)
    assert panel.top_sizes(labels) == "5,3,2,1"
    assert panel.top_sizes(labels, shown=2) == "5,3,+2"
    assert panel.fmt(float("nan")) == "-"
    assert panel.fmt(None) == "-"
    assert panel.fmt(1.23456, 3) == "1.235"
    assert panel.fmt(2.5e7, 3, cap=100) == ">100"
    assert panel.fmt(310.4, 1) == "310.4"
    assert panel.fmt(850.2, 0) == "850"
