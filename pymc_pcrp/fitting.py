"""The standard pCRP mixture model, built and sampled in one call.

:func:`build_model` writes the model a user would write by hand (a
:class:`~pymc_pcrp.PowerCRP` prior on the labels and an observed
:class:`~pymc_pcrp.NIWMixture`); :func:`fit` samples it with ``pm.sample``. The
experiments, the cross-validation of ``r`` and the command line all go through
these two functions, so they sample exactly what a user's own model would.

A pandas ``DataFrame`` keeps its labels: its index becomes the ``obs_id``
coordinate and its columns the ``feature`` coordinate of the model and of the
InferenceData (a ``Series`` is 1-D data, with its name as the one feature).
:func:`fit` also stores ``power``, ``alpha`` and the NIW prior in the
``constant_data`` group, and checks convergence with
:func:`pymc_pcrp.stats.convergence.check_convergence`.
"""

from __future__ import annotations

import arviz as az
import numpy as np
import pymc as pm

from pymc.util import RandomState

from pymc_pcrp._runtime.interrupts import watch_interrupts
from pymc_pcrp._validation import check_data, check_positive_scalar, check_power
from pymc_pcrp.distributions import NIWMixture, NIWPrior, PowerCRP, TableMixture
from pymc_pcrp.posterior.pointwise import log_likelihood
from pymc_pcrp.pymc_integration import record_model
from pymc_pcrp.stats.convergence import (
    SamplingInterrupted,
    check_complete,
    check_convergence,
    stop_after_interrupted_chain,
    warn_if_not_converged,
)

__all__ = ["FIT_FAMILIES", "build_model", "build_table_model", "choose_family", "fit"]


def _coordinate(labels) -> np.ndarray:
    """Return a pandas index as coordinate values that xarray and netCDF can hold."""
    import pandas as pd

    if isinstance(labels, pd.MultiIndex):
        return np.array([str(v) for v in labels], dtype=object)
    values = np.asarray(labels)
    if values.dtype == object and not all(isinstance(v, str) for v in values):
        values = np.array([str(v) for v in values], dtype=object)
    return values


def _data_and_coords(X) -> tuple[np.ndarray, dict]:
    """Return the checked ``(N, D)`` array and its coords (pandas labels, or 0..N-1, 0..D-1)."""
    x = check_data(X, "X")
    n, d = x.shape
    coords = {"obs_id": np.arange(n), "feature": np.arange(d)}
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas comes with PyMC
        return x, coords
    if isinstance(X, pd.DataFrame):
        coords = {"obs_id": _coordinate(X.index), "feature": _coordinate(X.columns)}
    elif isinstance(X, pd.Series):
        name = 0 if X.name is None else X.name
        coords = {"obs_id": _coordinate(X.index), "feature": _coordinate(pd.Index([name]))}
    return x, coords


def step_options(sample_kwargs: dict, sweeps_per_draw, init) -> dict:
    """Return the ``PCRPGibbs`` options of a :func:`fit` call (``pcrp_gibbs`` popped from it)."""
    step_kwargs = dict(sample_kwargs.pop("pcrp_gibbs", {}))
    if sweeps_per_draw is not None:
        step_kwargs.setdefault("sweeps_per_draw", sweeps_per_draw)
    if init is not None:
        step_kwargs.setdefault("init", init)
    return step_kwargs


def _default_prior(x: np.ndarray, prior, covariance: str | None) -> NIWPrior:
    """``prior``, or ``NIWPrior.from_data(x, covariance=...)``; checks that the two agree."""
    if prior is None:
        return NIWPrior.from_data(x, covariance=covariance or "full")
    if not isinstance(prior, NIWPrior):
        raise ValueError(
            f"Argument 'prior' must be a pymc_pcrp.NIWPrior or None, got {type(prior).__name__}."
        )
    if covariance is not None and covariance != prior.covariance:
        raise ValueError(
            f"Argument 'covariance' = {covariance!r} conflicts with the prior's covariance "
            f"{prior.covariance!r}; give one of them."
        )
    return prior


#: The likelihood families of :func:`fit` and :func:`build_model`.
FIT_FAMILIES = ("gaussian", "table")


