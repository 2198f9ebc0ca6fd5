"""PCRPGibbs(template_jumps=..., templates=...): the options, the automatic rule, the stats.

The move itself is checked against exact enumeration in
``tests/_kernels/test_template_jumps.py``, and through ``pm.sample`` with given
templates in ``tests/statistical/test_exact_enumeration.py``.
"""

import numpy as np
import pymc as pm
import pytest

import pymc_pcrp as pcrp

from pymc_pcrp.sampler import templates as _templates
from pymc_pcrp.sampler.options import TEMPLATE_JUMPS, TEMPLATE_WORK, auto_template_jumps


def _data(n=30, seed=0, shift=4.0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 2))
    x[: n // 2, 0] += shift
    return x


def _templates_of(n=30):
    truth = np.repeat([0, 1], n // 2)
    moved = truth.copy()
    moved[:6] = 1  # six points in the other cluster: a distinct template
    return [truth, moved]


def _sample(x, seed=1, draws=40, chains=1, tune=5, **options):
    with pcrp.build_model(x, power=1.1):
        return pm.sample(
            draws=draws,
            tune=tune,
            chains=chains,
            cores=1,
            random_seed=seed,
            progressbar=False,
            compute_convergence_checks=False,
            discard_tuned_samples=False,
            pcrp_gibbs=options,
        )


def _log_joint(x, labels):
    from pymc_pcrp._kernels.hyper import make_scale_grid, partition_log_joint_scaled
    from pymc_pcrp._kernels.partitions import canonical_labels
    from pymc_pcrp._kernels.state import make_params

    prior = pcrp.NIWPrior.from_data(x)
    xc = np.ascontiguousarray(x - prior.mu0)
    start = int(np.argmin(np.abs(prior.nu0_grid - prior.nu0)))
    params = make_params(1.0, 1.1, prior.kappa0, prior.nu0, prior.psi0)
    scale = make_scale_grid(xc, prior.psi0, *prior.grid_arrays(), *prior.nu0_arrays(), start)
    return partition_log_joint_scaled(xc, canonical_labels(labels), params, scale)


@pytest.mark.parametrize("value", [-1, float("nan"), float("inf"), True, "often"])
def test_bad_template_jumps_are_refused(value):
    with pcrp.build_model(np.arange(5.0)) as model:
        with pytest.raises(ValueError, match="'template_jumps'"):
            pcrp.PCRPGibbs([model["z"]], template_jumps=value)


@pytest.mark.parametrize(
    "templates", [[np.zeros(4, dtype=int)], [np.array([0, 1, 0, -1, 2])], [np.zeros(5)]]
)
def test_bad_templates_are_refused(templates):
    with pcrp.build_model(np.arange(5.0)) as model:
        with pytest.raises(ValueError, match=r"'templates'.*shape \(5,\)"):
            pcrp.PCRPGibbs([model["z"]], templates=templates)


@pytest.mark.parametrize(
    ("split_merge", "n", "d", "supported", "rate"),
    [
        (1.0, 569, 30, True, TEMPLATE_JUMPS),  # breast cancer: 500,000 / 17,070 > 25
        (0.1, 10_000, 10, True, TEMPLATE_WORK / 100_000),  # 5 per draw
        (0.1, 1_000_000, 10, True, 1.0),  # at least one
        (0.0, 569, 30, True, 0.0),  # split_merge=0: the paper's Algorithm 1 alone
        (1.0, 569, 30, False, 0.0),  # the diagonal family, latent values, random alpha
    ],
)
def test_automatic_template_jumps(split_merge, n, d, supported, rate):
    assert auto_template_jumps(split_merge, n, d, supported) == pytest.approx(rate)


def test_defaults_and_refusals():
    x = _data()
    with pcrp.build_model(x, power=1.1) as model:
        assert pcrp.PCRPGibbs([model["z"]]).chain.jumps.rate == TEMPLATE_JUMPS
        assert pcrp.PCRPGibbs([model["z"]], split_merge=0).chain.jumps.rate == 0.0
    with pcrp.build_model(x, power=1.1, covariance="diag") as model:
        assert pcrp.PCRPGibbs([model["z"]]).chain.jumps.rate == 0.0
        with pytest.raises(ValueError, match=r"'template_jumps'.*covariance='diag'"):
            pcrp.PCRPGibbs([model["z"]], template_jumps=1)


def test_given_templates_jump_after_tuning_only_and_the_log_joint_follows(monkeypatch):
    monkeypatch.setattr(_templates, "TEMPLATE_WINDOW", np.inf)
    x = _data(shift=8.0)  # two clear clusters: proposals from the templates are plausible
    kwargs = {"templates": _templates_of(), "template_jumps": 3, "restarts": 1}
    a = _sample(x, chains=2, **kwargs)
    b = _sample(x, chains=2, **kwargs)
    np.testing.assert_array_equal(a.posterior["z"].values, b.posterior["z"].values)
    assert int(a.warmup_sample_stats["jump_proposed"].sum()) == 0  # none while tuning
    stats = a.sample_stats
    assert (stats["jump_proposed"].values == 3).all()
    accepted = stats["jump_accepted"].values
    assert ((accepted >= 0) & (accepted <= 3)).all() and accepted.sum() > 0
    # the reported log joint is that of the returned labels, also after a jump
    lj = stats["log_joint"].values
    z = a.posterior["z"].values
    for c in range(2):
        for t in range(0, z.shape[1], 5):
            assert lj[c, t] == pytest.approx(_log_joint(x, z[c, t]), rel=1e-9)
    off = _sample(x, **{**kwargs, "template_jumps": 0})
    assert int(off.sample_stats["jump_proposed"].sum()) == 0


def test_one_template_is_not_enough():
    x = _data()
    idata = _sample(x, templates=_templates_of()[:1], restarts=1, template_jumps=3)
    assert int(idata.sample_stats["jump_proposed"].sum()) == 0
