"""Make PyMC's entry points either do the right thing on a pCRP model or say why not.

A model with a :class:`~pymc_pcrp.PowerCRP` label vector and an observed
:class:`~pymc_pcrp.NIWMixture` or :class:`~pymc_pcrp.TableMixture` differs from
an ordinary PyMC model in two ways: the labels are a discrete vector that only
:class:`~pymc_pcrp.PCRPGibbs` can update, and the cluster parameters (means and
covariances, or a table's column parameters) are integrated out, so they are
not in the trace. Several PyMC functions do not know this and return a wrong
answer without complaint. This module wraps them so that, **for models that hold
a PowerCRP, NIWMixture or TableMixture variable only**, they either work or
raise an error that names the reason and what to call instead; every other
model goes straight to PyMC's own function.

* ``pm.sample_posterior_predictive``: replicated data of an observed NIWMixture
  or TableMixture are drawn by :func:`pymc_pcrp.sample_posterior_predictive`
  (cluster parameters from their posterior given each draw's partition); calls
  that function cannot serve are refused. PyMC's own function would draw the cluster parameters from
  their prior, and PyMC 5.28 also appends the observed variables to
  ``model.observed_RVs`` a second time when the trace has ``observed_data``,
  which breaks ``model.logp()`` afterwards; neither can happen here.
* ``pm.sample_smc``: refused (its kernels move integer variables by rounded
  Gaussian jumps, which cannot explore partitions).
* ``pm.find_MAP``: refused when the labels would be optimised or silently held
  at their starting value.
* ``pm.sample(step=...)``: a step method other than :class:`~pymc_pcrp.PCRPGibbs`
  given the labels is refused.

This module only defines the wrappers; :mod:`pymc_pcrp.pymc_integration` puts
them in PyMC (and can take them out again). ``pm.fit`` (ADVI) and
``pm.sample(nuts_sampler=...)`` need no patch: PyMC itself refuses models with
discrete variables.
"""

from __future__ import annotations

import inspect
import warnings

import arviz as az
import pymc
import pymc.sampling.forward as _forward
import pymc.sampling.mcmc as _mcmc
import pymc.smc.kernels as _smc_kernels
import pymc.tuning.starting as _starting

from pymc.model import modelcontext
from pymc.step_methods.compound import CompoundStep
from pytensor.graph.traversal import ancestors

from pymc_pcrp._validation import rebuild_message
from pymc_pcrp.distributions.niw import NIWMixtureRV
from pymc_pcrp.distributions.pcrp import PowerCRPRV
from pymc_pcrp.distributions.table import TableMixtureRV

__all__ = [
    "assign_step_methods",
    "find_MAP",
    "sample_posterior_predictive",
    "smc_kernel_init",
]


def _original(fn):
    """PyMC's own function behind ``fn`` (``fn`` itself when it is not one of our wrappers)."""
    return getattr(fn, "__wrapped__", fn)


ORIGINAL_PPC = _original(_forward.sample_posterior_predictive)
ORIGINAL_FIND_MAP = _original(_starting.find_MAP)
ORIGINAL_ASSIGN = _original(_mcmc.assign_step_methods)
ORIGINAL_SMC_INIT = _original(_smc_kernels.SMC_KERNEL.__init__)

_PPC_SIGNATURE = inspect.signature(ORIGINAL_PPC)
_FIND_MAP_SIGNATURE = inspect.signature(ORIGINAL_FIND_MAP)
_SMC_INIT_SIGNATURE = inspect.signature(ORIGINAL_SMC_INIT)


def _labels(model) -> list:
    """Return the model's PowerCRP label variables."""
    return [rv for rv in model.free_RVs if isinstance(getattr(rv.owner, "op", None), PowerCRPRV)]


