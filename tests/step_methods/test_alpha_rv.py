"""PCRPGibbs with a random alpha: owned by the step, or drawn by PCRPHyper; the joint prior."""

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
import scipy.integrate
import scipy.stats

from pymc.sampling.mcmc import assign_step_methods
from step_reference import built_steps

import pymc_pcrp as pcrp

from pymc_pcrp._kernels import hyperprior as hp
from pymc_pcrp._kernels.hyper import new_cluster_log_weights
from pymc_pcrp._kernels.scores import sweep_tables
from pymc_pcrp.distributions.normaliser import log_normaliser

SEED = sum(ord(c) for c in "test_alpha_rv")
QUIET = {"progressbar": False, "compute_convergence_checks": False}


def _data(n=24, seed=SEED):
    rng = np.random.default_rng(seed)
    return np.r_[rng.normal(size=(n // 2, 2)), rng.normal(size=(n - n // 2, 2)) + 5.0]


def _model(x, power=1.3):
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 2.0, 1.0)
        z = pcrp.PowerCRP("z", alpha=alpha, power=power, n=len(x))
        pcrp.NIWMixture("x", z=z, prior=pcrp.NIWPrior.from_data(x), observed=x)
    return model


def test_pm_sample_gives_alpha_and_the_labels_to_one_gibbs_step():
    model = _model(_data())
    with model:
        provided, selected = assign_step_methods(model)
    assert provided == []
    values = model.rvs_to_values
    assert selected == {pcrp.PCRPGibbs: [values[model["alpha"]], values[model["z"]]]}
    assert built_steps(model) == {("PCRPGibbs", ("alpha_log__", "z"))}


def _two_terms(x):
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 2.0, 1.0)
        z = pcrp.PowerCRP("z", alpha=alpha, power=1.3, n=len(x))
        pcrp.NIWMixture("x", z=z, prior=pcrp.NIWPrior.from_data(x), observed=x)
        pm.Normal("y", mu=alpha, sigma=1.0, observed=2.0)  # alpha feeds another term
    return model


def _two_pcrps(x):
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 2.0, 1.0)
        z = pcrp.PowerCRP("z", alpha=alpha, power=1.3, n=len(x))
        pcrp.NIWMixture("x", z=z, prior=pcrp.NIWPrior.from_data(x), observed=x)
        pcrp.PowerCRP("w", alpha=alpha, power=1.1, n=7)  # a second PowerCRP with this alpha
    return model


def _random_power(x):
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 2.0, 1.0)
        r = pm.Uniform("r", 0.8, 2.0)
        z = pcrp.PowerCRP("z", alpha=alpha, power=r, n=len(x))
        pcrp.NIWMixture("x", z=z, prior=pcrp.NIWPrior.from_data(x), observed=x)
    return model


def _expression(x):
    with pm.Model() as model:
        log_alpha = pm.Normal("log_alpha", 0.0, 1.0)
        z = pcrp.PowerCRP("z", alpha=pt.exp(log_alpha), power=1.3, n=len(x))
        pcrp.NIWMixture("x", z=z, prior=pcrp.NIWPrior.from_data(x), observed=x)
    return model


@pytest.mark.parametrize(
    ("build", "expected"),
    [
        (_two_terms, {("PCRPGibbs", ("z",)), ("PCRPHyper", ("alpha_log__",))}),
        (
            _two_pcrps,
            {("PCRPGibbs", ("z",)), ("PCRPGibbs", ("w",)), ("PCRPHyper", ("alpha_log__",))},
        ),
        (
            _random_power,
            {
                ("PCRPGibbs", ("z",)),
                ("PCRPHyper", ("alpha_log__",)),
                ("PCRPHyper", ("r_interval__",)),
            },
        ),
        (_expression, {("PCRPGibbs", ("z",)), ("PCRPHyper", ("log_alpha",))}),
    ],
    ids=["alpha-in-another-term", "alpha-shared", "random-power", "alpha-an-expression"],
)
def test_alpha_the_gibbs_step_cannot_own_keeps_its_own_step(build, expected):
    model = build(_data())
    assert built_steps(model) == expected
    with model:  # and sampling runs
        idata = pm.sample(draws=5, tune=5, chains=1, random_seed=SEED, **QUIET)
    assert idata.posterior["z"].shape[:2] == (1, 5)


