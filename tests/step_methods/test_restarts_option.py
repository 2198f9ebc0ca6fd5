"""PCRPGibbs(restarts=...): random restarts during tuning, the chain going on from the best."""

import numpy as np
import pymc as pm
import pytest

import pymc_pcrp as pcrp

from pymc_pcrp.step_methods import pcrp_gibbs
from pymc_pcrp.step_methods._restarts import RestartTournament, auto_restarts, segment_draws


def _labels(value, n=4):
    return np.full(n, value, dtype=np.int64)


def _run(tournament, log_joints):
    """Record one draw per log joint (labels = the draw's index); return what record returned."""
    returned = []
    for i, lj in enumerate(log_joints):
        returned.append(tournament.record(_labels(i), lj))
    return returned


def test_each_start_is_scored_by_the_last_third_of_its_draws():
    t = RestartTournament(restarts=3, segment=3)
    # start 0 ends well (last draw -1), start 1 starts well but ends badly, start 2 is poor
    lj = [-50.0, -40.0, -1.0, 0.0, 0.0, -30.0, -20.0, -20.0, -20.0]
    starts = []
    for i, value in enumerate(lj):
        starts.append(t.starts_new())
        out = t.record(_labels(i), value)
        if i < len(lj) - 1:
            assert out is None
    assert starts == [False, False, False, True, False, False, True, False, False]
    assert t.scores == [-1.0, -30.0, -20.0]
    np.testing.assert_array_equal(out, _labels(2))  # the last draw of start 0
    assert t.done and not t.starts_new()
    assert t.record(_labels(99), 100.0) is None  # nothing after the tournament
    assert t.stop() is None


def test_the_best_labels_are_a_copy():
    t = RestartTournament(restarts=2, segment=1)
    labels = _labels(7)
    t.record(labels, 5.0)
    labels[:] = 0  # the caller reuses its array
    out = t.record(_labels(1), 1.0)
    np.testing.assert_array_equal(out, _labels(7))


def test_tuning_that_ends_early_keeps_the_best_start_so_far():
    # the running start has made half its draws: it is scored too
    t = RestartTournament(restarts=4, segment=4)
    _run(t, [-9.0, -9.0, -9.0, -9.0, -2.0, -1.0])
    np.testing.assert_array_equal(t.stop(), _labels(5))
    # fewer than half: it is not scored, the best complete start wins
    t = RestartTournament(restarts=4, segment=4)
    _run(t, [-9.0, -9.0, -9.0, -9.0, 5.0])
    np.testing.assert_array_equal(t.stop(), _labels(3))
    assert t.done and t.stop() is None
    # the first start cut short is the only one: it is kept
    t = RestartTournament(restarts=4, segment=4)
    _run(t, [-3.0])
    np.testing.assert_array_equal(t.stop(), _labels(0))
    # no draw at all (tune=0): nothing to change
    assert RestartTournament(restarts=4, segment=4).stop() is None


def test_one_start_is_no_tournament():
    t = RestartTournament(restarts=1, segment=2)
    assert all(out is None for out in _run(t, [0.0] * 6))
    assert not t.starts_new() and t.stop() is None


def test_reset_forgets_the_last_chain():
    t = RestartTournament(restarts=2, segment=1)
    _run(t, [0.0, 1.0])
    assert t.done
    t.reset()
    assert not t.done and t.scores == [] and t.draw == 0


def test_automatic_number_of_starts():
    assert segment_draws(3) == 20 and segment_draws(30) == 2 and segment_draws(100) == 1
    assert auto_restarts(3, "random") == 16  # breast cancer: 16 starts of 20 draws
    assert auto_restarts(1, "prior") == 6  # 6 starts of 60 draws: at most 400 tuning draws
    for init in ("one", "singletons", "point"):
        assert auto_restarts(3, init) == 1


@pytest.mark.parametrize("value", [0, -2, 1.5, True, "4"])
def test_invalid_restarts_are_refused(value):
    with pcrp.build_model(np.arange(6.0)[:, None], power=1.1):
        with pytest.raises(ValueError, match="'restarts' must be a positive integer"):
            pcrp.PCRPGibbs(restarts=value)


def test_restarts_need_a_random_start():
    with pcrp.build_model(np.arange(6.0)[:, None], power=1.1):
        with pytest.raises(ValueError, match="restarts=1"):
            pcrp.PCRPGibbs(restarts=3, init="one")
        assert pcrp.PCRPGibbs(init="point").restarts == 1


def test_the_step_restarts_during_tuning_and_goes_on_from_the_best(monkeypatch):
    rng = np.random.default_rng(3)
    x = np.r_[rng.normal(-4, 1, (20, 2)), rng.normal(4, 1, (20, 2))]
    fresh_draws, seen, chosen = [], [], []
    original_sweep_state = pcrp_gibbs.PCRPGibbs._sweep_state
    original_record = RestartTournament.record

    def sweep_state(self, point, inputs, params):
        fresh_draws.append(self.fresh_chain)
        seen.append(np.array(point[self._name]))
        return original_sweep_state(self, point, inputs, params)

    def record(self, labels, log_joint):
        out = original_record(self, labels, log_joint)
        chosen.append(None if out is None else out.copy())
        return out

    monkeypatch.setattr(pcrp_gibbs.PCRPGibbs, "_sweep_state", sweep_state)
    monkeypatch.setattr(RestartTournament, "record", record)
    # 3 starts of segment_draws(30) = 2 draws: the tournament ends after 6 of 10 tuning draws
    with pcrp.build_model(x, power=1.1):
        idata = pm.sample(
            draws=5,
            tune=10,
            chains=1,
            random_seed=4,
            progressbar=False,
            compute_convergence_checks=False,
            discard_tuned_samples=False,
            pcrp_gibbs={"restarts": 3, "sweeps_per_draw": 30},
        )
    assert fresh_draws == [True, False, True, False, True, False] + [False] * 9
    assert len(chosen) == 10 and all(c is None for c in chosen[:5] + chosen[6:])
    best = chosen[5]
    # the draw after the tournament starts from the chosen labels, which are the last
    # labels of the best start (draw 1, 3 or 5)
    np.testing.assert_array_equal(seen[6], best)
    warm = idata.warmup_posterior["z"].values[0]
    lj = idata.warmup_sample_stats["log_joint"].values[0]
    last = int(np.argmax([lj[1], lj[3], lj[5]]))  # segment of two draws: the last one scores
    np.testing.assert_array_equal(best, warm[2 * last + 1])


def test_restarts_leave_a_chain_reproducible():
    x = np.random.default_rng(5).normal(size=(30, 2))

    def draws():
        with pcrp.build_model(x, power=1.1):
            idata = pm.sample(
                draws=5,
                tune=20,
                chains=2,
                cores=1,
                random_seed=11,
                progressbar=False,
                compute_convergence_checks=False,
                pcrp_gibbs={"restarts": 4, "sweeps_per_draw": 20},
            )
        return idata.posterior["z"].values

    np.testing.assert_array_equal(draws(), draws())