def _collapsed_observed(model) -> list:
    """Return the model's observed NIWMixture and TableMixture variables.

    Their cluster parameters are integrated out of the trace, so PyMC's forward
    draws of them would take the parameters from the prior.
    """
    ops = NIWMixtureRV | TableMixtureRV
    return [rv for rv in model.observed_RVs if isinstance(getattr(rv.owner, "op", None), ops)]


def _mixture_kinds(variables) -> str:
    """``"NIWMixture"``, ``"TableMixture"`` or both, for observed mixture variables."""
    table = [isinstance(v.owner.op, TableMixtureRV) for v in variables]
    kinds = (["NIWMixture"] if not all(table) else []) + (["TableMixture"] if any(table) else [])
    return " and ".join(kinds)


def _names(variables) -> str:
    return ", ".join(repr(v.name) for v in variables)


# -- pm.sample_posterior_predictive ----------------------------------------------------------


def _drop_duplicate_observed(model) -> None:
    """Undo PyMC 5.28's duplication of ``model.observed_RVs`` (and of its parents' lists).

    ``pm.sample_posterior_predictive`` extends the model's own list in place when
    the trace has ``observed_data``; a duplicated entry makes ``model.logp()``
    fail with "Cannot convert None to a tensor variable".
    """
    lst = model.observed_RVs
    while isinstance(lst, list):
        seen: set = set()
        for i in range(len(lst) - 1, -1, -1):
            if lst.count(lst[i]) > 1 and lst[i] not in seen:
                seen.add(lst[i])
                list.__delitem__(lst, i)
        lst = getattr(lst, "parent", None)


def _refuse_ppc(reason: str):
    return NotImplementedError(
        f"pm.sample_posterior_predictive cannot replicate this pCRP model: {reason} The "
        "cluster parameters (NIW means and covariances, a table's column parameters) are "
        "integrated out and absent from the trace, so PyMC would draw them from their prior. "
        "Call pymc_pcrp.sample_posterior_predictive(idata, model), which draws them from "
        "their posterior given each draw's partition and the data (for new points, "
        "pymc_pcrp.predict)."
    )


