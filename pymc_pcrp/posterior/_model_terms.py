"""Read what :func:`~pymc_pcrp.posterior.log_likelihood` needs out of a PyMC model.

The data, the NIW prior, the labels' variable and the pCRP's ``alpha`` and
``power`` are inputs of the observed :class:`~pymc_pcrp.NIWMixture` and of its
:class:`~pymc_pcrp.PowerCRP` labels. ``alpha`` and ``power`` may be random (a
``pm.Gamma`` alpha) or depend on random variables; they are then evaluated at
every posterior draw. The data and the prior must be fixed.
"""

from __future__ import annotations

import numpy as np
import pytensor

from pymc.model.transform.conditioning import remove_value_transforms
from pymc.pytensorf import inputvars

from pymc_pcrp.distributions import NIWPrior
from pymc_pcrp.distributions.niw import NIWMixtureRV
from pymc_pcrp.distributions.pcrp import PowerCRPRV

__all__ = ["is_niw_mixture", "model_terms"]


def is_niw_mixture(rv) -> bool:
    """Whether ``rv`` is a :class:`~pymc_pcrp.NIWMixture` variable."""
    return rv.owner is not None and isinstance(rv.owner.op, NIWMixtureRV)


def _constant(var, what: str) -> np.ndarray:
    """Evaluate a graph that depends on no random variable of the model."""
    if inputvars([var]):
        raise ValueError(
            f"pymc_pcrp.posterior.log_likelihood: the {what} of the NIWMixture depends on a "
            "random variable of the model, which is not supported; use fixed values."
        )
    return np.asarray(pytensor.function([], var, on_unused_input="ignore")())


def _draws(umodel, var, posterior) -> np.ndarray:
    """Value of ``var`` at every posterior draw, shape ``(chain * draw,)``."""
    graph = umodel.replace_rvs_by_values([var])[0]
    inputs = inputvars([graph])
    n_total = posterior.sizes["chain"] * posterior.sizes["draw"]
    fn = pytensor.function(inputs, graph, on_unused_input="ignore")
    if not inputs:
        return np.full(n_total, float(fn()))
    names = [umodel.values_to_rvs[v].name for v in inputs]
    missing = [name for name in names if name not in posterior]
    if missing:
        raise ValueError(
            f"pymc_pcrp.posterior.log_likelihood needs the posterior draws of {missing} "
            "(they set the pCRP's alpha or power); keep them in idata.posterior."
        )
    arrays = [
        np.asarray(posterior[name].values).reshape(n_total, *posterior[name].shape[2:])
        for name in names
    ]
    return np.array([float(fn(*(a[s] for a in arrays))) for s in range(n_total)])


def model_terms(model, idata, var_name: str | None) -> dict:
    """Read the data, labels, prior, per-draw ``alpha`` and ``power`` and names from ``model``.

    Raises
    ------
    ValueError
        If the model has no observed NIWMixture (or several and ``var_name`` is
        None), its labels are not a PowerCRP variable, or its data or prior are
        random.
    """
    umodel = remove_value_transforms(model)
    candidates = [rv for rv in umodel.observed_RVs if is_niw_mixture(rv)]
    if var_name is not None:
        candidates = [rv for rv in candidates if rv.name == var_name]
    if len(candidates) != 1:
        raise ValueError(
            "Argument 'var_name' must name one observed NIWMixture of the model; found "
            f"{[rv.name for rv in candidates]}."
        )
    rv = candidates[0]
    if getattr(rv.owner.op, "covariance", "full") != "full":
        raise NotImplementedError(
            f"'{rv.name}' uses the diagonal covariance family (covariance='diag'); the pointwise "
            "log-likelihood, predict and predictive_density support the full-covariance NIW "
            "family only so far. pymc_pcrp.sample_posterior_predictive supports both."
        )
    z, mu0, kappa0, nu0, psi0, grid, log_weights, nu_grid, nu_log_w = rv.owner.op.dist_params(
        rv.owner
    )
    if z.owner is None or not isinstance(z.owner.op, PowerCRPRV) or z not in umodel.free_RVs:
        raise ValueError(
            f"pymc_pcrp.posterior.log_likelihood: the labels of '{rv.name}' must be a "
            "PowerCRP variable of the model (the pointwise term uses the pCRP prediction rule)."
        )
    alpha, power, _ = z.owner.op.dist_params(z.owner)
    posterior = idata.posterior
    if z.name not in posterior:
        raise ValueError(
            f"idata.posterior has no draws of the labels '{z.name}'; keep them to compute the "
            "pointwise log-likelihood."
        )
    fixed = {
        name: _constant(var, name)
        for name, var in (
            ("mu0", mu0),
            ("kappa0", kappa0),
            ("nu0", nu0),
            ("psi0", psi0),
            ("scale grid", grid),
            ("scale weights", log_weights),
            ("nu0 grid", nu_grid),
            ("nu0 weights", nu_log_w),
        )
    }
    grid_values = np.atleast_1d(fixed["scale grid"])
    nu_values = np.atleast_1d(fixed["nu0 grid"])
    learned_nu0 = {}
    if nu_values.size > 1:
        learned_nu0 = {
            "nu0_grid": nu_values,
            "nu0_log_weights": np.atleast_1d(fixed["nu0 weights"]),
        }
    if grid_values.size == 1 and not learned_nu0:
        prior = NIWPrior(
            mu0=fixed["mu0"],
            kappa0=float(fixed["kappa0"]),
            nu0=float(fixed["nu0"]),
            psi0=fixed["psi0"] * float(grid_values[0]),
        )
    else:
        prior = NIWPrior(
            mu0=fixed["mu0"],
            kappa0=float(fixed["kappa0"]),
            nu0=float(fixed["nu0"]),
            psi0=fixed["psi0"],
            scale_grid=grid_values,
            scale_log_weights=np.atleast_1d(fixed["scale weights"]),
            **learned_nu0,
        )
    x = _constant(umodel.rvs_to_values[rv], "observed data").astype(np.float64)
    x = x[:, None] if x.ndim == 1 else x
    labels = np.asarray(posterior[z.name].values).astype(np.int64)
    if labels.ndim != 3 or labels.shape[-1] != x.shape[0]:
        raise ValueError(
            f"The draws of '{z.name}' have shape {labels.shape}, expected (chain, draw, "
            f"{x.shape[0]})."
        )
    obs = idata.observed_data if "observed_data" in idata.groups() else None
    if obs is not None and rv.name in obs:
        obs_dim = obs[rv.name].dims[0]
        obs_coord = obs[rv.name].coords[obs_dim].values
    else:
        dims = model.named_vars_to_dims.get(rv.name)
        obs_dim = dims[0] if dims else f"{rv.name}_dim_0"
        obs_coord = np.asarray(model.coords.get(obs_dim, np.arange(x.shape[0])))
    return {
        "x": x,
        "labels": labels,
        "prior": prior,
        "alpha": _draws(umodel, alpha, posterior),
        "power": _draws(umodel, power, posterior),
        "name": rv.name,
        "obs_dim": obs_dim,
        "obs_coord": obs_coord,
    }