@pytest.mark.parametrize(
    ("prior", "family"),
    [
        (lambda: pm.Gamma("alpha", 2.0, 1.5), hp.GAMMA),
        (lambda: pm.Exponential("alpha", 0.7), hp.EXPONENTIAL),
        (lambda: pm.HalfNormal("alpha", 2.0), hp.HALF_NORMAL),
        (lambda: pm.LogNormal("alpha", 0.3, 0.8), hp.LOG_NORMAL),
        (lambda: pm.HalfCauchy("alpha", 1.5), hp.HALF_CAUCHY),
        (lambda: pm.InverseGamma("alpha", 3.0, 2.0), hp.INV_GAMMA),
        (lambda: pm.Uniform("alpha", 0.05, 6.0), hp.UNIFORM),
        (lambda: pm.Weibull("alpha", 1.5, 2.0), hp.UNKNOWN),
        (lambda: pm.Gamma("alpha", 2.0, pm.HalfNormal("b", 1.0)), hp.UNKNOWN),
    ],
    ids=[
        "gamma",
        "exponential",
        "half-normal",
        "lognormal",
        "half-cauchy",
        "inv-gamma",
        "uniform",
        "weibull",
        "hierarchical",
    ],
)
def test_kernel_evaluates_the_usual_priors_and_pytensor_the_others(prior, family):
    # the kernel's prior term is checked against PyMC's on the whole grid when the step is
    # built; a family it does not know (or non-constant parameters) leaves the acceptance
    # test to a compiled PyTensor function. Either way alpha moves and stays in its support.
    x = _data()
    with pm.Model() as model:
        alpha = prior()
        z = pcrp.PowerCRP("z", alpha=alpha, power=1.3, n=len(x))
        pcrp.NIWMixture("x", z=z, prior=pcrp.NIWPrior.from_data(x), observed=x)
        value = model.rvs_to_values[alpha]
        step = pcrp.PCRPGibbs([z, alpha], rng=SEED)
    assert step.inputs.alpha is not None and step.inputs.alpha.family == family
    point = model.initial_point()
    values = []
    for _ in range(40):
        point, _ = step.step(point)
        values.append(float(point[value.name]))
    assert len(set(values)) > 10
    assert step.inputs.alpha.accepted > 0.9 * step.inputs.alpha.proposed  # the surrogate is close


def test_owned_alpha_log_joint_and_tables_follow_the_new_alpha():
    # The stat is the labels' and data's log density at the alpha the step returns, and the
    # sweep tables hold that alpha at the next draw (a fixed and a learned NIW scale).
    x = _data()
    fixed = pcrp.NIWPrior(mu0=x.mean(axis=0), kappa0=0.01, nu0=4.0, psi0=np.eye(2))
    for prior in (pcrp.NIWPrior.from_data(x), fixed):
        with pm.Model() as model:
            alpha = pm.Gamma("alpha", 2.0, 1.0)
            z = pcrp.PowerCRP("z", alpha=alpha, power=1.3, n=len(x))
            pcrp.NIWMixture("x", z=z, prior=prior, observed=x)
            step = pcrp.PCRPGibbs([z, alpha], rng=SEED)
        logp_terms = model.compile_logp(vars=[model["z"], model["x"]])
        point = model.initial_point()
        for _ in range(15):
            point, stats = step.step(point)
            expected = logp_terms({"z": point["z"], "alpha_log__": point["alpha_log__"]})
            assert stats[0]["log_joint"] == pytest.approx(expected, rel=1e-9)
            # the kernel keeps alpha beside the cached parameters, in the tables it moves
            inputs = step.inputs.arrays(point)
            log_alpha = float(step.inputs.alpha.log_alpha[0])
            assert log_alpha == pytest.approx(float(point["alpha_log__"]), abs=1e-12)
            params = inputs.params._replace(log_alpha=log_alpha)
            if inputs.scale is not None:  # the tables hold the chain's current nu0
                nu0 = float(inputs.scale.nu0s[inputs.scale.current[2]])
                params = params._replace(nu0=nu0)
            expected = sweep_tables(inputs.xc, params)[0]
            if inputs.scale is not None:
                new_cluster_log_weights(inputs.scale, params, inputs.tables[1][0], expected)
            np.testing.assert_allclose(inputs.tables[0], expected, rtol=1e-12, atol=1e-12)


def test_prior_only_unknown_family_recovers_its_prior():
    """The PyTensor acceptance path (a Weibull prior) is exact: no likelihood, alpha ~ prior."""
    n, chains, draws, thin = 12, 2, 2000, 4
    with pm.Model():
        alpha = pm.Weibull("alpha", 1.5, 2.0)
        pcrp.PowerCRP("z", alpha=alpha, power=1.3, n=n)
        idata = pm.sample(draws=draws, tune=300, chains=chains, cores=1, random_seed=SEED, **QUIET)
    a = idata.posterior["alpha"].values[:, ::thin].ravel()
    ks = scipy.stats.kstest(a, scipy.stats.weibull_min(1.5, scale=2.0).cdf)
    assert ks.pvalue > 1e-3, ks


def test_step_reads_alpha_from_the_point_every_step():
    n = 15
    with pm.Model():
        log_alpha = pm.Normal("log_alpha", 0.0, 1.0)
        z = pcrp.PowerCRP("z", alpha=pt.exp(log_alpha), power=1.2, n=n)
        step = pcrp.PCRPGibbs([z], init="point", rng=SEED)
    singletons = np.arange(n)
    one = np.zeros(n, dtype=np.int64)
    # A tiny alpha merges everything within a few dozen sweeps (from singletons, 6 sweeps
    # reach K = 1 in 73% of seeds, 20 sweeps in 400 of 400), a huge one splits
    # everything; alternating shows the step does not keep a stale alpha.
    for _ in range(2):
        point, _ = step.step({"log_alpha": np.array(-40.0), "z": singletons})
        for _ in range(30):
            point, stats = step.step(point)
        assert stats[0]["n_clusters"] == 1
        point, _ = step.step({"log_alpha": np.array(40.0), "z": one})
        for _ in range(5):
            point, stats = step.step(point)
        assert stats[0]["n_clusters"] == n


