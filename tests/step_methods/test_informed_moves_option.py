"""PCRPGibbs(informed_moves=...): the automatic rule, the refusals, and the move at work.

The move's exactness is tests/statistical/test_informed_moves.py (the kernel alone
against enumeration) and tests/statistical/test_table_enumeration.py (the default
move set, which includes it, through ``pm.sample``).
"""

import numpy as np
import pandas as pd
import pymc as pm
import pytest

import pymc_pcrp as pcrp

from pymc_pcrp.sampler import options as pcrp_options


def _table_step(n=60, **options):
    rng = np.random.default_rng(4)
    table = pd.DataFrame(rng.random((n, 5)) < 0.5).astype("boolean")
    with pm.Model():
        z = pcrp.PowerCRP("z", alpha=1.0, power=1.1, n=n)
        pcrp.TableMixture("x", z=z, observed=table)
        return pcrp.PCRPGibbs([z], rng=3, **options)


def _gaussian_step(**options):
    x = np.random.default_rng(0).normal(size=(40, 2))
    with pcrp.build_model(x, power=1.1) as model:
        return pcrp.PCRPGibbs([model["z"]], rng=3, **options)


def test_tables_get_informed_moves_by_default_and_none_with_split_merge_off():
    assert _table_step().plan.informed_moves == pcrp_options.INFORMED_MOVES
    assert _table_step().plan.informed_moves_auto
    assert _table_step(split_merge=0).informed_moves == 0.0
    explicit = _table_step(informed_moves=2.5)
    assert explicit.informed_moves == 2.5 and not explicit.plan.informed_moves_auto
    assert pcrp_options.auto_informed_moves(1.0, supported=False) == 0.0


def test_informed_rate_is_half_a_sweeps_work_and_kept_from_the_first_draw_after_tuning():
    assert pcrp_options.informed_rate(np.array([5, 0, 3, 1])) == pytest.approx(1.5)
    assert pcrp_options.informed_rate(np.full(30, 2)) == pcrp_options.INFORMED_MOVES
    assert pcrp_options.informed_rate(np.zeros(3, dtype=np.int64)) == 0.0
    step = _table_step(n=60, sweeps_per_draw=1, init="point", restarts=1)
    six = {"z": np.arange(60) % 6}
    one = {"z": np.zeros(60, dtype=np.int64)}
    step.step(six)  # tuning: the rate of the partition the draw starts from
    assert step.informed_moves == pytest.approx(6.0)
    step.step(one)
    assert step.informed_moves == pytest.approx(1 / 6)
    step.stop_tuning()
    step.step(six)  # the first kept draw sets the rate for good
    assert step.informed_moves == pytest.approx(6.0)
    step.step(one)
    assert step.informed_moves == pytest.approx(6.0)


def test_gaussian_families_have_none_and_refuse_a_rate():
    assert _gaussian_step().informed_moves == 0.0
    assert _gaussian_step(informed_moves=0).informed_moves == 0.0
    with pytest.raises(ValueError, match="'informed_moves' > 0 is not available with"):
        _gaussian_step(informed_moves=3)


@pytest.mark.parametrize("value", [-1, float("nan"), "many", True])
def test_bad_rates_are_refused_by_name(value):
    with pytest.raises(ValueError, match="Argument 'informed_moves'"):
        _table_step(informed_moves=value)


def test_informed_moves_alone_merge_what_was_split():
    """With the sweeps unable to empty a cluster of 30 rows, only the move can merge it."""
    step = _table_step(
        n=60, split_merge=0, informed_moves=5, sweeps_per_draw=1, init="point", restarts=1
    )
    assert step.split_merge == 0.0 and step.speck_moves == 0.0
    point = {"z": (np.arange(60) >= 30).astype(np.int64)}  # two halves of one random table
    proposed, merged = 0, 0
    for _ in range(40):
        point, stats = step.step(point)
        proposed += stats[0]["split_proposed"] + stats[0]["merge_proposed"]
        merged += stats[0]["merge_accepted"]
    assert proposed > 100
    assert merged >= 1
