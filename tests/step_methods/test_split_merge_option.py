"""PCRPGibbs(split_merge=...): options, sample stats, and the mixing it buys."""

import numpy as np
import pymc as pm
import pytest

from kernel_reference import step_labels_out

import pymc_pcrp as pcrp

from pymc_pcrp._kernels.pair_moves import no_pairs
from pymc_pcrp.sampler import chain as sampler_chain
from pymc_pcrp.sampler import options as pcrp_options


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
            pcrp_gibbs={"init": "one", "split_merge": split_merge, "sweeps_per_draw": 1},
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


@pytest.mark.parametrize(
    ("arg", "value"),
    [
        ("split_merge", -1),
        ("split_merge", -0.1),
        ("split_merge", float("nan")),
        ("split_merge", float("inf")),
        ("split_merge", "often"),
        ("split_merge", True),
        ("speck_moves", -0.5),
        ("speck_moves", float("inf")),
        ("speck_moves", True),
        ("speck_moves", "many"),
        ("split_merge_scans", -2),
        ("split_merge_scans", 1.5),
        ("split_merge_scans", "many"),
    ],
)
def test_bad_split_merge_options_are_refused(arg, value):
    with pcrp.build_model(np.arange(5.0)) as model:
        with pytest.raises(ValueError, match=f"'{arg}'"):
            pcrp.PCRPGibbs([model["z"]], **{arg: value})


def test_default_is_split_merge_and_zero_is_algorithm_1():
    """The default step makes split-merge proposals; ``split_merge=0`` makes none.

    The default adds ``speck_moves`` proposals among the small clusters (counted in
    the same statistics; none is made when no cluster is small, and ``split_merge=0``
    turns them off too); ``speck_moves=0`` leaves the uniform pairs alone.
    """
    x = _two_clusters(60)
    with pcrp.build_model(x, power=1.1) as model:
        default = pcrp.PCRPGibbs([model["z"]], rng=3, sweeps_per_draw=1)
        plain = pcrp.PCRPGibbs([model["z"]], rng=3, split_merge=0, sweeps_per_draw=1)
        uniform = pcrp.PCRPGibbs([model["z"]], rng=3, speck_moves=0, sweeps_per_draw=1)
    # 60 points in 2-D: 600 / (N D) > 1 while tuning, capped at one proposal per sweep
    assert default.split_merge == pcrp_options.tuning_split_merge(60, 2) == 1.0
    assert default.split_merge_scans == pcrp_options.SPLIT_MERGE_SCANS
    assert default.speck_moves == pcrp_options.auto_speck_moves(1.0) == 4.0
    assert plain.speck_moves == 0.0 and uniform.speck_moves == 0.0
    totals = {}
    for name, step in (("default", default), ("plain", plain), ("uniform", uniform)):
        point = {"z": np.zeros(60, dtype=np.int64)}
        proposed = 0
        for _ in range(200):
            point, stats = step.step(point)
            proposed += stats[0]["split_proposed"] + stats[0]["merge_proposed"]
        totals[name] = proposed
    assert totals["plain"] == 0
    assert totals["uniform"] == 200, totals  # an integer rate: exactly one per sweep
    assert 200 < totals["default"] <= 200 * 5, totals


@pytest.mark.parametrize(
    ("n", "d", "visited", "rate"),
    [
        (150, 4, 1.0, 1.2),  # one cluster
        (300, 4, 1.0, 0.6),
        (723, 2, 0.18, 2.766),  # many small clusters (the digits at r = 1)
        (150, 4, 0.2, 3.0),  # capped at three
        (2000, 2, 0.6077, 0.296),  # the budget benchmark's three clusters
        (2000, 1, 0.7, 0.514),
        (569, 30, 0.57, 0.1),  # at least one every ten sweeps
        (10**6, 0, 1.0, 0.1),
    ],
)
def test_automatic_split_merge_rate(n, d, visited, rate):
    """``min(3, max(0.1, 720 / (N D f)))``, ``f`` the share of the points a proposal visits."""
    assert pcrp_options.auto_split_merge(n, d, visited) == pytest.approx(rate, abs=1e-3)