def choose_family(X, family: str | None, columns=None) -> str:
    """Return the likelihood family of :func:`fit`: ``family``, or the one ``X`` calls for.

    Without ``family``: ``"table"`` when ``columns`` is given, or when ``X`` is a
    DataFrame with a bool, category or text column (and no date or duration
    column, which :func:`fit` refuses); ``"gaussian"`` otherwise (numeric data,
    clustered with the Normal-Inverse-Wishart family; a missing value there is
    refused, and ``family="table"`` integrates it out instead).
    """
    if family is not None:
        if family not in FIT_FAMILIES:
            raise ValueError(
                f"Argument 'family' must be one of {list(FIT_FAMILIES)} or None, got {family!r}."
            )
        if family == "gaussian" and columns is not None:
            raise ValueError(
                "Argument 'columns' is a table's column spec: use it with family='table'."
            )
        return family
    if columns is not None:
        return "table"
    if not (hasattr(X, "columns") and hasattr(X, "dtypes")):  # arrays and Series: numeric
        return "gaussian"
    dtypes = list(X.dtypes)
    if any(getattr(t, "kind", "") in "mM" for t in dtypes):
        return "gaussian"
    tabular = any(
        str(t) in ("bool", "boolean", "category") or getattr(t, "kind", "O") in "bOSU"
        for t in dtypes
    )
    return "table" if tabular else "gaussian"


def build_table_model(X, *, power: float = 1.0, alpha: float = 1.0, columns=None) -> pm.Model:
    """Build ``z ~ PowerCRP(alpha, power)``, ``x ~ TableMixture(z, columns)`` observed at ``X``.

    ``columns`` is the column spec of :func:`~pymc_pcrp.table_spec` (inferred from
    the dtypes when omitted); missing cells (NaN, None, pandas NA) are allowed.
    Coords as in :func:`build_model`.
    """
    import pandas as pd

    table = X if isinstance(X, pd.DataFrame) else pd.DataFrame(np.asarray(X, dtype=object))
    if isinstance(X, np.ndarray) and X.dtype.kind in "fiub":
        table = pd.DataFrame(X)
    n = table.shape[0]
    power = check_power(power, n)
    alpha = check_positive_scalar(alpha, "alpha")
    coords = {"obs_id": _coordinate(table.index), "feature": _coordinate(table.columns)}
    with pm.Model(coords=coords) as model:
        z = PowerCRP("z", alpha=alpha, power=power, n=n, dims="obs_id")
        TableMixture("x", z=z, columns=columns, observed=table, dims=("obs_id", "feature"))
    return model


def build_model(
    X,
    *,
    power: float = 1.0,
    alpha: float = 1.0,
    prior: NIWPrior | None = None,
    covariance: str | None = None,
) -> pm.Model:
    """Build ``z ~ PowerCRP(alpha, power)``, ``x ~ NIWMixture(z, prior)`` observed at ``X``.

    Parameters
    ----------
    X : array_like, pandas.DataFrame or pandas.Series, shape (N, D) or (N,)
        Data; NaN and infinite values are refused.
    power : float, default=1.0
        The pCRP power ``r`` (``1`` is the CRP / Dirichlet process).
    alpha : float, default=1.0
        Concentration.
    prior : NIWPrior, optional
        Defaults to :meth:`NIWPrior.from_data(X) <pymc_pcrp.NIWPrior.from_data>`.
    covariance : {"full", "diag"}, optional
        The cluster covariance family of the default prior,
        ``NIWPrior.from_data(X, covariance=covariance)`` (``"diag"``: diagonal
        covariances, docs/model.md). With ``prior`` given it must match
        ``prior.covariance``.

    Returns
    -------
    pymc.Model
        With coords ``obs_id`` and ``feature``: the index and the columns of a
        pandas ``DataFrame`` (the index and the name of a ``Series``), otherwise
        ``0..N-1`` and ``0..D-1``. The labels are ``z`` (dims ``obs_id``), the data
        ``x`` (dims ``obs_id, feature``) and the number of clusters ``n_clusters``.
    """
    x, coords = _data_and_coords(X)
    power = check_power(power, x.shape[0])
    alpha = check_positive_scalar(alpha, "alpha")
    prior = _default_prior(x, prior, covariance)
    n = x.shape[0]
    with pm.Model(coords=coords) as model:
        z = PowerCRP("z", alpha=alpha, power=power, n=n, dims="obs_id")
        NIWMixture("x", z=z, prior=prior, observed=x, dims=("obs_id", "feature"))
    return model


