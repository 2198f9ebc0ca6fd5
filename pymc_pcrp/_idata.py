"""Reading label draws, observed data and model parameters back out of an ``InferenceData``.

Every posterior summary in the package (metrics, similarity matrices, point
estimates, predictions) starts from the same two arrays: the label draws of a
:class:`~pymc_pcrp.PowerCRP` variable and the data it clusters. This module is
the one place that finds them. It also writes and reads the fixed parameters
that :func:`pymc_pcrp.fit` stores in the ``constant_data`` group (``power``,
``alpha`` and the NIW prior ``mu0``, ``kappa0``, ``nu0``, ``psi0``), so that
predictions need nothing but the InferenceData.
"""

from __future__ import annotations

import arviz as az
import numpy as np

__all__ = [
    "draw_indices",
    "label_draws",
    "observed_points",
    "resolve_model_parameters",
    "store_model_parameters",
    "stored_model_parameters",
]


def label_draws(idata: az.InferenceData, var_name: str | None = None) -> np.ndarray:
    """Label draws of a pCRP variable, shape ``(chain, draw, N)``, dtype ``int64``.

    Parameters
    ----------
    idata : arviz.InferenceData
        Output of ``pm.sample`` (or :func:`pymc_pcrp.fit`).
    var_name : str, optional
        Name of the label variable. If omitted, the posterior must hold exactly
        one integer variable with a trailing dimension over the points besides the
        cluster counts; ``"z"`` is tried first.

    Raises
    ------
    ValueError
        If there is no posterior group, the variable is absent (for example
        because ``pm.sample(var_names=...)`` left it out), or the choice is
        ambiguous.
    """
    if "posterior" not in idata.groups():
        raise ValueError("Argument 'idata' has no posterior group; pass the output of pm.sample.")
    post = idata.posterior
    if var_name is None:
        candidates = [
            name
            for name, da in post.data_vars.items()
            if da.ndim == 3 and np.issubdtype(da.dtype, np.integer)
        ]
        if "z" in candidates:
            var_name = "z"
        elif len(candidates) == 1:
            var_name = candidates[0]
        elif not candidates:
            raise ValueError(
                "idata.posterior holds no label vector (an integer variable with dims "
                "(chain, draw, N)). Was it dropped with pm.sample(var_names=...)? Keep the "
                "labels to use this function."
            )
        else:
            raise ValueError(
                f"idata.posterior holds several label vectors {candidates}; pass var_name."
            )
    if var_name not in post:
        raise ValueError(
            f"Argument 'var_name': '{var_name}' is not in idata.posterior "
            f"(it has {sorted(post.data_vars)})."
        )
    values = np.asarray(post[var_name].values)
    if values.ndim != 3 or not np.issubdtype(values.dtype, np.integer):
        raise ValueError(
            f"'{var_name}' is not a label vector: expected integer draws of shape "
            f"(chain, draw, N), got dtype {values.dtype} and shape {values.shape}."
        )
    return values.astype(np.int64, copy=False)


def observed_points(idata: az.InferenceData, var_name: str | None = None) -> np.ndarray:
    """Return the clustered data from ``idata.observed_data`` as a float64 ``(N, D)`` array.

    Parameters
    ----------
    idata : arviz.InferenceData
    var_name : str, optional
        Name of the observed variable; needed only when there are several.
    """
    if "observed_data" not in idata.groups():
        raise ValueError(
            "Argument 'idata' has no observed_data group; sample a model with an observed "
            "NIWMixture (pm.sample stores it by default)."
        )
    obs = idata.observed_data
    names = list(obs.data_vars)
    if var_name is None:
        if len(names) != 1:
            raise ValueError(f"idata.observed_data holds {names}; pass var_name.")
        var_name = names[0]
    if var_name not in obs:
        raise ValueError(f"Argument 'var_name': '{var_name}' is not in idata.observed_data.")
    x = np.asarray(obs[var_name].values, dtype=np.float64)
    return x[:, None] if x.ndim == 1 else x


def draw_indices(n_chains: int, n_draws: int, max_draws: int | None) -> np.ndarray:
    """Flat indices into ``(chain, draw)`` of the draws to use, evenly spaced."""
    total = n_chains * n_draws
    if max_draws is None or max_draws >= total:
        return np.arange(total)
    if int(max_draws) != max_draws or max_draws < 1:
        raise ValueError(f"Argument 'max_draws' must be a positive integer, got {max_draws}.")
    return np.unique(np.linspace(0, total - 1, int(max_draws)).round().astype(np.int64))


# --- The model's fixed parameters, stored by fit() in the constant_data group ---------------