@pytest.mark.parametrize(
    ("n", "d", "rate"),
    [(150, 4, 1.0), (2000, 2, 0.15), (723, 2, 0.415), (569, 30, 0.1), (10**6, 0, 0.1)],
)
def test_tuning_split_merge_rate(n, d, rate):
    """``min(1, max(0.1, 600 / (N D)))`` while a chain tunes, the rule of earlier versions."""
    assert pcrp_options.tuning_split_merge(n, d) == pytest.approx(rate, abs=1e-3)


def test_visited_fraction_is_the_expected_share_of_points_a_uniform_pair_visits():
    """``2 sum p^2 - sum p^3``: the union of the two drawn points' clusters, on average."""
    counts = np.array([5, 0, 3, 1, 0, 11])
    labels = np.repeat(np.arange(len(counts)), counts)
    n = len(labels)
    sizes = np.bincount(labels, minlength=len(counts))
    # every ordered pair (i, j), both uniform: one cluster visited, or the union of two
    visited = [
        sizes[labels[i]] if labels[i] == labels[j] else sizes[labels[i]] + sizes[labels[j]]
        for i in range(n)
        for j in range(n)
    ]
    assert pcrp_options.visited_fraction(counts) == pytest.approx(np.mean(visited) / n)
    assert pcrp_options.visited_fraction(np.array([7])) == 1.0
    assert pcrp_options.visited_fraction(np.full(4, 9)) == pytest.approx(2 / 4 - 1 / 16)


def test_step_resolves_the_automatic_rate_from_the_data():
    x = np.random.default_rng(0).normal(size=(1500, 2))
    with pcrp.build_model(x) as model:
        step = pcrp.PCRPGibbs([model["z"]], rng=1)
        fixed = pcrp.PCRPGibbs([model["z"]], rng=1, split_merge=0.7)
    # the tuning rate, 600 / (N D), until tuning ends
    assert step.split_merge == pytest.approx(0.2)
    assert fixed.split_merge == 0.7


def test_automatic_rate_is_set_from_the_partition_when_tuning_ends():
    """``split_merge=None``: the tuning rate, then the rate of the first kept draw's partition."""
    x = np.random.default_rng(0).normal(size=(400, 2))
    with pcrp.build_model(x, power=1.1) as model:
        step = pcrp.PCRPGibbs([model["z"]], rng=2, init="point", sweeps_per_draw=1)
        fixed = pcrp.PCRPGibbs([model["z"]], rng=2, init="point", split_merge=0.3)

    def rate_from(labels):
        visited = pcrp_options.visited_fraction(np.bincount(labels))
        return pcrp_options.auto_split_merge(400, 2, visited)

    tuning = pcrp_options.tuning_split_merge(400, 2)
    one = np.zeros(400, dtype=np.int64)
    many = np.arange(400) % 40  # forty clusters of ten: each proposal visits few points
    assert tuning == pytest.approx(0.75)  # 600 / (N D), the rule of earlier versions
    assert rate_from(one) == pytest.approx(0.9) and rate_from(many) == 3.0  # capped at 3
    for labels in (one, many):  # tuning (PyMC's default until stop_tuning): one rate
        _, stats = step.step({"z": labels})
        assert step.split_merge == stats[0]["split_merge_rate"] == pytest.approx(tuning)
    step.stop_tuning()
    _, stats = step.step({"z": many})  # the first kept draw sets the rate for the chain
    assert stats[0]["split_merge_rate"] == 3.0
    _, stats = step.step({"z": one})
    assert stats[0]["split_merge_rate"] == 3.0  # kept: one fixed kernel
    step.set_rng(np.random.default_rng(3))  # a new chain tunes, then sets its own rate
    step.tune = True
    _, stats = step.step({"z": many})
    assert stats[0]["split_merge_rate"] == pytest.approx(tuning)
    step.stop_tuning()
    _, stats = step.step({"z": one})
    assert stats[0]["split_merge_rate"] == pytest.approx(0.9)
    for labels in (one, many):  # an explicit rate never moves
        _, stats = fixed.step({"z": labels})
        assert stats[0]["split_merge_rate"] == 0.3


