"""PCRPGibbs with a random alpha (drawn by PCRPHyper): assignment, reading alpha, joint prior."""

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
import scipy.integrate
import scipy.stats

from pymc.sampling.mcmc import assign_step_methods

import pymc_pcrp as pcrp

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


def test_pm_sample_assigns_gibbs_to_labels_and_pcrp_hyper_to_alpha():
    model = _model(_data())
    with model:
        provided, selected = assign_step_methods(model)
    assert provided == []
    assert selected == {
        pcrp.PCRPGibbs: [model.rvs_to_values[model["z"]]],
        pcrp.PCRPHyper: [model.rvs_to_values[model["alpha"]]],
    }


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
