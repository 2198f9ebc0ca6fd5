"""Make ``pm.compute_log_likelihood`` store the pointwise log-likelihood of a pCRP mixture.

PyMC's :func:`pymc.compute_log_likelihood` evaluates each observed variable's
log density with ``sum=False``. An :class:`~pymc_pcrp.NIWMixture` has one joint
density for the whole data set (the clusters' parameters are integrated out),
so PyMC would store one total per draw and ArviZ would see one observation.
This module wraps :func:`pymc.stats.log_density.compute_log_density`, which
both ``pm.compute_log_likelihood`` and ``pm.sample(idata_kwargs={"log_likelihood":
True})`` call: for every requested NIWMixture it stores
:func:`pymc_pcrp.posterior.log_likelihood` instead (one term per point and
draw), and for every TableMixture the table family's pointwise term
(:mod:`pymc_pcrp.posterior.table_prediction`, from the model's record, which
it writes first); other observed variables, and ``pm.compute_log_prior``, are left to
PyMC. When the pointwise term cannot be computed the wrapper raises a
``ValueError`` saying why and naming the function to call; it never falls back
to the one-total version.

:mod:`pymc_pcrp.pymc_integration` puts the wrapper in PyMC; this module only
defines it.
"""

from __future__ import annotations

import pymc.stats.log_density as _log_density
import xarray as xr

from pymc.model import modelcontext

from pymc_pcrp.distributions.table import TableMixtureRV
from pymc_pcrp.posterior._model_terms import is_niw_mixture
from pymc_pcrp.posterior.pointwise import log_likelihood

__all__ = ["compute_log_density"]

ORIGINAL = getattr(
    _log_density.compute_log_density, "__wrapped__", _log_density.compute_log_density
)


def _is_table_mixture(rv) -> bool:
    """Whether ``rv`` is a :class:`~pymc_pcrp.TableMixture` variable."""
    return rv.owner is not None and isinstance(rv.owner.op, TableMixtureRV)


def compute_log_density(
    idata,
    *,
    var_names=None,
    extend_inferencedata=True,
    model=None,
    kind="likelihood",
    sample_dims=("chain", "draw"),
    progressbar=True,
    compile_kwargs=None,
):
    """PyMC's ``compute_log_density``, with the pointwise term for each NIWMixture.

    Same signature and result as PyMC's function. Raises ``ValueError`` when an
    NIWMixture is requested and its pointwise log-likelihood cannot be computed.
    """
    kwargs = {
        "model": model,
        "kind": kind,
        "sample_dims": sample_dims,
        "progressbar": progressbar,
        "compile_kwargs": compile_kwargs,
    }
    if kind != "likelihood":
        return ORIGINAL(
            idata, var_names=var_names, extend_inferencedata=extend_inferencedata, **kwargs
        )
    model = modelcontext(model)
    kwargs["model"] = model
    requested = [rv.name for rv in model.observed_RVs] if var_names is None else list(var_names)
    tables = [rv.name for rv in model.observed_RVs if _is_table_mixture(rv)]
    mixtures = [rv.name for rv in model.observed_RVs if is_niw_mixture(rv)] + tables
    mixtures = [name for name in requested if name in mixtures]
    if not mixtures:
        return ORIGINAL(
            idata, var_names=var_names, extend_inferencedata=extend_inferencedata, **kwargs
        )
    if tuple(sample_dims) != ("chain", "draw"):
        raise ValueError(
            "The pointwise log-likelihood of an NIWMixture needs sample_dims=('chain', 'draw'); "
            f"got {tuple(sample_dims)}."
        )
    parts = []
    others = [name for name in requested if name not in mixtures]
    if others:
        parts.append(ORIGINAL(idata, var_names=others, extend_inferencedata=False, **kwargs))
    for name in mixtures:
        try:
            if name in tables:  # read from the record, written here before pm.sample writes it
                from pymc_pcrp.pymc_integration import record_model

                record_model(idata, model)
                parts.append(log_likelihood(idata, var_name=name, extend_inferencedata=False))
                continue
            parts.append(
                log_likelihood(idata, model=model, var_name=name, extend_inferencedata=False)
            )
        except Exception as exc:
            raise ValueError(
                f"The NIWMixture '{name}' has one joint density for all its points, so PyMC's "
                "elementwise log-likelihood would be one total per draw; pymc_pcrp computes "
                f"a pointwise one instead, which failed here: {exc} See "
                "pymc_pcrp.posterior.log_likelihood(idata, ...), which you can also call "
                "directly with the model's power, alpha and prior."
            ) from exc
    dataset = xr.merge(parts, combine_attrs="drop_conflicts")
    if not extend_inferencedata:
        return dataset
    if "log_likelihood" in idata.groups():
        idata.log_likelihood = dataset
    else:
        idata.add_groups(log_likelihood=dataset)
    return idata


compute_log_density.__wrapped__ = ORIGINAL
