"""Files of the ``cluster`` command: reading the data, and an output directory never half-written.

Reading: a ``.npy`` array or a delimited text file, with a header row detected
or given, and the columns chosen by name or index. Every problem with the input
raises :class:`InputError`, which the command reports without a traceback.

Writing: the results go into a fresh temporary directory beside the requested
one, which is renamed into place only when every file is written
(:func:`make_temporary_dir`, :func:`publish`).
"""

from __future__ import annotations

import argparse
import csv
import math
import secrets
import shutil

from dataclasses import dataclass
from pathlib import Path

import numpy as np

_DPI = 120


class InputError(Exception):
    """A problem with the input or the options, reported to the user without a traceback."""


@dataclass(frozen=True)
class ClusterData:
    """The selected columns of the data file."""

    x: np.ndarray  # (N, D) float64, finite
    names: list[str]  # the D selected column names
    has_header: bool


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def _read_text_rows(path: Path, delimiter: str) -> list[tuple[int, list[str]]]:
    """Non-empty rows of a delimited text file with their 1-based line numbers."""
    rows = []
    try:
        with path.open(newline="", encoding="utf-8-sig") as handle:
            reader = csv.reader(handle, delimiter=delimiter)
            for cells in reader:
                stripped = [cell.strip() for cell in cells]
                if any(stripped):
                    rows.append((reader.line_num, stripped))
    except UnicodeDecodeError as err:
        raise InputError(
            f"cannot read '{path}': it is not UTF-8 text ({err.reason} at byte {err.start}). "
            "Pass a CSV text file or a .npy array."
        ) from None
    except csv.Error as err:
        raise InputError(f"cannot read '{path}' as delimited text: {err}") from None
    return rows


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


def _parse_cells(
    rows: list[tuple[int, list[str]]], indices: list[int], names: list[str]
) -> np.ndarray:
    """Convert the selected cells to floats, reporting the first bad cell by line and column."""
    x = np.empty((len(rows), len(indices)))
    for i, (line, cells) in enumerate(rows):
        for j, column in enumerate(indices):
            cell = cells[column]
            where = f"line {line} (data row {i}), column {names[column]!r}"
            if not cell:
                raise InputError(
                    f"{where} is empty; fill in or drop rows with missing values before clustering"
                )
            try:
                value = float(cell)
            except ValueError:
                raise InputError(f"{where}: {cell!r} is not a number") from None
            if not math.isfinite(value):
                raise InputError(
                    f"{where}: {cell!r} is not a finite number; NaN and infinite values are not "
                    "allowed (drop or impute those rows)"
                )
            x[i, j] = value
    return x


def _load_text(path: Path, columns: str | None, header: str, delimiter: str | None) -> ClusterData:
    if delimiter is None:
        delimiter = "\t" if path.suffix.lower() in (".tsv", ".tab") else ","
    elif delimiter == "\\t":
        delimiter = "\t"
    if len(delimiter) != 1:
        raise InputError(f"--delimiter must be a single character, got {delimiter!r}")
    rows = _read_text_rows(path, delimiter)
    if not rows:
        raise InputError(f"'{path}' holds no data: it is empty")
    first_line, first = rows[0]
    has_header = header == "yes" or (
        header == "auto" and not any(_is_number(cell) for cell in first)
    )
    if has_header:
        names = first
        rows = rows[1:]
    else:
        names = [str(j) for j in range(len(first))]
    width = len(names)
    for line, cells in rows:
        if len(cells) != width:
            raise InputError(
                f"line {line} of '{path}' has {len(cells)} field(s) but line {first_line} has "
                f"{width}; check the delimiter (--delimiter) and quoting"
            )
    indices = _resolve_columns(columns, names, has_header)
    x = _parse_cells(rows, indices, names)
    return ClusterData(x=x, names=[names[j] for j in indices], has_header=has_header)