def test_log_joint_stat_equals_the_models_label_and_data_terms():
    x = _data()
    model = _model(x)
    with model:
        idata = pm.sample(draws=25, tune=10, chains=2, cores=1, random_seed=SEED, **QUIET)
    post = idata.posterior
    assert post["alpha"].shape == (2, 25)
    assert np.all(post["alpha"].values > 0)
    assert len(np.unique(post["alpha"].values)) > 10  # alpha moves
    logp_terms = model.compile_logp(vars=[model["z"], model["x"]])
    stats = idata.sample_stats["log_joint"].values
    for c, d in [(0, 0), (1, 24), (0, 13)]:
        a = float(post["alpha"].values[c, d])
        z = post["z"].values[c, d]
        expected = logp_terms({"z": z, "alpha_log__": np.log(a)})
        assert stats[c, d] == pytest.approx(expected, rel=1e-9)
        # the normaliser is what distinguishes it from the fixed-alpha stat
        assert log_normaliser(len(x), a, 1.3) > 1.0


def test_prior_only_model_recovers_the_gamma_prior_on_alpha_and_the_mixture_on_k():
    """Labels by PCRPGibbs and alpha by PCRPHyper, with no likelihood: the joint is the prior.

    So alpha must follow its Gamma(2, 1) prior and K the mixture
    sum_alpha p(K | alpha) p(alpha). Without the normaliser alpha's conditional
    would be Gamma(2 + K, 1) and both checks would fail by a wide margin.
    """
    n, r, chains, draws, thin = 20, 1.3, 2, 3000, 6
    with pm.Model():
        alpha = pm.Gamma("alpha", 2.0, 1.0)
        pcrp.PowerCRP("z", alpha=alpha, power=r, n=n)
        idata = pm.sample(draws=draws, tune=500, chains=chains, cores=1, random_seed=SEED, **QUIET)
    a = idata.posterior["alpha"].values[:, ::thin].ravel()
    k = idata.posterior["n_clusters"].values[:, ::thin].ravel()
    ks = scipy.stats.kstest(a, scipy.stats.gamma(2.0).cdf)
    assert ks.pvalue > 1e-3, ks

    mixture, _ = scipy.integrate.quad_vec(
        lambda x: pcrp.prior.prior_num_clusters(n, x, r) * scipy.stats.gamma.pdf(x, 2.0),
        0,
        np.inf,
        epsabs=1e-12,
    )
    observed = np.bincount(k, minlength=n + 1)
    keep = mixture * k.size >= 5
    expected = np.r_[mixture[keep], mixture[~keep].sum()] * k.size
    counts = np.r_[observed[keep], observed[~keep].sum()]
    pval = scipy.stats.chi2.sf(((counts - expected) ** 2 / expected).sum(), df=counts.size - 1)
    assert pval > 1e-3, (pval, counts, expected)


def test_owned_alpha_slice_width_is_an_option_and_part_of_the_sampling_state():
    model = _model(_data())
    with model:
        z, alpha = model["z"], model["alpha"]
        step = pcrp.PCRPGibbs([z, alpha], alpha_w=0.25, rng=SEED)
        assert step.alpha_w == 0.25 and step.alpha_n_tunes == 0
        point = model.initial_point()
        for _ in range(5):  # tuning adapts the width
            point, _ = step.step(point)
        state = step.sampling_state
        assert state.alpha_n_tunes == 5 and state.alpha_w == step.alpha_w != 0.25
        fresh = pcrp.PCRPGibbs([z, alpha], rng=SEED + 1)
        fresh.sampling_state = state  # a resumed run continues with the adapted move
        assert (fresh.alpha_w, fresh.alpha_n_tunes) == (state.alpha_w, 5)
        # pm.sample passes the option through (pcrp_hyper= is for alphas with their own step)
        idata = pm.sample(
            draws=5, tune=5, chains=1, random_seed=SEED, pcrp_gibbs={"alpha_w": 0.5}, **QUIET
        )
        assert idata.posterior["alpha"].shape == (1, 5)
        with pytest.raises(ValueError, match="alpha_w"):
            pcrp.PCRPGibbs([z, alpha], alpha_w=0.0)
    with pm.Model():  # a step without an alpha of its own reports none
        pcrp.PowerCRP("z", alpha=1.0, power=1.3, n=10)
        plain = pcrp.PCRPGibbs()
        assert np.isnan(plain.sampling_state.alpha_w) and plain.sampling_state.alpha_n_tunes == 0
