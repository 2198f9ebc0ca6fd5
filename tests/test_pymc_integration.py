"""One integration point with PyMC: install, uninstall and the PYMC_PCRP_NO_PATCH opt-out."""

import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pymc as pm
import pytest

import pymc_pcrp as pcrp

from pymc_pcrp import pymc_integration

#: Every PyMC attribute pymc_pcrp replaces, named independently of pymc_integration.PATCHES.
PATCHED = [
    ("pymc", "sample_posterior_predictive"),
    ("pymc.sampling", "sample_posterior_predictive"),
    ("pymc.sampling.forward", "sample_posterior_predictive"),
    ("pymc", "find_MAP"),
    ("pymc.tuning", "find_MAP"),
    ("pymc.tuning.starting", "find_MAP"),
    ("pymc.sampling.mcmc", "assign_step_methods"),
    ("pymc.smc.kernels:SMC_KERNEL", "__init__"),
    ("pymc.stats.log_density", "compute_log_density"),
    ("pymc.sampling.mcmc", "run_convergence_checks"),
    ("pymc", "to_inference_data"),
    ("pymc.backends", "to_inference_data"),
    ("pymc.backends.arviz", "to_inference_data"),
]


def _holder(spec: str):
    import importlib

    module, _, attr = spec.partition(":")
    obj = importlib.import_module(module)
    return getattr(obj, attr) if attr else obj


def _patched_pairs() -> set:
    return {(obj, patch.name) for patch in pymc_integration.PATCHES for obj in patch.where}


def test_the_list_above_is_every_patch():
    assert {(id(_holder(spec)), name) for spec, name in PATCHED} == {
        (id(obj), name) for obj, name in _patched_pairs()
    }


def test_import_installs_every_wrapper_on_this_pymc():
    assert pymc_integration.installed()
    for patch in pymc_integration.PATCHES:
        assert patch.wrapper.__wrapped__ is patch.original
        assert not patch.missing()


def _originals() -> dict:
    """PyMC's own function behind every patched attribute, keyed like PATCHED."""
    out = {}
    for spec, name in PATCHED:
        holder = _holder(spec)
        (patch,) = [p for p in pymc_integration.PATCHES if p.name == name and holder in p.where]
        out[(spec, name)] = patch.original
    return out


def test_uninstall_gives_pymc_its_own_functions_and_install_puts_them_back():
    originals = _originals()
    try:
        pymc_integration.uninstall()
        pymc_integration.uninstall()  # idempotent
        assert not pymc_integration.installed()
        for (spec, name), original in originals.items():
            assert getattr(_holder(spec), name) is original, (spec, name)
    finally:
        assert pymc_integration.install() is True
    assert pymc_integration.installed()
    assert pymc_integration.install() is True  # idempotent
    ppc = originals[("pymc", "sample_posterior_predictive")]
    assert pm.sample_posterior_predictive.__wrapped__ is ppc


def test_install_patches_only_the_declared_pymc_releases(monkeypatch):
    try:
        pymc_integration.uninstall()
        for version in ("6.0.0", "5.28.4", "5.20.0"):
            monkeypatch.setattr(pm, "__version__", version)
            with pytest.warns(UserWarning, match=f"leaves PyMC {version}'s functions"):
                assert pymc_integration.install() is False
            assert not pymc_integration.installed()
            assert pm.find_MAP is _originals()[("pymc", "find_MAP")]
        monkeypatch.setattr(pm, "__version__", "5.28.5")
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert pymc_integration.install() is True
    finally:
        monkeypatch.undo()
        pymc_integration.install()
    assert pymc_integration.installed()


