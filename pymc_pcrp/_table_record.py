"""The record of a table model in an ``InferenceData``: power, alpha, column spec and mask.

:func:`pymc_pcrp.record_model` (which :func:`pymc_pcrp.fit` calls and
``pm.sample`` calls through :mod:`pymc_pcrp.pymc_integration`) writes it for a
model of a :class:`~pymc_pcrp.PowerCRP` and an observed
:class:`~pymc_pcrp.TableMixture`, in the ``constant_data`` group beside the
record of the Gaussian families (:mod:`pymc_pcrp._idata`):

* ``power`` and ``alpha`` as there (a random one as the name of its posterior draws);
* ``table_kind``, ``table_nlev`` (dims ``table_column``), ``table_conc`` (dims
  ``table_level``) and ``table_hyp`` (dims ``table_column, table_hyper``): the
  arrays of :class:`~pymc_pcrp.distributions.table.TableSpec`;
* ``table_mask`` (dims ``table_row, table_column``): 1 where a training cell is
  observed (``observed_data`` holds 0 in a missing cell);
* the attribute ``pcrp_table_columns``: the columns' names, kinds and levels as
  JSON, and ``pcrp_table_observed``: the name of the observed variable.

:func:`stored_table_parameters` reads it back, so that
:func:`~pymc_pcrp.predict` and :func:`~pymc_pcrp.posterior.log_likelihood`
need nothing but the InferenceData.
"""

from __future__ import annotations

import json

import arviz as az
import numpy as np

from pymc_pcrp._idata import COVARIANCE_ATTR, DRAW_ATTRS, RECORD_ATTR, posterior_draws

__all__ = [
    "TABLE_NAMES",
    "is_table_record",
    "spec_of_variable",
    "store_table_parameters",
    "stored_table_parameters",
]

#: The constant_data variables of the table record.
TABLE_NAMES = ("table_kind", "table_nlev", "table_conc", "table_hyp", "table_mask")
COLUMNS_ATTR = "pcrp_table_columns"
OBSERVED_ATTR = "pcrp_table_observed"


def _plain(value):
    """Return a column name or level as a JSON value (NumPy scalars as Python ones)."""
    value = value.item() if isinstance(value, np.generic) else value
    return value if isinstance(value, bool | int | float | str) or value is None else str(value)


def _resolved_prior(kind: str, conc: np.ndarray, hyp: np.ndarray) -> dict:
    """Return a column's prior as :class:`~pymc_pcrp.TableColumn` takes it, every value given."""
    if kind in ("bernoulli", "categorical"):
        return {"concentration": tuple(float(c) for c in conc)}
    if kind == "poisson":
        return {"a": float(hyp[0]), "b": float(hyp[1])}
    return {"kappa0": float(hyp[0]), "a0": float(hyp[1]), "b0": float(hyp[2]), "mu0": float(hyp[3])}


def spec_of_variable(obs):
    """Return ``(spec, mask)`` of an observed TableMixture variable.

    The spec is the one :class:`~pymc_pcrp.TableMixture` resolved (kept on the
    variable); a variable built with ``TableMixture.dist`` has none, and its
    categorical levels are then recorded as their codes ``0..L-1``.
    """
    import pytensor

    from pymc.pytensorf import inputvars

    from pymc_pcrp.distributions.table import COLUMN_KINDS, TableColumn, TableSpec

    _, kind, nlev, conc, hyp, mask = obs.owner.op.dist_params(obs.owner)
    if inputvars([kind, nlev, conc, hyp, mask]):
        raise ValueError(
            f"The column spec of '{obs.name}' depends on a random variable; pymc_pcrp records "
            "and predicts with a fixed spec only."
        )
    fn = pytensor.function([], [kind, nlev, conc, hyp, mask], on_unused_input="ignore")
    kind, nlev, conc, hyp, mask = (np.asarray(v) for v in fn())
    spec = getattr(obs.tag, "table_spec", None)
    if spec is None:
        names = {code: name for name, code in COLUMN_KINDS.items() if name != "bernoulli"}
        columns = tuple(
            TableColumn(names[int(k)], tuple(range(int(n))) if k == 0 else None)
            for k, n in zip(kind, nlev, strict=True)
        )
        spec = TableSpec(tuple(range(kind.size)), columns, kind, nlev, conc, hyp)
    return spec, mask > 0


