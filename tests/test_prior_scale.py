"""Priors whose scale the data's sums of squares would swamp are refused up front (issue 13, 6).

Each case used to reach the kernel and stop with ``FloatingPointError: posterior
scale matrix lost positive definiteness``; now building the step (which
``pm.sample`` does before any draw) refuses it by name, or it runs. The model
itself accepts these priors: its log density takes each cluster's scatter about
its own mean and keeps its digits (tests/distributions/test_niw.py); the step's
running sums of squares about ``mu0`` cannot.
"""

import numpy as np
import pymc as pm
import pytest

import pymc_pcrp as pcrp

from pymc_pcrp._validation import MAX_SCATTER_OVER_PSI0, check_prior_scale

RNG = np.random.default_rng(1313)
TOO_SMALL = r"Argument 'prior': psi0 .*is too small for these data for PCRPGibbs.*Standardise"


def _model(x, prior, data=None):
    with pm.Model() as model:
        xd = pm.Data("xd", x) if data is not None else x
        z = pcrp.PowerCRP("z", alpha=1.0, power=1.0, n=len(x))
        pcrp.NIWMixture("x", z=z, prior=prior, observed=xd)
    return model


def _step(x, prior):
    """Build the model and its step (what pm.sample does before the first draw)."""
    model = _model(x, prior)
    with model:
        return pcrp.PCRPGibbs([model["z"]])


def _prior(x, psi0, mu0=None):
    mu0 = x.mean(axis=0) if mu0 is None else mu0
    return pcrp.NIWPrior(mu0=mu0, kappa0=0.01, nu0=x.shape[1] + 2.0, psi0=psi0)


def _far_centres(gap):
    return np.concatenate([RNG.normal(size=(50, 2)), RNG.normal(size=(50, 2)) + gap])


def _identical_points():
    return np.concatenate([np.full((100, 2), 0.3), RNG.normal(size=(100, 2))])


@pytest.mark.parametrize(
    ("x", "psi0"),
    [
        (_far_centres(1e8), np.eye(2)),  # centres 1e8 apart, psi0 = I
        (_identical_points(), 1e-16 * np.eye(2)),  # identical points, psi0 <= 1e-16 I
        (_identical_points(), 1e-20 * np.eye(2)),
        (RNG.normal(size=(100, 2)), 1e-300 * np.eye(2)),  # psi0 = 1e-300 I
    ],
    ids=["centres-1e8", "identical-1e-16", "identical-1e-20", "psi0-1e-300"],
)
def test_prior_too_small_for_the_data_is_refused_when_the_step_is_built(x, psi0):
    with pytest.raises(ValueError, match=TOO_SMALL):
        _step(x, _prior(x, psi0))


def test_one_outlier_far_beyond_a_unit_prior_is_refused():
    x = RNG.normal(size=(100, 2))
    x[0, 0] = 1e90
    with pytest.raises(ValueError, match=TOO_SMALL):
        _step(x, _prior(x, np.eye(2), mu0=np.zeros(2)))
    x[0, 0] = 1e150  # beyond what sums of squares can hold at all
    with pytest.raises(ValueError, match=r"Argument 'observed' has column\(s\) \[0\]"):
        _model(x, _prior(x, np.eye(2), mu0=np.zeros(2)))
    with pytest.raises(ValueError, match=r"Argument 'X' has column\(s\) \[0\]"):
        pcrp.NIWPrior.from_data(x)


def test_a_learned_scale_is_checked_at_its_smallest_grid_value():
    x = _far_centres(1e6)
    base = _prior(x, np.eye(2))
    fine = pcrp.NIWPrior(base.mu0, base.kappa0, base.nu0, base.psi0, scale_grid=[1.0, 10.0])
    _step(x, fine)
    tiny = pcrp.NIWPrior(base.mu0, base.kappa0, base.nu0, base.psi0, scale_grid=[1e-6, 1.0])
    with pytest.raises(ValueError, match=r"psi0 \(times its smallest scale 1e-06\)"):
        _step(x, tiny)


@pytest.mark.parametrize(
    ("x", "psi0"),
    [(_far_centres(1e6), np.eye(2)), (_identical_points(), 1e-12 * np.eye(2))],
    ids=["centres-1e6", "identical-1e-12"],
)
def test_cases_inside_the_limit_sample_with_a_finite_log_joint(x, psi0):
    """Just inside the limit (sums of squares about 5e13 and 2e14 units of psi0) the step runs."""
    with _model(x, _prior(x, psi0)):
        idata = pm.sample(
            draws=20,
            tune=0,
            chains=1,
            progressbar=False,
            random_seed=3,
            compute_convergence_checks=False,
        )
    assert np.all(np.isfinite(idata.sample_stats["log_joint"].values))


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (
            np.nan,  # pm.Data masks it: a missing value
            r"Argument 'observed' is a masked array with 1 masked \(missing\) value\(s\), "
            r"first in row\(s\) \[3\]",
        ),
        (1e200, r"Argument 'observed' has column\(s\) \[1\] with values above"),
        (1e9, TOO_SMALL),
    ],
)
def test_data_brought_in_by_set_data_are_checked_by_the_step(bad, message):
    x = RNG.normal(size=(40, 2))
    model = _model(x, _prior(x, np.eye(2)), data=True)
    new = x.copy()
    new[3, 1] = bad
    with model:
        step = pcrp.PCRPGibbs([model["z"]])  # built on the good data
        point = model.initial_point()
        pm.set_data({"xd": new})
        with pytest.raises(ValueError, match=message):
            step.step(point)
        with pytest.raises(ValueError, match=message):
            pcrp.PCRPGibbs([model["z"]])


def test_the_limit_is_a_sum_over_points_in_units_of_psi0():
    x = np.zeros((4, 2))
    x[:, 0] = [1.0, -1.0, 2.0, -2.0]  # sum of squares 10
    psi0 = np.diag([10.0 / MAX_SCATTER_OVER_PSI0, 1.0])
    check_prior_scale(x, np.zeros(2), psi0 * 1.01)  # just inside the limit
    with pytest.raises(ValueError, match=r"is 1.1e\+15, above 1e\+15"):
        check_prior_scale(x, np.zeros(2), psi0 / 1.1)
