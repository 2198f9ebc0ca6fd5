"""The one place where pymc_pcrp changes PyMC: every patch, :func:`install` and :func:`uninstall`.

Importing :mod:`pymc_pcrp` registers :class:`~pymc_pcrp.PCRPGibbs` and
:class:`~pymc_pcrp.PCRPHyper` in ``pm.STEP_METHODS`` (PyMC's own extension
point, not a patch: ``pm.sample()`` then picks them by itself) and calls
:func:`install`, which replaces these PyMC functions by wrappers. Each wrapper
keeps PyMC's function as ``__wrapped__`` and hands every model without pCRP
variables straight to it.

* ``pm.sample_posterior_predictive``: replicated data drawn with the cluster
  parameters from their posterior (:mod:`pymc_pcrp._entry_points`);
* ``pm.find_MAP``: refuses to optimise, or silently fix, the labels;
* ``pymc.sampling.mcmc.assign_step_methods``: refuses a step other than
  :class:`~pymc_pcrp.PCRPGibbs` for the labels;
* ``pymc.smc.kernels.SMC_KERNEL.__init__``: refuses ``pm.sample_smc``;
* ``pymc.stats.log_density.compute_log_density``: the pointwise log-likelihood
  of an NIWMixture (:mod:`pymc_pcrp.posterior._pymc_hook`);
* ``pymc.sampling.mcmc.run_convergence_checks``: R-hat and ESS of ``n_clusters``
  and the log joint instead of the labels
  (:mod:`pymc_pcrp.step_methods._convergence`);
* ``pm.to_inference_data``: the record of the model's power, alpha and NIW prior.

The last one is what lets :func:`~pymc_pcrp.predict` work on the output of
``pm.sample`` with nothing else: ``pm.sample`` builds its InferenceData with
``pm.to_inference_data``, and the wrapper adds the record of
:func:`record_model` (the same one :func:`pymc_pcrp.fit` writes).

**Switching it off.** Set the environment variable ``PYMC_PCRP_NO_PATCH=1``
before importing :mod:`pymc_pcrp`, or call :func:`uninstall` afterwards. Every
``pm.*`` function is then PyMC's own (``is``-identical), and a model with
``PowerCRP`` + ``NIWMixture`` still samples with ``pm.sample()``. What is lost
is what the table lists; in particular the InferenceData of ``pm.sample``
carries no record, so :func:`~pymc_pcrp.predict` refuses it until you call
:func:`record_model` (or pass ``power``, ``alpha`` and ``prior``).

The wrappers bind PyMC's arguments by name. :func:`install` patches only the
releases in :data:`SUPPORTED_PYMC` (the range pyproject.toml declares, whose
lower bound is the release the tests ran on, :data:`TESTED_PYMC`) and only when
every function still has the parameters its wrapper reads; otherwise it
patches nothing and says so with a warning.
"""

from __future__ import annotations

import inspect
import os
import re
import warnings

from dataclasses import dataclass

import arviz as az
import numpy as np
import pymc
import pymc.backends
import pymc.backends.arviz as _backends_arviz
import pymc.sampling
import pymc.sampling.forward as _forward
import pymc.sampling.mcmc as _mcmc
import pymc.smc.kernels as _smc_kernels
import pymc.stats.log_density as _log_density
import pymc.tuning
import pymc.tuning.starting as _starting

from pymc_pcrp import _entry_points
from pymc_pcrp._idata import store_model_parameters
from pymc_pcrp._table_record import spec_of_variable, store_table_parameters
from pymc_pcrp.posterior import _pymc_hook
from pymc_pcrp.step_methods import _convergence

__all__ = [
    "ENV_VAR",
    "SUPPORTED_PYMC",
    "TESTED_PYMC",
    "install",
    "installed",
    "opted_out",
    "record_model",
    "uninstall",
]

#: Environment variable that, set (to anything but ``""``, ``0``, ``false`` or ``no``),
#: keeps ``import pymc_pcrp`` from patching PyMC.
ENV_VAR = "PYMC_PCRP_NO_PATCH"

#: PyMC releases the test suite ran on (docs/entry_points.md has the table).
TESTED_PYMC = ("5.28.5",)

#: PyMC releases ``[low, high)`` (major, minor, micro) the package declares and patches:
#: the lower bound is the lowest tested release (pyproject.toml: ``pymc>=5.28.5,<6``).
SUPPORTED_PYMC = ((5, 28, 5), (6, 0, 0))


def _release(version: str) -> tuple[int, int, int]:
    """``(major, minor, micro)`` of a version string such as ``"5.28.5"``."""
    match = re.match(r"(\d+)\.(\d+)(?:\.(\d+))?", version)
    if not match:
        return (0, 0, 0)
    return (int(match.group(1)), int(match.group(2)), int(match.group(3) or 0))


