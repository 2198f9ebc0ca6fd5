"""PCRPGibbs as a PyMC step method: assignment, model checks, seeds, output."""

import copy
import math

import arviz as az
import numpy as np
import pymc as pm
import pytest

from kernel_reference import step_labels_out
from pymc.sampling.mcmc import assign_step_methods
from pymc.stats.convergence import WarningType
from pymc.step_methods.compound import Competence

import pymc_pcrp as pcrp

from pymc_pcrp._kernels.hyper import advance_scaled, make_scale_grid
from pymc_pcrp._kernels.moves import SMALL_PAIRS, SMALL_SIZE, UNIFORM_PAIRS
from pymc_pcrp._kernels.pair_moves import pair_moves, pair_picks
from pymc_pcrp._kernels.partitions import canonical_labels, log_prior_k
from pymc_pcrp._kernels.prior_draws import sample_partitions
from pymc_pcrp._kernels.scores import sweep_tables
from pymc_pcrp._kernels.splitmerge import run_split_merge
from pymc_pcrp._kernels.state import init_state, make_params
from pymc_pcrp._kernels.sweep import gibbs_sweeps
from pymc_pcrp.step_methods import _convergence

SEED = sum(ord(c) for c in "test_pcrp_gibbs")
QUIET = {"progressbar": False, "compute_convergence_checks": False}


