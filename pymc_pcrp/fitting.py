"""The standard pCRP mixture model, built and sampled in one call.

:func:`build_model` writes the model a user would write by hand (a
:class:`~pymc_pcrp.PowerCRP` prior on the labels and an observed
:class:`~pymc_pcrp.NIWMixture`); :func:`fit` samples it with ``pm.sample``. The
experiments, the cross-validation of ``r`` and the command line all go through
these two functions, so they sample exactly what a user's own model would.
"""

from __future__ import annotations

import arviz as az
import numpy as np
import pymc as pm

from pymc.util import RandomState

from pymc_pcrp._validation import check_data, check_positive_scalar
from pymc_pcrp.distributions import NIWMixture, NIWPrior, PowerCRP

__all__ = ["build_model", "fit"]


def build_model(
    X,
    *,
    power: float = 1.0,
    alpha: float = 1.0,
    prior: NIWPrior | None = None,
) -> pm.Model:
    """Build ``z ~ PowerCRP(alpha, power)``, ``x ~ NIWMixture(z, prior)`` observed at ``X``.

    Parameters
    ----------
    X : array_like, shape (N, D) or (N,)
        Data; NaN and infinite values are refused.
    power : float, default=1.0
        The pCRP power ``r`` (``1`` is the CRP / Dirichlet process).
    alpha : float, default=1.0
        Concentration.
    prior : NIWPrior, optional
        Defaults to :meth:`NIWPrior.from_data(X) <pymc_pcrp.NIWPrior.from_data>`.

    Returns
    -------
    pymc.Model
        With coords ``obs_id`` (``0..N-1``) and ``feature`` (``0..D-1``); the labels
        are ``z`` (dims ``obs_id``), the data ``x`` (dims ``obs_id, feature``) and
        the number of clusters ``n_clusters``.
    """
    x = check_data(X, "X")
    power = check_positive_scalar(power, "power")
    alpha = check_positive_scalar(alpha, "alpha")
    if prior is None:
        prior = NIWPrior.from_data(x)
    elif not isinstance(prior, NIWPrior):
        raise ValueError(
            f"Argument 'prior' must be a pymc_pcrp.NIWPrior or None, got {type(prior).__name__}."
        )
    n, d = x.shape
    coords = {"obs_id": np.arange(n), "feature": np.arange(d)}
    with pm.Model(coords=coords) as model:
        z = PowerCRP("z", alpha=alpha, power=power, n=n, dims="obs_id")
        NIWMixture("x", z=z, prior=prior, observed=x, dims=("obs_id", "feature"))
    return model


def fit(
    X,
    *,
    power: float = 1.0,
    alpha: float = 1.0,
    prior: NIWPrior | None = None,
    draws: int = 1000,
    tune: int = 1000,
    chains: int = 4,
    cores: int = 1,
    sweeps_per_draw: int = 1,
    init: str = "random",
    random_seed: RandomState = None,
    progressbar: bool = False,
    **sample_kwargs,
) -> az.InferenceData:
    """Cluster ``X`` with the pCRP mixture and return the posterior as InferenceData.

    Parameters
    ----------
    X, power, alpha, prior
        See :func:`build_model`.
    draws, tune, chains, cores
        Passed to ``pm.sample``; ``tune`` draws are burn-in (discarded).
    sweeps_per_draw : int, default=1
        Gibbs sweeps between stored draws (thinning).
    init : str, default="random"
        Initial partition of each chain (see :class:`~pymc_pcrp.PCRPGibbs`).
    random_seed : int or numpy.random.Generator, optional
        Makes the whole run, all chains included, reproducible.
    progressbar : bool, default=False
    **sample_kwargs
        Any other ``pm.sample`` argument (for example ``var_names``).

    Returns
    -------
    arviz.InferenceData
        ``posterior`` holds ``z`` and ``n_clusters``; ``sample_stats`` holds
        ``log_joint`` and ``n_clusters``; ``observed_data`` holds ``x``.

    Examples
    --------
    >>> import pymc_pcrp as pcrp
    >>> idata = pcrp.fit(pcrp.datasets.load_old_faithful(), power=1.11, draws=200, tune=100,
    ...                  chains=2, random_seed=1)  # doctest: +SKIP
    """
    model = build_model(X, power=power, alpha=alpha, prior=prior)
    step_kwargs = dict(sample_kwargs.pop("pcrp_gibbs", {}))
    step_kwargs.setdefault("sweeps_per_draw", sweeps_per_draw)
    step_kwargs.setdefault("init", init)
    with model:
        return pm.sample(
            draws=draws,
            tune=tune,
            chains=chains,
            cores=cores,
            random_seed=random_seed,
            progressbar=progressbar,
            pcrp_gibbs=step_kwargs,
            **sample_kwargs,
        )
