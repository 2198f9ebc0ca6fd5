"""Scouting: every chain of a model runs the same tournaments, seeded by the data.

The scouting tournaments (:mod:`pymc_pcrp.sampler.scouting`) run at a chain's first
tuning draw, inside ``pm.sample`` as inside ``fit``; their starts join the
partitions the chain's template jumps choose from. They must be the same for every
chain whatever its seed (that is how the chains share them), leave the chain's own
generator alone, and not run where they cannot help.
"""

import numpy as np
import pymc as pm
import pytest

import pymc_pcrp as pcrp

from pymc_pcrp.sampler import scouting


def _data(n=40, seed=0, shift=4.0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 2))
    x[: n // 2, 0] += shift
    return x


def _first_draw(model, seed, clear=True, **options):
    """The step after its first tuning draw from the model's initial point."""
    if clear:
        scouting._CACHE.clear()
    with model:
        step = pcrp.PCRPGibbs(**options)
    step.set_rng(np.random.default_rng(seed))
    step.tune = True
    point, _ = step.step(model.initial_point())
    return step, point


def test_every_chain_scouts_the_same_templates_seeded_by_the_data():
    model = pcrp.build_model(_data(), power=1.1)
    one, _ = _first_draw(model, seed=1)
    two, _ = _first_draw(model, seed=2)
    assert len(one.chain.jumps.given) > 1
    assert all(t.shape == (40,) for t in one.chain.jumps.given)
    assert len(one.chain.jumps.given) == len(two.chain.jumps.given)
    for a, b in zip(one.chain.jumps.given, two.chain.jumps.given, strict=True):
        np.testing.assert_array_equal(a, b)
    # the seed is the data's (and the plan's): other data, another seed
    other_model = pcrp.build_model(_data(seed=5), power=1.1)
    other, _ = _first_draw(other_model, seed=1)
    seeds = [
        scouting.scouting_seed(step.inputs.arrays(m.initial_point()), step.plan, "full")
        for step, m in ((one, model), (two, model), (other, other_model))
    ]
    assert seeds[0] == seeds[1] != seeds[2]


def test_scouting_leaves_the_chains_generator_alone():
    model = pcrp.build_model(_data(), power=1.1)
    scouted, point = _first_draw(model, seed=3)  # scouts, from the data's seed
    cached, again = _first_draw(model, seed=3, clear=False)  # takes the cached starts
    np.testing.assert_array_equal(point["z"], again["z"])
    assert scouted.chain.rng.random() == cached.chain.rng.random()


@pytest.mark.parametrize(
    "options",
    [
        {"template_jumps": 0},  # no template jumps: nothing to scout for
        {"restarts": 1},  # no tournament
        {"templates": [np.repeat([0, 1], 20), np.zeros(40, dtype=int)]},  # given templates
    ],
)
def test_no_scouting_where_it_cannot_help(options):
    model = pcrp.build_model(_data(), power=1.1)
    step, _ = _first_draw(model, seed=1, **options)
    assert len(step.chain.jumps.given) == len(options.get("templates", []))


def test_pm_sample_on_a_hand_written_model_scouts_as_fit_does():
    x = _data()
    scouting._CACHE.clear()
    with pm.Model():
        z = pcrp.PowerCRP("z", alpha=1.0, power=1.1, n=len(x))
        pcrp.NIWMixture("x", z=z, prior=pcrp.NIWPrior.from_data(x), observed=x)
        pm.sample(
            draws=5, tune=5, chains=1, random_seed=1, progressbar=False,
            compute_convergence_checks=False,
        )  # fmt: skip
    assert len(scouting._CACHE) == 1
    (found,) = scouting._CACHE.values()
    assert len(found) > 1
