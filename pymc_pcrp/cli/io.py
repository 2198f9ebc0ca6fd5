"""Files of the ``cluster`` command: reading the data, and writing the results.

Reading: a ``.npy`` array, a Parquet file or a delimited text file (comma, tab,
semicolon, pipe or whitespace, detected or given; quoted numbers; a UTF-8 byte
order mark; a header row detected or given), with the columns chosen by name or
index. Text and Parquet go through pandas (its C parser; Parquet needs
pyarrow), so a large numeric table loads at the speed of a compiled reader.
Every problem with the input raises :class:`InputError`, whose one-line message
names the file, the column or the line, and the fix; the command reports it
without a traceback. Publishing lives in :mod:`pymc_pcrp.cli.publish`.
"""

from __future__ import annotations

import argparse
import csv
import re

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pymc_pcrp._validation import LARGEST_MAGNITUDE, SMALLEST_MAGNITUDE, frame_to_array

_DPI = 120


class InputError(Exception):
    """A problem with the input or the options, reported to the user without a traceback."""


@dataclass(frozen=True)
class ClusterData:
    """The selected columns of the data file.

    For the Gaussian family ``x`` holds them; for the table family (a text
    file with columns that are not all numeric, or ``--family table``) ``x`` is
    None and ``frame`` holds them (:mod:`pymc_pcrp.cli.table_io`), with the
    ``--kinds`` spec in ``kinds``.
    """

    x: np.ndarray | None  # (N, D) float64, finite; None for the table family
    names: list[str]  # the D selected column names
    has_header: bool
    frame: object = None  # pandas.DataFrame of the table family
    kinds: dict = field(default_factory=dict)  # the table's column kinds given (--kinds)

    @property
    def shape(self) -> tuple[int, int]:
        """``(N, D)``: rows and selected columns."""
        return tuple(self.frame.shape) if self.frame is not None else self.x.shape


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


# Cells read as missing values; "nan" and "inf" are not among them (they are refused as
# numbers that are not finite, naming the cell).
NA_TOKENS = _NA_TOKENS = ["", "NA", "N/A", "n/a", "NaN", "null", "NULL", "None", "<NA>"]
_DELIMITERS = (",", "\t", ";", "|")
_SNIFF_LINES = 50


def _first_lines(path: Path, count: int) -> list[str]:
    """Return the first ``count`` non-empty lines of a text file (byte order mark removed)."""
    lines = []
    try:
        with path.open(encoding="utf-8-sig", newline="") as handle:
            for line in handle:
                if line.strip():
                    lines.append(line.rstrip("\r\n"))
                    if len(lines) == count:
                        break
    except UnicodeDecodeError as err:
        raise InputError(
            f"cannot read '{path}': it is not UTF-8 text ({err.reason} at byte {err.start}). "
            "Pass a CSV text file, a Parquet file or a .npy array."
        ) from None
    return lines


def _fields(line: str, delimiter: str) -> list[str]:
    if delimiter == " ":
        return line.split()
    return next(csv.reader([line], delimiter=delimiter, skipinitialspace=True), [])


def _detect_delimiter(path: Path, lines: list[str]) -> str:
    """Return the delimiter giving every sniffed line one number (> 1) of fields, else ","."""
    if path.suffix.lower() in (".tsv", ".tab"):
        return "\t"
    best, best_width = ",", 1
    for delimiter in (*_DELIMITERS, " "):
        widths = {len(_fields(line, delimiter)) for line in lines}
        if len(widths) == 1 and (width := widths.pop()) > best_width:
            best, best_width = delimiter, width
    return best


def _data_line_numbers(path: Path, rows, has_header: bool, delimiter: str) -> dict:
    """Map 0-based data rows to their 1-based line number and text (blank lines skipped)."""
    wanted = {int(r) for r in rows}
    found: dict[int, tuple[int, str]] = {}
    row = -1 if has_header else 0
    with path.open(encoding="utf-8-sig", newline="") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            if row in wanted:
                found[row] = (number, line.rstrip("\r\n"))
                if len(found) == len(wanted):
                    break
            row += 1
    return found


def _where(path: Path, row: int, line: int | None, name: str) -> str:
    at = f"line {line} (data row {row})" if line is not None else f"data row {row}"
    return f"{at}, column {name!r}"


