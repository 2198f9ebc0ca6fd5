r"""Prediction and the pointwise log-likelihood of a :class:`~pymc_pcrp.TableMixture`.

The Gaussian path's definitions (:mod:`pymc_pcrp.posterior.prediction`,
:mod:`pymc_pcrp.posterior.pointwise`) with the table family's predictive: the
predictive of a row given cluster ``k`` is the product over the row's observed
cells of each column's closed-form posterior predictive given the cluster's
observed cells in that column (Dirichlet-categorical, the negative binomial of
Gamma-Poisson, the Student-t of Normal-Inverse-Gamma;
:func:`~pymc_pcrp.distributions._table_numpy.log_predictive`). A missing cell
contributes nothing, in a new row as in the training rows.

**Prediction.** In draw ``s`` a new row ``x`` joins cluster ``k`` with
probability ``∝ n_k^r t_k(x)`` and starts a new cluster with probability
``∝ alpha t_0(x)`` (``t_0``: the prior predictive); the draw's clusters are
translated into those of the training partition by the overlap fractions
``|k ∩ c| / |k|`` and the result is averaged over draws, exactly as
:func:`~pymc_pcrp.predict` does for the Gaussian families.

**Pointwise log-likelihood.** For draw ``s`` and row ``i``

.. math::

    \ell_{s,i} = \log \Big[ \sum_k \frac{n_{k,-i}^r}{c_{s,i}} \, t_{k,-i}(x_i)
      + \frac{\alpha}{c_{s,i}} \, t_0(x_i) \Big],
    \qquad c_{s,i} = \sum_k n_{k,-i}^r + \alpha,

with ``t_{k,-i}`` the predictive of cluster ``k`` without row ``i``: the
definition (and the argument for PSIS-LOO) of :mod:`pymc_pcrp.posterior.pointwise`.

Both read the column spec, the training cells observed and ``power`` and
``alpha`` from the record that :func:`pymc_pcrp.record_model` writes
(:mod:`pymc_pcrp._table_record`).
"""

from __future__ import annotations

import arviz as az
import numpy as np

from scipy.special import logsumexp

from pymc_pcrp._idata import draw_indices, label_draws, per_draw
from pymc_pcrp._table_record import stored_table_parameters
from pymc_pcrp.distributions._table_numpy import (
    centred_values,
    cluster_statistics,
    log_predictive,
    row_statistics,
)
from pymc_pcrp.posterior.prediction import PredictResult, prediction_result, training_partition

__all__ = ["encode_new_rows", "predict_table", "table_pointwise"]


def _record(idata: az.InferenceData, power, alpha, prior, what: str) -> dict:
    """Return the table record of ``idata``, ``power``/``alpha``/``prior`` checked against it."""
    record = stored_table_parameters(idata)
    if record is None:
        raise ValueError(
            f"{what}: 'idata' holds no record of a table model; call "
            "pymc_pcrp.record_model(idata, model) with the model that was sampled."
        )
    if prior is not None:
        raise ValueError(
            "Argument 'prior' is an NIW prior, but the posterior is of a TableMixture, whose "
            "priors are in its column spec (recorded in idata.constant_data); leave 'prior' out."
        )
    for name, value in (("power", power), ("alpha", alpha)):
        ref = record[name]
        if value is None:
            continue
        if isinstance(value, str) or np.ndim(ref) != 0 or not np.isclose(float(value), ref):
            was = f"{ref:g}" if np.ndim(ref) == 0 else "its posterior draws"
            raise ValueError(
                f"Argument '{name}' = {value!r} conflicts with the {name} = {was} the posterior "
                f"was sampled with (recorded in the InferenceData); leave '{name}' out."
            )
    name = record["observed"]
    obs = idata.observed_data if "observed_data" in idata.groups() else None
    if obs is None or name not in obs:
        raise ValueError(
            f"{what}: idata.observed_data has no '{name}', the table the model was fitted on; "
            "keep the observed data in the InferenceData."
        )
    values = np.asarray(obs[name].values, dtype=np.float64).reshape(record["mask"].shape[0], -1)
    if values.shape != record["mask"].shape:
        raise ValueError(
            f"{what}: idata.observed_data['{name}'] has shape {values.shape} but the record's "
            f"mask {record['mask'].shape}; the InferenceData was changed by hand."
        )
    record["values"] = values
    record["obs_dim"] = obs[name].dims[0]
    record["obs_coord"] = obs[name].coords[obs[name].dims[0]].values
    return record


