r"""Pointwise log-likelihood of a pCRP mixture, for PSIS-LOO, WAIC and model comparison.

The likelihood of the collapsed model, ``log p(X | z) = sum_k log m(X_k)``, is one
number per draw: the points of a cluster are dependent once the cluster's mean
and covariance are integrated out, so there is no product over points to split.
ArviZ's ``loo``, ``waic`` and ``compare`` need one term per point and draw. This
module stores, for draw ``s`` and point ``i``,

.. math::

    \ell_{s,i} = \log p(x_i \mid x_{-i}, z^{(s)}_{-i}, \theta^{(s)})
    = \log \Big[ \sum_k \frac{n_{k,-i}^r}{c_{s,i}} \, t_{k,-i}(x_i)
      + \frac{\alpha}{c_{s,i}} \, t_0(x_i) \Big],
    \qquad c_{s,i} = \sum_k n_{k,-i}^r + \alpha,

the density of ``x_i`` given every other point and their partition, with the
label of ``x_i`` summed over the pCRP prediction rule. ``z_{-i}`` is the draw's
partition of the other ``N - 1`` points (cluster sizes ``n_{k,-i}``; the cluster
of ``x_i`` counts one point fewer and disappears if ``x_i`` was alone),
``t_{k,-i}`` is the NIW Student-t posterior predictive of cluster ``k`` without
``x_i``, ``t_0`` the prior predictive, and ``theta^{(s)}`` the draw's other
parameters: ``alpha``, ``r`` and the NIW scale ``s`` (``Psi_0 = s psi0``, the
sample stat ``niw_scale`` when the prior learns it).

**Why PSIS-LOO applies.** The weights ``n_{k,-i}^r`` and ``alpha`` are the prior's
full conditional ``p(z_i | z_{-i})`` of the joint ``alpha^K prod Gamma(n_k)^r``,
and ``x_{-i}`` depends on ``z`` only through ``z_{-i}``, so ``exp(ell_{s,i})`` is
exactly ``p(x_i | x_{-i}, phi)`` with ``phi = (z_{-i}, s, alpha, r)``. Bayes'
rule then gives, for every ``i``,

.. math::

    p(\phi \mid x_{-i}) \propto \frac{p(\phi \mid X)}{p(x_i \mid x_{-i}, \phi)},
    \qquad
    p(x_i \mid x_{-i}) = \Big( \mathrm{E}_{\phi \sim p(\phi \mid X)}
        \big[ 1 / p(x_i \mid x_{-i}, \phi) \big] \Big)^{-1},

which is the importance-sampling identity PSIS-LOO computes with the
importance ratios ``exp(-ell_{s,i})``, as for any non-factorised model
(Bürkner, Gabry & Vehtari 2021). The posterior draws of ``(z, s, alpha)``
contain draws of ``phi``, so nothing else is needed. The only approximation is
the one of importance sampling itself, which Pareto smoothing stabilises and
whose reliability ArviZ reports as Pareto ``k``. Summing ``z_i`` out (instead of
using ``t_{z_i,-i}(x_i)`` alone) is a Rao-Blackwellisation: valid too, but the
ratios would then also carry the posterior's certainty about ``x_i``'s own
cluster, and be heavier-tailed.

**Which leave-one-out this is.** ``p(x_i | x_{-i})`` is the conditional density of
the model fitted to all ``N`` points. For ``r = 1`` (the CRP) the prior on
partitions is projective and this is also what a refit to the other ``N - 1``
points predicts. For ``r != 1`` it is not: marginalising ``z_i`` out of the
``N``-point prior gives ``p_{N-1}(z_{-i})`` tilted by ``c(z_{-i}) = sum_k n_k^r +
alpha``, so a refit without ``x_i`` weighs partitions a little differently. The
brute-force check in the tests and ``docs/loo.md`` measure both.

**References.** Vehtari, A., Gelman, A. and Gabry, J. (2017). Practical
Bayesian model evaluation using leave-one-out cross-validation and WAIC.
Statistics and Computing 27, 1413-1432. Bürkner, P.-C., Gabry, J. and Vehtari,
A. (2021). Efficient leave-one-out cross-validation for Bayesian non-factorized
normal and Student-t models. Computational Statistics 36, 1243-1261.
"""

from __future__ import annotations

from dataclasses import replace

import arviz as az
import numpy as np
import xarray as xr

from scipy.special import gammaln, logsumexp, multigammaln