def store_table_parameters(idata: az.InferenceData, *, power, alpha, spec, mask, observed) -> None:
    """Add the table record (see the module) to ``idata.constant_data``, in place.

    ``power`` and ``alpha`` are numbers or the names of their posterior draws;
    ``spec`` the resolved :class:`~pymc_pcrp.distributions.table.TableSpec`,
    ``mask`` the training cells observed and ``observed`` the name of the
    observed variable.
    """
    import xarray as xr

    columns = [
        {
            "name": _plain(name),
            "kind": col.kind,
            "levels": None if col.levels is None else [_plain(v) for v in col.levels],
        }
        for name, col in zip(spec.names, spec.columns, strict=True)
    ]
    ds = xr.Dataset(
        {
            "table_kind": (("table_column",), np.asarray(spec.kind, dtype=np.int64)),
            "table_nlev": (("table_column",), np.asarray(spec.nlev, dtype=np.int64)),
            "table_conc": (("table_level",), np.asarray(spec.conc, dtype=np.float64)),
            "table_hyp": (("table_column", "table_hyper"), np.asarray(spec.hyp, np.float64)),
            "table_mask": (("table_row", "table_column"), np.asarray(mask, dtype=np.int8)),
        },
        coords={"table_column": [str(name) for name in spec.names]},
    )
    names = list(TABLE_NAMES)
    for name, value in (("alpha", alpha), ("power", power)):
        if isinstance(value, str):
            ds.attrs[DRAW_ATTRS[name]] = value
        else:
            ds[name] = ((), float(value))
            names.insert(0, name)
    ds.attrs.update(
        {
            RECORD_ATTR: ", ".join(names),
            COVARIANCE_ATTR: "table",
            COLUMNS_ATTR: json.dumps(columns),
            OBSERVED_ATTR: str(observed),
        }
    )
    if "constant_data" in idata.groups():
        old = idata.constant_data
        stale = [v for v in (*TABLE_NAMES, "power", "alpha") if v in old]
        merged = old.drop_vars(stale).assign(ds.data_vars)
        attrs = {k: v for k, v in old.attrs.items() if k not in DRAW_ATTRS.values()}
        merged.attrs = {**attrs, **ds.attrs}
        idata.constant_data = merged
    else:
        idata.add_groups(constant_data=ds)


def is_table_record(idata: az.InferenceData) -> bool:
    """Whether ``idata`` records a table model (:func:`store_table_parameters`)."""
    if "constant_data" not in idata.groups():
        return False
    attrs = idata.constant_data.attrs
    return attrs.get(COVARIANCE_ATTR) == "table" and COLUMNS_ATTR in attrs


def stored_table_parameters(idata: az.InferenceData) -> dict | None:
    """Read the table record: ``power``, ``alpha``, ``spec``, ``mask``, ``observed``.

    ``power`` and ``alpha`` are floats, or arrays ``(chain, draw)`` of their
    draws; ``spec`` a :class:`~pymc_pcrp.distributions.table.TableSpec` whose
    columns carry their levels and their resolved priors; ``mask`` a bool
    array ``(N, D)``. None when ``idata`` holds no table record.
    """
    from pymc_pcrp.distributions.table import TableColumn, TableSpec

    if not is_table_record(idata):
        return None
    cd = idata.constant_data
    out = {}
    for name in ("power", "alpha"):
        if DRAW_ATTRS[name] in cd.attrs:
            out[name] = posterior_draws(idata, cd.attrs[DRAW_ATTRS[name]], name)
        else:
            out[name] = float(cd[name].values)
    kind = np.asarray(cd["table_kind"].values, dtype=np.int64)
    nlev = np.asarray(cd["table_nlev"].values, dtype=np.int64)
    conc = np.asarray(cd["table_conc"].values, dtype=np.float64).reshape(-1)
    hyp = np.asarray(cd["table_hyp"].values, dtype=np.float64).reshape(-1, 4)
    described = json.loads(cd.attrs[COLUMNS_ATTR])
    starts = np.concatenate([[0], np.cumsum(np.where(kind == 0, nlev, 0))])
    columns = []
    for j, col in enumerate(described):
        levels = None if col["levels"] is None else tuple(col["levels"])
        prior = _resolved_prior(col["kind"], conc[starts[j] : starts[j + 1]], hyp[j])
        columns.append(TableColumn(col["kind"], levels, prior))
    out["spec"] = TableSpec(
        tuple(col["name"] for col in described), tuple(columns), kind, nlev, conc, hyp
    )
    out["mask"] = np.asarray(cd["table_mask"].values) > 0
    out["observed"] = cd.attrs.get(OBSERVED_ATTR)
    return out
