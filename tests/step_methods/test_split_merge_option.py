"""PCRPGibbs(split_merge=...): options, sample stats, and the mixing it buys."""

import numpy as np
import pymc as pm
import pytest

import pymc_pcrp as pcrp


def _two_clusters(n, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 2))
    x[: n // 2, 0] += 5.0
    return x


def _sample(x, split_merge, draws=30, seed=1):
    with pcrp.build_model(x, power=1.1):
        return pm.sample(
            draws=draws,
            tune=0,
            chains=1,
            random_seed=seed,
            progressbar=False,
            compute_convergence_checks=False,
            pcrp_gibbs={"init": "one", "split_merge": split_merge},
        )


def test_split_merge_splits_what_gibbs_cannot():
    # Two clusters 5 sd apart, N = 1000, every chain started with all points together.
    x = _two_clusters(1000)
    plain = _sample(x, split_merge=0)
    moves = _sample(x, split_merge=1)
    # Single-site Gibbs cannot open the second cluster one point at a time (it only
    # opens and closes a few tiny outlier clusters) ...
    largest = [np.bincount(z).max() for z in plain.posterior["z"].values[0]]
    assert min(largest) >= 950
    # ... the split-merge move does, and the true split is then kept.
    z = moves.posterior["z"].values[0, -1]
    assert moves.posterior["n_clusters"].values[0, -1] >= 2
    sizes = np.bincount(z)
    assert sizes.max() <= 520
    stats = moves.sample_stats
    assert int(stats["split_proposed"].sum() + stats["merge_proposed"].sum()) == 30
    assert int(stats["split_accepted"].sum()) >= 1
    assert int(plain.sample_stats["split_proposed"].sum()) == 0


@pytest.mark.parametrize("arg", ["split_merge", "split_merge_scans"])
@pytest.mark.parametrize("value", [-1, 1.5])
def test_bad_split_merge_options_are_refused(arg, value):
    with pcrp.build_model(np.arange(5.0)) as model:
        with pytest.raises(ValueError, match=f"'{arg}'"):
            pcrp.PCRPGibbs([model["z"]], **{arg: value})


def test_sweep_state_is_kept_between_draws_and_rebuilt_now_and_then(monkeypatch):
    from pymc_pcrp.step_methods import pcrp_gibbs

    monkeypatch.setattr(pcrp_gibbs, "_REFRESH_EVERY", 3)
    x = _two_clusters(40)
    with pcrp.build_model(x, power=1.1) as model:
        step = pcrp.PCRPGibbs([model["z"]], rng=5)
    point = {"z": np.zeros(40, dtype=np.int32)}
    states = []
    for _ in range(9):
        point, _ = step.step(point)
        states.append(id(step._kept[1]))
    # Built on draw 1, kept for 3 more draws, then rebuilt: blocks of 4 draws.
    assert len(set(states[:4])) == 1 and len(set(states[4:8])) == 1
    assert states[4] != states[0] and states[8] != states[4]
    # An equal copy of the returned labels (another array) keeps the state ...
    point = {"z": point["z"].astype(np.int64)}
    before = id(step._kept[1])
    point, _ = step.step(point)
    assert id(step._kept[1]) == before
    # ... while labels that differ from those returned force a rebuild.
    point["z"] = np.zeros(40, dtype=np.int32)
    step.step(point)
    assert id(step._kept[1]) != before
