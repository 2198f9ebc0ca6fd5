"""PCRPGibbs(temper=...): the option, the models it refuses, its stats and the step contract.

Exactness is checked elsewhere: the kernels by enumeration in
``tests/_kernels/test_tempering.py``, the step through ``pm.sample`` in
``tests/statistical/test_tempering_enumeration.py``.
"""

import numpy as np
import pymc as pm
import pytest

import pymc_pcrp as pcrp


def _data(n=30, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 2))
    x[: n // 2, 0] += 4.0
    return x


def _prior(x):
    """The default prior with a fixed nu0 (= D + 2): tempering does not learn nu0."""
    return pcrp.NIWPrior.from_data(x, nu0=x.shape[1] + 2.0)


def _sample(x, temper, seed=1, draws=40, chains=1, **options):
    with pcrp.build_model(x, power=1.1, prior=_prior(x)):
        return pm.sample(
            draws=draws,
            tune=5,
            chains=chains,
            cores=1,
            random_seed=seed,
            progressbar=False,
            compute_convergence_checks=False,
            pcrp_gibbs={"temper": temper, **options},
        )


def test_swap_stats_and_reproducibility():
    x = _data()
    a = _sample(x, [1.0, 0.5, 0.2], chains=2)
    b = _sample(x, [1.0, 0.5, 0.2], chains=2)
    np.testing.assert_array_equal(a.posterior["z"].values, b.posterior["z"].values)
    stats = a.sample_stats
    assert (stats["swap_proposed"].values == 2).all()
    accepted = stats["swap_accepted"].values
    assert ((accepted >= 0) & (accepted <= 2)).all() and accepted.sum() > 0
    # the reported log joint is that of the returned labels, also after a swap into replica 0
    lj = stats["log_joint"].values
    z = a.posterior["z"].values
    for c in range(2):
        for t in range(0, z.shape[1], 7):
            again = _log_joint(x, z[c, t])
            assert lj[c, t] == pytest.approx(again, rel=1e-9)
    off = _sample(x, None)
    assert int(off.sample_stats["swap_proposed"].sum()) == 0
    assert int(off.sample_stats["swap_accepted"].sum()) == 0


def _log_joint(x, labels):
    from pymc_pcrp._kernels.hyper import make_scale_grid, partition_log_joint_scaled
    from pymc_pcrp._kernels.partitions import canonical_labels
    from pymc_pcrp._kernels.state import make_params

    prior = _prior(x)
    grid, log_w = prior.grid_arrays()
    xc = np.ascontiguousarray(x - prior.mu0)
    params = make_params(1.0, 1.1, prior.kappa0, prior.nu0, prior.psi0)
    scale = make_scale_grid(xc, prior.psi0, grid, log_w, prior.nu0)
    return partition_log_joint_scaled(xc, canonical_labels(labels), params, scale)


def test_integer_ladder_and_fixed_scale_prior():
    x = _data(seed=2)
    prior = pcrp.NIWPrior(mu0=np.zeros(2), kappa0=0.1, nu0=4.0, psi0=np.eye(2))
    with pcrp.build_model(x, power=1.0, prior=prior):
        idata = pm.sample(
            draws=20,
            tune=0,
            chains=1,
            random_seed=3,
            progressbar=False,
            compute_convergence_checks=False,
            pcrp_gibbs={"temper": 4},
        )
    assert (idata.sample_stats["swap_proposed"].values == 3).all()
    assert (idata.sample_stats["niw_scale"].values == 1.0).all()


@pytest.mark.parametrize("temper", [1, 0, [0.5, 0.2], [1.0, 1.0], [1.0, -0.1], "hot", True])
def test_bad_ladders_are_refused(temper):
    with pcrp.build_model(_data(), power=1.1) as model:
        with pytest.raises(ValueError, match="temper"):
            pcrp.PCRPGibbs([model["z"]], temper=temper)


def test_random_alpha_and_no_likelihood_are_refused():
    with pm.Model():
        alpha = pm.Gamma("alpha", 2.0, 1.0)
        z = pcrp.PowerCRP("z", alpha=alpha, power=1.0, n=10)
        pcrp.NIWMixture("x", z=z, prior=_prior(_data(10)), observed=_data(10))
        with pytest.raises(ValueError, match="fixed alpha"):
            pcrp.PCRPGibbs([z, alpha], temper=3)
    with pm.Model():
        z = pcrp.PowerCRP("z", alpha=1.0, power=1.0, n=10)
        with pytest.raises(ValueError, match="likelihood"):
            pcrp.PCRPGibbs([z], temper=3)


def test_learned_nu0_is_refused_with_the_fix():
    with pcrp.build_model(_data(), power=1.1) as model:  # the default prior learns nu0
        with pytest.raises(ValueError, match=r"learned nu0.*nu0=D \+ 2"):
            pcrp.PCRPGibbs([model["z"]], temper=3)


def test_diagonal_family_is_refused():
    x = _data()
    with pcrp.build_model(x, power=1.1, prior=pcrp.NIWPrior.from_data(x, covariance="diag")) as m:
        with pytest.raises(ValueError, match="covariance='diag'"):
            pcrp.PCRPGibbs([m["z"]], temper=3)


def _table(n=40, seed=2):
    import pandas as pd

    rng = np.random.default_rng(seed)
    group = rng.integers(0, 2, size=n)
    flag = rng.random(n) < np.where(group == 1, 0.9, 0.1)
    value = rng.normal(3.0 * group, 1.0)
    value[::7] = np.nan  # missing cells are integrated out by the hot replicas too
    return pd.DataFrame({"flag": flag, "value": value})


def test_table_family_tempers_and_reports_the_log_joint_of_its_labels():
    df = _table()
    kw = {"draws": 60, "tune": 5, "chains": 2, "cores": 1, "random_seed": 4}
    options = {"temper": 3}
    a = pcrp.fit(df, power=1.1, progressbar=False, pcrp_gibbs=options, **kw)
    b = pcrp.fit(df, power=1.1, progressbar=False, pcrp_gibbs=options, **kw)
    np.testing.assert_array_equal(a.posterior["z"].values, b.posterior["z"].values)
    stats = a.sample_stats
    assert (stats["swap_proposed"].values == 2).all()
    assert int(stats["swap_accepted"].sum()) > 0
    assert int(stats["jump_proposed"].sum()) == 0  # template jumps are off with tempering
    # The log joint is a function of the labels: also after a swap into replica 0
    # (when it is recomputed from the swapped-in labels), equal labels give equal values.
    z = a.posterior["z"].values.reshape(-1, len(df))
    lj = stats["log_joint"].values.reshape(-1)
    seen: dict[bytes, float] = {}
    for labels, value in zip(z, lj, strict=True):
        first = seen.setdefault(labels.tobytes(), float(value))
        assert value == pytest.approx(first, rel=1e-9)
    assert len(seen) > 1
