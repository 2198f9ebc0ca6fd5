"""NIW kernels against direct formulas: marginal likelihood and predictive, in absolute terms."""

import numpy as np
import pytest
import scipy.stats

from kernel_reference import conditional_log_weights
from reference import niw_log_marginal, niw_log_predictive

from pymc_pcrp._kernels.niw import (
    cholesky_lower,
    log_det_chol,
    log_marginal_from_logdet,
    log_multigamma,
    scale_matrix,
)
from pymc_pcrp._kernels.partitions import canonical_labels
from pymc_pcrp._kernels.sweep import init_state, make_params

SEED = sum(ord(c) for c in "test_niw_kernels")


def _prior(d, rng):
    a = rng.normal(size=(d, d))
    return rng.normal(size=d), 0.4, d + 0.7, a @ a.T + np.eye(d)


@pytest.mark.parametrize("d", [1, 2, 3])
@pytest.mark.parametrize("n", [0, 1, 2, 7])
def test_log_marginal_matches_formula(d, n):
    rng = np.random.default_rng(SEED + 10 * d + n)
    mu0, kappa0, nu0, psi0 = _prior(d, rng)
    x = rng.normal(size=(n, d)) * 3.0 + 5.0
    xc = x - mu0
    psi_n = np.empty((d, d))
    scale_matrix(n, xc.sum(0), xc.T @ xc, kappa0, psi0, psi_n)
    chol = np.zeros((d, d))
    assert cholesky_lower(psi_n, chol)
    chol0 = np.zeros((d, d))
    cholesky_lower(psi0, chol0)
    got = log_marginal_from_logdet(n, log_det_chol(chol), d, kappa0, nu0, log_det_chol(chol0))
    assert got == pytest.approx(niw_log_marginal(x, mu0, kappa0, nu0, psi0), rel=1e-11, abs=1e-11)


def test_log_multigamma_matches_scipy():
    for d in (1, 2, 5):
        for a in (2.5, 3.1, 10.0):
            assert log_multigamma(a, d) == pytest.approx(scipy.special.multigammaln(a, d))


@pytest.mark.parametrize("d", [1, 2, 4])
def test_kernel_weights_are_prior_times_predictive(d):
    """Each log weight is log(n_k^r) + log predictive, or log(alpha) + log prior predictive."""
    rng = np.random.default_rng(SEED + d)
    mu0, kappa0, nu0, psi0 = _prior(d, rng)
    alpha, r = 0.7, 1.6
    x = rng.normal(size=(10, d)) * 2.0
    labels = canonical_labels(rng.integers(0, 3, size=10))
    params = make_params(alpha, r, kappa0, nu0, psi0)
    state = init_state(x - mu0, labels, params)
    for i in (0, 4, 9):
        slots, logw = conditional_log_weights(x - mu0, state, params, i)
        others = np.arange(10) != i
        for slot, w in zip(slots, logw, strict=True):
            if slot == -1:
                expected = np.log(alpha) + niw_log_predictive(x[i], x[:0], mu0, kappa0, nu0, psi0)
            else:
                members = others & (labels == slot)
                expected = r * np.log(members.sum()) + niw_log_predictive(
                    x[i], x[members], mu0, kappa0, nu0, psi0
                )
            assert w == pytest.approx(expected, rel=1e-10, abs=1e-10)


def test_one_d_predictive_is_scipy_student_t():
    rng = np.random.default_rng(SEED)
    x = rng.normal(size=6)
    mu0, kappa0, nu0, psi0 = np.array([0.5]), 2.0, 3.0, np.array([[1.5]])
    params = make_params(1.0, 1.0, kappa0, nu0, psi0)
    labels = np.zeros(6, dtype=np.int64)
    state = init_state((x - mu0)[:, None], labels, params)
    _, logw = conditional_log_weights((x - mu0)[:, None], state, params, 0)
    rest = x[1:]
    n = rest.size
    kappa_n, nu_n = kappa0 + n, nu0 + n
    mu_n = (kappa0 * mu0[0] + rest.sum()) / kappa_n
    psi_n = (
        psi0[0, 0]
        + ((rest - rest.mean()) ** 2).sum()
        + kappa0 * n / kappa_n * (rest.mean() - mu0[0]) ** 2
    )
    scale = np.sqrt(psi_n * (kappa_n + 1) / (kappa_n * nu_n))
    expected = np.log(n) + scipy.stats.t(df=nu_n, loc=mu_n, scale=scale).logpdf(x[0])
    assert logw[0] == pytest.approx(expected, rel=1e-10)