def cell_location(path: Path, row: int, name: str, has_header: bool, delimiter: str) -> str:
    """Return where data row ``row`` of column ``name`` is: ``line L (data row R), column 'c'``."""
    line, _ = _data_line_numbers(path, [row], has_header, delimiter).get(row, (None, ""))
    return _where(path, row, line, name)


def _read_options(path: Path, delimiter: str, has_header: bool, indices: list[int]) -> dict:
    return {
        "sep": r"\s+" if delimiter == " " else delimiter,
        "header": 0 if has_header else None,
        "usecols": indices,
        "keep_default_na": False,
        "na_values": _NA_TOKENS,
        "skipinitialspace": delimiter != " ",
        "skip_blank_lines": True,
        "encoding": "utf-8-sig",
        "engine": "c",
    }


def _first_bad_cell(path: Path, options: dict, names: list[str], indices: list[int]):
    """Find the first cell of the selected columns that is not a number: (row, column, text)."""
    import pandas as pd

    text_options = {**options, "dtype": str, "keep_default_na": False, "na_values": []}
    offset = 0
    for chunk in pd.read_csv(path, chunksize=200_000, **text_options):
        for position, index in enumerate(sorted(indices)):
            cells = chunk.iloc[:, position].astype(str).str.strip()
            numbers = pd.to_numeric(cells, errors="coerce")
            bad = numbers.isna() & ~cells.isin(_NA_TOKENS)
            if bad.any():
                row = int(np.flatnonzero(bad.to_numpy())[0])
                return offset + row, index, str(cells.iloc[row])
        offset += len(chunk)
    return None


DATE_PATTERN = _DATE = re.compile(r"^\d{1,4}[-/.]\d{1,2}[-/.]\d{1,4}|^\d{1,2}:\d{2}")


def _not_a_number(cell: str, where: str, name: str) -> str:
    if _is_number(cell):
        return (
            f"{where}: {cell!r} is not a finite number; NaN and infinite values are not "
            "allowed (drop or impute those rows)"
        )
    if _DATE.match(cell):
        kind = "a date or a time"
        fix = "convert it to numbers (for example days since a reference date)"
    else:
        kind = "text"
        fix = "encode it as numbers"
    return (
        f"{where}: {cell!r} is not a number (column {name!r} holds {kind}; the Gaussian "
        f"family clusters numeric columns only: leave it out with --columns, or {fix})"
    )


def _load_text(path: Path, args: argparse.Namespace) -> ClusterData:
    import pandas as pd

    from pymc_pcrp.cli.table_io import read_table

    columns, header, delimiter = args.columns, args.header, args.delimiter
    family, kinds = getattr(args, "family", "gaussian"), getattr(args, "kinds", None) or {}

    lines = _first_lines(path, _SNIFF_LINES)
    if not lines:
        raise InputError(f"'{path}' holds no data: it is empty")
    if delimiter is None:
        delimiter = _detect_delimiter(path, lines)
    elif delimiter == "\\t":
        delimiter = "\t"
    if len(delimiter) != 1:
        raise InputError(f"--delimiter must be a single character, got {delimiter!r}")
    first = [cell.strip() for cell in _fields(lines[0], delimiter)]
    has_header = header == "yes" or (
        header == "auto" and not any(_is_number(cell) for cell in first)
    )
    names = first if has_header else [str(j) for j in range(len(first))]
    indices = _resolve_columns(columns, names, has_header)
    options = _read_options(path, delimiter, has_header, indices)
    layout = (path, options, [names[j] for j in indices], has_header, delimiter)
    if family == "table" or kinds:
        return read_table(*layout, kinds)
    try:
        x = _read_numbers(path, options, len(indices))
    except ValueError as err:  # a cell that is not a number (ParserError is a ValueError)
        if isinstance(err, pd.errors.ParserError):
            raise InputError(_ragged(path, str(err), len(names))) from None
        bad = _first_bad_cell(path, options, names, indices)
        if bad is None:
            raise InputError(f"cannot read '{path}' as numbers: {err}") from None
        row, index, cell = bad
        if family == "auto" and not (_is_number(cell) or _DATE.match(cell)):
            return read_table(*layout, kinds)  # a text column: the table family
        line, _ = _data_line_numbers(path, [row], has_header, delimiter).get(row, (None, ""))
        where = _where(path, row, line, names[index])
        raise InputError(_not_a_number(cell, where, names[index])) from None
    except pd.errors.EmptyDataError:
        raise InputError(f"'{path}' holds no data: it is empty") from None
    # usecols returns the columns in file order: put them in the order asked
    order = np.argsort(np.argsort(indices))
    if not np.array_equal(order, np.arange(len(indices))):
        x = np.ascontiguousarray(x[:, order])
    _check_finite_cells(path, x, [names[j] for j in indices], (has_header, delimiter, len(names)))
    return ClusterData(x=x, names=[names[j] for j in indices], has_header=has_header)