def _match_columns(X_new, names: tuple):
    """``X_new`` with a DataFrame's columns in the spec's order, matched by name."""
    if not (hasattr(X_new, "columns") and hasattr(X_new, "__getitem__")):
        return X_new
    given = {str(c): c for c in X_new.columns}
    wanted = [str(v) for v in names]
    missing = [w for w in wanted if w not in given]
    extra = [c for c in given if c not in set(wanted)]
    if missing or extra:
        raise ValueError(
            f"Argument 'X_new' must have the columns of the table the model was fitted on, "
            f"{wanted} (matched by name); it lacks {missing} and has the unknown {extra}. "
            f"Select or add columns, e.g. X_new[{wanted}] (a missing cell may be NaN)."
        )
    return X_new[[given[w] for w in wanted]]


def encode_new_rows(X_new, spec) -> tuple[np.ndarray, np.ndarray]:
    """Encode new rows with the fitted column spec: ``(values, mask)``, Gaussian values centred.

    A DataFrame's columns are matched by name; missing cells are allowed; a
    level of a categorical column that the training data did not have, a
    negative or fractional count or text in a numeric column is refused with
    a ``ValueError`` naming the column.
    """
    import pandas as pd

    table = _match_columns(X_new, spec.names)
    if not hasattr(table, "columns"):
        arr = np.asarray(table, dtype=object)
        arr = arr[None, :] if arr.ndim == 1 and arr.size == spec.n_columns else arr
        if arr.ndim != 2 or arr.shape[1] != spec.n_columns:
            raise ValueError(
                f"Argument 'X_new' must be a DataFrame with the fitted columns or an array of "
                f"shape (M, {spec.n_columns}) in their order {list(spec.names)}; got shape "
                f"{np.shape(table)}."
            )
        table = pd.DataFrame(arr, columns=list(spec.names))
    for name, level in spec.unseen_levels(table):
        col = spec.columns[[str(n) for n in spec.names].index(str(name))]
        raise ValueError(
            f"Argument 'X_new': column {name!r} holds the level {level!r}, which the training "
            f"data did not have (its levels: {list(col.levels)}); the model has no cluster "
            "probabilities for it. Drop those rows, set the cell to missing (NaN) or map the "
            "level to a known one."
        )
    try:
        values, mask = spec.encode(table)
    except ValueError as err:
        raise ValueError(f"Argument 'X_new': {err}") from None
    return centred_values(values, spec.kind, spec.hyp), mask


def _spec_args(spec) -> tuple:
    return spec.kind, spec.nlev, spec.conc, spec.hyp


def predict_table(
    idata: az.InferenceData,
    X_new,
    *,
    power=None,
    alpha=None,
    prior=None,
    point=None,
    max_draws: int | None = None,
) -> PredictResult:
    """:func:`~pymc_pcrp.predict` for a posterior of the table family (see the module).

    The arguments are those of :func:`~pymc_pcrp.predict`; ``power`` and
    ``alpha`` are read from the record (a value given that differs is refused)
    and ``prior`` must be left out (the priors are in the recorded column spec).
    """
    record = _record(idata, power, alpha, prior, "predict")
    spec = record["spec"]
    x_new, mask_new = encode_new_rows(X_new, spec)
    x, mask = centred_values(record["values"], spec.kind, spec.hyp), record["mask"]
    draws = label_draws(idata)
    n = x.shape[0]
    if draws.shape[-1] != n:
        raise ValueError(f"The label draws cover {draws.shape[-1]} rows but the table has {n}.")
    powers = per_draw(record["power"], draws.shape[:2], "power")
    alphas = per_draw(record["alpha"], draws.shape[:2], "alpha")
    training = training_partition(point, idata, n)
    cluster_labels, training_index = np.unique(training, return_inverse=True)
    n_point = cluster_labels.size
    flat = draws.reshape(-1, n)
    chosen = draw_indices(draws.shape[0], draws.shape[1], max_draws)
    total = np.zeros((x_new.shape[0], n_point + 1))
    for index in chosen:
        _, inverse = np.unique(flat[index], return_inverse=True)
        k = int(inverse.max()) + 1
        stats = cluster_statistics(x, mask, inverse, k + 1, spec.kind, spec.nlev)  # + empty
        log_score = log_predictive(stats, x_new, mask_new, *_spec_args(spec))  # (K + 1, M)
        sizes = np.bincount(inverse, minlength=k)
        log_score[:-1] += powers[index] * np.log(sizes)[:, None]
        log_score[-1] += np.log(alphas[index])
        rule = np.exp(log_score - logsumexp(log_score, axis=0, keepdims=True))
        overlap = np.bincount(inverse * n_point + training_index, minlength=k * n_point)
        overlap = overlap.reshape(k, n_point) / sizes[:, None]
        total[:, :-1] += rule[:-1].T @ overlap
        total[:, -1] += rule[-1]
    return prediction_result(total, chosen.size, cluster_labels, training)