def test_install_skips_a_pymc_whose_functions_lost_a_parameter(monkeypatch):
    def find_map_without_start(start_dict=None, vars=None, model=None):
        return None

    old = next(p for p in pymc_integration.PATCHES if p.name == "find_MAP")
    changed = pymc_integration._Patch(
        old.where, old.name, old.wrapper, find_map_without_start, old.needs
    )
    assert changed.missing() == ["start"]
    try:
        pymc_integration.uninstall()
        patches = tuple(changed if p is old else p for p in pymc_integration.PATCHES)
        monkeypatch.setattr(pymc_integration, "PATCHES", patches)
        with pytest.warns(UserWarning, match=r"find_MAP.*lack parameters"):
            assert pymc_integration.install() is False
        assert pm.find_MAP is old.original  # nothing was patched
    finally:
        monkeypatch.undo()
        pymc_integration.uninstall()  # put PyMC's real find_MAP back, then the wrappers
        pymc_integration.install()
    assert pymc_integration.installed()


def test_opt_out_variable_values():
    env = dict(os.environ)
    try:
        for value, out in (("1", True), ("yes", True), ("0", False), ("", False), ("False", False)):
            os.environ[pymc_integration.ENV_VAR] = value
            assert pymc_integration.opted_out() is out
        os.environ.pop(pymc_integration.ENV_VAR)
        assert pymc_integration.opted_out() is False
    finally:
        os.environ.clear()
        os.environ.update(env)


OPTED_OUT = textwrap.dedent(
    """
    import importlib
    import numpy as np
    import pymc as pm

    PATCHED = {patched!r}

    def holder(spec):
        module, _, attr = spec.partition(":")
        obj = importlib.import_module(module)
        return getattr(obj, attr) if attr else obj

    before = {{(s, n): getattr(holder(s), n) for s, n in PATCHED}}
    import pymc_pcrp as pcrp

    for (s, n), fn in before.items():
        assert getattr(holder(s), n) is fn, (s, n)
    assert not pcrp.pymc_integration.installed()

    X = pcrp.datasets.load_old_faithful()[:20]
    with pm.Model() as model:
        z = pcrp.PowerCRP("z", alpha=0.8, power=1.2, n=len(X))
        pcrp.NIWMixture("x", z=z, prior=pcrp.NIWPrior.from_data(X), observed=X)
        idata = pm.sample(draws=10, tune=5, chains=1, random_seed=1, progressbar=False,
                          compute_convergence_checks=False)
    assert idata.posterior["z"].shape == (1, 10, 20)
    assert np.unique(idata.posterior["z"].values[0], axis=0).shape[0] > 1  # the labels moved
    try:
        pcrp.predict(idata, X[:2])
    except ValueError as err:
        assert "does not record" in str(err) and "record_model" in str(err), err
    else:
        raise AssertionError("predict used defaults without a record")
    assert pcrp.record_model(idata, model)
    assert np.allclose(pcrp.predict(idata, X[:2]).probabilities.sum(axis=1), 1.0)
    print("opted out and sampled")
    """
)


def test_opt_out_by_environment_leaves_pymc_identical_and_pm_sample_works():
    env = {**os.environ, pymc_integration.ENV_VAR: "1"}
    code = OPTED_OUT.format(patched=PATCHED)
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=900
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "opted out and sampled" in result.stdout


def test_record_is_written_by_pm_to_inference_data_only_with_the_integration():
    X = pcrp.datasets.load_old_faithful()[:12]
    with pm.Model() as model:
        z = pcrp.PowerCRP("z", alpha=0.8, power=1.2, n=len(X))
        pcrp.NIWMixture("x", z=z, prior=pcrp.NIWPrior.from_data(X), observed=X)
        trace = pm.sample(draws=5, tune=2, chains=1, random_seed=1, progressbar=False,
                          compute_convergence_checks=False, return_inferencedata=False)  # fmt: skip
    with model:
        assert "pcrp_parameters" in pm.to_inference_data(trace).constant_data.attrs
    try:
        pymc_integration.uninstall()
        with model:
            idata = pm.to_inference_data(trace)
        assert "constant_data" not in idata.groups()
    finally:
        pymc_integration.install()
    prior = pcrp.NIWPrior.from_data(X)
    explicit = pcrp.predict(idata, X[:1], power=1.2, alpha=0.8, prior=prior)
    assert np.isfinite(explicit.probabilities).all()