#: Rows parsed at a time: the table is filled chunk by chunk, so that loading needs
#: little more memory than the array itself.
_CHUNK_ROWS = 1 << 16


def _count_lines(path: Path) -> int:
    """Return an upper bound on the number of data rows: the number of line ends, plus 1."""
    count = 1
    with path.open("rb") as handle:
        while block := handle.read(1 << 24):
            count += block.count(b"\n")
    return count


def _read_numbers(path: Path, options: dict, width: int) -> np.ndarray:
    """Parse the selected columns into a C-ordered float64 array, one chunk at a time."""
    import pandas as pd

    x = np.empty((_count_lines(path), width))
    filled = 0
    with pd.read_csv(path, dtype=np.float64, chunksize=_CHUNK_ROWS, **options) as reader:
        for chunk in reader:
            x[filled : filled + len(chunk)] = chunk.to_numpy(dtype=np.float64, copy=False)
            filled += len(chunk)
    x.resize((filled, width), refcheck=False)  # in place: the rows are a prefix of the buffer
    return x


def _ragged(path: Path, message: str, width: int) -> str:
    found = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", message)
    if found:
        expected, line, saw = found.groups()
        return (
            f"line {line} of '{path}' has {saw} field(s) but the first line has {expected}; "
            "check the delimiter (--delimiter) and quoting"
        )
    return f"cannot read '{path}' as delimited text ({message}); check --delimiter and quoting"


def _check_finite_cells(path: Path, x: np.ndarray, names: list[str], layout: tuple) -> None:
    """Refuse missing (empty, NA) and infinite cells, naming the first by line and column.

    ``layout`` is ``(has_header, delimiter, number of fields per line)``.
    """
    bad = ~np.isfinite(x)
    if not bad.any():
        return
    has_header, delimiter, width = layout
    row, col = (int(v) for v in np.argwhere(bad)[0])
    line, text = _data_line_numbers(path, [row], has_header, delimiter).get(row, (None, ""))
    where = _where(path, row, line, names[col])
    value = x[row, col]
    if np.isnan(value):
        fields = len(_fields(text, delimiter))
        if line is not None and fields < width:
            raise InputError(
                f"line {line} of '{path}' has {fields} field(s) but the first line has "
                f"{width}; check the delimiter (--delimiter) and quoting"
            )
        missing = int(np.isnan(x).sum())
        raise InputError(
            f"{where} is empty or NA ({missing} missing value(s) in the selected columns); the "
            "Gaussian family cannot marginalise missing values: pass --family table (which "
            "integrates missing cells out), or fill them in or drop those rows"
        )
    raise InputError(
        f"{where}: '{value}' is not a finite number ({int(bad.sum())} such value(s)); NaN and "
        "infinite values are not allowed (drop or impute those rows)"
    )


def _resolve_columns(spec: str | None, names: list[str], has_header: bool) -> list[int]:
    """Return the 0-based indices of the columns in ``spec`` (all columns when it is None)."""
    if spec is None:
        return list(range(len(names)))
    requested = [token.strip() for token in spec.split(",") if token.strip()]
    if not requested:
        raise InputError("--columns names no column")
    indices = []
    for token in requested:
        if token in names and has_header:
            index = names.index(token)
        else:
            try:
                index = int(token)
            except ValueError:
                available = ", ".join(repr(n) for n in names) if has_header else "none"
                raise InputError(
                    f"column {token!r} not found in the data; header names: {available}; "
                    f"indices run from 0 to {len(names) - 1}"
                ) from None
            if not 0 <= index < len(names):
                raise InputError(
                    f"column index {index} is out of range: the data have {len(names)} "
                    f"column(s), indices 0 to {len(names) - 1}"
                )
        if index in indices:
            raise InputError(f"column {names[index]!r} is selected more than once in --columns")
        indices.append(index)
    return indices


_NPY_MAGIC = b"\x93NUMPY"