# -- pm.to_inference_data: the record of the model ---------------------------------------------

_ORIGINAL_TO_IDATA = getattr(
    _backends_arviz.to_inference_data, "__wrapped__", _backends_arviz.to_inference_data
)
_TO_IDATA_SIGNATURE = inspect.signature(_ORIGINAL_TO_IDATA)


def to_inference_data(*args, **kwargs):
    """``pm.to_inference_data``, plus :func:`record_model` for a model with a pCRP mixture.

    A record that cannot be written (a random prior, say) is skipped with a
    warning saying why; the trace is never lost to it.
    """
    idata = _ORIGINAL_TO_IDATA(*args, **kwargs)
    if not isinstance(idata, az.InferenceData) or "posterior" not in idata.groups():
        return idata
    bound = _TO_IDATA_SIGNATURE.bind(*args, **kwargs)
    try:
        model = pymc.modelcontext(bound.arguments.get("model"))
    except TypeError:  # no model given and none on the context stack
        return idata
    try:
        if len(_pcrp_pairs(model)) != 1:  # nothing to record, or several mixtures: predict
            return idata  # handles one mixture per InferenceData only
        record_model(idata, model)
    except Exception as exc:  # never lose a finished run to the record
        warnings.warn(
            f"pymc_pcrp could not record the model's power, alpha and NIW prior in the "
            f"InferenceData ({exc}); pymc_pcrp.predict will need them as arguments.",
            UserWarning,
            stacklevel=2,
        )
    return idata


# -- the patches ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Patch:
    """One attribute of PyMC replaced by a wrapper; ``where`` are the objects holding it.

    ``needs`` are the parameters of PyMC's function that the wrapper reads.
    """

    where: tuple
    name: str
    wrapper: object
    original: object
    needs: tuple[str, ...]

    def missing(self) -> list[str]:
        """Parameters in ``needs`` that PyMC's function does not have (none on tested releases)."""
        params = inspect.signature(self.original).parameters
        return [name for name in self.needs if name not in params]


def _patches() -> tuple[_Patch, ...]:
    e, h, c = _entry_points, _pymc_hook, _convergence
    return (
        _Patch(
            (pymc, pymc.sampling, _forward),
            "sample_posterior_predictive",
            e.sample_posterior_predictive,
            e.ORIGINAL_PPC,
            (
                "trace",
                "model",
                "var_names",
                "predictions",
                "return_inferencedata",
                "sample_dims",
                "idata_kwargs",
                "extend_inferencedata",
                "random_seed",
            ),
        ),
        _Patch(
            (pymc, pymc.tuning, _starting),
            "find_MAP",
            e.find_MAP,
            e.ORIGINAL_FIND_MAP,
            ("model", "vars", "start"),
        ),
        _Patch(
            (_mcmc,),
            "assign_step_methods",
            e.assign_step_methods,
            e.ORIGINAL_ASSIGN,
            ("model", "step", "methods"),
        ),
        _Patch(
            (_smc_kernels.SMC_KERNEL,),
            "__init__",
            e.smc_kernel_init,
            e.ORIGINAL_SMC_INIT,
            ("model",),
        ),
        _Patch(
            (_log_density,),
            "compute_log_density",
            h.compute_log_density,
            h.ORIGINAL,
            tuple(inspect.signature(h.compute_log_density).parameters),
        ),
        _Patch(
            (_mcmc,),
            "run_convergence_checks",
            c.run_convergence_checks,
            c.ORIGINAL,
            ("idata", "model"),
        ),
        _Patch(
            (pymc, pymc.backends, _backends_arviz),
            "to_inference_data",
            to_inference_data,
            _ORIGINAL_TO_IDATA,
            ("model",),
        ),
    )


PATCHES = _patches()


def installed() -> bool:
    """Whether every wrapper is in place in PyMC."""
    return all(getattr(obj, p.name) is p.wrapper for p in PATCHES for obj in p.where)


