"""Parallel tempering through ``pm.sample`` against exact enumeration.

``PCRPGibbs(temper=[1, 0.6, 0.3])``: the chain's own state (replica 0) is the one
``pm.sample`` records, and its partition frequencies over 4 chains of 40,000 draws
must be within total variation 0.02 of the exact posterior, as in
``test_exact_enumeration.py`` (fixed NIW scale) and ``test_scale_hyperprior.py``
(learned scale on a coarse grid, where the scale's frequencies are checked too).
The kernel-level checks, including a hot replica against the tempered posterior
and wrong swap ratios, are in ``tests/_kernels/test_tempering.py``. The table
family's hot replicas (``_kernels/family_tempering.py``) are checked here on the
N = 5 mixed table with missing cells of ``tests/table_reference.py``, with two
wrong swap tests (the ratio's sign flipped, every swap accepted) that must be caught.
"""

from unittest import mock

import numpy as np
import pymc as pm
import pytest

from enumeration import ENUMERATION_SWEEPS_PER_DRAW, exact_posterior, exact_posterior_scaled
from table_reference import mixed_table_5, partition_tv, table_posterior

import pymc_pcrp as pcrp

from pymc_pcrp.sampler import tempering as sampler_tempering

DRAWS = 40_000
CHAINS = 4
BETAS = [1.0, 0.6, 0.3]


def _data(n, d, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    x[: n // 2] += 2.5
    return x[:, 0] if d == 1 else x


def _prior(d, scaled):
    extra = {}
    if scaled:
        extra = {
            "scale_grid": np.array([0.05, 0.2, 0.5, 1.0, 2.0, 5.0]),
            "scale_log_weights": np.log(np.array([1.0, 2.0, 1.0, 3.0, 1.0, 1.0])),
        }
    return pcrp.NIWPrior(mu0=np.zeros(d), kappa0=0.5, nu0=d + 1.0, psi0=0.5 * np.eye(d), **extra)


def _tempered_idata(n, alpha, r, likelihood, seed, draws, chains):
    """``pm.sample`` of a tempered chain for ``PowerCRP`` + ``likelihood(z)``."""
    with pm.Model():
        z = pcrp.PowerCRP("z", alpha=alpha, power=r, n=n)
        likelihood(z)
        return pm.sample(
            draws=draws,
            tune=100,
            chains=chains,
            cores=1,
            random_seed=seed,
            progressbar=False,
            compute_convergence_checks=False,
            pcrp_gibbs={"temper": BETAS, "sweeps_per_draw": ENUMERATION_SWEEPS_PER_DRAW},
        )


def _swap_rate(idata):
    stats = idata.sample_stats
    return float(stats["swap_accepted"].sum() / stats["swap_proposed"].sum())


def _sample(x, prior, alpha, r, seed):
    def likelihood(z):
        pcrp.NIWMixture("x", z=z, prior=prior, observed=x)

    idata = _tempered_idata(len(x), alpha, r, likelihood, seed, DRAWS, CHAINS)
    stats = idata.sample_stats
    assert int(stats["swap_proposed"].sum()) == CHAINS * DRAWS * (len(BETAS) - 1)
    labels = idata.posterior["z"].values.reshape(-1, len(x))
    return labels, stats["niw_scale"].values.reshape(-1), _swap_rate(idata)


def _tv_of_partitions(labels, partitions, probs):
    keys, counts = np.unique(labels, axis=0, return_counts=True)
    total = labels.shape[0]
    freq = {tuple(int(v) for v in k): c / total for k, c in zip(keys, counts, strict=True)}
    assert set(freq) <= set(partitions)
    return 0.5 * np.abs(np.array([freq.get(p, 0.0) for p in partitions]) - probs).sum()


def test_tempered_chain_matches_exact_posterior():
    n, d, alpha, r = 6, 2, 1.0, 1.5
    seed = 4242
    x = _data(n, d, seed)
    prior = _prior(d, False)
    partitions, probs = exact_posterior(x, alpha, r, prior.mu0, prior.kappa0, prior.nu0, prior.psi0)
    labels, _, rate = _sample(x, prior, alpha, r, seed)
    tv = _tv_of_partitions(labels, partitions, probs)
    assert tv < 0.02, f"total variation {tv:.4f} between the tempered sampler and the posterior"
    assert 0.05 < rate < 0.95


@pytest.mark.parametrize("d", [1, 2])
def test_tempered_chain_with_a_learned_scale_matches_exact_posterior(d):
    n, alpha, r = 5, 2.0, 1.0
    seed = 4343 + d
    x = _data(n, d, seed)
    prior = _prior(d, True)
    grid, log_w = prior.grid_arrays()
    partitions, pz, ps = exact_posterior_scaled(
        x, alpha, r, prior.mu0, prior.kappa0, prior.nu0, prior.psi0, grid, log_w
    )
    labels, scales, rate = _sample(x, prior, alpha, r, seed)
    tv = _tv_of_partitions(labels, partitions, pz)
    s_freq = np.array([np.mean(np.isclose(scales, s)) for s in grid])
    tv_s = 0.5 * np.abs(s_freq - ps).sum()
    assert tv < 0.02, f"TV(z) {tv:.4f}"
    assert tv_s < 0.02, f"TV(s) {tv_s:.4f}"
    assert 0.05 < rate < 0.95


def _sample_table(df, columns, alpha, r, seed):
    def likelihood(z):
        pcrp.TableMixture("x", z=z, columns=columns, observed=df)

    idata = _tempered_idata(len(df), alpha, r, likelihood, seed, draws=10_000, chains=2)
    return idata, _swap_rate(idata)


def test_tempered_table_chain_matches_exact_posterior():
    (df, columns), alpha, r = mixed_table_5(), 1.0, 1.1
    parts, probs = table_posterior(df, columns, alpha, r)
    idata, rate = _sample_table(df, columns, alpha, r, seed=46)
    tv = partition_tv(idata, parts, probs)
    assert tv < 0.02, f"total variation {tv:.4f} between the tempered table chain and the posterior"
    assert 0.05 < rate < 0.95


@pytest.mark.parametrize(
    "wrong_ratio",
    [lambda bi, bj, li, lj: (bi - bj) * (li - lj), lambda bi, bj, li, lj: 0.0],
    ids=["sign-flipped", "always-accepted"],
)
def test_wrong_swaps_of_the_table_family_are_detected(wrong_ratio):
    (df, columns), alpha, r = mixed_table_5(), 1.0, 1.1
    parts, probs = table_posterior(df, columns, alpha, r)
    with mock.patch.object(sampler_tempering, "swap_log_ratio", wrong_ratio):
        idata, _ = _sample_table(df, columns, alpha, r, seed=47)
    tv = partition_tv(idata, parts, probs)
    assert tv > 0.1, f"a wrong swap test is only {tv:.4f} from the exact posterior"
