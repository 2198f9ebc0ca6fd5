"""Where the log joint of a true two-Gaussian split crosses the one-block partition's.

docs/model.md (large-N heuristic) predicts that at large N the posterior keeps a true split of
two Gaussians while ``G > (r - 1) H`` (threshold ``r = 1 + G/H``). For one
partition, the true one, the log joint difference against the one-block
partition is ``N (G - r H) + O(log N)`` (docs/theory.md), so it changes sign
near ``r = G/H``, one unit below that threshold; the ``- 1`` of the heuristic
comes only from the entropy of the many partitions the data cannot tell apart,
which is small for well separated components. ``validation/theory_r.py``
measures this over many data sets; this test checks one.

Measured spread (``validation/theory_r.py threshold``, 20 data sets of
N = 2000 for these components): the crossing is ``G/H - 0.02`` on average
with standard deviation 0.02. The tolerance 0.1 is four standard deviations
plus the bias; the heuristic's threshold is 1.0 away.
"""

import math

import numpy as np

import pymc_pcrp as pcrp

from pymc_pcrp._kernels.sweep import init_state, log_joint, make_params

N = 2000
SEED = 20260102
MEANS = np.array([[-3.0, 0.0], [3.0, 0.0]])


def _log_joint(xc, labels, prior, r):
    params = make_params(1.0, r, prior.kappa0, prior.nu0, prior.psi0)
    return float(log_joint(init_state(xc, labels, params), params, xc.shape[1]))


def test_true_split_log_joint_changes_sign_near_g_over_h():
    rng = np.random.default_rng(SEED)
    z = np.repeat([0, 1], N // 2).astype(np.int64)
    x = MEANS[z] + rng.standard_normal((N, 2))  # unit covariances, p = (1/2, 1/2)
    prior = pcrp.NIWPrior.from_data(x, nu0=4.0)  # nu0 = D + 2 fixed: the log joint at one nu0
    xc = np.ascontiguousarray(x - prior.mu0)
    # Sigma_total = I + diag(9, 0): G = 1/2 log 10, H = log 2.
    g, h = 0.5 * math.log(10.0), math.log(2.0)
    ones = np.zeros(N, dtype=np.int64)

    def gap(r):
        return _log_joint(xc, z, prior, r) - _log_joint(xc, ones, prior, r)

    assert gap(g / h - 0.1) > 0
    assert gap(g / h + 0.1) < 0
    # At the heuristic's threshold the true split is already worse by about N H nats.
    assert gap(1 + g / h) < -0.5 * N * h
