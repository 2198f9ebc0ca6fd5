"""PCRPGibbs(restarts=...): random restarts during tuning, the chain going on from the best."""

import numpy as np
import pymc as pm
import pytest

import pymc_pcrp as pcrp

from pymc_pcrp.sampler.chain import Chain
from pymc_pcrp.sampler.restarts import (
    FRESH,
    RestartTournament,
    auto_restarts,
    finalists,
    segment_draws,
    tournament_draws,
)


def _labels(value, n=4):
    return np.full(n, value, dtype=np.int64)


def _play(tournament, log_joints):
    """Play draws (labels = the draw's index); return what before_draw said before each."""
    said = []
    for i, lj in enumerate(log_joints):
        start = tournament.before_draw()
        said.append(start if start is None or start is FRESH else int(start[0]))
        tournament.record(_labels(i), lj)
    return said


def test_first_round_scores_each_start_by_the_last_third_of_its_draws():
    t = RestartTournament(restarts=3, segment=3)  # 3 starts, no final (3 // 4 = 0)
    # start 0 ends well (last draw -1), start 1 starts well but ends badly, start 2 is poor
    said = _play(t, [-50.0, -40.0, -1.0, 0.0, 0.0, -30.0, -20.0, -20.0, -20.0])
    assert said == [None, None, None, FRESH, None, None, FRESH, None, None]
    assert t.scores == [-1.0, -30.0, -20.0] and t.done
    np.testing.assert_array_equal(t.before_draw(), _labels(2))  # start 0's last draw
    assert t.before_draw() is None  # once only
    t.record(_labels(99), 100.0)  # nothing after the tournament
    t.stop()
    assert t.before_draw() is None


def test_the_best_quarter_of_the_starts_plays_a_final_of_double_length():
    t = RestartTournament(restarts=4, segment=1)  # 4 starts of 1 draw, 1 finalist of 2
    assert finalists(4) == 1 and finalists(16) == 4 and finalists(40) == 4
    said = _play(t, [-5.0, -1.0, -3.0, -2.0, -9.0, -0.5])
    # starts 1..3 are new random starts; the final resumes start 1 (the best, labels 1)
    assert said == [None, FRESH, FRESH, FRESH, 1, None]
    assert t.done
    # the finalist's new score (-0.5, its last draw) beats the others: its latest labels win
    np.testing.assert_array_equal(t.before_draw(), _labels(5))


def test_a_finalist_that_gets_worse_can_lose():
    t = RestartTournament(restarts=8, segment=1)  # 2 finalists, of 2 draws each
    said = _play(t, [-5.0, -1.0, -2.0, -9.0, -9.0, -9.0, -9.0, -9.0, 0.0, -7.0, -3.0, -1.5])
    assert said[8] == 1 and said[10] == 2  # finalists: start 1, then start 2
    assert t.scores[1] == -7.0 and t.scores[2] == -1.5
    np.testing.assert_array_equal(t.before_draw(), _labels(11))


def test_the_labels_kept_are_copies():
    t = RestartTournament(restarts=2, segment=1)
    labels = _labels(7)
    t.record(labels, 5.0)
    labels[:] = 0  # the caller reuses its array
    t.before_draw()
    t.record(_labels(1), 1.0)
    np.testing.assert_array_equal(t.before_draw(), _labels(7))


def test_tuning_that_ends_early_keeps_the_best_start_so_far():
    # the running start has made half its draws: it is scored too
    t = RestartTournament(restarts=4, segment=4)
    _play(t, [-9.0, -9.0, -9.0, -9.0, -2.0, -1.0])
    t.stop()
    np.testing.assert_array_equal(t.before_draw(), _labels(5))
    # fewer than half: it is not scored, the best complete start wins
    t = RestartTournament(restarts=4, segment=4)
    _play(t, [-9.0, -9.0, -9.0, -9.0, 5.0])
    t.stop()
    np.testing.assert_array_equal(t.before_draw(), _labels(3))
    assert t.done
    # the first start cut short is the only one: it is kept
    t = RestartTournament(restarts=4, segment=4)
    _play(t, [-3.0])
    t.stop()
    np.testing.assert_array_equal(t.before_draw(), _labels(0))
    # no draw at all (tune=0): nothing to change
    t = RestartTournament(restarts=4, segment=4)
    t.stop()
    assert t.done and t.before_draw() is None


def test_one_start_is_no_tournament():
    t = RestartTournament(restarts=1, segment=2)
    assert _play(t, [0.0] * 6) == [None] * 6
    t.stop()
    assert t.before_draw() is None


def test_reset_forgets_the_last_chain():
    t = RestartTournament(restarts=2, segment=1)
    _play(t, [0.0, 1.0])
    assert t.done
    t.reset()
    assert not t.done and t.scores == [] and t.before_draw() is None


def test_automatic_number_of_starts():
    assert segment_draws(3) == 10 and segment_draws(15) == 2 and segment_draws(100) == 1
    # breast cancer (3 sweeps per draw): 16 starts of 10 draws and 4 finalists of 20
    assert auto_restarts(3, "random") == 16 and tournament_draws(16, 10) == 240
    # one sweep per draw: 30-draw segments, 9 starts and 2 finalists, 390 draws
    assert auto_restarts(1, "prior") == 9 and tournament_draws(9, 30) == 390
    for spd in range(1, 31):
        restarts = auto_restarts(spd, "random")
        assert tournament_draws(restarts, segment_draws(spd)) <= 400
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
    x = np.random.default_rng(3).uniform(size=(40, 2))  # a diffuse posterior: starts differ
    fresh_draws, seen = [], []
    original_start_state = Chain.start_state

    def start_state(self, current, inputs, params):
        fresh_draws.append(self.fresh)
        seen.append(np.array(current))
        return original_start_state(self, current, inputs, params)

    monkeypatch.setattr(Chain, "start_state", start_state)
    # 4 starts of segment_draws(15) = 2 draws (draws 0-7), then 1 finalist of 4 draws (8-11)
    with pcrp.build_model(x, power=1.0):
        idata = pm.sample(
            draws=3,
            tune=14,
            chains=1,
            random_seed=4,
            progressbar=False,
            compute_convergence_checks=False,
            discard_tuned_samples=False,
            # no template jumps, so no scouting tournaments, whose chains the spy would see
            pcrp_gibbs={"restarts": 4, "sweeps_per_draw": 15, "template_jumps": 0},
        )
    assert fresh_draws == [True, False] * 4 + [False] * 9
    warm = idata.warmup_posterior["z"].values[0]
    lj = idata.warmup_sample_stats["log_joint"].values[0]
    # a segment of 2 draws is scored by its last draw: the final resumes the best start
    scores = [lj[1], lj[3], lj[5], lj[7]]
    best = int(np.argmax(scores))
    assert len({tuple(warm[i]) for i in (1, 3, 5, 7)}) > 1  # so the next check can fail
    np.testing.assert_array_equal(seen[8], warm[2 * best + 1])
    # the finalist's 4 draws are scored by their last one; the winner's labels start draw 12
    scores[best] = lj[11]
    winner = int(np.argmax(scores))
    expected = warm[11] if winner == best else warm[2 * winner + 1]
    np.testing.assert_array_equal(seen[12], expected)


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