def test_automatic_rate_through_pm_sample_is_set_per_chain():
    """Every kept draw of a chain has the rate its partition gave when tuning ended."""
    x = _two_clusters(1500)  # N D = 3,000: the tuning rate 0.2, the kept one lower
    with pcrp.build_model(x, power=1.1):
        idata = pm.sample(
            draws=20,
            tune=10,
            chains=2,
            cores=1,
            random_seed=5,
            progressbar=False,
            compute_convergence_checks=False,
            discard_tuned_samples=False,
            pcrp_gibbs={"restarts": 1},  # the first kept draw starts from tuning's last
        )
    kept = idata.sample_stats["split_merge_rate"].values
    warm = idata.warmup_sample_stats["split_merge_rate"].values
    tuning = pcrp_options.tuning_split_merge(1500, 2)
    assert np.all(warm == tuning)
    assert np.all(kept == kept[:, :1])  # one rate per chain
    last_tuned = idata.warmup_posterior["z"].values[:, -1]
    for chain in range(2):
        visited = pcrp_options.visited_fraction(np.bincount(last_tuned[chain]))
        assert kept[chain, 0] == pytest.approx(pcrp_options.auto_split_merge(1500, 2, visited))
        assert kept[chain, 0] != pytest.approx(tuning)  # two clusters: f near 0.75


@pytest.mark.parametrize("rate", [0.3, 2.5])
def test_fractional_rate_gives_that_many_proposals_per_sweep(rate):
    """``split_merge=m`` makes ``floor(m)`` proposals per sweep plus one with prob. ``m % 1``."""
    x = _two_clusters(40)
    with pcrp.build_model(x, power=1.1) as model:
        step = pcrp.PCRPGibbs(
            [model["z"]], rng=4, split_merge=rate, sweeps_per_draw=5, tune_sweeps=5, speck_moves=0
        )
    point = {"z": np.zeros(40, dtype=np.int64)}
    per_draw = []
    for _ in range(300):
        point, stats = step.step(point)
        per_draw.append(stats[0]["split_proposed"] + stats[0]["merge_proposed"])
    per_draw = np.array(per_draw)
    whole = int(rate)
    assert per_draw.min() >= 5 * whole and per_draw.max() <= 5 * (whole + 1)
    # 1,500 sweeps: the extra proposals are Binomial(1500, frac), sd <= 19.4
    extra = per_draw.sum() - 1500 * whole
    assert abs(extra - 1500 * (rate - whole)) < 4 * 19.4, extra


def test_integer_rate_draws_no_extra_random_number():
    """An integer ``split_merge`` keeps the random stream of earlier versions: no Bernoulli."""
    from pymc_pcrp._kernels.chain import advance
    from pymc_pcrp._kernels.splitmerge import split_merge_moves
    from pymc_pcrp._kernels.state import init_state, make_params
    from pymc_pcrp._kernels.sweep import gibbs_sweeps, sweep_tables

    x = _two_clusters(50)
    xc = np.ascontiguousarray(x - x.mean(0))
    params = make_params(1.0, 1.1, 0.5, 4.0, np.eye(2))
    tables = sweep_tables(xc, params)
    z0 = np.zeros(50, dtype=np.int64)
    a = init_state(xc, z0, params)
    rng_a = np.random.default_rng(9)
    counts = np.empty(4, dtype=np.int64)
    out = step_labels_out(50)
    advance(rng_a, (xc, a, params, tables), (4, 2.0, 0, 0.0, no_pairs()), (counts, out), None)
    b = init_state(xc, z0, params)
    rng_b = np.random.default_rng(9)
    for _ in range(4):
        gibbs_sweeps(rng_b, (xc, b, params, tables), 1)
        split_merge_moves(rng_b, xc, b, params, 2, 0)
    assert np.array_equal(a.labels, b.labels)
    assert rng_a.random() == rng_b.random()


