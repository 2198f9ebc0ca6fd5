"""Posterior predictive draws for models whose cluster parameters are integrated out.

PyMC's own ``pm.sample_posterior_predictive`` cannot do this job for an
:class:`NIWMixture` or a :class:`TableMixture`: the cluster parameters (means
and covariances, or each column's parameters) are not in the trace (the
sampler never draws them), so PyMC would draw them afresh from their *prior*.
This module draws them from their posterior given each draw's partition and
the data, then draws replicated data (the tables' draws are
:func:`~pymc_pcrp.posterior.table_ppc.replicate_table`).
"""

from __future__ import annotations

import arviz as az
import numpy as np
import pymc as pm

from pymc.util import RandomState
from scipy import stats

from pymc_pcrp._idata import draw_nu0s, draw_scales
from pymc_pcrp.distributions._niw_numpy import niw_posterior
from pymc_pcrp.distributions.niw import NIWMixtureRV
from pymc_pcrp.distributions.niw_prior import NIWPrior
from pymc_pcrp.distributions.table import TableMixtureRV
from pymc_pcrp.posterior.table_ppc import replicate_table

__all__ = ["sample_posterior_predictive"]


def sample_posterior_predictive(
    idata: az.InferenceData,
    model: pm.Model | None = None,
    *,
    random_seed: RandomState = None,
    extend_inferencedata: bool = False,
) -> az.InferenceData:
    """Replicate every observed :class:`NIWMixture` and :class:`TableMixture` given each draw.

    For each draw and each cluster of that draw's partition, the cluster mean
    and covariance are drawn from their NIW posterior given the cluster's data,
    then each of its points is replicated from the Gaussian they define. With a
    learned NIW scale (``NIWPrior.scale_grid``) each draw uses its own scale,
    the sample stat ``niw_scale``; an ``idata`` without it is refused.
    For the diagonal family (``NIWPrior(covariance="diag")``) each dimension
    is replicated from its own one-dimensional NIW posterior. For a
    :class:`TableMixture` each cluster's column parameters are drawn from their
    conjugate posterior given the cluster's observed cells, and every cell is
    replicated, missing ones too, in the table's encoding (level codes, counts,
    values; :mod:`~pymc_pcrp.posterior.table_ppc`).

    Parameters
    ----------
    idata : arviz.InferenceData
        Output of ``pm.sample`` on ``model``.
    model : pm.Model, optional
        Taken from the context if omitted.
    random_seed : int or numpy.random.Generator, optional
    extend_inferencedata : bool, default=False
        Add the group to ``idata`` (and return it) instead of returning a new object.

    Returns
    -------
    arviz.InferenceData
        A ``posterior_predictive`` group with one variable per observed NIWMixture
        or TableMixture, with the dims of its observed data.
    """
    model = pm.modelcontext(model)
    rng = np.random.default_rng(random_seed)
    out = {}
    for obs in model.observed_RVs:
        if isinstance(obs.owner.op, TableMixtureRV):
            out[obs.name] = _replicate_tables(rng, idata, model, obs)
            continue
        if not isinstance(obs.owner.op, NIWMixtureRV):
            continue
        z_rv, mu0, kappa0, nu0, psi0, grid, _, nu_grid, nu_log_w = obs.owner.op.dist_params(
            obs.owner
        )
        mu0, kappa0, nu0, psi0, grid = (
            np.asarray(v.eval(), dtype=np.float64) for v in (mu0, kappa0, nu0, psi0, grid)
        )
        data = np.asarray(model.rvs_to_values[obs].eval(), dtype=np.float64)
        x = data[:, None] if data.ndim == 1 else data
        labels = _label_draws(idata, z_rv.name, obs.name, x.shape[0])
        scales = draw_scales(idata, grid, labels.shape[:2], obs.name)
        nu0s = np.full(labels.shape[:2], float(nu0))
        if nu_grid.eval().size > 1:
            grids = {"nu0_grid": nu_grid.eval(), "nu0_log_weights": nu_log_w.eval()}
            learned = NIWPrior(mu0, kappa0, float(nu0), psi0, **grids)
            nu0s = draw_nu0s(idata, learned, labels.shape[:2], obs.name)
        reps = np.empty((*labels.shape[:2], *x.shape))
        diag = getattr(obs.owner.op, "covariance", "full") == "diag"
        for c in range(labels.shape[0]):
            for d in range(labels.shape[1]):
                if diag:
                    # Diagonal family: dimension j is the 1-D NIW model (kappa0, nu0, psi0_jj),
                    # independent of the others given the labels and the scale.
                    for j in range(x.shape[1]):
                        reps[c, d, :, j] = _replicate(
                            rng,
                            x[:, j : j + 1],
                            labels[c, d],
                            mu0[j : j + 1],
                            float(kappa0),
                            float(nu0),
                            scales[c, d] * psi0[j : j + 1, j : j + 1],
                        )[:, 0]
                    continue
                reps[c, d] = _replicate(
                    rng, x, labels[c, d], mu0, float(kappa0), nu0s[c, d], scales[c, d] * psi0
                )
        out[obs.name] = reps if data.ndim == 2 else reps[..., 0]
    if not out:
        raise ValueError("The model has no observed NIWMixture or TableMixture to replicate.")
    dims = {name: list(model.named_vars_to_dims.get(name, ())) or None for name in out}
    pp = az.from_dict(
        posterior_predictive=out,
        dims={k: v for k, v in dims.items() if v},
        coords={k: np.asarray(v) for k, v in model.coords.items() if v is not None},
    )
    if extend_inferencedata:
        idata.extend(pp)
        return idata
    return pp