def _sniff_npy(path: Path) -> None:
    """Refuse a file named .npy that is not one, saying what it looks like."""
    with path.open("rb") as handle:
        head = handle.read(512)
    if head.startswith(_NPY_MAGIC):
        return
    if not head:
        raise InputError(f"'{path}' is empty; a .npy array saved with numpy.save is needed")
    if head[:1] == b"\x80" or head[:2] in (b"(d", b"(l", b"(i", b"cn", b"]q", b"}q"):
        raise InputError(
            f"'{path}' is a Python pickle, not a .npy array; pickles can run code when "
            "loaded and are never read: save the array with numpy.save"
        )
    if head.startswith(b"PK\x03\x04"):
        raise InputError(
            f"'{path}' is a zip archive (an .npz?), not a .npy array; save the array on its "
            "own with numpy.save"
        )
    try:
        head.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(
            f"cannot read '{path}' as a .npy array: it does not start with the .npy "
            "signature; save the array with numpy.save"
        ) from None
    raise InputError(
        f"'{path}' is text, not a .npy array (a CSV file named .npy?); rename it to .csv "
        "or save the array with numpy.save"
    )


def _load_npy(path: Path, columns: str | None) -> ClusterData:
    _sniff_npy(path)
    try:
        arr = np.load(path, allow_pickle=False, mmap_mode="r")
    except ValueError as err:
        if any(word in str(err) for word in ("pickled data", "allow_pickle", "Python objects")):
            raise InputError(
                f"'{path}' holds an array of Python objects (dtype object), which only "
                "unpickling could read, and pickles can run code: save a numeric array"
            ) from None
        raise InputError(f"cannot read '{path}' as a .npy array: {err}") from None
    except EOFError:
        raise InputError(f"cannot read '{path}' as a .npy array: the file is truncated") from None
    if arr.dtype.names is not None or not (
        np.issubdtype(arr.dtype, np.integer)
        or np.issubdtype(arr.dtype, np.floating)
        or arr.dtype == np.bool_
    ):
        raise InputError(
            f"'{path}' holds an array of dtype {arr.dtype}; a plain numeric (integer or float) "
            "array is needed"
        )
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise InputError(
            f"'{path}' holds an array of shape {arr.shape}; expected (N,) or (N, D) with one "
            "row per point"
        )
    if arr.shape[1] == 0:
        raise InputError(
            f"'{path}' holds an array of shape {arr.shape}: {arr.shape[0]} rows but no "
            "columns; save the data with one column per feature"
        )
    names = [str(j) for j in range(arr.shape[1])]
    indices = _resolve_columns(columns, names, has_header=False)
    if indices == list(range(arr.shape[1])):
        x = np.array(arr, dtype=np.float64)
    else:
        x = np.asarray(arr[:, indices], dtype=np.float64)
    bad = ~np.isfinite(x)
    if bad.any():
        row, col = (int(v) for v in np.argwhere(bad)[0])
        raise InputError(
            f"'{path}' row {row}, column {names[indices[col]]}: {x[row, col]} is not a finite "
            f"number ({int(bad.sum())} such value(s)); NaN and infinite values are not "
            "allowed (drop or impute those rows)"
        )
    return ClusterData(x=x, names=[names[j] for j in indices], has_header=False)


def _load_parquet(path: Path, columns: str | None) -> ClusterData:
    import pandas as pd

    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError(
            f"reading the Parquet file '{path}' needs pyarrow: pip install pyarrow (or "
            "pip install 'pymc-pcrp[parquet]'), or save the table as CSV"
        ) from None
    try:
        names = [str(n) for n in pq.read_schema(path).names]
    except Exception as err:  # pyarrow's errors are many; every one means "not readable"
        raise InputError(f"cannot read '{path}' as a Parquet file: {err}") from None
    names = [n for n in names if not n.startswith("__index_level_")]
    indices = _resolve_columns(columns, names, has_header=True)
    selected = [names[j] for j in indices]
    frame = pd.read_parquet(path, columns=selected)
    try:
        x = frame_to_array(frame, "data")
    except ValueError as err:
        message = str(err).removeprefix("Argument 'data': ").removeprefix("Argument 'data' ")
        message = message.replace("; leave it out,", "; leave it out with --columns,")
        message = message.replace("(for example data.dropna())", "(for example with dropna)")
        raise InputError(f"'{path}': {message}") from None
    return ClusterData(x=x, names=selected, has_header=True)


