"""Reading a delimited text file for the table family of the ``cluster`` command.

A file whose selected columns are not all numeric (text or category columns,
true/false columns), or any file with ``--family table`` or ``--kinds``, is
clustered with :class:`~pymc_pcrp.TableMixture`. Each column becomes a pandas
column whose dtype makes :func:`~pymc_pcrp.table_spec` infer its kind exactly
as :func:`pymc_pcrp.fit` infers it from a DataFrame:

* every present cell a number: float64 (``"gaussian"``; ``--kinds c=poisson``
  makes it counts, ``c=bernoulli`` a 0/1 column);
* every present cell ``true`` or ``false`` (any case): pandas ``boolean``
  (``"bernoulli"``);
* otherwise text: the cells as strings (``"categorical"``, its levels sorted).

Missing cells (empty, ``NA``, ``null`` ...; :data:`~pymc_pcrp.cli.io.NA_TOKENS`)
are kept missing: the table family integrates them out. Refused, naming the
line and the column: a column of dates or times (no kind models them), and a
column of numbers with a few text cells (likely a typo; ``--kinds
c=categorical`` makes it a text column instead).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pymc_pcrp.cli.io import DATE_PATTERN, NA_TOKENS, ClusterData, InputError, cell_location

__all__ = ["BOOL_TOKENS", "read_table"]

#: The cells of a true/false column (compared in lower case).
BOOL_TOKENS = {"true": True, "false": False}


def _column(path: Path, cells, name: str, kind: str | None, where) -> object:
    """Return the values of one column for the table family, or raise InputError."""
    import pandas as pd

    text = cells.astype(str).str.strip()
    missing = text.isin(NA_TOKENS).to_numpy()
    numbers = pd.to_numeric(text.where(~missing), errors="coerce").to_numpy(dtype=np.float64)
    lower = text.str.lower()
    is_bool = lower.isin(BOOL_TOKENS).to_numpy()
    is_number = ~np.isnan(numbers) & ~missing
    is_text = ~missing & ~is_number

    def first(flags) -> tuple[int, str]:
        row = int(np.flatnonzero(flags)[0])
        return row, str(text.iloc[row])

    if kind == "categorical":
        return pd.Series(np.where(missing, None, text.to_numpy(dtype=object)), dtype=object)

    def booleans():
        flags = [None if m else BOOL_TOKENS[v] for v, m in zip(lower, missing, strict=True)]
        return pd.array(flags, dtype="boolean")

    if kind == "bernoulli" and np.all(is_bool | missing):
        return booleans()
    if (kind in ("poisson", "gaussian", "bernoulli")) and is_text.any():
        row, cell = first(is_text)
        raise InputError(
            f"{where(row, name)}: {cell!r} is not a number, but --kinds makes column {name!r} "
            f"{kind!r}; fix the cell, or leave the column's kind to be inferred"
        )
    if kind is not None or not is_text.any():
        if np.any(np.isinf(numbers)):
            row, cell = first(np.isinf(numbers))
            raise InputError(f"{where(row, name)}: {cell!r} is not a finite number")
        return numbers  # NaN where missing
    if np.all(is_bool | missing):
        return booleans()
    dates = np.array([bool(DATE_PATTERN.match(c)) for c in text]) & is_text
    if dates.any():
        row, cell = first(dates)
        raise InputError(
            f"{where(row, name)}: {cell!r} is a date or a time; no column kind models dates: "
            "leave the column out with --columns, or convert it to numbers (for example days "
            "since a reference date)"
        )
    if is_number.sum() > is_text.sum():
        row, cell = first(is_text)
        raise InputError(
            f"{where(row, name)}: {cell!r} is not a number, in a column whose other cells "
            f"are mostly numbers; fix the cell, make it missing (empty), or pass --kinds "
            f"{name}=categorical to cluster the column as text"
        )
    return pd.Series(np.where(missing, None, text.to_numpy(dtype=object)), dtype=object)


def read_table(
    path: Path, options: dict, names: list[str], has_header: bool, delimiter: str, kinds: dict
) -> ClusterData:
    """Read the selected columns of a text file as a table (see the module).

    ``options`` are the ``pandas.read_csv`` options of the numeric reader
    (columns, header, delimiter, missing-value tokens); ``names`` the selected
    columns in the order asked; ``kinds`` the ``--kinds`` spec (column name to
    kind), whose names must be selected columns.
    """
    import pandas as pd

    unknown = [name for name in kinds if name not in names]
    if unknown:
        raise InputError(
            f"--kinds names the column(s) {unknown}, which are not among the selected "
            f"columns {names}"
        )
    text_options = {**options, "dtype": str, "keep_default_na": False, "na_values": []}
    try:
        raw = pd.read_csv(path, **text_options)
    except pd.errors.EmptyDataError:
        raise InputError(f"'{path}' holds no data: it is empty") from None
    indices = list(options["usecols"])
    order = np.argsort(np.argsort(indices))  # usecols keeps the file's order

    def where(row: int, name: str) -> str:
        return cell_location(path, row, name, has_header, delimiter)

    columns = {
        name: _column(path, raw.iloc[:, int(position)], name, kinds.get(name), where)
        for name, position in zip(names, order, strict=True)
    }
    frame = pd.DataFrame({name: np.asarray(v) if isinstance(v, np.ndarray) else v
                          for name, v in columns.items()})  # fmt: skip
    return ClusterData(x=None, names=names, has_header=has_header, frame=frame, kinds=dict(kinds))
