"""Mixture likelihood of a table of any column types given cluster labels (collapsed).

:class:`TableSpec` says how each column is modelled (:data:`COLUMN_KINDS`) and
with which prior; :func:`table_spec` infers it from a DataFrame or an array.
:class:`TableMixture` is the PyMC distribution of the table given the labels,
each cluster's column parameters integrated out
(:mod:`pymc_pcrp.distributions._table_numpy` has the algebra).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pytensor.tensor as pt

from pymc.distributions.distribution import Continuous
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op
from pytensor.tensor.random.op import RandomVariable

from pymc_pcrp.distributions._table_numpy import table_loglik

__all__ = [
    "COLUMN_KINDS",
    "TableColumn",
    "TableMixture",
    "TableMixtureRV",
    "TableSpec",
    "table_spec",
]

#: The column kinds and their kernel codes (binary columns are two-level categorical).
COLUMN_KINDS: dict[str, int] = {"bernoulli": 0, "categorical": 0, "poisson": 1, "gaussian": 2}

#: Prior mean of a Gaussian column's cluster variance, as a fraction of the column's variance.
GAUSSIAN_VARIANCE_FRACTION = 0.25


@dataclass(frozen=True)
class TableColumn:
    """How one column is modelled: its kind, its levels and its prior.

    Parameters
    ----------
    kind : {"bernoulli", "categorical", "poisson", "gaussian"}
    levels : tuple, optional
        The levels of a categorical column, in code order (inferred when omitted);
        a Bernoulli column's are ``(False, True)``.
    prior : dict, optional
        Overrides of the defaults: ``concentration`` (a float or one per level)
        for Bernoulli and categorical columns (default 1: Beta(1, 1),
        Dirichlet(1, ..., 1)); ``a`` and ``b`` for counts (Gamma shape and
        rate, default ``a = 1`` and ``b = 1 / mean``, so the prior mean is the
        column's mean); ``mu0``, ``kappa0``, ``a0`` and ``b0`` for Gaussian
        columns (defaults: the column's mean, 0.01, 1.5 and ``a0 - 1`` times a
        quarter of the column's variance, so a cluster's variance has prior
        mean a quarter of the column's).
    """

    kind: str
    levels: tuple | None = None
    prior: Mapping = field(default_factory=dict)

    def __post_init__(self):
        if self.kind not in COLUMN_KINDS:
            raise ValueError(
                f"Argument 'kind' must be one of {sorted(COLUMN_KINDS)}, got {self.kind!r}."
            )


@dataclass(frozen=True)
class TableSpec:
    """The columns of a table and their priors, in the kernel's encoding.

    Build it with :func:`table_spec`. ``names`` are the column names;
    ``columns`` the resolved :class:`TableColumn` of each (levels filled in);
    ``kind``, ``nlev``, ``conc`` and ``hyp`` the arrays of
    :mod:`pymc_pcrp.distributions._table_numpy`.
    """

    names: tuple
    columns: tuple
    kind: np.ndarray
    nlev: np.ndarray
    conc: np.ndarray
    hyp: np.ndarray

    @property
    def n_columns(self) -> int:
        """The number of columns ``D``."""
        return len(self.columns)

    def encode(self, X) -> tuple[np.ndarray, np.ndarray]:
        """Return ``(values, mask)`` of ``X``: level codes, counts or values, and observed cells.

        Missing cells (NaN, None, pandas NA) have ``mask`` false and value 0. A
        level not among a column's levels, a negative or fractional count, or a
        non-numeric Gaussian cell raises ``ValueError``.
        """
        cols = _columns_of(X)
        if len(cols) != self.n_columns:
            raise ValueError(
                f"The table has {len(cols)} columns but the column spec has {self.n_columns}."
            )
        n = len(cols[0][1]) if cols else 0
        values = np.zeros((n, self.n_columns))
        mask = np.zeros((n, self.n_columns), dtype=bool)
        for j, ((name, raw), col) in enumerate(zip(cols, self.columns, strict=True)):
            missing = _missing(raw)
            mask[:, j] = ~missing
            present = [v for v, m in zip(raw, missing, strict=True) if not m]
            if col.kind in ("bernoulli", "categorical"):
                codes = {level: c for c, level in enumerate(col.levels)}
                try:
                    coded = [codes[_level_key(v)] for v in present]
                except KeyError as err:
                    raise ValueError(
                        f"Column {name!r} holds the level {err.args[0]!r}, not among its levels "
                        f"{list(col.levels)}; give the levels in TableColumn(levels=...)."
                    ) from None
                values[~missing, j] = coded
            else:
                try:
                    vals = np.asarray(present, dtype=np.float64)
                except (TypeError, ValueError):
                    raise ValueError(
                        f"Column {name!r} is modelled as {col.kind!r} but holds non-numeric "
                        "values; model it as 'categorical'."
                    ) from None
                if col.kind == "poisson" and (np.any(vals < 0) or np.any(vals != np.round(vals))):
                    raise ValueError(
                        f"Column {name!r} is modelled as 'poisson' (counts) but holds values that "
                        "are not non-negative integers; model it as 'gaussian'."
                    )
                values[~missing, j] = vals
        return values, mask

    def unseen_levels(self, X) -> list[tuple[object, object]]:
        """``(column name, level)``: the first cell of each categorical column outside its levels.

        Missing cells are never unseen; the columns of ``X`` are taken in the
        spec's order (as :meth:`encode` takes them).
        """
        out = []
        for (name, raw), col in zip(_columns_of(X), self.columns, strict=False):
            if col.kind not in ("bernoulli", "categorical"):
                continue
            known = set(col.levels)
            for v, m in zip(raw, _missing(raw), strict=True):
                if not m and _level_key(v) not in known:
                    out.append((name, _level_key(v)))
                    break
        return out


def _columns_of(X) -> list[tuple[object, np.ndarray]]:
    """``(name, values)`` of each column of a DataFrame, a 2-D array or a mapping."""
    if hasattr(X, "columns") and hasattr(X, "__getitem__"):  # a pandas DataFrame
        return [(name, X[name].to_numpy(dtype=object)) for name in X.columns]
    arr = np.asarray(X, dtype=object) if not isinstance(X, np.ndarray) else X
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise ValueError(f"Argument 'X' must be a table of shape (N, D), got shape {arr.shape}.")
    return [(j, arr[:, j]) for j in range(arr.shape[1])]


def _missing(values) -> np.ndarray:
    """Where a column's cells are missing: None, NaN or pandas NA."""
    out = np.zeros(len(values), dtype=bool)
    for i, v in enumerate(values):
        if v is None:
            out[i] = True
        else:
            try:
                out[i] = bool(v != v)  # NaN, and pandas NA (whose comparison raises)
            except TypeError:
                out[i] = True
    return out


def _level_key(v):
    """Return a cell's level as a hashable key equal across NumPy and Python scalars."""
    return v.item() if isinstance(v, np.generic) else v


def _infer_kind(name, raw: np.ndarray, dtype) -> str:
    """Return a column's default kind from its dtype (integers are Gaussian unless told)."""
    kind = getattr(dtype, "kind", "O")
    if str(dtype) in ("bool", "boolean"):
        return "bernoulli"
    if kind in "fiu":
        return "gaussian"
    if kind == "b":
        return "bernoulli"
    present = [v for v, m in zip(raw, _missing(raw), strict=True) if not m]
    if present and all(isinstance(v, bool | np.bool_) for v in present):
        return "bernoulli"
    if present and all(
        isinstance(v, int | float | np.number) and not isinstance(v, bool) for v in present
    ):
        return "gaussian"
    return "categorical"


def _resolve(name, raw, col: TableColumn) -> tuple[TableColumn, np.ndarray, np.ndarray]:
    """Fill in a column's levels and prior; return it with its concentrations and prior row."""
    missing = _missing(raw)
    present = [_level_key(v) for v, m in zip(raw, missing, strict=True) if not m]
    prior = dict(col.prior)
    if col.kind in ("bernoulli", "categorical"):
        levels = col.levels
        if levels is None:
            if col.kind == "bernoulli":
                levels = (False, True)
            else:
                levels = tuple(sorted(set(present), key=lambda v: (str(type(v)), v)))
        if col.kind == "bernoulli" and len(levels) != 2:
            raise ValueError(f"Column {name!r} is 'bernoulli' but has levels {list(levels)}.")
        if len(levels) < 1:
            raise ValueError(f"Column {name!r} has no observed level; drop it.")
        conc = np.broadcast_to(
            np.asarray(prior.get("concentration", 1.0), dtype=np.float64), (len(levels),)
        ).copy()
        if np.any(conc <= 0):
            raise ValueError(f"Column {name!r}: the 'concentration' must be positive.")
        return TableColumn(col.kind, tuple(levels), prior), conc, np.zeros(4)
    try:
        vals = np.asarray(present, dtype=np.float64) if present else np.zeros(0)
    except (TypeError, ValueError):
        raise ValueError(
            f"Column {name!r} is modelled as {col.kind!r} but holds non-numeric values; model "
            "it as 'categorical'."
        ) from None
    if col.kind == "poisson":
        mean = float(vals.mean()) if vals.size else 1.0
        a = float(prior.get("a", 1.0))
        b = float(prior.get("b", 1.0 / mean if mean > 0 else 1.0))
        if not (a > 0 and b > 0):
            raise ValueError(f"Column {name!r}: the Gamma prior needs a > 0 and b > 0.")
        return TableColumn(col.kind, None, prior), np.zeros(0), np.array([a, b, 0.0, 0.0])
    mu0 = float(prior.get("mu0", vals.mean() if vals.size else 0.0))
    var = float(vals.var()) if vals.size > 1 else 1.0
    var = var if var > 0 else 1.0
    kappa0 = float(prior.get("kappa0", 0.01))
    a0 = float(prior.get("a0", 1.5))
    b0 = float(prior.get("b0", max(a0 - 1.0, 0.5) * GAUSSIAN_VARIANCE_FRACTION * var))
    if not (kappa0 > 0 and a0 > 0 and b0 > 0):
        raise ValueError(f"Column {name!r}: the Gaussian prior needs kappa0, a0 and b0 > 0.")
    return TableColumn(col.kind, None, prior), np.zeros(0), np.array([kappa0, a0, b0, mu0])


def table_spec(X, columns=None) -> TableSpec:
    """Choose how each column of ``X`` is modelled, and its prior.

    Parameters
    ----------
    X : pandas.DataFrame or array-like of shape (n_samples, n_columns)
        The table; missing cells are NaN, None or pandas NA.
    columns : str, sequence, mapping or TableSpec, optional
        Without it each column's kind is inferred from its dtype: bool ->
        ``"bernoulli"``, category, object or text -> ``"categorical"``, float ->
        ``"gaussian"``, integer -> ``"gaussian"`` (integers are counts,
        ``"poisson"``, only when you say so). A single kind applies to every
        column; a sequence gives one kind or :class:`TableColumn` per column; a
        mapping from column names (or positions) to kinds or
        :class:`TableColumn` overrides the inferred kinds of those columns.

    Returns
    -------
    TableSpec
    """
    if isinstance(columns, TableSpec):
        return columns
    cols = _columns_of(X)
    dtypes = list(X.dtypes) if hasattr(X, "dtypes") else [np.asarray(X).dtype] * len(cols)
    given: list = [None] * len(cols)
    if isinstance(columns, str | TableColumn):
        given = [columns] * len(cols)
    elif isinstance(columns, Mapping):
        names = [name for name, _ in cols]
        for key, value in columns.items():
            if key not in names:
                raise ValueError(
                    f"Argument 'columns' names {key!r}, which is not a column of the table "
                    f"({names})."
                )
            given[names.index(key)] = value
    elif isinstance(columns, Sequence):
        if len(columns) != len(cols):
            raise ValueError(
                f"Argument 'columns' gives {len(columns)} kinds for a table of {len(cols)} columns."
            )
        given = list(columns)
    elif columns is not None:
        raise TypeError(
            "Argument 'columns' must be a kind, a sequence or a mapping of kinds, or a TableSpec."
        )
    resolved, concs, hyps = [], [], []
    for (name, raw), dtype, spec in zip(cols, dtypes, given, strict=True):
        if spec is None:
            spec = _infer_kind(name, raw, dtype)
        col = spec if isinstance(spec, TableColumn) else TableColumn(str(spec))
        col, conc, hyp = _resolve(name, raw, col)
        resolved.append(col)
        concs.append(conc)
        hyps.append(hyp)
    kind = np.array([COLUMN_KINDS[c.kind] for c in resolved], dtype=np.int64)
    nlev = np.array([len(c.levels) if c.levels else 0 for c in resolved], dtype=np.int64)
    return TableSpec(
        tuple(name for name, _ in cols),
        tuple(resolved),
        kind,
        nlev,
        np.concatenate(concs) if concs else np.zeros(0),
        np.array(hyps, dtype=np.float64).reshape(-1, 4),
    )


class TableMixtureRV(RandomVariable):
    """Random variable op: a table given labels, each cluster's column parameters integrated out.

    Parameters (after the labels): ``kind``, ``nlev``, ``conc``, ``hyp`` (the
    arrays of :class:`TableSpec`) and ``mask`` (1 where a cell is observed).
    """

    name = "table_mixture"
    signature = "(n),(d),(d),(l),(d,p),(n,d)->(n,d)"
    dtype = "floatX"
    _print_name = ("TableMixture", "\\operatorname{TableMixture}")
    #: The cluster family of the op (see :mod:`pymc_pcrp.sampler.families`).
    covariance = "table"

    @classmethod
    def rng_fn(cls, rng, z, kind, nlev, conc, hyp, mask, size):
        """Draw each cluster's column parameters from the prior, then its rows' cells."""
        if size is not None or z.ndim != 1:
            raise NotImplementedError("TableMixture draws one table per label vector.")
        n, d = z.shape[0], kind.shape[0]
        out = np.zeros((n, d))
        starts = np.concatenate([[0], np.cumsum(np.where(kind == 0, nlev, 0))])
        for label in np.unique(z):
            rows = z == label
            m = int(rows.sum())
            for j in range(d):
                if kind[j] == 0:
                    p = rng.dirichlet(conc[starts[j] : starts[j] + nlev[j]])
                    out[rows, j] = rng.choice(nlev[j], size=m, p=p)
                elif kind[j] == 1:
                    out[rows, j] = rng.poisson(rng.gamma(hyp[j, 0], 1.0 / hyp[j, 1]), size=m)
                else:
                    kappa0, a0, b0, mu0 = hyp[j]
                    var = b0 / rng.gamma(a0)
                    mean = rng.normal(mu0, np.sqrt(var / kappa0))
                    out[rows, j] = rng.normal(mean, np.sqrt(var), size=m)
        return out


table_mixture = TableMixtureRV()


class TableMarginalLogp(Op):
    """``log p(X | z)`` of the table family in NumPy; ``-inf`` for labels outside ``0..N-1``."""

    __props__ = ()

    def make_node(self, x, z, kind, nlev, conc, hyp, mask):
        """Build the node: table, labels, the spec's arrays and the observed mask."""
        inputs = [pt.as_tensor_variable(v) for v in (x, z, kind, nlev, conc, hyp, mask)]
        return Apply(self, inputs, [pt.dscalar()])

    def perform(self, node, inputs, output_storage):
        """Evaluate the marginal log likelihood in NumPy."""
        x, z, kind, nlev, conc, hyp, mask = inputs
        n = x.shape[0]
        z = np.asarray(z)
        if z.shape[0] != n or (n and (z.min() < 0 or z.max() >= n)):
            value = -np.inf
        else:
            value = table_loglik(x, mask > 0, z, kind, nlev, conc, hyp)
        output_storage[0][0] = np.asarray(value, dtype=np.float64)


class TableMixture(Continuous):
    r"""Collapsed mixture likelihood of a table of any column types given cluster labels.

    Each cluster has its own parameters per column under a conjugate prior
    (Beta-Bernoulli for binary columns, Dirichlet-categorical, Gamma-Poisson for
    counts, Normal-Inverse-Gamma for Gaussian columns; :class:`TableColumn`
    gives the defaults). Integrating them out gives

    .. math::

        \log p(X \mid z) = \sum_k \sum_j \log m_j(X_{kj}),

    the sum over clusters ``k`` and columns ``j`` of the column's marginal
    likelihood of the cluster's observed cells. Missing cells (NaN, None,
    pandas NA) contribute nothing. :class:`~pymc_pcrp.PCRPGibbs` samples the
    labels of a :class:`PowerCRP` feeding it exactly.

    Parameters
    ----------
    z : TensorVariable
        Integer labels of length ``N``, usually a :class:`PowerCRP` variable.
    columns : str, sequence, mapping or TableSpec, optional
        How each column is modelled (see :func:`table_spec`); inferred from the
        dtypes of ``observed`` when omitted.
    observed : pandas.DataFrame or array-like of shape (N, D)
        The table (required: the values cannot be latent).

    Examples
    --------
    .. code-block:: python

        with pm.Model():
            z = pcrp.PowerCRP("z", alpha=1.0, power=1.1, n=len(df))
            pcrp.TableMixture("x", z=z, observed=df)
            idata = pm.sample()
    """

    rv_type = TableMixtureRV
    rv_op = table_mixture

    def __new__(cls, name, z, columns=None, *, observed=None, **kwargs):
        """Encode the observed table with its column spec, then register the variable."""
        if observed is None:
            raise ValueError(
                "TableMixture needs 'observed' (the table): its values cannot be latent."
            )
        spec = table_spec(observed, columns)
        values, mask = spec.encode(observed)
        n = _label_length(z)
        if n is not None and n != values.shape[0]:
            raise ValueError(
                f"Argument 'observed' has N = {values.shape[0]} rows but 'z' labels {n} items; "
                f"create the labels with n={values.shape[0]}."
            )
        var = super().__new__(cls, name, z, spec, mask, observed=values, **kwargs)
        var.tag.table_spec = spec  # the names and levels, for the record of the model
        return var

    @classmethod
    def dist(cls, z, spec: TableSpec, mask, **kwargs):
        """Create the distribution outside a model from a :class:`TableSpec` and a mask."""
        if not isinstance(spec, TableSpec):
            raise TypeError(
                "Argument 'spec' must be a TableSpec, e.g. pymc_pcrp.distributions.table."
                f"table_spec(X); got {type(spec).__name__}."
            )
        z = pt.as_tensor_variable(z)
        if z.ndim != 1 or not z.dtype.startswith(("int", "uint")):
            raise ValueError(
                f"Argument 'z' must be a 1-D integer label vector, but got ndim={z.ndim}, "
                f"dtype={z.dtype}."
            )
        mask = np.asarray(mask, dtype=np.float64)
        params = [z, spec.kind, spec.nlev, spec.conc, spec.hyp, mask]
        return cls.rv_op(*params, **{k: v for k, v in kwargs.items() if k in ("size", "rng")})

    @staticmethod
    def support_point(rv, size, z, kind, nlev, conc, hyp, mask):
        """Zeros (the variable is always observed)."""
        return pt.zeros((z.shape[0], kind.shape[0]))

    @staticmethod
    def logp(value, z, kind, nlev, conc, hyp, mask):
        """Sum of the clusters' and columns' log marginal likelihoods (NumPy)."""
        return TableMarginalLogp()(value, z, kind, nlev, conc, hyp, mask)


def _label_length(z) -> int | None:
    """Length of a label vector when it is known before sampling."""
    from pymc_pcrp.distributions.niw import static_length

    return static_length(pt.as_tensor_variable(z))