from pymc_pcrp._idata import (
    draw_nu0s,
    draw_scales,
    label_draws,
    observed_points,
    per_draw,
    resolve_model_parameters,
)
from pymc_pcrp._table_record import is_table_record
from pymc_pcrp.distributions import NIWPrior
from pymc_pcrp.distributions._niw_numpy import check_prior

__all__ = ["log_likelihood", "pointwise_log_likelihood"]

LOG_PI = float(np.log(np.pi))


#: Draws are processed in blocks whose ``(draws, K_max, N)`` arrays hold about this many floats.
_BLOCK_ELEMENTS = 100_000  # small blocks stay in cache: faster than large ones here


def _compact(labels: np.ndarray) -> tuple[np.ndarray, int]:
    """Relabel each row of ``labels`` ``(B, N)`` to ``0..K_b - 1``; return them and ``max K_b``."""
    b, n = labels.shape
    low = labels.min()
    span = int(labels.max() - low) + 1
    keys = np.arange(b)[:, None] * span + (labels - low)
    unique, inverse = np.unique(keys, return_inverse=True)
    first = np.searchsorted(unique // span, np.arange(b))  # index of each row's first cluster
    local = inverse.reshape(b, n) - first[:, None]
    return local, int(local.max()) + 1


def _chunk(
    xc: np.ndarray,
    outer: np.ndarray,
    labels: np.ndarray,
    prior: NIWPrior,
    scale: np.ndarray,
    alpha: np.ndarray,
    power: np.ndarray,
) -> np.ndarray:
    """``ell_i`` of a block of ``B`` draws for every point, shape ``(B, N)``.

    ``xc`` are the points centred on ``mu0``, ``outer`` their flattened outer
    products ``(N, D * D)``; ``scale``, ``alpha`` and ``power`` have shape ``(B,)``.
    Every draw gets ``K_max`` cluster slots; the unused ones have size 0, hence
    weight 0, and hold the prior (a valid matrix), so no draw needs a special case.
    """
    n, d = xc.shape
    local, k = _compact(labels)
    b = labels.shape[0]
    one_hot = np.zeros((b, k, n))
    one_hot[np.arange(b)[:, None], local, np.arange(n)[None, :]] = 1.0
    counts = one_hot.sum(axis=2)  # (B, K)
    sums = one_hot @ xc  # (B, K, D)
    q = (one_hot @ outer).reshape(b, k, d, d)
    kappa = prior.kappa0 + counts
    nu = prior.nu0 + counts
    mean = sums / kappa[..., None]  # posterior mean minus mu0
    psi = scale[:, None, None, None] * prior.psi0 + q - sums[..., :, None] * mean[..., None, :]
    chol = np.linalg.cholesky(psi)
    logdet = 2.0 * np.log(np.diagonal(chol, axis1=2, axis2=3)).sum(axis=2)  # log|Psi_k|, (B, K)
    # u[b, k, i] = (x_i - m_k)^T P_k (x_i - m_k) with P_k = Psi_k^{-1}, expanded into three
    # products so that the work over points is matrix multiplication.
    inv_chol = np.linalg.inv(chol)
    precision = np.swapaxes(inv_chol, 2, 3) @ inv_chol  # (B, K, D, D)
    p_mean = (precision @ mean[..., None])[..., 0]  # (B, K, D)
    u = (
        precision.reshape(b, k, d * d) @ outer.T
        - 2.0 * p_mean @ xc.T
        + np.sum(p_mean * mean, axis=2)[..., None]
    )  # (B, K, N)
    np.maximum(u, 0.0, out=u)

    # Cluster k's Student-t predictive at every point (used for the points outside k):
    # df = nu - D + 1, scale Psi (kappa + 1) / (kappa df), so maha / df = u kappa / (kappa + 1).
    df = nu - d + 1.0
    const = (
        gammaln(0.5 * (df + d))
        - gammaln(0.5 * df)
        - 0.5 * d * LOG_PI
        - 0.5 * logdet
        - 0.5 * d * np.log((kappa + 1.0) / kappa)
    )
    log_t = const[..., None] - 0.5 * (df + d)[..., None] * np.log1p(
        u * (kappa / (kappa + 1.0))[..., None]
    )

    # Own cluster without x_i: log m(X_k) - log m(X_k \ i). Removing x_i downdates Psi_k by
    # kappa / (kappa - 1) (x_i - mu_k)(x_i - mu_k)^T, so |Psi_k^{(-i)}| = |Psi_k| (1 - c u).
    kappa_i = np.take_along_axis(kappa, local, axis=1)  # (B, N)
    nu_i = np.take_along_axis(nu, local, axis=1)
    u_i = np.take_along_axis(u, local[:, None, :], axis=1)[:, 0]
    shrink = np.log1p(-np.minimum(u_i * kappa_i / (kappa_i - 1.0), 1.0 - 1e-16))
    log_own = (
        -0.5 * d * LOG_PI
        + multigammaln(0.5 * nu_i, d)
        - multigammaln(0.5 * (nu_i - 1.0), d)
        + 0.5 * d * np.log((kappa_i - 1.0) / kappa_i)
        - 0.5 * np.take_along_axis(logdet, local, axis=1)
        + 0.5 * (nu_i - 1.0) * shrink
    )

    # The prior predictive t_0 (an empty cluster) at scale 1; a scale s adds
    # -(D/2) log s to the constant and divides the Mahalanobis distance by s.
    df0 = prior.nu0 - d + 1.0
    chol0 = np.linalg.cholesky(prior.psi0 * (prior.kappa0 + 1.0) / (prior.kappa0 * df0))
    maha0 = np.sum(np.linalg.solve(chol0, xc.T) ** 2, axis=0)  # (N,)
    log_t0 = (
        gammaln(0.5 * (df0 + d))
        - gammaln(0.5 * df0)
        - 0.5 * d * np.log(df0 * np.pi)
        - np.log(np.diagonal(chol0)).sum()
        - 0.5 * d * np.log(scale)[:, None]
        - 0.5 * (df0 + d) * np.log1p(maha0[None, :] / (df0 * scale[:, None]))
    )  # (B, N)

    with np.errstate(divide="ignore"):
        log_size = np.log(counts)  # -inf for an unused slot
        log_size_own = np.log(np.take_along_axis(counts, local, axis=1) - 1.0)  # -inf if alone
    terms = power[:, None, None] * log_size[..., None] + log_t  # (B, K, N)
    np.put_along_axis(
        terms, local[:, None, :], (power[:, None] * log_size_own + log_own)[:, None, :], axis=1
    )
    terms = np.concatenate([terms, (np.log(alpha)[:, None] + log_t0)[:, None, :]], axis=1)
    sizes_r = np.exp(power[:, None] * log_size)  # n_k^r, 0 for an unused slot
    norm = (
        sizes_r.sum(axis=1)[:, None]
        - np.take_along_axis(sizes_r, local, axis=1)
        + np.exp(power[:, None] * log_size_own)
        + alpha[:, None]
    )
    return logsumexp(terms, axis=1) - np.log(norm)


def pointwise_log_likelihood(
    X,
    labels,
    prior: NIWPrior,
    *,
    alpha,
    power,
    scales=None,
    nu0s=None,
) -> np.ndarray:
    r"""``log p(x_i | x_{-i}, z_{-i}, s, alpha, r)`` for every draw and point.

    The quantity of the module docstring, from arrays: the building block of
    :func:`log_likelihood`.

    Parameters
    ----------
    X : array_like, shape (N, D)
        The clustered points.
    labels : array_like of int, shape (S, N)
        One partition of the points per draw.
    prior : NIWPrior
        The component prior. With a learned scale, ``psi0`` is the base matrix
        and ``scales`` must be given.
    alpha, power : float or array_like of shape (S,)
        The concentration and the pCRP power, one value or one per draw.
    scales : array_like of shape (S,), optional
        Each draw's NIW scale ``s`` (``Psi_0 = s psi0``). Required when the prior
        learns its scale; for a fixed-scale prior it defaults to 1.
    nu0s : array_like of shape (S,), optional
        Each draw's ``nu0`` (the sample stat ``niw_nu0``). Required when the
        prior learns ``nu0``; otherwise it defaults to the prior's ``nu0``.

    Returns
    -------
    numpy.ndarray, shape (S, N)
    """
    x = np.asarray(X, dtype=np.float64)
    x = x[:, None] if x.ndim == 1 else x
    labels = np.asarray(labels)
    labels = labels[None] if labels.ndim == 1 else labels
    n_draws, n = labels.shape
    if x.shape != (n, prior.dim):
        raise ValueError(
            f"Argument 'X' must have shape ({n}, {prior.dim}) to match the labels and the prior, "
            f"but got {x.shape}."
        )
    if scales is None:
        if prior.learns_scale:
            raise ValueError(
                "Argument 'scales' is required: the prior learns its scale, so each draw needs "
                "its own s (the sample stat niw_scale)."
            )
        scales = np.ones(n_draws)
    if nu0s is None:
        if prior.learns_nu0:
            raise ValueError(
                "Argument 'nu0s' is required: the prior learns nu0, so each draw needs its own "
                "nu0 (the sample stat niw_nu0)."
            )
        nu0s = np.full(n_draws, prior.nu0)
    nu0s = np.broadcast_to(np.asarray(nu0s, dtype=np.float64), (n_draws,))
    if not np.all(np.isfinite(nu0s) & (nu0s > prior.dim - 1)):
        raise ValueError(f"Argument 'nu0s' must be finite and > D - 1 = {prior.dim - 1}.")
    per_draw = {
        name: np.broadcast_to(np.asarray(value, dtype=np.float64), (n_draws,))
        for name, value in (("alpha", alpha), ("power", power), ("scales", scales))
    }
    for name, value in per_draw.items():
        if not np.all(np.isfinite(value) & (value > 0)):
            raise ValueError(f"Argument '{name}' must be finite and > 0.")
    xc = x - prior.mu0
    outer = (xc[:, :, None] * xc[:, None, :]).reshape(n, -1)
    out = np.empty((n_draws, n))
    ordered = np.sort(labels, axis=1)
    k_max = int((np.diff(ordered, axis=1) != 0).sum(axis=1).max(initial=0)) + 1
    step = max(1, _BLOCK_ELEMENTS // (k_max * n))
    for nu0 in np.unique(nu0s):  # one pass per value of nu0 (one pass for a fixed nu0)
        rows = np.flatnonzero(nu0s == nu0)
        fixed = replace(prior, nu0=float(nu0), nu0_grid=None, nu0_log_weights=None)
        for start in range(0, rows.size, step):
            block = rows[start : start + step]
            out[block] = _chunk(
                xc,
                outer,
                labels[block],
                fixed,
                per_draw["scales"][block],
                per_draw["alpha"][block],
                per_draw["power"][block],
            )
    return out


def _from_idata(idata, power, alpha, prior, var_name, labels_name) -> dict:
    """Arrays and names for :func:`log_likelihood` from the InferenceData alone."""
    labels = label_draws(idata, labels_name)
    shape = labels.shape[:2]
    power, alpha, prior = resolve_model_parameters(idata, power, alpha, prior)
    x = observed_points(idata, var_name)
    if labels.shape[-1] != x.shape[0]:
        raise ValueError(
            f"The label draws cover {labels.shape[-1]} points but idata.observed_data holds "
            f"{x.shape[0]}."
        )
    prior = check_prior(prior, x, x.shape[1])
    obs = idata.observed_data
    name = var_name if var_name is not None else next(iter(obs.data_vars))
    return {
        "x": x,
        "labels": labels,
        "prior": prior,
        "alpha": per_draw(alpha, shape, "alpha"),
        "power": per_draw(power, shape, "power"),
        "name": name,
        "obs_dim": obs[name].dims[0],
        "obs_coord": obs[name].coords[obs[name].dims[0]].values,
    }


def log_likelihood(
    idata: az.InferenceData,
    *,
    model=None,
    power: float | str | None = None,
    alpha: float | str | None = None,
    prior: NIWPrior | None = None,
    var_name: str | None = None,
    labels_name: str | None = None,
    extend_inferencedata: bool = True,
) -> az.InferenceData | xr.Dataset:
    r"""Add the pointwise log-likelihood of a pCRP mixture to ``idata`` (for LOO, WAIC).

    For each draw and point ``i``, the value is ``log p(x_i | x_{-i}, z_{-i}, s,
    alpha, r)``: the density of ``x_i`` given all other points and their
    partition in that draw, with the label of ``x_i`` summed over the pCRP
    prediction rule (the module :mod:`pymc_pcrp.posterior.pointwise` defines it
    and explains why ``az.loo`` estimates the leave-one-out predictive density
    ``sum_i log p(x_i | x_{-i})`` of the model from it). The draw's NIW scale
    ``s`` is used when the prior learns it.

    ``pm.compute_log_likelihood`` and ``pm.sample(idata_kwargs={"log_likelihood":
    True})`` call this function for an observed :class:`~pymc_pcrp.NIWMixture`
    (a posterior of a :class:`~pymc_pcrp.TableMixture` is handled from its
    record, with the definition of :mod:`pymc_pcrp.posterior.table_prediction`)
    (``import pymc_pcrp`` installs the hook), and so does
    :func:`pymc_pcrp.fit` with the same ``idata_kwargs``.

    Parameters
    ----------
    idata : arviz.InferenceData
        Posterior with the label draws, ``observed_data`` and, for a prior that
        learns its scale, the sample stat ``niw_scale`` (as :func:`pymc_pcrp.fit`
        and ``pm.sample`` with :class:`~pymc_pcrp.PCRPGibbs` record them).
    model : pymc.Model, optional
        The model that was sampled. ``power``, ``alpha``, the prior and the data
        are then read from it, per draw when they are random variables (a
        ``pm.Gamma`` alpha, say); the other parameters below must be left out.
    power, alpha : float or str, optional
        Without ``model``: the values the posterior was sampled with, or the name
        of a scalar posterior variable holding one value per draw. Read from
        the record in the InferenceData when there is one (written by
        :func:`pymc_pcrp.fit`, by ``pm.sample`` with :mod:`pymc_pcrp` imported,
        or by :func:`pymc_pcrp.record_model`); a random one is then used draw
        by draw, and a value given here that differs is refused. Without a
        record both are required, as in :func:`~pymc_pcrp.predict`.
    prior : NIWPrior, optional
        Without ``model``: the recorded prior; required without a record.
    var_name : str, optional
        The observed variable, if ``idata.observed_data`` holds several.
    labels_name : str, optional
        The label variable, if the posterior holds several.
    extend_inferencedata : bool, default=True
        Add (or replace) the variable in ``idata.log_likelihood`` and return
        ``idata``; with False return the dataset only.

    Returns
    -------
    arviz.InferenceData or xarray.Dataset
        The log-likelihood has the observed variable's name (``x`` for
        :func:`pymc_pcrp.fit`) and dims ``(chain, draw, obs_id)``.

    Examples
    --------
    >>> import arviz as az, pymc_pcrp as pcrp
    >>> idata = pcrp.fit(pcrp.datasets.load_old_faithful(), power=1.1, draws=500,
    ...                  random_seed=1)  # doctest: +SKIP
    >>> pcrp.posterior.log_likelihood(idata)  # doctest: +SKIP
    >>> az.loo(idata)  # doctest: +SKIP
    """
    if model is None and is_table_record(idata):  # pymc_pcrp.posterior.table_prediction
        from pymc_pcrp.posterior.table_prediction import table_pointwise

        terms, values = table_pointwise(idata, power, alpha, prior, labels_name)
        return _store(idata, terms, values, extend_inferencedata)
    if model is not None:
        if any(v is not None for v in (power, alpha, prior)):
            raise ValueError(
                "Arguments 'power', 'alpha' and 'prior' are read from 'model'; leave them out "
                "when passing a model."
            )
        from pymc_pcrp.posterior._model_terms import model_terms

        terms = model_terms(model, idata, var_name)
    else:
        terms = _from_idata(idata, power, alpha, prior, var_name, labels_name)
    labels = terms["labels"]
    n_chains, n_draws, n = labels.shape
    prior = terms["prior"]
    scales = draw_scales(
        idata, prior.grid_arrays()[0], (n_chains, n_draws), "log_likelihood"
    ).reshape(-1)
    nu0s = draw_nu0s(idata, prior, (n_chains, n_draws), "log_likelihood").reshape(-1)
    values = pointwise_log_likelihood(
        terms["x"],
        labels.reshape(-1, n),
        prior,
        alpha=terms["alpha"],
        power=terms["power"],
        scales=scales,
        nu0s=nu0s,
    ).reshape(n_chains, n_draws, n)
    return _store(idata, terms, values, extend_inferencedata)


def _store(idata, terms: dict, values: np.ndarray, extend_inferencedata: bool):
    """Return the pointwise values as a dataset, added to ``idata.log_likelihood`` if asked."""
    post = idata.posterior
    dims = ("chain", "draw", terms["obs_dim"])
    dataset = xr.Dataset(
        {terms["name"]: (dims, values)},
        coords={
            "chain": post.coords["chain"].values,
            "draw": post.coords["draw"].values,
            terms["obs_dim"]: terms["obs_coord"],
        },
        attrs={
            "pcrp_log_likelihood": "log p(x_i | x_{-i}, z_{-i}, s, alpha, r): "
            "pymc_pcrp.posterior.log_likelihood"
        },
    )
    if not extend_inferencedata:
        return dataset
    if "log_likelihood" in idata.groups():
        merged = idata.log_likelihood.drop_vars(terms["name"], errors="ignore").merge(dataset)
        merged.attrs.update(idata.log_likelihood.attrs)
        merged.attrs.update(dataset.attrs)
        idata.log_likelihood = merged
    else:
        idata.add_groups(log_likelihood=dataset)
    return idata