def check_magnitude(x: np.ndarray, names: list[str], path: str, standardized: bool) -> None:
    """Refuse columns whose magnitude sums of squares cannot hold in double precision."""
    size = np.abs(x).max(axis=0)
    for j in range(x.shape[1]):
        if size[j] > LARGEST_MAGNITUDE or 0 < size[j] < SMALLEST_MAGNITUDE:
            row = int(np.argmax(np.abs(x[:, j])))
            what = "above" if size[j] > LARGEST_MAGNITUDE else "below"
            bound = LARGEST_MAGNITUDE if size[j] > LARGEST_MAGNITUDE else SMALLEST_MAGNITUDE
            fix = (
                "rescale the column"
                if standardized
                else "pass --standardize (each column to mean 0 and standard deviation 1) or "
                "rescale the column"
            )
            raise InputError(
                f"column {names[j]!r} of '{path}' has values of magnitude {size[j]:.3g} (data "
                f"row {row}), {what} {bound:g}, where the sums of squares of the NIW model "
                f"overflow or underflow double precision: {fix}"
            )


def load_data(args: argparse.Namespace) -> ClusterData:
    """Read the selected columns of ``args.data`` (``.npy``, Parquet or delimited text)."""
    path = Path(args.data)
    if not path.exists():
        raise InputError(f"data file '{path}' does not exist")
    if not path.is_file():
        raise InputError(f"data file '{path}' is not a regular file")
    suffix = path.suffix.lower()
    if suffix == ".npz":
        raise InputError(
            f"'{path}' is an .npz archive; save the array on its own with numpy.save (.npy)"
        )
    try:
        if suffix == ".npy":
            data = _load_npy(path, args.columns)
        elif suffix in (".parquet", ".pq"):
            data = _load_parquet(path, args.columns)
        else:
            data = _load_text(path, args)
    except OSError as err:
        raise InputError(f"cannot read data file '{path}': {err.strerror or err}") from None
    except MemoryError:
        raise InputError(
            f"'{path}' does not fit in memory; select fewer columns with --columns or "
            "cluster a sample of the rows"
        ) from None
    if data.frame is None and (getattr(args, "family", "auto") == "table" or args.kinds):
        import pandas as pd  # a numeric .npy or Parquet file, clustered as a table

        frame = pd.DataFrame(data.x, columns=data.names)
        data = ClusterData(None, data.names, data.has_header, frame, dict(args.kinds or {}))
    n = data.shape[0]
    if n < 2:
        raise InputError(f"'{path}' has {n} data row(s); clustering needs at least 2")
    if data.frame is not None:  # the table family: one value (or none) besides missing cells
        counts = data.frame.nunique(dropna=True).to_numpy()
        constant = [name for name, c in zip(data.names, counts, strict=True) if c <= 1]
    else:
        constant = [
            name for name, col in zip(data.names, data.x.T, strict=True) if np.ptp(col) == 0
        ]
    if constant:
        raise InputError(
            f"column(s) {', '.join(map(repr, constant))} of '{path}' are constant; they carry no "
            "information for the clustering (leave them out with --columns)"
        )
    return data


def standardize(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return ``(x - mean) / sd`` per column, with the mean and sd, safe at any magnitude.

    Each column is first divided by its largest magnitude, so that the squares
    of the standard deviation cannot overflow (or underflow) for finite data.
    """
    scale = np.abs(x).max(axis=0)
    scale[scale == 0] = 1.0
    y = x / scale
    mean, sd = y.mean(axis=0), y.std(axis=0, ddof=1)
    return (y - mean) / sd, mean * scale, sd * scale


def save_figure(path: Path, draw, figsize=(6.0, 4.0), panels: int | None = None) -> None:
    """Draw into a fresh pyplot-free figure and save it as PNG.

    ``draw`` gets one Axes, or with ``panels`` a list of that many side by side.
    """
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize, layout="constrained")
    if panels is None:
        draw(fig.add_subplot())
    else:
        draw(list(fig.subplots(1, panels, squeeze=False)[0]))
    fig.savefig(path, dpi=_DPI)


def write_labels(path: Path, labels: np.ndarray) -> None:
    """Write ``labels.csv``: one ``row,label`` line per data row, after a header line."""
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["row", "label"])
        writer.writerows(zip(range(labels.size), labels.tolist(), strict=True))