def _label_draws(idata: az.InferenceData, name: str, data_name: str, rows: int) -> np.ndarray:
    """Return the posterior draws of labels ``name``; refuse them unless they fit the data."""
    if name not in idata.posterior:
        raise ValueError(f"The labels '{name}' of '{data_name}' are not in idata.posterior.")
    labels = idata.posterior[name].values
    if labels.shape[-1] != rows:
        raise ValueError(
            f"The posterior labels '{name}' are for {labels.shape[-1]} points but the "
            f"data of '{data_name}' now have {rows} rows (pm.set_data?): replicated data "
            "need the data the posterior was sampled on. Set those data back, sample the new "
            "data's posterior first, or assign new points with pymc_pcrp.predict."
        )
    return labels


def _replicate_tables(rng, idata, model, obs) -> np.ndarray:
    """Replicated tables of a TableMixture, ``(chain, draw, N, D)``, one per posterior draw."""
    z_rv, *spec = obs.owner.op.dist_params(obs.owner)
    kind, nlev, conc, hyp, mask = (np.asarray(v.eval()) for v in spec)
    values = np.asarray(model.rvs_to_values[obs].eval(), dtype=np.float64)
    labels = _label_draws(idata, z_rv.name, obs.name, values.shape[0])
    reps = np.empty((*labels.shape[:2], *values.shape))
    for c in range(labels.shape[0]):
        for d in range(labels.shape[1]):
            reps[c, d] = replicate_table(rng, values, mask, labels[c, d], kind, nlev, conc, hyp)
    return reps


def _replicate(rng, x, labels, mu0, kappa0, nu0, psi0) -> np.ndarray:
    """One replicated data set for one partition."""
    out = np.empty_like(x)
    for k in np.unique(labels):
        members = labels == k
        mu_n, kappa_n, nu_n, psi_n = niw_posterior(x[members], mu0, kappa0, nu0, psi0)
        cov = np.atleast_2d(stats.invwishart.rvs(df=nu_n, scale=psi_n, random_state=rng))
        mean = rng.multivariate_normal(mu_n, cov / kappa_n)
        out[members] = rng.multivariate_normal(mean, cov, size=int(members.sum()))
    return out