#: Names of the constant_data variables written by :func:`store_model_parameters`.
PARAMETER_NAMES = ("power", "alpha", "mu0", "kappa0", "nu0", "psi0")
#: Added for a prior with a learned scale (``NIWPrior.scale_grid``).
SCALE_NAMES = ("scale_grid", "scale_log_weights")
#: Added for a prior with a learned ``nu0`` (``NIWPrior.nu0_grid``).
NU0_NAMES = ("nu0_grid", "nu0_log_weights")
_MARK = "pcrp_parameters"
#: Attribute naming the covariance family of the stored prior (absent: "full").
_COVARIANCE = "pcrp_covariance"


def store_model_parameters(
    idata: az.InferenceData, *, power: float, alpha: float, prior, feature=None
) -> None:
    """Add ``power``, ``alpha`` and the NIW prior to ``idata.constant_data`` (in place).

    ``mu0`` has dims ``feature``, ``psi0`` dims ``(feature, feature_bis)``, the
    others are scalars; the group gets the attribute ``pcrp_parameters`` naming
    them, which is how :func:`stored_model_parameters` recognises them.
    """
    import xarray as xr

    dim = prior.dim
    feature = np.arange(dim) if feature is None else np.asarray(feature)
    ds = xr.Dataset(
        {
            "power": ((), float(power)),
            "alpha": ((), float(alpha)),
            "mu0": (("feature",), np.asarray(prior.mu0, dtype=np.float64)),
            "kappa0": ((), float(prior.kappa0)),
            "nu0": ((), float(prior.nu0)),
            "psi0": (("feature", "feature_bis"), np.asarray(prior.psi0, dtype=np.float64)),
        },
        coords={"feature": feature, "feature_bis": feature},
    )
    names = PARAMETER_NAMES
    if prior.learns_scale:
        ds["scale_grid"] = (("niw_scale_grid",), prior.scale_grid)
        ds["scale_log_weights"] = (("niw_scale_grid",), prior.scale_log_weights)
        names = (*names, *SCALE_NAMES)
    if prior.learns_nu0:
        ds["nu0_grid"] = (("niw_nu0_grid",), prior.nu0_grid)
        ds["nu0_log_weights"] = (("niw_nu0_grid",), prior.nu0_log_weights)
        names = (*names, *NU0_NAMES)
    ds.attrs[_MARK] = ", ".join(names)
    ds.attrs[_COVARIANCE] = prior.covariance
    if "constant_data" in idata.groups():
        merged = idata.constant_data.assign(ds.data_vars)
        merged.attrs.update(ds.attrs)
        idata.constant_data = merged
    else:
        idata.add_groups(constant_data=ds)


def stored_model_parameters(idata: az.InferenceData) -> dict | None:
    """``power``, ``alpha`` and ``prior`` (an NIWPrior) as stored by :func:`pymc_pcrp.fit`.

    Returns None for an InferenceData without them (older runs, or ``pm.sample``
    on a hand-written model).
    """
    from pymc_pcrp.distributions import NIWPrior

    if "constant_data" not in idata.groups():
        return None
    cd = idata.constant_data
    if _MARK not in cd.attrs or any(name not in cd for name in PARAMETER_NAMES):
        return None
    values = {name: np.asarray(cd[name].values, dtype=np.float64) for name in PARAMETER_NAMES}
    learned = "scale_grid" in cd.attrs[_MARK].split(", ")
    learned_nu0 = "nu0_grid" in cd.attrs[_MARK].split(", ")
    prior = NIWPrior(
        mu0=values["mu0"],
        kappa0=float(values["kappa0"]),
        nu0=float(values["nu0"]),
        psi0=values["psi0"],
        scale_grid=np.asarray(cd["scale_grid"].values) if learned else None,
        scale_log_weights=np.asarray(cd["scale_log_weights"].values) if learned else None,
        covariance=str(cd.attrs.get(_COVARIANCE, "full")),
        nu0_grid=np.asarray(cd["nu0_grid"].values) if learned_nu0 else None,
        nu0_log_weights=np.asarray(cd["nu0_log_weights"].values) if learned_nu0 else None,
    )
    return {"power": float(values["power"]), "alpha": float(values["alpha"]), "prior": prior}


def _same(a, b) -> bool:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=1e-12, atol=0.0))


