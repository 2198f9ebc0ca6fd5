"""Reading label draws, observed data and model parameters back out of an ``InferenceData``.

Every posterior summary in the package (metrics, similarity matrices, point
estimates, predictions) starts from the same two arrays: the label draws of a
:class:`~pymc_pcrp.PowerCRP` variable and the data it clusters. This module is
the one place that finds them. It also writes and reads the record of the
model that :func:`pymc_pcrp.fit` and ``pm.sample`` leave in the ``constant_data``
group (:func:`pymc_pcrp.record_model`: ``power``, ``alpha`` and the NIW prior
``mu0``, ``kappa0``, ``nu0``, ``psi0``; a random ``alpha`` or ``power`` as the name
of its posterior draws), so that predictions need nothing but the InferenceData.
"""

from __future__ import annotations

import arviz as az
import numpy as np

__all__ = [
    "draw_indices",
    "label_draws",
    "observed_points",
    "per_draw",
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
    x = x[:, None] if x.ndim == 1 else x
    bad = ~np.isfinite(x).all(axis=1)
    if bad.any():
        rows = np.flatnonzero(bad)
        shown = ", ".join(str(int(i)) for i in rows[:5]) + (", ..." if rows.size > 5 else "")
        raise ValueError(
            f"idata.observed_data['{var_name}'] holds NaN or infinite values in {rows.size} "
            f"row(s) (positions {shown}), so every prediction from it would be NaN. The data "
            "a posterior was sampled on are finite; this InferenceData was changed or built "
            "by hand. Restore the observed data the model was fitted to."
        )
    return x


def draw_indices(n_chains: int, n_draws: int, max_draws: int | None) -> np.ndarray:
    """Flat indices into ``(chain, draw)`` of the draws to use, evenly spaced."""
    total = n_chains * n_draws
    if max_draws is None or max_draws >= total:
        return np.arange(total)
    if int(max_draws) != max_draws or max_draws < 1:
        raise ValueError(f"Argument 'max_draws' must be a positive integer, got {max_draws}.")
    return np.unique(np.linspace(0, total - 1, int(max_draws)).round().astype(np.int64))


# --- The record of the model: power, alpha and the NIW prior, in the constant_data group ----

#: Names of the constant_data variables of the record (``power``/``alpha`` when fixed).
PARAMETER_NAMES = ("power", "alpha", "mu0", "kappa0", "nu0", "psi0")
#: Added for a prior with a learned scale (``NIWPrior.scale_grid``).
SCALE_NAMES = ("scale_grid", "scale_log_weights")
#: Added for a prior with a learned ``nu0`` (``NIWPrior.nu0_grid``).
NU0_NAMES = ("nu0_grid", "nu0_log_weights")
_MARK = "pcrp_parameters"
#: Attribute naming the covariance family of the stored prior (absent: "full").
_COVARIANCE = "pcrp_covariance"
#: Attributes naming the posterior variable that holds a random alpha or power, draw by draw.
_DRAWS = {"alpha": "pcrp_alpha_draws", "power": "pcrp_power_draws"}
#: Posterior variables written by :func:`record_model` for a random alpha or power that is
#: an expression of other variables rather than a variable of the posterior itself.
DERIVED_VARIABLES = {"alpha": "pcrp_alpha", "power": "pcrp_power"}
#: The record's attribute names, for the record of another family (:mod:`pymc_pcrp._table_record`).
RECORD_ATTR, COVARIANCE_ATTR, DRAW_ATTRS = _MARK, _COVARIANCE, _DRAWS

_FIX = (
    "Sample the model with pymc_pcrp imported (pm.sample records them unless the PyMC "
    "integration is switched off), call pymc_pcrp.record_model(idata, model) with the model "
    "that was sampled, or pass power=, alpha= and prior= explicitly."
)


def store_model_parameters(
    idata: az.InferenceData,
    *,
    power,
    alpha,
    prior,
    feature=None,
    feature_dim: str = "feature",
) -> None:
    """Add ``power``, ``alpha`` and the NIW prior to ``idata.constant_data`` (in place).

    ``power`` and ``alpha`` are numbers, or the name of the posterior variable
    that holds them draw by draw (a random one); a name is recorded in the
    attribute ``pcrp_power_draws`` or ``pcrp_alpha_draws``. ``mu0`` has dims
    ``feature_dim``, ``psi0`` dims ``(feature_dim, feature_dim + "_bis")``,
    the others are scalars; the group gets the attribute ``pcrp_parameters``
    naming them, which is how :func:`stored_model_parameters` recognises them.
    """
    import xarray as xr

    dim = prior.dim
    feature = np.arange(dim) if feature is None else np.asarray(feature)
    bis = f"{feature_dim}_bis"
    ds = xr.Dataset(
        {
            "mu0": ((feature_dim,), np.asarray(prior.mu0, dtype=np.float64)),
            "kappa0": ((), float(prior.kappa0)),
            "nu0": ((), float(prior.nu0)),
            "psi0": ((feature_dim, bis), np.asarray(prior.psi0, dtype=np.float64)),
        },
        coords={feature_dim: feature, bis: feature},
    )
    names = ["mu0", "kappa0", "nu0", "psi0"]
    for name, value in (("alpha", alpha), ("power", power)):
        if isinstance(value, str):
            ds.attrs[_DRAWS[name]] = value
        else:
            ds[name] = ((), float(value))
            names.insert(0, name)
    if prior.learns_scale:
        ds["scale_grid"] = (("niw_scale_grid",), prior.scale_grid)
        ds["scale_log_weights"] = (("niw_scale_grid",), prior.scale_log_weights)
        names += SCALE_NAMES
    if prior.learns_nu0:
        ds["nu0_grid"] = (("niw_nu0_grid",), prior.nu0_grid)
        ds["nu0_log_weights"] = (("niw_nu0_grid",), prior.nu0_log_weights)
        names += NU0_NAMES
    ds.attrs[_MARK] = ", ".join(names)
    ds.attrs[_COVARIANCE] = prior.covariance
    if "constant_data" in idata.groups():
        old = idata.constant_data
        stale = [v for v in (*PARAMETER_NAMES, *SCALE_NAMES, *NU0_NAMES) if v in old]
        merged = old.drop_vars(stale).assign(ds.data_vars)
        attrs = {k: v for k, v in old.attrs.items() if k not in _DRAWS.values()}
        merged.attrs = {**attrs, **ds.attrs}
        idata.constant_data = merged
    else:
        idata.add_groups(constant_data=ds)


def stored_model_parameters(idata: az.InferenceData) -> dict | None:
    """``power``, ``alpha`` and ``prior`` (an NIWPrior) as recorded in ``idata``.

    ``power`` and ``alpha`` are floats, or float arrays of shape ``(chain, draw)``
    when the posterior samples them. Returns None for an InferenceData without a
    record (an older run, or ``pm.sample`` with the PyMC integration switched off).

    Raises
    ------
    ValueError
        If the record names posterior draws of ``alpha`` or ``power`` that
        ``idata.posterior`` does not hold.
    """
    from pymc_pcrp.distributions import NIWPrior

    if "constant_data" not in idata.groups():
        return None
    cd = idata.constant_data
    if _MARK not in cd.attrs:
        return None
    recorded = cd.attrs[_MARK].split(", ")
    out = {}
    for name in ("power", "alpha"):
        if _DRAWS[name] in cd.attrs:
            out[name] = _posterior_draws(idata, cd.attrs[_DRAWS[name]], name)
        elif name in cd and name in recorded:
            out[name] = float(cd[name].values)
        else:
            return None
    if any(name not in cd for name in ("mu0", "kappa0", "nu0", "psi0")):
        return None
    learned = "scale_grid" in recorded
    learned_nu0 = "nu0_grid" in recorded
    out["prior"] = NIWPrior(
        mu0=np.asarray(cd["mu0"].values, dtype=np.float64),
        kappa0=float(cd["kappa0"].values),
        nu0=float(cd["nu0"].values),
        psi0=np.asarray(cd["psi0"].values, dtype=np.float64),
        scale_grid=np.asarray(cd["scale_grid"].values) if learned else None,
        scale_log_weights=np.asarray(cd["scale_log_weights"].values) if learned else None,
        covariance=str(cd.attrs.get(_COVARIANCE, "full")),
        nu0_grid=np.asarray(cd["nu0_grid"].values) if learned_nu0 else None,
        nu0_log_weights=np.asarray(cd["nu0_log_weights"].values) if learned_nu0 else None,
    )
    return out


def _posterior_draws(idata: az.InferenceData, var: str, name: str) -> np.ndarray:
    """Draws of the scalar posterior variable ``var`` (the model's ``name``), ``(chain, draw)``."""
    post = idata.posterior
    if var not in post or post[var].ndim != 2:
        raise ValueError(
            f"The model's {name} is random and its draws should be the scalar variable "
            f"{var!r} of idata.posterior, which holds no such variable (was it left out "
            "with pm.sample(var_names=...)?). Keep it in the posterior."
        )
    values = np.asarray(post[var].values, dtype=np.float64)
    if not np.all(np.isfinite(values) & (values > 0)):
        raise ValueError(f"The draws of {var!r} (the model's {name}) must be finite and > 0.")
    return values


#: The draws of a random alpha or power named by a record (shared with the table record).
posterior_draws = _posterior_draws


def _same(a, b) -> bool:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=1e-12, atol=0.0))


