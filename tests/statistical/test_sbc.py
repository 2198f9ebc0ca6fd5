"""Simulation-based calibration, end to end: forward samplers, model and step agree.

Each replicate draws labels from ``PowerCRP``'s exact prior sampler and data from
``NIWMixture``'s forward sampler (``pm.draw``), then runs ``PCRPGibbs`` on those
data and ranks the true value of a statistic (the number of clusters, and the log joint
density, which is a function of labels and data) among the posterior draws. If the
forward samplers, the log density and the step target the same joint, the
ranks are uniform (Talts et al., 2018). Ties (K is discrete) are broken at
random.
"""

import numpy as np
import pymc as pm
import pytest
import scipy.stats

import pymc_pcrp as pcrp

SEED = sum(ord(c) for c in "test_sbc")
N_POINTS = 8
REPLICATES = 400
DRAWS = 49  # ranks take values 0..49
THIN = 3


def _rank(rng, true_value, draws):
    # The log joint of the truth (PyTensor) and of the draws (numba) agree to
    # ~1e-12, not bitwise: equal partitions must count as ties, not as order.
    tie = np.isclose(draws, true_value, rtol=1e-9, atol=1e-9)
    below = np.sum((draws < true_value) & ~tie)
    return below + rng.integers(0, tie.sum() + 1)


@pytest.mark.parametrize(
    ("alpha", "r", "learned"), [(1.0, 1.0, False), (1.0, 1.8, False), (1.0, 1.3, True)]
)
def test_ranks_of_n_clusters_and_log_joint_are_uniform(alpha, r, learned):
    # learned: the NIW scale has a grid prior; the forward sampler draws it, the model
    # integrates it out and the step samples it with the labels.
    rng = np.random.default_rng(SEED + int(10 * r))
    grid = {"scale_grid": [0.1, 0.3, 1.0, 3.0, 10.0]} if learned else {}
    prior = pcrp.NIWPrior(mu0=np.zeros(2), kappa0=0.2, nu0=4.0, psi0=np.eye(2), **grid)
    with pm.Model() as model:
        data = pm.Data("data", np.zeros((N_POINTS, 2)))
        z = pcrp.PowerCRP("z", alpha=alpha, power=r, n=N_POINTS)
        x = pcrp.NIWMixture("x", z=z, prior=prior, observed=data)
    forward = pm.compile([], [z, x], random_seed=SEED + int(10 * r))
    with model:
        step = pcrp.PCRPGibbs([model.rvs_to_values[z]], sweeps_per_draw=THIN, init="prior", rng=rng)
    logp = model.compile_logp()
    ranks_k, ranks_lj = [], []
    for _ in range(REPLICATES):
        z_true, x_true = forward()
        data.set_value(x_true)
        step.set_rng(rng)
        point = {"z": z_true}
        k_draws, lj_draws = [], []
        for _ in range(DRAWS + 5):
            point, stats = step.step(point)
            k_draws.append(stats[0]["n_clusters"])
            lj_draws.append(stats[0]["log_joint"])
        k_draws, lj_draws = np.array(k_draws[5:]), np.array(lj_draws[5:])
        ranks_k.append(_rank(rng, z_true.max() + 1, k_draws))
        ranks_lj.append(_rank(rng, logp({"z": z_true}), lj_draws))
    for ranks in (ranks_k, ranks_lj):
        counts = np.bincount(np.array(ranks) // 5, minlength=10)
        pval = scipy.stats.chisquare(counts).pvalue
        assert pval > 1e-3, counts