def resolve_model_parameters(idata: az.InferenceData, power, alpha, prior) -> tuple:
    """Return ``(power, alpha, prior)``: the given values checked against the stored ones.

    An argument left at None takes the stored value. Without stored values,
    ``power`` must be given, ``alpha`` defaults to 1 and ``prior`` stays None
    (the caller then uses ``NIWPrior.from_data``).

    Raises
    ------
    ValueError
        If a given value differs from the one stored in ``idata.constant_data``
        (naming the argument and both values), or ``power`` is missing and not
        stored.
    """
    from pymc_pcrp.distributions import NIWPrior

    if prior is not None and not isinstance(prior, NIWPrior):
        raise ValueError(
            f"Argument 'prior' must be a pymc_pcrp.NIWPrior or None, got {type(prior).__name__}."
        )
    stored = stored_model_parameters(idata)
    if stored is None:
        if power is None:
            raise ValueError(
                "Argument 'power' is required: idata.constant_data does not record the power "
                "the posterior was sampled with (InferenceData from pymc_pcrp.fit store it; "
                "this one comes from an older run or a hand-written model)."
            )
        return power, 1.0 if alpha is None else alpha, prior
    for name, given in (("power", power), ("alpha", alpha)):
        if given is not None and not _same(given, stored[name]):
            raise ValueError(
                f"Argument '{name}' = {float(np.asarray(given)):g} conflicts with the {name} "
                f"= {stored[name]:g} the posterior was sampled with (stored in "
                f"idata.constant_data); leave '{name}' out to use the stored value."
            )
    if prior is not None:
        ref = stored["prior"]
        if prior.covariance != ref.covariance:
            raise ValueError(
                f"Argument 'prior' has covariance={prior.covariance!r} but the posterior was "
                f"sampled with covariance={ref.covariance!r} (stored in idata.constant_data); "
                "leave 'prior' out to use the stored prior."
            )
        fields = ("mu0", "kappa0", "nu0", "psi0", *SCALE_NAMES, *NU0_NAMES)
        for field in fields:
            mine, theirs = getattr(prior, field), getattr(ref, field)
            if (mine is None) != (theirs is None) or (mine is not None and not _same(mine, theirs)):
                raise ValueError(
                    f"Argument 'prior' conflicts with the NIW prior the posterior was sampled "
                    f"with (stored in idata.constant_data): {field} = {mine} given, {theirs} "
                    "stored; leave 'prior' out to use the stored prior."
                )
    return stored["power"], stored["alpha"], stored["prior"]


def draw_scales(idata: az.InferenceData, grid, shape: tuple, what: str) -> np.ndarray:
    """Return the NIW scale ``s`` of each draw (``Psi_0 = s psi0``), shape ``(chain, draw)``.

    A one-value ``grid`` (a fixed scale) gives that value for every draw; a
    learned scale is read from the sample stat ``niw_scale`` that
    :class:`~pymc_pcrp.PCRPGibbs` records, and each value must lie on ``grid``.

    Raises
    ------
    ValueError
        If the scale is learned but ``idata`` has no usable ``niw_scale`` stat,
        or its values are not on the prior's grid (another prior was sampled).
    """
    grid = np.atleast_1d(np.asarray(grid, dtype=np.float64))
    if grid.size == 1:
        return np.full(shape, float(grid[0]))
    stats = idata.sample_stats if "sample_stats" in idata.groups() else None
    if stats is None or "niw_scale" not in stats or stats["niw_scale"].shape != tuple(shape):
        raise ValueError(
            f"{what}: the NIW prior learns its scale, so each posterior draw needs its own "
            "scale, but idata.sample_stats has no 'niw_scale' of shape (chain, draw) "
            f"{tuple(shape)}; sample with pymc_pcrp's PCRPGibbs step, or pass a fixed-scale "
            "prior (NIWPrior.from_data(X, scale=...)) that matches the run."
        )
    scales = np.asarray(stats["niw_scale"].values, dtype=np.float64)
    gap = np.abs(np.log(scales)[..., None] - np.log(grid)).min(axis=-1)
    if not np.all(gap < 1e-9):
        raise ValueError(
            f"{what}: the draws' 'niw_scale' values are not on the prior's scale grid; the "
            "posterior was sampled with another prior."
        )
    return scales


def draw_nu0s(idata: az.InferenceData, prior, shape: tuple, what: str) -> np.ndarray:
    """Return the ``nu0`` of each draw, shape ``(chain, draw)``.

    A fixed ``nu0`` gives that value for every draw; a learned one is read from
    the sample stat ``niw_nu0`` that :class:`~pymc_pcrp.PCRPGibbs` records, and
    each value must lie on ``prior.nu0_grid``.

    Raises
    ------
    ValueError
        If ``nu0`` is learned but ``idata`` has no usable ``niw_nu0`` stat, or
        its values are not on the prior's grid (another prior was sampled).
    """
    if not prior.learns_nu0:
        return np.full(shape, float(prior.nu0))
    stats = idata.sample_stats if "sample_stats" in idata.groups() else None
    if stats is None or "niw_nu0" not in stats or stats["niw_nu0"].shape != tuple(shape):
        raise ValueError(
            f"{what}: the NIW prior learns nu0, so each posterior draw needs its own nu0, but "
            f"idata.sample_stats has no 'niw_nu0' of shape (chain, draw) {tuple(shape)}; "
            "sample with pymc_pcrp's PCRPGibbs step, or pass the prior of the run."
        )
    values = np.asarray(stats["niw_nu0"].values, dtype=np.float64)
    gap = np.abs(values[..., None] - prior.nu0_grid).min(axis=-1)
    if not np.all(gap <= 1e-9 * np.abs(values)):
        raise ValueError(
            f"{what}: the draws' 'niw_nu0' values are not on the prior's nu0 grid; the "
            "posterior was sampled with another prior."
        )
    return values