def sample_posterior_predictive(*args, **kwargs):
    """``pm.sample_posterior_predictive``, exact for observed NIWMixture and TableMixture variables.

    On a model without PowerCRP, NIWMixture or TableMixture variables this is
    PyMC's function. Otherwise, when the call asks for replicated data of the
    observed NIWMixture or TableMixture variables (the default), it returns
    :func:`pymc_pcrp.sample_posterior_predictive` of the same ``InferenceData``
    (plus its ``observed_data`` group, as PyMC does), honouring
    ``random_seed`` and ``extend_inferencedata``; options that function has no
    counterpart for are refused with :class:`NotImplementedError`. Calls that do not
    touch one (``var_names=["n_clusters"]``, say) go to PyMC.
    """
    bound = _PPC_SIGNATURE.bind(*args, **kwargs)
    bound.apply_defaults()
    arg = bound.arguments
    model = modelcontext(arg["model"])
    collapsed = _collapsed_observed(model)
    if not collapsed and not _labels(model):
        return ORIGINAL_PPC(*args, **kwargs)
    var_names = arg["var_names"]
    if not collapsed:
        # Latent NIWMixture values (if any) are in the trace, and observed variables
        # drawn given them are right; redrawing the values themselves is not.
        latent = [
            rv for rv in model.free_RVs if isinstance(getattr(rv.owner, "op", None), NIWMixtureRV)
        ]
        asked = [model[name] for name in var_names or []]
        if any(rv in latent for rv in asked):
            raise _refuse_ppc(
                f"var_names asks for new values of the latent NIWMixture {_names(latent)}; "
                "PyMC would draw them given the labels alone."
            )
        try:
            return ORIGINAL_PPC(*args, **kwargs)
        finally:
            _drop_duplicate_observed(model)
    if var_names is None:
        others = [rv for rv in model.observed_RVs if rv not in collapsed]
        if others:
            raise _refuse_ppc(
                f"it also has the observed variable(s) {_names(others)}; pass var_names to "
                "replicate them with PyMC."
            )
        requested = list(collapsed)
    else:
        requested = [model[name] for name in var_names]
    wanted = [rv for rv in requested if rv in collapsed]
    rest = [v for v in requested if v not in collapsed]
    downstream = [v for v in rest if set(collapsed) & set(ancestors([v]))]
    if not wanted and not downstream:
        # Nothing is drawn from an NIWMixture or TableMixture (a prior-only pCRP model, or
        # var_names=["n_clusters"], say): PyMC's forward draws are right.
        try:
            return ORIGINAL_PPC(*args, **kwargs)
        finally:
            _drop_duplicate_observed(model)
    if rest:
        raise _refuse_ppc(
            f"var_names mixes the {_mixture_kinds(wanted or collapsed)} data "
            f"{_names(wanted or collapsed)} with "
            f"{_names(rest)}, which would be drawn together with them."
        )
    trace = arg["trace"]
    if not isinstance(trace, az.InferenceData) or "posterior" not in trace.groups():
        raise _refuse_ppc(
            f"the trace is a {type(trace).__name__}, not the InferenceData returned by "
            "pm.sample (which holds the labels and the NIW scale of each draw)."
        )
    unsupported = {
        "predictions": arg["predictions"],
        "return_inferencedata=False": not arg["return_inferencedata"],
        "sample_dims": arg["sample_dims"] not in (None, ["chain", "draw"], ("chain", "draw")),
        "idata_kwargs": bool(arg["idata_kwargs"]),
    }
    used = [name for name, on in unsupported.items() if on]
    if used:
        raise _refuse_ppc(f"the option(s) {', '.join(used)} have no counterpart there.")
    _check_lengths(model, wanted)
    from pymc_pcrp.posterior.ppc import sample_posterior_predictive as pcrp_ppc

    keep = [rv.name for rv in wanted]
    replicated = pcrp_ppc(trace, model, random_seed=arg["random_seed"]).posterior_predictive
    pp = az.InferenceData(posterior_predictive=replicated[keep])
    if arg["extend_inferencedata"]:
        trace.extend(pp)
        return trace
    observed = [name for name in keep if "observed_data" in trace.groups()]
    observed = [name for name in observed if name in trace.observed_data]
    if observed:
        pp.add_groups(observed_data=trace.observed_data[observed])
    return pp


def _check_lengths(model, collapsed) -> None:
    """Refuse data whose length no longer matches the labels (after ``pm.set_data``)."""
    for obs in collapsed:
        z = obs.owner.op.dist_params(obs.owner)[0]
        rows = int(model.rvs_to_values[obs].shape[0].eval())
        n = int(z.shape[0].eval())
        if rows != n:
            raise ValueError(rebuild_message(obs.name, rows, z.name, n))


# -- pm.sample_smc -----------------------------------------------------------------------------


def smc_kernel_init(self, *args, **kwargs):
    """PyMC's SMC kernel set-up, refused for a model with PowerCRP labels."""
    bound = _SMC_INIT_SIGNATURE.bind(self, *args, **kwargs)
    model = modelcontext(bound.arguments.get("model"))
    labels = _labels(model)
    if labels:
        raise NotImplementedError(
            f"pm.sample_smc cannot sample the PowerCRP label vector(s) {_names(labels)}: its "
            "kernels move every variable by Gaussian jumps (rounded for integers), which "
            "cannot explore partitions, so the particles stay near their prior draws and the "
            "result is not the posterior. Use pm.sample(), which updates the labels with "
            "pymc_pcrp.PCRPGibbs (a random alpha or power with pymc_pcrp.PCRPHyper, any other "
            "continuous variable with NUTS)."
        )
    return ORIGINAL_SMC_INIT(self, *args, **kwargs)


# -- pm.find_MAP -----------------------------------------------------------------------------