def install() -> bool:
    """Put every wrapper in PyMC (idempotent); return whether they are installed.

    Only on the PyMC releases in :data:`SUPPORTED_PYMC` (the range
    pyproject.toml declares), and only if each of PyMC's functions still has
    the parameters its wrapper reads; otherwise nothing is patched, a warning
    says so, and ``pm.sample()`` still samples pCRP models (the step methods
    are registered either way).
    """
    low, high = SUPPORTED_PYMC
    changed = {p.name: p.missing() for p in PATCHES if p.missing()}
    if not low <= _release(pymc.__version__) < high or changed:
        why = (
            f"its functions {changed} lack parameters pymc_pcrp's wrappers read"
            if changed
            else f"pymc_pcrp supports PyMC {'.'.join(map(str, low))} up to (not including) "
            f"{'.'.join(map(str, high))}"
        )
        warnings.warn(
            f"pymc_pcrp leaves PyMC {pymc.__version__}'s functions as they are: {why} "
            "(docs/entry_points.md lists what that loses). pm.sample() still samples pCRP "
            "models.",
            UserWarning,
            stacklevel=2,
        )
        return False
    for patch in PATCHES:
        patch.wrapper.__wrapped__ = patch.original
        for obj in patch.where:
            setattr(obj, patch.name, patch.wrapper)
    return True


def uninstall() -> None:
    """Give PyMC back its own functions (idempotent): the opt-out as a function."""
    for patch in PATCHES:
        for obj in patch.where:
            setattr(obj, patch.name, patch.original)


def opted_out() -> bool:
    """Whether :data:`ENV_VAR` asks for no patching."""
    return os.environ.get(ENV_VAR, "").strip().lower() not in ("", "0", "false", "no")


def _fixed_value(var) -> np.ndarray:
    """Value of a graph without random inputs (a constant or a shared value read directly)."""
    import pytensor

    from pytensor.compile.sharedvalue import SharedVariable
    from pytensor.graph.basic import Constant

    if isinstance(var, Constant):
        return np.asarray(var.data)
    if isinstance(var, SharedVariable):
        return np.asarray(var.get_value())
    return np.asarray(pytensor.function([], var, on_unused_input="ignore")())


def _prior_of(obs) -> object:
    """Return the NIWPrior of an observed NIWMixture variable, read from its op's inputs."""
    from pymc.pytensorf import inputvars

    from pymc_pcrp.distributions import NIWPrior

    _, mu0, kappa0, nu0, psi0, grid, log_w, nu_grid, nu_log_w = obs.owner.op.dist_params(obs.owner)
    params = (mu0, kappa0, nu0, psi0, grid, log_w, nu_grid, nu_log_w)
    if inputvars(list(params)):
        raise ValueError(
            f"The NIW prior of '{obs.name}' depends on a random variable; pymc_pcrp records "
            "and predicts with a fixed prior only."
        )
    values = [_fixed_value(v) for v in params]
    mu0, kappa0, nu0, psi0, grid, log_w, nu_grid, nu_log_w = (np.asarray(v) for v in values)
    grid, log_w = np.atleast_1d(grid), np.atleast_1d(log_w)
    nu_grid, nu_log_w = np.atleast_1d(nu_grid), np.atleast_1d(nu_log_w)
    learned_scale = grid.size > 1
    learned_nu0 = nu_grid.size > 1
    if not learned_scale:
        psi0 = psi0 * float(grid[0])
    return NIWPrior(
        mu0=mu0,
        kappa0=float(kappa0),
        nu0=float(nu0),
        psi0=psi0,
        scale_grid=grid if learned_scale else None,
        scale_log_weights=log_w if learned_scale else None,
        covariance=getattr(obs.owner.op, "covariance", "full"),
        nu0_grid=nu_grid if learned_nu0 else None,
        nu0_log_weights=nu_log_w if learned_nu0 else None,
    )


def _pcrp_pairs(model) -> list:
    """Return the model's observed NIWMixture and TableMixture variables with PowerCRP labels.

    Each with its labels.
    """
    from pymc_pcrp.distributions.niw import NIWMixtureRV
    from pymc_pcrp.distributions.pcrp import PowerCRPRV
    from pymc_pcrp.distributions.table import TableMixtureRV

    observed = [
        rv
        for rv in model.observed_RVs
        if rv.owner is not None and isinstance(rv.owner.op, NIWMixtureRV | TableMixtureRV)
    ]
    pairs = []
    for obs in observed:
        z = obs.owner.op.dist_params(obs.owner)[0]
        if z.owner is not None and isinstance(z.owner.op, PowerCRPRV) and z in model.free_RVs:
            pairs.append((obs, z))
    return pairs


