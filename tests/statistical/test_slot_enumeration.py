"""PowerCRP(max_clusters=K) through ``pm.sample`` against exact enumeration.

1. A Poisson mixture with Gamma rates and ``max_clusters >= N``: the labels are
   updated by :class:`~pymc_pcrp.PCRPSlotGibbs`, the rates by NUTS, and the
   visit frequencies of the partitions are compared with the exact collapsed
   posterior ``p(partition | y) ∝ alpha^k prod Gamma(n_j)^r prod_j m(y_j)``,
   ``m`` the Gamma-Poisson marginal of a block: with ``K >= N`` the truncation
   removes nothing, so this is the untruncated pCRP posterior.
2. No data and ``max_clusters = 2``: the visit frequencies of the 2^5 slot label
   vectors against the exact truncated prior (labellings included).

Each is paired with a deliberately wrong kernel (a wrapper of the shipped one,
built here) that the same test must catch: the power left out of the occupied
slots' weights, and the empty slots' weight doubled. The thresholds on the total
variation distance (TV) were set from a run of
``PYTHONPATH=tests python tests/statistical/test_slot_enumeration.py``, which
prints the TV of every case. On 2026-12-02 it printed 0.0139-0.0142 for the
Poisson mixture (3 seeds) and 0.105 for its wrong kernel; 0.0075-0.0129 for the
prior (3 seeds) and 0.169 for its wrong kernel.
"""

import itertools
import math

import numpy as np
import pymc as pm
import pytest
import scipy.special

from enumeration import log_pcrp_prior_unnorm, set_partitions

import pymc_pcrp as pcrp

from pymc_pcrp._kernels import slot_gibbs
from pymc_pcrp.step_methods import pcrp_slots

SEED = sum(ord(c) for c in "test_slot_enumeration")
Y = np.array([0, 1, 5, 6, 14])
A, B = 2.0, 0.5  # Gamma(shape, rate) prior of the rates
ALPHA, POWER = 1.0, 1.5
CHAINS = 4
POSTERIOR_DRAWS = 5_000
PRIOR_DRAWS = 10_000
#: TV above which a sampler is declared wrong (see the module docstring)
POSTERIOR_TV = 0.05
PRIOR_TV = 0.03


def _log_marginal(y):
    """log of the Gamma(A, B)-Poisson marginal likelihood of one block of counts."""
    s, n = y.sum(), y.size
    return (
        A * math.log(B)
        - math.lgamma(A)
        + math.lgamma(A + s)
        - (A + s) * math.log(B + n)
        - scipy.special.gammaln(y + 1).sum()
    )


def exact_partition_posterior(y, alpha, r):
    """Map each canonical partition of ``y`` to its exact posterior probability."""
    parts = list(set_partitions(len(y)))
    log_p = np.array(
        [
            log_pcrp_prior_unnorm(p, alpha, r)
            + sum(_log_marginal(y[p == k]) for k in range(p.max() + 1))
            for p in parts
        ]
    )
    probs = np.exp(log_p - scipy.special.logsumexp(log_p))
    return {tuple(int(v) for v in p): q for p, q in zip(parts, probs, strict=True)}


def _canonical(labels):
    """Relabel each row by order of first appearance."""
    out = np.empty_like(labels)
    for row, new in zip(labels, out, strict=True):
        _, first, inverse = np.unique(row, return_index=True, return_inverse=True)
        rank = np.argsort(np.argsort(first))
        new[:] = rank[inverse]
    return out


def _tv(freq, exact):
    keys = set(freq) | set(exact)
    return 0.5 * sum(abs(freq.get(k, 0.0) - exact.get(k, 0.0)) for k in keys)


def _frequencies(rows):
    keys, counts = np.unique(rows, axis=0, return_counts=True)
    total = rows.shape[0]
    return {tuple(int(v) for v in k): c / total for k, c in zip(keys, counts, strict=True)}


def _sample(model, draws, seed):
    with model:
        idata = pm.sample(
            draws=draws,
            tune=500,
            chains=CHAINS,
            cores=1,
            random_seed=seed,
            progressbar=False,
            compute_convergence_checks=False,
            pcrp_slot_gibbs={"sweeps_per_draw": 3},
        )
    return idata.posterior["z"].values.reshape(-1, model["z"].owner.inputs[4].data.item())


def posterior_tv(seed):
    """TV between the sampled and the exact partition posterior of the Poisson mixture."""
    k_max = len(Y)
    with pm.Model() as model:
        z = pcrp.PowerCRP("z", alpha=ALPHA, power=POWER, n=len(Y), max_clusters=k_max)
        lam = pm.Gamma("lam", A, B, shape=k_max)
        pm.Poisson("y", lam[z], observed=Y)
    rows = _sample(model, POSTERIOR_DRAWS, seed)
    return _tv(_frequencies(_canonical(rows)), exact_partition_posterior(Y, ALPHA, POWER))


def prior_tv(seed):
    """TV between sampled and exact slot label vectors of the prior with max_clusters=2."""
    n, k_max = 5, 2
    with pm.Model() as model:
        pcrp.PowerCRP("z", alpha=ALPHA, power=POWER, n=n, max_clusters=k_max)
    logp = model.compile_logp()
    support = [np.array(t, dtype=np.int16) for t in itertools.product(range(k_max), repeat=n)]
    exact = {tuple(int(v) for v in t): float(np.exp(logp({"z": t}))) for t in support}
    rows = _sample(model, PRIOR_DRAWS, seed)
    return _tv(_frequencies(rows), exact)


def _power_left_out(rng, labels, loglik, log_alpha, power, order):
    """Wrong kernel: occupied slots weighted by n_k, not n_k^r."""
    return slot_gibbs.slot_gibbs_sweep(rng, labels, loglik, log_alpha, 1.0, order)


def _empty_slots_doubled(rng, labels, loglik, log_alpha, power, order):
    """Wrong kernel: each empty slot weighted by 2 alpha / (K - K_-i)."""
    return slot_gibbs.slot_gibbs_sweep(rng, labels, loglik, log_alpha + math.log(2.0), power, order)


def test_poisson_mixture_reaches_the_exact_partition_posterior():
    assert posterior_tv(SEED) < POSTERIOR_TV


def test_power_left_out_is_detected(monkeypatch):
    monkeypatch.setattr(pcrp_slots, "slot_gibbs_sweep", _power_left_out)
    assert posterior_tv(SEED) > POSTERIOR_TV


@pytest.mark.parametrize("seed", [SEED, SEED + 1])
def test_labels_without_data_follow_the_exact_truncated_prior(seed):
    assert prior_tv(seed) < PRIOR_TV


def test_doubled_empty_slot_weight_is_detected(monkeypatch):
    monkeypatch.setattr(pcrp_slots, "slot_gibbs_sweep", _empty_slots_doubled)
    assert prior_tv(SEED) > PRIOR_TV


if __name__ == "__main__":
    import time

    for name, fn in (("posterior", posterior_tv), ("prior", prior_tv)):
        for seed in (SEED, SEED + 1, SEED + 2):
            start = time.perf_counter()
            print(f"{name} seed={seed} tv={fn(seed):.4f} ({time.perf_counter() - start:.1f} s)")
    for name, fn, wrong in (
        ("posterior", posterior_tv, _power_left_out),
        ("prior", prior_tv, _empty_slots_doubled),
    ):
        pcrp_slots.slot_gibbs_sweep, real = wrong, pcrp_slots.slot_gibbs_sweep
        print(f"{name} wrong kernel {wrong.__name__}: tv={fn(SEED):.4f}")
        pcrp_slots.slot_gibbs_sweep = real