def find_MAP(*args, **kwargs):
    """``pm.find_MAP``, refused when it would optimise, or silently fix, PowerCRP labels.

    Labels cannot be optimised by a numerical optimiser. With ``vars`` left out
    PyMC optimises the continuous variables only and keeps the labels at their
    initial value (every point in one cluster), which is not a MAP of the
    model; that is refused. An explicit ``vars`` without the labels is allowed:
    it is the mode of those variables given the labels in ``start`` (a warning
    says so when ``start`` does not set them).
    """
    bound = _FIND_MAP_SIGNATURE.bind(*args, **kwargs)
    arg = bound.arguments
    model = modelcontext(arg.get("model"))
    labels = _labels(model)
    if not labels:
        return ORIGINAL_FIND_MAP(*args, **kwargs)
    label_values = {model.rvs_to_values[rv] for rv in labels}
    hint = (
        "Sample the posterior with pm.sample() and summarise the partition with "
        "pymc_pcrp.point_estimate(idata); to find the mode of continuous variables given fixed "
        f"labels, pass vars=[...] without the labels and start={{{labels[0].name!r}: labels}}."
    )
    user_vars = arg.get("vars")
    if user_vars is None:
        raise ValueError(
            f"pm.find_MAP cannot optimise the PowerCRP labels {_names(labels)}: they are "
            "discrete (a partition), and PyMC would only optimise the continuous variables "
            "with the labels held at their initial value (every point in one cluster), which "
            f"is not a MAP of the model. {hint}"
        )
    try:
        value_vars = set(pymc.util.get_value_vars_from_user_vars(user_vars, model))
    except ValueError:
        value_vars = set(pymc.inputvars(model.replace_rvs_by_values(list(user_vars))))
    if value_vars & label_values:
        raise ValueError(
            f"pm.find_MAP cannot optimise the PowerCRP labels {_names(labels)}: a numerical "
            f"optimiser cannot search over partitions. {hint}"
        )
    start = arg.get("start") or {}
    unset = [rv for rv in labels if rv.name not in start]
    if unset:
        warnings.warn(
            f"pm.find_MAP keeps the PowerCRP labels {_names(unset)} at their initial value "
            "(every point in one cluster): the result is the mode given that partition, not a "
            "MAP of the model. Pass start={'<labels>': labels} to choose the partition.",
            UserWarning,
            stacklevel=2,
        )
    return ORIGINAL_FIND_MAP(*args, **kwargs)


# -- pm.sample(step=...) -----------------------------------------------------------------------


def _flat_steps(step) -> list:
    if step is None:
        return []
    if isinstance(step, CompoundStep):
        return [s for method in step.methods for s in _flat_steps(method)]
    if isinstance(step, list | tuple):
        return [s for item in step for s in _flat_steps(item)]
    return [step]


def assign_step_methods(model, step=None, methods=None):
    """PyMC's step assignment, refusing a step other than PCRPGibbs given PowerCRP labels."""
    from pymc_pcrp.step_methods.pcrp_gibbs import PCRPGibbs

    labels = _labels(model)
    if labels and step is not None:
        label_values = {model.rvs_to_values[rv]: rv for rv in labels}
        for s in _flat_steps(step):
            if isinstance(s, PCRPGibbs):
                continue
            taken = [label_values[v] for v in getattr(s, "vars", ()) if v in label_values]
            if taken:
                raise ValueError(
                    f"{type(s).__name__} cannot update the PowerCRP labels {_names(taken)}. Only "
                    "pymc_pcrp.PCRPGibbs samples them: PyMC's generic steps move the labels as "
                    "numbers, not as a partition (Metropolis crashes, its int64 proposals do not "
                    "fit the compact integer labels; Slice and BinaryGibbsMetropolis run but "
                    "return a wrong posterior). Leave the labels out of your step (e.g. "
                    f"step=[pm.Metropolis([alpha])]); pm.sample() gives {_names(taken)} to "
                    "PCRPGibbs by itself."
                )
    return ORIGINAL_ASSIGN(model, step, methods)