def _check_not_symbolic(value, name: str) -> None:
    """Refuse a PyMC/PyTensor variable where a number (or a posterior name) is expected."""
    from pytensor.graph.basic import Variable

    if isinstance(value, Variable):
        label = f" {value.name!r}" if value.name else ""
        raise TypeError(
            f"Argument '{name}' is the PyMC variable{label}, not a number. A random {name} is "
            "read from the InferenceData draw by draw (pm.sample records it); leave "
            f"'{name}' out, or pass the name of its posterior variable as a string "
            f"({name}={value.name or '<name>'!r})."
        )


def resolve_model_parameters(idata: az.InferenceData, power, alpha, prior) -> tuple:
    """Return ``(power, alpha, prior)``: the given values checked against the record.

    ``power`` and ``alpha`` are each a number, or an array of shape ``(chain,
    draw)`` of posterior draws (a random one in the record, or a string naming
    a posterior variable). An argument left at None takes the recorded value.

    Raises
    ------
    ValueError
        If a given value differs from the recorded one (naming the argument and
        both values), or ``idata`` has no record and an argument is missing.
    TypeError
        If ``power`` or ``alpha`` is a PyMC variable.
    """
    from pymc_pcrp.distributions import NIWPrior

    _check_not_symbolic(power, "power")
    _check_not_symbolic(alpha, "alpha")
    if prior is not None and not isinstance(prior, NIWPrior):
        raise ValueError(
            f"Argument 'prior' must be a pymc_pcrp.NIWPrior or None, got {type(prior).__name__}."
        )
    given = {
        name: _posterior_draws(idata, value, name) if isinstance(value, str) else value
        for name, value in (("power", power), ("alpha", alpha))
    }
    stored = stored_model_parameters(idata)
    if stored is None:
        missing = [
            name for name, v in (("power", power), ("alpha", alpha), ("prior", prior)) if v is None
        ]
        if missing:
            raise ValueError(
                f"Argument(s) {', '.join(repr(m) for m in missing)} required: this InferenceData "
                "does not record the power, alpha and NIW prior it was sampled with, and "
                f"pymc_pcrp never guesses them. {_FIX}"
            )
        return given["power"], given["alpha"], prior
    for name in ("power", "alpha"):
        value, ref = given[name], stored[name]
        if value is None:
            continue
        if np.ndim(ref) != 0 and np.ndim(value) == 0:
            raise ValueError(
                f"Argument '{name}' = {float(np.asarray(value)):g} conflicts with the record: "
                f"the posterior samples {name} (its draws are in idata.posterior), and "
                f"predictions use every draw's value. Leave '{name}' out."
            )
        if not _same(value, ref):
            shown = f"{float(np.asarray(value)):g}" if np.ndim(value) == 0 else "other draws"
            was = f"{ref:g}" if np.ndim(ref) == 0 else "its posterior draws"
            raise ValueError(
                f"Argument '{name}' = {shown} conflicts with the {name} = {was} the posterior "
                f"was sampled with (recorded in the InferenceData); leave '{name}' out to use "
                "the recorded value."
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


def per_draw(value, shape: tuple, name: str) -> np.ndarray:
    """``value`` (a number or ``(chain, draw)`` draws) as a flat ``(chain * draw,)`` array > 0."""
    arr = np.asarray(value, dtype=np.float64)
    if arr.ndim == 0:
        from pymc_pcrp._validation import check_positive_scalar

        return np.full(int(np.prod(shape)), check_positive_scalar(value, name))
    if arr.shape != tuple(shape):
        raise ValueError(
            f"The draws of '{name}' have shape {arr.shape}, but the labels have (chain, draw) "
            f"= {tuple(shape)}."
        )
    if not np.all(np.isfinite(arr) & (arr > 0)):
        raise ValueError(f"Argument '{name}' must be finite and > 0 in every draw.")
    return arr.reshape(-1)


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
