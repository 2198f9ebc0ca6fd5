"""The chain layer (pymc_pcrp/sampler): PyMC-free, options resolved once, a chain on its own."""

import ast

from pathlib import Path

import numpy as np
import pytest

from enumeration import exact_posterior, log_pcrp_prior_unnorm, set_partitions
from reference import niw_log_marginal
from scipy.special import logsumexp

from pymc_pcrp._kernels.partitions import canonical_labels
from pymc_pcrp.sampler.chain import Chain
from pymc_pcrp.sampler.families import DIAG, FULL, family_for
from pymc_pcrp.sampler.options import OPTIONS, ChainFacts, MovePlan, resolve_plan

SAMPLER = Path(__file__).resolve().parents[2] / "pymc_pcrp" / "sampler"
FORBIDDEN = ("pymc", "pytensor", "arviz")


def _exact(x, alpha, power, kappa0, nu0, psi0, family):
    """Partitions of the rows of ``x`` and their posterior probabilities (prior mean 0)."""
    mu0 = np.zeros(x.shape[1])
    if family == "full":
        return exact_posterior(x, alpha, power, mu0, kappa0, nu0, psi0)
    parts, logs = [], []
    for z in set_partitions(x.shape[0]):  # a product of one-dimensional NIW marginals
        value = log_pcrp_prior_unnorm(z, alpha, power)
        for k in range(z.max() + 1):
            for j in range(x.shape[1]):
                block = x[z == k][:, j]
                value += niw_log_marginal(block, mu0[j : j + 1], kappa0, nu0, [[psi0[j, j]]])
        parts.append(tuple(int(v) for v in z))
        logs.append(value)
    logs = np.array(logs)
    return parts, np.exp(logs - logsumexp(logs))


def _imported_roots(path: Path) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


@pytest.mark.parametrize("path", sorted(SAMPLER.glob("*.py")), ids=lambda p: p.name)
def test_the_chain_layer_imports_no_pymc_pytensor_or_arviz(path):
    assert not _imported_roots(path) & set(FORBIDDEN)


def test_every_declared_option_is_a_step_argument_and_resolves():
    import inspect

    import pymc_pcrp as pcrp

    parameters = inspect.signature(pcrp.PCRPGibbs.__init__).parameters
    assert {option.name for option in OPTIONS} <= set(parameters)
    for option in OPTIONS:  # the declared default is the step's default
        assert parameters[option.name].default == option.default
    plan = resolve_plan({}, ChainFacts(n=200, d=2))
    assert isinstance(plan, MovePlan)
    assert plan.sweeps_per_draw == 20 and plan.split_merge_auto
    with pytest.raises(AttributeError):
        plan.sweeps_per_draw = 3  # frozen: resolved once


def test_resolution_follows_the_facts_and_refuses_with_the_reason():
    diag = ChainFacts(
        n=100, d=3, family="diag", local_moves=False, template_jumps=False, tempering=False
    )
    assert resolve_plan({}, diag).pair_moves == 0.0
    assert resolve_plan({}, diag).template_jumps == 0.0
    with pytest.raises(ValueError, match=r"'pair_moves' > 0 .*covariance='diag'"):
        resolve_plan({"pair_moves": 1.0}, diag)
    full = ChainFacts(n=100, d=3)
    assert resolve_plan({}, full).pair_moves == 2.0
    assert resolve_plan({"split_merge": 0}, full).pair_moves == 0.0  # Algorithm 1 alone
    random = ChainFacts(n=100, d=3, random_prior=True)
    with pytest.raises(ValueError, match=r"'template_jumps' > 0 .*random alpha"):
        resolve_plan({"template_jumps": 2}, random)
    with pytest.raises(ValueError, match="'temper'"):
        resolve_plan({"temper": 3}, random)
    with pytest.raises(TypeError, match="Unknown PCRPGibbs option"):
        resolve_plan({"sweeps": 3}, full)


def test_families_are_chosen_by_name():
    assert family_for("full") is FULL and family_for("diag") is DIAG
    assert FULL.supports_latent and not DIAG.supports_latent
    with pytest.raises(ValueError, match="Unknown cluster family 'poisson'"):
        family_for("poisson")


@pytest.mark.parametrize("family", [FULL, DIAG], ids=["full", "diag"])
def test_a_chain_alone_samples_the_exact_posterior_of_four_points(family):
    """No PyMC: a Chain, its plan and a family's inputs, against enumerated partitions."""
    rng = np.random.default_rng(7)
    x = rng.normal(size=(4, 2)) + np.array([[0.0, 0.0], [0.3, 0.0], [3.0, 3.0], [3.2, 2.8]])
    alpha, power, kappa0, nu0 = 1.0, 1.3, 0.5, 4.0
    psi0 = np.eye(2)
    one = np.ones(1)
    inputs, _ = family.build_inputs(
        x, (alpha, power, kappa0, nu0), (psi0, one, np.zeros(1), np.array([nu0]), np.zeros(1)), None
    )
    facts = ChainFacts(
        n=4,
        d=2,
        family=family.name,
        local_moves=family.supports_local_moves,
        template_jumps=family.supports_template_jumps,
        tempering=family.supports_tempering,
    )
    plan = resolve_plan({"sweeps_per_draw": 1, "restarts": 1}, facts)
    chain = Chain(plan, family, 4, 2, np.random.default_rng(11))
    chain.stop_tuning()  # kept draws only: the rate settles from the first partition
    partitions, probs = _exact(x, alpha, power, kappa0, nu0, psi0, family.name)
    index = {p: k for k, p in enumerate(partitions)}
    visits = np.zeros(len(partitions))
    labels = np.zeros(4, dtype=np.int64)
    n_draws = 6000
    for _ in range(n_draws):
        labels = chain.draw(labels, inputs).labels
        visits[index[tuple(int(v) for v in canonical_labels(labels))]] += 1
    total_variation = 0.5 * np.abs(visits / n_draws - probs).sum()
    assert total_variation < 0.03