def _record_value(model, z, index: int, what: str, idata: az.InferenceData):
    """Return a fixed ``alpha``/``power`` as a float, a random one as the name of its draws.

    ``index`` is the parameter's position among the PowerCRP's inputs (0 alpha,
    1 power). A random one that is itself a variable of the posterior (``alpha
    ~ Gamma``, or a ``pm.Deterministic``) is named; an expression of random
    variables (``alpha = exp(log_alpha)``) is evaluated at every draw and added
    to the posterior as ``pcrp_alpha`` / ``pcrp_power``.
    """
    import pytensor

    from pymc.model.transform.conditioning import remove_value_transforms
    from pymc.pytensorf import inputvars

    from pymc_pcrp._idata import DERIVED_VARIABLES
    from pymc_pcrp._validation import depends_on_random_variable

    var = z.owner.op.dist_params(z.owner)[index]
    if not depends_on_random_variable(var) and not inputvars([var]):
        return float(_fixed_value(var))
    post = idata.posterior
    shape = (post.sizes["chain"], post.sizes["draw"])
    named = [v for v in (*model.free_RVs, *model.deterministics) if v is var]
    if named and named[0].name in post and post[named[0].name].shape == shape:
        return named[0].name
    umodel = remove_value_transforms(model)
    uz = umodel[z.name]
    graph = umodel.replace_rvs_by_values([uz.owner.op.dist_params(uz.owner)[index]])[0]
    inputs = inputvars([graph])
    names = [umodel.values_to_rvs[v].name for v in inputs]
    missing = [name for name in names if name not in post]
    if missing:
        raise ValueError(
            f"the {what} of the PowerCRP depends on {missing}, which idata.posterior does not "
            "hold (left out with var_names?)"
        )
    fn = pytensor.function(inputs, graph, on_unused_input="ignore")
    total = shape[0] * shape[1]
    arrays = [np.asarray(post[name].values).reshape(total, *post[name].shape[2:]) for name in names]
    values = np.array([float(fn(*(a[s] for a in arrays))) for s in range(total)])
    name = DERIVED_VARIABLES[what]
    idata.posterior[name] = (("chain", "draw"), values.reshape(shape))
    return name


def record_model(idata: az.InferenceData, model=None) -> bool:
    """Record the pCRP power, alpha and NIW prior (or table spec) of ``model`` in ``idata``.

    The record is what :func:`~pymc_pcrp.predict`, :func:`~pymc_pcrp.posterior.log_likelihood`
    and :func:`~pymc_pcrp.posterior.predictive_density` read: fixed values go
    to ``idata.constant_data`` (as :func:`pymc_pcrp.fit` stores them), and a
    random ``alpha`` or ``power`` is recorded as the name of its draws in
    ``idata.posterior``, so that predictions integrate over them. ``pm.sample``
    calls this function itself once :mod:`pymc_pcrp` is imported (through
    :mod:`pymc_pcrp.pymc_integration`); call it yourself after sampling with
    the integration switched off.

    Parameters
    ----------
    idata : arviz.InferenceData
        The posterior of ``model``.
    model : pymc.Model, optional
        The model that was sampled; the model on the context stack by default.

    Returns
    -------
    bool
        Whether a record was written: False when the model has no observed
        NIWMixture or TableMixture with PowerCRP labels (nothing to record). For
        a TableMixture the record holds the column spec (kinds, levels, priors)
        and the observed cells (:mod:`pymc_pcrp._table_record`).

    Raises
    ------
    ValueError
        If the model has several such mixtures, its prior is random, or a
        random ``alpha``/``power`` cannot be evaluated from ``idata.posterior``.
    """
    from pymc.model import modelcontext

    model = modelcontext(model)
    pairs = _pcrp_pairs(model)
    if not pairs:
        return False
    if len(pairs) > 1:
        raise ValueError(
            f"The model has several observed NIWMixture variables {[o.name for o, _ in pairs]} "
            "with PowerCRP labels; pymc_pcrp records one pCRP mixture per InferenceData."
        )
    if "posterior" not in idata.groups():
        raise ValueError("Argument 'idata' has no posterior group; pass the output of pm.sample.")
    ((obs, z),) = pairs
    if getattr(obs.owner.op, "covariance", "full") == "table":
        spec, mask = spec_of_variable(obs)
        store_table_parameters(
            idata,
            power=_record_value(model, z, 1, "power", idata),
            alpha=_record_value(model, z, 0, "alpha", idata),
            spec=spec,
            mask=mask,
            observed=obs.name,
        )
        return True
    prior = _prior_of(obs)
    dims = model.named_vars_to_dims.get(obs.name) or ()
    if len(dims) == 2:
        feature_dim = dims[1]
        feature = model.coords.get(feature_dim)
    else:
        feature_dim = "feature" if len(dims) != 1 else f"{obs.name}_feature"
        feature = None
    store_model_parameters(
        idata,
        power=_record_value(model, z, 1, "power", idata),
        alpha=_record_value(model, z, 0, "alpha", idata),
        prior=prior,
        feature=None if feature is None else np.asarray(feature),
        feature_dim=feature_dim,
    )
    return True