def test_sweep_state_is_kept_between_draws_and_rebuilt_now_and_then(monkeypatch):
    monkeypatch.setattr(sampler_chain, "REFRESH_EVERY", 3)
    x = _two_clusters(40)
    with pcrp.build_model(x, power=1.1) as model:
        step = pcrp.PCRPGibbs([model["z"]], rng=5, restarts=1)
    point = {"z": np.zeros(40, dtype=np.int32)}
    states = []  # the state objects themselves: a freed one's id() could be reused
    for _ in range(9):
        point, _ = step.step(point)
        states.append(step.chain.kept[1])
    # Built on draw 1, kept for 3 more draws, then rebuilt: blocks of 4 draws.
    assert all(s is states[0] for s in states[:4]) and all(s is states[4] for s in states[4:8])
    assert states[4] is not states[0] and states[8] is not states[4]
    # An equal copy of the returned labels (another array) keeps the state ...
    point = {"z": point["z"].astype(np.int64)}
    before = step.chain.kept[1]
    point, _ = step.step(point)
    assert step.chain.kept[1] is before
    # ... while labels that differ from those returned force a rebuild (another partition:
    # one cluster, or two if the chain returned one).
    one = len(np.unique(point["z"])) == 1
    point["z"] = (np.arange(40) % 2 if one else np.zeros(40)).astype(np.int32)
    step.step(point)
    assert step.chain.kept[1] is not before


def test_speck_moves_alone_are_allowed():
    """``split_merge=0, speck_moves=2``: at most two proposals per sweep, among small clusters."""
    x = _two_clusters(30)
    with pcrp.build_model(x, power=1.0) as model:
        step = pcrp.PCRPGibbs([model["z"]], rng=5, split_merge=0, speck_moves=2, sweeps_per_draw=1)
    assert step.split_merge == 0.0 and step.speck_moves == 2.0
    point = {"z": np.arange(30, dtype=np.int64)}  # singletons: every cluster is small
    per_draw = []
    for _ in range(50):
        point, stats = step.step(point)
        per_draw.append(stats[0]["split_proposed"] + stats[0]["merge_proposed"])
    assert max(per_draw) <= 2 and sum(per_draw) > 0, per_draw


def test_sweep_matched_rate_is_k_over_twice_the_visited_share():
    """``K / (2 f)``: the proposals that score about as many cells as one sweep, capped."""
    counts = np.array([5, 0, 3, 1, 0, 11])
    f = pcrp_options.visited_fraction(counts)
    assert pcrp_options.sweep_matched_rate(counts) == pytest.approx(4 / (2 * f))
    assert pcrp_options.sweep_matched_rate(np.full(4, 9)) == pytest.approx(4 / (2 * 0.4375))
    assert pcrp_options.sweep_matched_rate(np.array([12])) == 0.5
    assert pcrp_options.sweep_matched_rate(np.full(300, 2)) == pcrp_options.TABLE_TUNING_MAX
    assert pcrp_options.sweep_matched_rate(np.zeros(3, dtype=np.int64)) == 0.0


def test_a_table_tunes_with_the_sweep_matched_rate_and_keeps_the_usual_rule_after():
    """Tables tune with ``max(600 / (N D), K / (2 f))`` proposals per sweep; kept draws as usual."""
    import pandas as pd

    rng = np.random.default_rng(4)
    table = pd.DataFrame(rng.random((200, 6)) < 0.5).astype("boolean")
    with pm.Model():
        z = pcrp.PowerCRP("z", alpha=1.0, power=1.1, n=200)
        pcrp.TableMixture("x", z=z, observed=table)
        step = pcrp.PCRPGibbs([z], rng=3, init="point", sweeps_per_draw=1, restarts=1)
    usual = pcrp_options.tuning_split_merge(200, 6)
    assert usual == 0.5  # 600 / (N D)
    many = np.arange(200) % 20  # twenty clusters of ten: K / (2 f) = 10 / f
    one = np.zeros(200, dtype=np.int64)
    _, stats = step.step({"z": many})
    matched = pcrp_options.sweep_matched_rate(np.bincount(many))
    assert matched > 50
    assert stats[0]["split_merge_rate"] == pytest.approx(matched)
    step.stop_tuning()
    _, stats = step.step({"z": one})  # the first kept draw: the usual rule of its partition
    assert stats[0]["split_merge_rate"] == pytest.approx(pcrp_options.auto_split_merge(200, 6, 1.0))