def _load_npy(path: Path, columns: str | None) -> ClusterData:
    try:
        arr = np.load(path, allow_pickle=False)
    except (ValueError, EOFError) as err:
        reason = str(err) or "the file is truncated"
        raise InputError(f"cannot read '{path}' as a .npy array: {reason}") from None
    if not isinstance(arr, np.ndarray):
        raise InputError(f"'{path}' is not a single .npy array (an .npz archive?)")
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
    names = [str(j) for j in range(arr.shape[1])]
    indices = _resolve_columns(columns, names, has_header=False)
    x = np.asarray(arr[:, indices], dtype=np.float64)
    bad = ~np.isfinite(x)
    if bad.any():
        row, col = (int(v) for v in np.argwhere(bad)[0])
        raise InputError(
            f"'{path}' row {row}, column {names[indices[col]]}: {x[row, col]} is not a finite "
            f"number ({int(bad.sum())} such value(s)); NaN and infinite values are not allowed"
        )
    return ClusterData(x=x, names=[names[j] for j in indices], has_header=False)


def load_data(args: argparse.Namespace) -> ClusterData:
    """Read the selected columns of ``args.data`` (a ``.npy`` or a delimited text file)."""
    path = Path(args.data)
    if not path.exists():
        raise InputError(f"data file '{path}' does not exist")
    if not path.is_file():
        raise InputError(f"data file '{path}' is not a regular file")
    if path.suffix.lower() == ".npz":
        raise InputError(
            f"'{path}' is an .npz archive; save the array on its own with numpy.save (.npy)"
        )
    try:
        if path.suffix.lower() == ".npy":
            data = _load_npy(path, args.columns)
        else:
            data = _load_text(path, args.columns, args.header, args.delimiter)
    except OSError as err:
        raise InputError(f"cannot read data file '{path}': {err.strerror or err}") from None
    n = data.x.shape[0]
    if n < 2:
        raise InputError(f"'{path}' has {n} data row(s); clustering needs at least 2")
    constant = [name for name, col in zip(data.names, data.x.T, strict=True) if np.ptp(col) == 0]
    if constant:
        raise InputError(
            f"column(s) {', '.join(map(repr, constant))} of '{path}' are constant; they carry no "
            "information for the clustering (leave them out with --columns)"
        )
    return data


def check_output(out: Path, overwrite: bool, data_file: Path) -> None:
    """Refuse an output path that is in the way, before any work is done."""
    resolved = out.resolve()
    if not out.name or resolved == Path.cwd().resolve() or resolved in Path.cwd().parents:
        raise InputError(
            f"--out '{out}' is the current directory or one of its parents; name a new "
            "directory for the results"
        )
    if resolved in data_file.resolve().parents:
        raise InputError(f"--out '{out}' contains the data file; name another directory")
    if out.exists() and not out.is_dir():
        raise InputError(f"--out '{out}' exists and is not a directory")
    if out.is_dir() and any(out.iterdir()):
        if not overwrite:
            raise InputError(
                f"output directory '{out}' already exists and is not empty; choose another "
                "--out or pass --overwrite to replace an earlier result"
            )
        if not (out / "summary.md").is_file():
            raise InputError(
                f"output directory '{out}' is not empty and does not look like an earlier "
                "result of this command (no summary.md); refusing to overwrite it"
            )


def make_temporary_dir(out: Path) -> Path:
    """Create ``.NAME.incomplete-XXXXXXXX`` beside ``out`` (honouring the umask, unlike mkdtemp)."""
    parent = out.resolve().parent
    parent.mkdir(parents=True, exist_ok=True)
    while True:
        tmp = parent / f".{out.name}.incomplete-{secrets.token_hex(4)}"
        try:
            tmp.mkdir()
        except FileExistsError:
            continue
        return tmp


def publish(tmp: Path, out: Path) -> None:
    """Move the finished temporary directory to ``out``, replacing an earlier result."""
    if out.is_dir():
        if not any(out.iterdir()):
            out.rmdir()
        else:
            old = out.parent / f".{out.name}.old-{secrets.token_hex(4)}"
            out.rename(old)
            tmp.rename(out)
            shutil.rmtree(old, ignore_errors=True)
            return
    tmp.rename(out)


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