def fit(
    X,
    *,
    power: float | str = 1.0,
    alpha: float = 1.0,
    prior: NIWPrior | None = None,
    covariance: str | None = None,
    family: str | None = None,
    columns=None,
    draws: int = 1000,
    tune: int = 1000,
    chains: int = 4,
    cores: int = 1,
    sweeps_per_draw: int | None = None,
    init: str | None = None,
    random_seed: RandomState = None,
    progressbar: bool = False,
    **sample_kwargs,
) -> az.InferenceData:
    """Cluster ``X`` with the pCRP mixture and return the posterior as InferenceData.

    Parameters
    ----------
    X, power, alpha, prior, covariance
        See :func:`build_model` (``covariance="diag"``: diagonal cluster covariances).
        ``power="auto"`` fits r = 1, 1.1 and 1.3 and returns the fit at r = 1.1, the
        default chosen in docs/choice_of_r.md
        (:func:`pymc_pcrp.stats.power_choice.choose_power`); the point estimates at all
        three, and their agreement, are in ``idata.attrs``, and a
        ``PowerSensitivityWarning`` says when they differ materially.
    family : {"gaussian", "table"}, optional
        The likelihood: ``"gaussian"``, the Normal-Inverse-Wishart mixture of
        numeric data (:func:`build_model`), or ``"table"``, a
        :class:`~pymc_pcrp.TableMixture` of columns of any type with missing
        cells allowed (:func:`build_table_model`; ``prior`` and ``covariance``
        do not apply, and ``power`` must be a number). By default
        :func:`choose_family`: ``"table"`` for a DataFrame with a bool,
        category or text column, or when ``columns`` is given; numeric data
        with missing values need ``family="table"``.
    columns : str, sequence, mapping or TableSpec, optional
        The table's column spec (:func:`~pymc_pcrp.table_spec`): each column's
        kind, ``"bernoulli"``, ``"categorical"``, ``"poisson"`` or
        ``"gaussian"``, inferred from its dtype when not given (integer
        columns are Gaussian unless given as ``"poisson"``).
    draws, tune, chains, cores
        Passed to ``pm.sample``; ``tune`` draws are burn-in (discarded).
    sweeps_per_draw : int, optional
        Gibbs sweeps between stored draws (thinning). By default the step's
        automatic choice, ``min(20, ceil(45000 / (N max(D, 2))))``: several sweeps per
        draw on small data sets, where a sweep is cheap beside PyMC's per-draw
        work (see :class:`~pymc_pcrp.PCRPGibbs`).
    init : str, optional
        Initial partition of each chain (see :class:`~pymc_pcrp.PCRPGibbs`);
        the step's default when omitted.
    random_seed : int or numpy.random.Generator, optional
        Makes the whole run, all chains included, reproducible. (The scouting
        tournaments every chain runs at its first tuning draw are seeded by the
        data, so that all chains share them: see :mod:`pymc_pcrp.sampler.scouting`.)
    progressbar : bool, default=False
    **sample_kwargs
        Any other ``pm.sample`` argument (for example ``var_names``), and
        ``pcrp_gibbs``, a dict of :class:`~pymc_pcrp.PCRPGibbs` options (the
        step's defaults otherwise, for example its move set).
        ``compute_convergence_checks=False`` turns off PyMC's checks and the
        :class:`~pymc_pcrp.ConvergenceWarning` below.
        ``idata_kwargs={"log_likelihood": True}`` adds the pointwise
        log-likelihood of :func:`pymc_pcrp.posterior.log_likelihood` (group
        ``log_likelihood``, variable ``x``, dims ``chain, draw, obs_id``), so
        that ``az.loo``, ``az.waic`` and ``az.compare`` apply.

    Returns
    -------
    arviz.InferenceData
        ``posterior`` holds ``z`` and ``n_clusters``; ``sample_stats`` holds
        ``log_joint``, ``n_clusters``, ``niw_scale`` (each draw's NIW scale
        ``s``, ``Psi_0 = s psi0``) and ``niw_nu0`` (each draw's ``nu0``);
        ``observed_data`` holds ``x``. ``constant_data`` holds the model's
        fixed parameters: the scalars ``power``, ``alpha``, ``kappa0`` and
        ``nu0`` (the start value when ``nu0`` is learned), ``mu0`` (dims
        ``feature``) and ``psi0`` (dims ``feature, feature_bis``; the base
        matrix when the scale is learned), plus ``scale_grid`` and
        ``scale_log_weights`` (dims ``niw_scale_grid``) for a learned scale and
        ``nu0_grid`` and ``nu0_log_weights`` (dims ``niw_nu0_grid``) for a
        learned ``nu0``, so that :func:`~pymc_pcrp.predict` needs nothing else.
        The coords ``obs_id`` and ``feature`` are a DataFrame's index and
        columns (see :func:`build_model`).

    Raises
    ------
    SamplingInterrupted
        When ``pm.sample`` returned fewer chains or draws than asked (it catches
        Ctrl-C and returns what it has): an interrupted run never looks
        complete. The partial InferenceData is the exception's ``idata``
        (``None`` when the interrupt came during tuning, before any kept draw). With
        ``cores=1`` one Ctrl-C stops every chain, not only the running one
        (:func:`~pymc_pcrp.stats.convergence.stop_after_interrupted_chain`).

    Warns
    -----
    ConvergenceWarning
        One per failed check of :func:`pymc_pcrp.stats.convergence.check_convergence`:
        an R-hat of the number of clusters or of the log joint above 1.01, or a
        bulk ESS below 100 per chain (with one chain only the ESS is checked).
        The message names the quantity, its value and the remedy (more draws,
        more chains, another ``r``, more split-merge proposals).

    Examples
    --------
    >>> import pymc_pcrp as pcrp
    >>> idata = pcrp.fit(pcrp.datasets.load_old_faithful(), power=1.11, draws=200, tune=100,
    ...                  chains=2, random_seed=1)  # doctest: +SKIP
    """
    family = choose_family(X, family, columns)
    gaussian_only = prior is not None or covariance is not None or isinstance(power, str)
    if family == "table" and gaussian_only:
        raise ValueError(
            "Arguments 'prior', 'covariance' and power='auto' are for family='gaussian'; a "
            "table's priors are in its column spec ('columns') and its power is a number."
        )
    if isinstance(power, str):
        if power != "auto":
            raise ValueError(f"Argument 'power' must be a number > 0 or 'auto', got {power!r}.")
        from pymc_pcrp.stats.power_choice import choose_power

        settings = dict(draws=draws, tune=tune, chains=chains, cores=cores, init=init)
        settings.update(sweeps_per_draw=sweeps_per_draw, progressbar=progressbar)
        return choose_power(
            X,
            alpha=alpha,
            prior=prior,
            covariance=covariance,
            random_seed=random_seed,
            **settings,
            **sample_kwargs,
        ).idata
    if family == "table":
        model = build_table_model(X, power=power, alpha=alpha, columns=columns)
    else:
        model = build_model(X, power=power, alpha=alpha, prior=prior, covariance=covariance)
    step_kwargs = step_options(sample_kwargs, sweeps_per_draw, init)
    checks = sample_kwargs.get("compute_convergence_checks", True)
    idata_kwargs = dict(sample_kwargs.pop("idata_kwargs", None) or {})
    pointwise = idata_kwargs.pop("log_likelihood", False)
    if idata_kwargs:
        sample_kwargs["idata_kwargs"] = idata_kwargs
    if cores == 1:  # chains one after another: one Ctrl-C stops them all
        sample_kwargs["callback"] = stop_after_interrupted_chain(
            tune + draws, sample_kwargs.get("callback")
        )
    # Ctrl-C is held back while numba loads or compiles a kernel (see watch_interrupts)
    with watch_interrupts() as interrupts:
        try:
            with model:
                idata = pm.sample(
                    draws=draws,
                    tune=tune,
                    chains=chains,
                    cores=cores,
                    random_seed=random_seed,
                    progressbar=progressbar,
                    pcrp_gibbs=step_kwargs,
                    **sample_kwargs,
                )
        except ValueError as err:
            # PyMC's words when every chain stopped before its first kept draw
            no_draws = "Not enough samples" in str(err)
            if not (interrupts.seen or no_draws):
                raise
            what = (
                "stopped during tuning, before any chain kept a draw"
                if no_draws
                else f"was interrupted and then failed ({type(err).__name__}: {err})"
            )
            raise SamplingInterrupted(
                f"Sampling {what}; {draws} draws per chain were asked. There is no result.",
                None,
            ) from err
    if not isinstance(idata, az.InferenceData):  # return_inferencedata=False
        return idata
    record_model(idata, model)  # as pm.sample does when pymc_pcrp's PyMC integration is on
    check_complete(idata, chains=chains, draws=draws)
    if pointwise:
        log_likelihood(idata)
    if checks and ("n_clusters" in idata.posterior or "log_joint" in idata.get("sample_stats", {})):
        warn_if_not_converged(check_convergence(idata), stacklevel=2)
    return idata
