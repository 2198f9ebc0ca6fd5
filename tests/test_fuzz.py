"""Fuzzing the model over data shape, data scale and prior (issue 13).

Each case draws data of a random shape, location and scale (some with identical
points or one outlier), a random prior (data-based with a learned or a fixed
scale, or hand-written with a random ``mu0``, ``kappa0``, ``nu0`` and ``psi0``
over many orders of magnitude), a fixed ``alpha`` and a power. Building the
model must either fail with a ``ValueError`` that names the argument at fault,
or give a model on which :class:`~pymc_pcrp.PCRPGibbs` runs and reports, at
every draw, a finite ``log_joint`` equal to the model's own log density at the
same labels (for a fixed ``alpha`` the two are the same quantity; see the
step's docstring). A seeded generator rather than Hypothesis: every case costs
a PyTensor compilation, so the cases are few and fixed, and a failure names
its seed. The fast tier runs a handful; the slow tier many more.

The model's log density is compiled in PyTensor's FAST_COMPILE mode (a tenth
of the compile time; the same arithmetic up to rounding).
"""

import logging
import math

import numpy as np
import pymc as pm

import pymc_pcrp as pcrp

REL_TOL = 1e-6  # the bound on the log joint's relative error
# Over the 149 accepted cases among seeds 0-178 the step and the model agreed to 4e-9
# relatively at worst (a prior 1.4e11 times smaller than the data's scatter): both compute
# each cluster's scatter about its own mean. Before they did (sums of outer products about
# mu0), they differed by up to 2.6e-5.


def _data(rng: np.random.Generator) -> np.ndarray:
    n = int(rng.integers(2, 61))
    d = int(rng.integers(1, 5))
    k = int(rng.integers(1, 4))
    centres = rng.normal(size=(k, d)) * 10.0 ** rng.uniform(0, 2)
    x = centres[rng.integers(0, k, size=n)] + rng.normal(size=(n, d))
    kind = rng.integers(0, 4)
    if kind == 1 and n > 3:  # a block of identical points
        x[: n // 2] = x[0]
    elif kind == 2:  # one outlier
        x[rng.integers(0, n)] *= 10.0 ** rng.uniform(1, 12)
    x = x * 10.0 ** rng.uniform(-40, 40, size=d) + 10.0 ** rng.uniform(-3, 9) * rng.normal(size=d)
    return x


def _prior(rng: np.random.Generator, x: np.ndarray) -> pcrp.NIWPrior:
    kind = rng.integers(0, 3)
    if kind == 0:
        return pcrp.NIWPrior.from_data(x)
    if kind == 1:
        return pcrp.NIWPrior.from_data(x, scale=10.0 ** rng.uniform(-4, 1))
    d = x.shape[1]
    a = rng.normal(size=(d, d))
    # on the data's scale per column, times 10^-12 .. 10^6 (the small end is refused)
    spread = np.diag(np.maximum(x.std(axis=0), 1e-300))
    psi0 = spread @ (a @ a.T + 0.1 * np.eye(d)) @ spread * 10.0 ** rng.uniform(-12, 6)
    mu0 = x.mean(axis=0) + rng.normal(size=d) * x.std(axis=0) * rng.uniform(0, 3)
    return pcrp.NIWPrior(
        mu0=mu0,
        kappa0=10.0 ** rng.uniform(-3, 2),
        nu0=d - 1 + 10.0 ** rng.uniform(-2, 1.5),
        psi0=psi0,
    )


def _scatter_over_psi0(x, prior) -> float:
    """``sum_i (x_i - mu0)^T Psi_0^{-1} (x_i - mu0)`` at the smallest scale (see _validation)."""
    xc = x - prior.mu0
    psi0 = prior.psi0 * float(np.min(prior.grid_arrays()[0]))
    return float(np.trace(np.linalg.solve(psi0, xc.T @ xc)))


def _case(seed: int) -> str:
    """Run one case; return what happened ("refused" or "sampled")."""
    rng = np.random.default_rng([1313, seed])
    x = _data(rng)
    alpha = 10.0 ** rng.uniform(-2, 1)
    power = rng.uniform(0.5, 2.0)
    try:
        prior = _prior(rng, x)
        with pm.Model() as model:
            z = pcrp.PowerCRP("z", alpha=alpha, power=power, n=x.shape[0])
            pcrp.NIWMixture("x", z=z, prior=prior, observed=x)
        # the step checks the prior's scale against the data when it is built
        step = pcrp.PCRPGibbs([z], model=model, rng=seed, split_merge=0.5)
    except ValueError as err:
        assert "Argument '" in str(err), f"seed {seed}: unclear message: {err}"
        return "refused"
    logp = model.compile_logp(mode="FAST_COMPILE")
    point = model.initial_point()
    for draw in range(4):
        point, (stats,) = step.step(point)
        log_joint = stats["log_joint"]
        assert math.isfinite(log_joint), f"seed {seed} draw {draw}: log_joint {log_joint}"
        expected = float(logp(point))
        assert abs(log_joint - expected) <= REL_TOL * max(1.0, abs(expected)), (
            f"seed {seed} draw {draw}: step's log_joint {log_joint!r} but the model's logp "
            f"{expected!r} (N={x.shape[0]}, D={x.shape[1]}, scatter in units of psi0 "
            f"{_scatter_over_psi0(x, prior):.2g})"
        )
    return "sampled"


def _run(seeds) -> dict:
    logging.getLogger("pymc").setLevel(logging.ERROR)
    outcomes = {"refused": 0, "sampled": 0}
    for seed in seeds:
        outcomes[_case(seed)] += 1
    return outcomes


def test_fuzz_few_cases():
    outcomes = _run(range(6))
    assert outcomes["sampled"] > 0


def test_fuzz_many_cases():
    outcomes = _run(range(6, 86))
    # both branches are exercised
    assert outcomes["sampled"] > 20
    assert outcomes["refused"] > 3