def _pointwise_draw(x, mask, rows, labels, power: float, alpha: float, spec) -> np.ndarray:
    """``ell_i`` of one draw for every row (``rows``: each row's own statistics)."""
    n = x.shape[0]
    _, inverse = np.unique(labels, return_inverse=True)
    k = int(inverse.max()) + 1
    stats = cluster_statistics(x, mask, inverse, k + 1, spec.kind, spec.nlev)
    log_t = log_predictive(stats, x, mask, *_spec_args(spec))  # (K + 1, N)
    own = [
        (s_n[inverse] - r_n, s_a[inverse] - r_a, None if s_q is None else s_q[inverse] - r_q)
        for (s_n, s_a, s_q), (r_n, r_a, r_q) in zip(stats, rows, strict=True)
    ]
    log_own = log_predictive(own, x, mask, *_spec_args(spec), paired=True)  # (N,)
    sizes = np.bincount(inverse, minlength=k).astype(np.float64)
    with np.errstate(divide="ignore"):
        log_size_own = np.log(sizes[inverse] - 1.0)  # -inf when the row is alone
    terms = power * np.log(sizes)[:, None] + log_t[:-1]
    terms[inverse, np.arange(n)] = power * log_size_own + log_own
    terms = np.vstack([terms, np.log(alpha) + log_t[-1]])
    sizes_r = sizes**power
    norm = sizes_r.sum() - sizes_r[inverse] + np.exp(power * log_size_own) + alpha
    return logsumexp(terms, axis=0) - np.log(norm)


def table_pointwise(
    idata: az.InferenceData, power=None, alpha=None, prior=None, labels_name: str | None = None
) -> tuple[dict, np.ndarray]:
    """``ell_{s,i}`` of the module for every draw and row of a table posterior.

    Returns the names :func:`~pymc_pcrp.posterior.log_likelihood` stores it
    under (``name``, ``obs_dim``, ``obs_coord``) and the values, shape
    ``(chain, draw, N)``.
    """
    record = _record(idata, power, alpha, prior, "log_likelihood")
    spec = record["spec"]
    x, mask = centred_values(record["values"], spec.kind, spec.hyp), record["mask"]
    labels = label_draws(idata, labels_name)
    n_chains, n_draws, n = labels.shape
    if n != x.shape[0]:
        raise ValueError(f"The label draws cover {n} rows but the table has {x.shape[0]}.")
    powers = per_draw(record["power"], (n_chains, n_draws), "power")
    alphas = per_draw(record["alpha"], (n_chains, n_draws), "alpha")
    rows = row_statistics(x, mask, spec.kind, spec.nlev)
    flat = labels.reshape(-1, n)
    values = np.empty(flat.shape)
    for s in range(flat.shape[0]):
        values[s] = _pointwise_draw(x, mask, rows, flat[s], powers[s], alphas[s], spec)
    names = {key: record[key] for key in ("obs_dim", "obs_coord")}
    names["name"] = record["observed"]
    return names, values.reshape(n_chains, n_draws, n)