def _data(n=40, seed=SEED):
    rng = np.random.default_rng(seed)
    return np.r_[rng.normal(size=(n // 2, 2)), rng.normal(size=(n - n // 2, 2)) + 6.0]


def _model(x, alpha=1.0, power=1.5, scale="learn"):
    with pm.Model() as model:
        z = pcrp.PowerCRP("z", alpha=alpha, power=power, n=len(x))
        pcrp.NIWMixture("x", z=z, prior=pcrp.NIWPrior.from_data(x, scale=scale), observed=x)
    return model


def test_pm_sample_assigns_pcrp_gibbs_alone():
    model = _model(_data())
    with model:
        provided, selected = assign_step_methods(model)
    assert provided == []
    assert selected == {pcrp.PCRPGibbs: [model.rvs_to_values[model["z"]]]}
    assert pcrp.PCRPGibbs in pm.STEP_METHODS


def test_competence():
    model = _model(_data())
    assert pcrp.PCRPGibbs.competence(model["z"], False) == Competence.IDEAL
    with pm.Model():
        c = pm.Categorical("c", p=[0.5, 0.5])
    assert pcrp.PCRPGibbs.competence(c, False) == Competence.INCOMPATIBLE


def test_output_groups_and_log_joint_equals_model_logp():
    x = _data()
    model = _model(x)
    with model:
        idata = pm.sample(draws=30, tune=10, chains=2, random_seed=SEED, **QUIET)
    post = idata.posterior
    assert post["z"].shape == (2, 30, len(x))
    assert post["n_clusters"].dtype.kind == "i"
    stats = idata.sample_stats
    assert {"log_joint", "n_clusters"} <= set(stats.data_vars)
    np.testing.assert_array_equal(stats["n_clusters"].values, post["n_clusters"].values)
    logp = model.compile_logp()
    for c, d in [(0, 0), (1, 29), (0, 17)]:
        z = post["z"].values[c, d]
        # canonical labels: clusters numbered in order of first appearance
        first = [int(np.flatnonzero(z == k)[0]) for k in range(z.max() + 1)]
        assert first == sorted(first)
        assert post["n_clusters"].values[c, d] == z.max() + 1
        assert stats["log_joint"].values[c, d] == pytest.approx(logp({"z": z}), rel=1e-9)


def test_same_seed_same_trace_and_cores_do_not_matter():
    x = _data(30)
    runs = []
    for cores in (1, 1, 2):
        with _model(x):
            idata = pm.sample(draws=40, tune=5, chains=2, cores=cores, random_seed=7, **QUIET)
        runs.append(idata.posterior["z"].values)
    np.testing.assert_array_equal(runs[0], runs[1])
    np.testing.assert_array_equal(runs[0], runs[2])
    with _model(x):
        other = pm.sample(draws=40, tune=5, chains=2, cores=1, random_seed=8, **QUIET)
    assert not np.array_equal(runs[0], other.posterior["z"].values)


def test_chains_start_from_different_partitions():
    x = _data(60)
    with _model(x):
        step = pcrp.PCRPGibbs([x for x in pm.modelcontext(None).value_vars], init="random")
        starts = []
        for seed in range(4):
            step.set_rng(np.random.default_rng(seed))
            starts.append(
                step.chain.initial_labels(np.zeros(60, dtype=int), step.inputs.arrays()[1])
            )
    assert len({s.max() + 1 for s in starts}) > 1
    assert len({tuple(s) for s in starts}) == 4


def test_random_start_is_capped_and_still_over_dispersed():
    """At large N, ``init="random"`` draws K0 on 1..20 (not 1..sqrt(N)), still spread out."""
    n = 10_000  # sqrt(N) = 100
    with pm.Model():
        z = pcrp.PowerCRP("z", alpha=1.0, power=1.1, n=n)
        step = pcrp.PCRPGibbs([pm.modelcontext(None).rvs_to_values[z]], init="random")
        k0s, starts = [], []
        for seed in range(40):
            step.set_rng(np.random.default_rng(seed))
            labels = step.chain.initial_labels(np.zeros(n, dtype=int), step.inputs.arrays()[1])
            k0s.append(labels.max() + 1)
            starts.append(labels)
    assert max(k0s) <= 20
    # 40 draws uniform on 1..20: both ends of the range are reached
    assert min(k0s) <= 3 and max(k0s) >= 18
    # every start with more than one cluster differs from every other
    spread = [tuple(s) for s in starts if s.max() > 0]
    assert len(set(spread)) == len(spread) >= 35


def _step_once(init="random", sweeps_per_draw=1, labels=None, seed=5, n=20, data=True, scale=0.1):
    """One step of a fresh chain; returns the step, a copy of its stream before it, the point.

    Without ``data`` the model is the pCRP prior alone, whose chains forget their
    start slowly enough that one sweep from different starts gives different draws.
    The step is a tuning draw (a fresh step tunes) with as many sweeps as a kept one.
    """
    model = _model(_data(n), scale=scale) if data else pm.Model()
    if not data:
        with model:
            pcrp.PowerCRP("z", alpha=1.0, power=1.5, n=n)
    with model:
        step = pcrp.PCRPGibbs(
            [model.rvs_to_values[model["z"]]],
            init=init,
            sweeps_per_draw=sweeps_per_draw,
            tune_sweeps=sweeps_per_draw,
            rng=seed,
        )
        point = model.initial_point()
        if labels is not None:
            point["z"] = np.asarray(labels, dtype=point["z"].dtype)
        before = copy.deepcopy(step.rng)
        new_point, stats = step.step(point)
    step.last_stats = stats[0]
    return step, before, new_point


def _kernel_sweeps(step, rng, start, n_sweeps):
    """The kernels alone: ``n_sweeps`` sweeps from ``start`` with the stream ``rng``.

    Each sweep is followed by the step's split-merge moves: the Bernoulli draw of
    the fractional rate, then the proposals it calls for; then the same for the
    speck moves (pairs drawn among the small clusters); then the pair moves.
    """
    inputs = step.inputs.arrays()
    xc, params, tables = inputs.xc, inputs.params, inputs.tables
    state = init_state(xc, np.asarray(start, dtype=np.int64), params)
    seat = np.ascontiguousarray(tables[2][:, 0])
    scans = np.int64(step.split_merge_scans)
    for _ in range(n_sweeps):
        gibbs_sweeps(rng, (xc, state, params, tables), 1)
        for rate, rule in ((step.split_merge, UNIFORM_PAIRS), (step.speck_moves, SMALL_PAIRS)):
            whole = int(rate)
            frac = rate - whole
            moves = whole + int(frac > 0 and rng.random() < frac)
            if moves:
                pairs = (rule, SMALL_SIZE)
                run_split_merge(rng, (xc, state, params), (np.int64(moves), scans), seat, pairs)
        whole = int(step.pair_moves)
        moves = whole + int(step.pair_moves > whole and rng.random() < step.pair_moves - whole)
        if moves:
            pair_moves(rng, xc, state, params, moves, pair_picks(xc))
    return canonical_labels(state.labels)


@pytest.mark.parametrize("init", ["random", "prior", "one", "singletons", "point"])
def test_every_init_strategy_starts_where_documented(init):
    """The first step equals one kernel sweep from the documented start, on the same stream."""
    n = 20
    given = np.r_[np.full(10, 7), np.full(10, 3)]  # initvals, not canonical
    step, rng, new_point = _step_once(init, labels=given, n=n, data=False)
    if init == "random":
        k0 = rng.integers(1, min(math.ceil(math.sqrt(n)), 20) + 1)
        start = canonical_labels(rng.integers(0, k0, size=n))
    elif init == "prior":
        start = sample_partitions(rng, n, 1.0, 1.5, 1)[0]
    else:
        start = {"one": np.zeros(n), "singletons": np.arange(n), "point": canonical_labels(given)}[
            init
        ]
    np.testing.assert_array_equal(new_point["z"], _kernel_sweeps(step, rng, start, 1))
    # ... and nothing else drew from the chain's stream
    assert step.rng.bit_generator.state == rng.bit_generator.state


def test_one_and_singletons_starts_are_told_apart():
    """On the prior alone one sweep does not forget the start, so the test above can fail."""
    one = _step_once("one", data=False)[2]["z"]
    singletons = _step_once("singletons", data=False)[2]["z"]
    assert one.max() + 1 < singletons.max() + 1


def test_bad_step_options():
    with _model(_data(10)) as model:
        value = model.rvs_to_values[model["z"]]
        with pytest.raises(ValueError, match="'init' must be one of"):
            pcrp.PCRPGibbs([value], init="kmeans")
        for bad in (0, 1.5, True, "2", float("nan"), float("inf")):
            with pytest.raises(ValueError, match="'sweeps_per_draw' must be a positive integer"):
                pcrp.PCRPGibbs([value], sweeps_per_draw=bad)
            with pytest.raises(ValueError, match="'tune_sweeps' must be a positive integer"):
                pcrp.PCRPGibbs([value], tune_sweeps=bad)


def test_automatic_sweeps_per_draw_follows_the_number_of_points():
    from pymc_pcrp.sampler.options import auto_sweeps_per_draw

    cases = {(1, 0): 20, (150, 4): 20, (178, 13): 20, (569, 30): 3, (7500, 2): 3}
    # one dimension counts as two: a point costs the kernel nearly as much at D = 1 as at D = 2
    cases |= {(1000, 1): 20, (2000, 1): 12, (2000, 2): 12, (3000, 1): 8, (50_000, 0): 1}
    assert {case: auto_sweeps_per_draw(*case) for case in cases} == cases
    for n, expected in ((10, 20), (1500, 15)):  # D = 2
        with _model(_data(n)) as model:
            value = model.rvs_to_values[model["z"]]
            assert pcrp.PCRPGibbs([value]).sweeps_per_draw == expected
            assert pcrp.PCRPGibbs([value], sweeps_per_draw=1).sweeps_per_draw == 1


def test_sampling_state_round_trip():
    with _model(_data(10)) as model:
        step = pcrp.PCRPGibbs([model.rvs_to_values[model["z"]]], rng=3)
        state = step.sampling_state
        point = model.initial_point()
        a, _ = step.step(point)
        step.sampling_state = state
        b, _ = step.step(point)
    np.testing.assert_array_equal(a["z"], b["z"])


@pytest.mark.parametrize("sweeps", [1, 5])
def test_sweeps_per_draw_runs_that_many_sweeps_per_step(sweeps):
    step, rng, new_point = _step_once("one", sweeps_per_draw=sweeps)
    np.testing.assert_array_equal(new_point["z"], _kernel_sweeps(step, rng, np.zeros(20), sweeps))
    # exactly ``sweeps`` sweeps' worth of random numbers were drawn, not one more or less
    assert step.rng.bit_generator.state == rng.bit_generator.state
    if sweeps > 1:
        one_less = _step_once("one", sweeps_per_draw=sweeps - 1)[0]
        assert one_less.rng.bit_generator.state != step.rng.bit_generator.state


def test_learned_scale_step_replays_the_kernel():
    """A fresh chain draws s given its start, sweeps, draws s: the kernel on the same stream."""
    n = 20
    x = _data(n)
    step, rng, new_point = _step_once("one", sweeps_per_draw=2, n=n, scale="learn")
    prior = pcrp.NIWPrior.from_data(x)
    xc = np.ascontiguousarray(x - prior.mu0)
    start = int(np.argmin(np.abs(prior.nu0_grid - prior.nu0)))  # the default learns nu0 too
    grid = make_scale_grid(xc, prior.psi0, *prior.grid_arrays(), *prior.nu0_arrays(), start)
    params = make_params(1.0, 1.5, prior.kappa0, prior.nu0, prior.psi0)
    tables = sweep_tables(xc, params)
    state = init_state(xc, np.zeros(n, dtype=np.int64), params)
    out = step_labels_out(n)
    pairs = (step.pair_moves, pair_picks(xc), np.zeros(2, np.int64))
    plan = (2, step.split_merge, step.split_merge_scans, step.speck_moves, pairs)  # the defaults
    chain = (xc, state, params, tables)
    lj = advance_scaled(rng, chain, grid, plan, (np.empty(4, np.int64), out), None)
    np.testing.assert_array_equal(new_point["z"], out)
    assert step.rng.bit_generator.state == rng.bit_generator.state
    assert step.last_stats["niw_scale"] == math.exp(grid.log_s[grid.current[0]])
    assert step.last_stats["niw_nu0"] == grid.nu0s[grid.current[2]]
    assert step.last_stats["log_joint"] == pytest.approx(lj, rel=1e-12)
    # the fixed-scale prior records its scale factor 1 (psi0 itself)
    assert _step_once("one", n=n)[0].last_stats["niw_scale"] == 1.0


def test_learned_scale_state_does_not_leak_between_chains():
    # Two chains run one after the other in one process (cores=1) equal the same chains
    # run in two processes: the second chain draws its own s, it does not inherit one.
    x = _data(30)
    runs = []
    for cores in (1, 2):
        with _model(x):
            idata = pm.sample(draws=15, tune=0, chains=2, cores=cores, random_seed=3, **QUIET)
        runs.append(idata.sample_stats["niw_scale"].values)
    np.testing.assert_array_equal(runs[0], runs[1])


@pytest.mark.parametrize("kind", ["potential", "random_variable", "second_mixture", "transformed"])
def test_labels_feeding_other_terms_are_refused(kind):
    x = _data(10)
    prior = pcrp.NIWPrior.from_data(x)
    with pm.Model():
        z = pcrp.PowerCRP("z", alpha=1.0, power=1.5, n=10)
        if kind == "transformed":
            pcrp.NIWMixture("x", z=z + 0, prior=prior, observed=x)
        else:
            pcrp.NIWMixture("x", z=z, prior=prior, observed=x)
        if kind == "potential":
            pm.Potential("pen", -z.sum())
        elif kind == "random_variable":
            pm.Normal("y", mu=z.max(), sigma=1.0, observed=0.0)
        elif kind == "second_mixture":
            pcrp.NIWMixture("x2", z=z, prior=prior, observed=x + 1.0)
        with pytest.raises(ValueError, match="PCRPGibbs cannot account for"):
            pm.sample(draws=5, tune=0, chains=1, **QUIET)


def test_prior_only_sampling_matches_exact_prior_on_k():
    n, alpha, r = 12, 1.0, 1.5
    with pm.Model():
        pcrp.PowerCRP("z", alpha=alpha, power=r, n=n)
        idata = pm.sample(draws=5000, tune=200, chains=4, random_seed=SEED, **QUIET)
    k = idata.posterior["n_clusters"].values.ravel()
    freq = np.bincount(k, minlength=n + 1) / k.size
    exact = np.exp(log_prior_k(n, alpha, r, n))
    tv = 0.5 * np.abs(freq - exact).sum()
    assert tv < 0.02, (tv, freq[:6], exact[:6])


def test_pm_data_hyperparameters_are_read_each_step():
    with pm.Model():
        alpha = pm.Data("alpha", 1e-8)
        pcrp.PowerCRP("z", alpha=alpha, power=1.0, n=10)
        few = pm.sample(draws=50, tune=20, chains=1, random_seed=1, **QUIET)
        pm.set_data({"alpha": 1e4})
        many = pm.sample(draws=50, tune=20, chains=1, random_seed=1, **QUIET)
    assert few.posterior["n_clusters"].values.mean() < 1.5
    assert many.posterior["n_clusters"].values.mean() > 8


def test_two_blocks_in_one_model():
    x, y = _data(20, seed=1), _data(16, seed=2)
    with pm.Model():
        a = pcrp.PowerCRP("a", alpha=1.0, power=1.2, n=20)
        b = pcrp.PowerCRP("b", alpha=1.0, power=1.2, n=16)
        pcrp.NIWMixture("xa", z=a, prior=pcrp.NIWPrior.from_data(x), observed=x)
        pcrp.NIWMixture("xb", z=b, prior=pcrp.NIWPrior.from_data(y), observed=y)
        idata = pm.sample(draws=20, tune=5, chains=2, random_seed=1, **QUIET)
    assert {"n_clusters", "b_n_clusters"} <= set(idata.posterior.data_vars)
    assert idata.sample_stats["log_joint"].shape[:2] == (2, 20)


def _idata(z, k, log_joint=None):
    stats = {} if log_joint is None else {"log_joint": log_joint}
    return az.from_dict(posterior={"z": z, "n_clusters": k}, sample_stats=stats)


def test_convergence_report_uses_n_clusters_not_labels():
    """Label vectors that disagree between chains but describe the same K are fine."""
    model = _model(_data(6))
    rng = np.random.default_rng(SEED)
    chains, draws = 4, 1000
    z = np.zeros((chains, draws, 6), dtype=int)
    z[:, :, 3:] = np.arange(chains)[:, None, None] % 2  # chains 0,2 vs 1,3 label differently
    z[:, :, 5] = rng.integers(0, 2, size=(chains, draws))
    k = rng.integers(1, 4, size=(chains, draws))
    idata = _idata(z, k)
    ours = [
        w
        for w in _convergence.run_convergence_checks(idata, model)
        if w.kind == WarningType.CONVERGENCE
    ]
    pymcs = [w for w in _convergence.ORIGINAL(idata, model) if w.kind == WarningType.CONVERGENCE]
    assert pymcs, "PyMC's own report would flag the labels"
    assert ours == []
    # a chain stuck at a different K is still reported
    k_bad = k.copy()
    k_bad[0] = 7
    flagged = _convergence.run_convergence_checks(_idata(z, k_bad), model)
    assert any(w.kind == WarningType.CONVERGENCE for w in flagged)
    # so is a log joint density that differs between chains
    lj = rng.normal(size=(chains, draws))
    fine = _convergence.run_convergence_checks(_idata(z, k, lj), model)
    assert not any(w.kind == WarningType.CONVERGENCE for w in fine)
    lj[1] += 5.0
    stuck = _convergence.run_convergence_checks(_idata(z, k, lj), model)
    assert any(w.kind == WarningType.CONVERGENCE for w in stuck)


def test_convergence_patch_is_installed():
    import pymc.sampling.mcmc as mcmc

    assert mcmc.run_convergence_checks is _convergence.run_convergence_checks


def test_pm_sample_keeps_its_trace_when_pymc_reads_more_of_the_model(monkeypatch):
    """A PyMC release whose report reads one more model attribute must not lose the run."""
    real = _convergence.ORIGINAL
    read = []

    def reads_one_more_attribute(idata, model):
        read.append(model.potentials)  # the stand-in model has no such attribute
        return real(idata, model)

    monkeypatch.setattr(_convergence, "ORIGINAL", reads_one_more_attribute)
    with _model(_data(12)):
        with pytest.warns(RuntimeWarning, match="label-invariant convergence report"):
            idata = pm.sample(
                draws=100, tune=10, chains=2, cores=1, random_seed=3, progressbar=False
            )
    assert idata.posterior["z"].shape == (2, 100, 12)
    assert read == [[]]  # PyMC's report then ran once, on the real model


def test_pm_data_observations_are_reread_after_set_data():
    rng = np.random.default_rng(SEED)
    two = np.r_[rng.normal(size=(20, 2)), rng.normal(size=(20, 2)) + 30.0]
    one = rng.normal(size=(40, 2))
    prior = pcrp.NIWPrior(mu0=np.zeros(2), kappa0=0.01, nu0=4.0, psi0=np.eye(2))
    with pm.Model():
        data = pm.Data("data", two)
        z = pcrp.PowerCRP("z", alpha=1.0, power=1.5, n=40)
        pcrp.NIWMixture("x", z=z, prior=prior, observed=data)
        kw = {"draws": 50, "tune": 50, "chains": 1, "random_seed": 1, **QUIET}
        split = pm.sample(pcrp_gibbs={"init": "one"}, **kw)
        pm.set_data({"data": one})
        merged = pm.sample(pcrp_gibbs={"init": "singletons"}, **kw)
    # two groups 30 sd apart are never merged (a third, tiny cluster comes and goes)
    assert np.all(split.posterior["n_clusters"].values[0, -10:] >= 2)
    assert merged.posterior["n_clusters"].values[0, -20:].mean() < 1.5


def test_learned_scale_tables_follow_a_changing_alpha():
    # A random alpha rebuilds the sweep tables (at Psi_0 = P) whenever it changes; the
    # new-cluster table must then be recomputed at the chain's current s, or the sweep
    # would silently use another prior predictive for new clusters.
    x = _data(30)
    with pm.Model() as model:
        a = pm.Gamma("a", 2.0, 2.0)
        z = pcrp.PowerCRP("z", alpha=a, power=1.3, n=30)
        pcrp.NIWMixture("x", z=z, prior=pcrp.NIWPrior.from_data(x), observed=x)
        step = pcrp.PCRPGibbs([model.rvs_to_values[z]], rng=4)
    prior = pcrp.NIWPrior.from_data(x)
    point = model.initial_point()
    for alpha in (0.7, 3.0, 3.0, 0.2):
        point["a_log__"] = np.log(alpha)
        point, stats = step.step(point)
        inputs = step.inputs.arrays(point)
        s, nu0 = stats[0]["niw_scale"], stats[0]["niw_nu0"]
        fresh = make_params(alpha, 1.3, prior.kappa0, nu0, s * prior.psi0)
        np.testing.assert_allclose(inputs.tables[0], sweep_tables(inputs.xc, fresh)[0], rtol=1e-12)


def test_tuning_draws_after_the_tournament_run_fewer_sweeps(monkeypatch):
    """The tournament's draws and the kept ones run ``sweeps_per_draw``; the rest of tuning less."""
    from pymc_pcrp.sampler.chain import Chain
    from pymc_pcrp.sampler.options import auto_tune_sweeps

    assert [auto_tune_sweeps(s) for s in (1, 5, 6, 20, 30)] == [1, 1, 2, 4, 6]
    sweeps = []
    original = Chain.call_advance

    def call_advance(self, inputs, args, kernel):
        if self is step.chain:  # not the scouting tournaments' chains
            sweeps.append((self.tune, self.tournament.done, args[-3][0]))
        return original(self, inputs, args, kernel)

    monkeypatch.setattr(Chain, "call_advance", call_advance)
    with _model(_data(30)) as model:
        value = model.rvs_to_values[model["z"]]
        for tune_sweeps, after in ((None, 2), (7, 7)):
            sweeps.clear()
            step = pcrp.PCRPGibbs([value], sweeps_per_draw=10, restarts=4, tune_sweeps=tune_sweeps)
            step.set_rng(np.random.default_rng(SEED))
            point = model.initial_point()
            for _ in range(20):
                point, _ = step.step(point)
            step.stop_tuning()
            for _ in range(3):
                point, _ = step.step(point)
            tournament = [n for tune, done, n in sweeps if tune and not done]
            rest = [n for tune, done, n in sweeps if tune and done]
            kept = [n for tune, _, n in sweeps if not tune]
            # 4 starts of 3 draws (ceil(30 / 10)), one finalist for 6 more: 18 draws
            assert tournament == [10] * 18
            assert rest == [after] * 2
            assert kept == [10] * 3
