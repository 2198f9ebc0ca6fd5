"""``python -m pymc_pcrp cluster``: cluster the rows of a CSV or ``.npy`` file and write a report.

The command reads a data file, optionally chooses the power ``r`` by
cross-validation, samples the pCRP mixture posterior with
:func:`pymc_pcrp.fit`, summarises it with the expected-VI point estimate, and
writes the results into one output directory.

**Choosing r** (``--power auto``). The rows are split at random into a training
part (``--cv-fraction`` of them) and a held-out part with
:func:`~pymc_pcrp.split_train_test`; :func:`~pymc_pcrp.cross_validate_power`
fits the training part at every ``r`` of ``--cv-grid`` and picks the ``r`` just
before the held-out loss jumps. The split only serves the choice of ``r``: the
final posterior is then sampled on *all* rows with the chosen ``r``, as in the
paper, where cross-validation tunes ``r`` and the reported clustering uses the
whole data set. The cross-validation fits use the NIW prior
``NIWPrior.from_data`` of the training part, the final fit that of all rows.

**Seeds.** The seeds of the split, of the cross-validation and of the final fit
are spawned from ``--seed`` with :class:`numpy.random.SeedSequence`. The final
fit therefore does not depend on whether ``r`` was given or chosen: ``--power
auto --seed S`` that chooses ``r = R`` samples the same posterior as ``--power
R --seed S``. Without ``--seed`` a seed is drawn and written into the summary.

**Outputs** (in ``--out DIR``): ``labels.csv`` (``row,label``: the 0-based
data-row index, header excluded, and its point-estimate cluster),
``idata.nc`` (the posterior, readable with :func:`arviz.from_netcdf`; the
settings are in the attributes of its posterior group), ``summary.md`` and PNG
figures.

**No half-written output.** Everything is written into a fresh temporary
directory next to ``DIR`` (in the same parent, named
``.DIR.incomplete-XXXXXXXX``) that is renamed to ``DIR`` only after every file
has been written. On an error the temporary directory is removed; if the
process is killed, what remains carries ``incomplete`` in its name, and ``DIR``
itself never appears half-filled. An existing non-empty ``DIR`` is replaced
only with ``--overwrite`` and only if it looks like an earlier output of this
command (it holds a ``summary.md``).

**Errors.** Problems with the input (missing or unreadable file, unknown
column, non-numeric, empty, NaN or infinite cells, fewer than two rows, a
constant column, an output directory in the way) and invalid options are
reported on stderr as one message naming the problem, with exit status 2.
"""

from __future__ import annotations

import argparse
import csv
import logging
import math
import secrets
import shlex
import shutil
import sys
import time
import warnings

from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import arviz as az
import numpy as np

from pymc_pcrp.distributions import NIWPrior
from pymc_pcrp.fitting import fit
from pymc_pcrp.selection import CVResult, cross_validate_power, split_train_test
from pymc_pcrp.summaries import PointEstimate, point_estimate

__all__ = ["add_cluster_parser", "run_cluster"]

_PROG = "pymc_pcrp cluster"
_DEFAULT_GRID = "1.0:1.5:0.05"
# Above this many rows the N x N similarity matrix (and its figure) is skipped.
_MAX_SIMILARITY_ROWS = 3000
_DPI = 120


class _InputError(Exception):
    """A problem with the input or the options, reported to the user without a traceback."""


@dataclass(frozen=True)
class _Data:
    """The selected columns of the data file."""

    x: np.ndarray  # (N, D) float64, finite
    names: list[str]  # the D selected column names
    has_header: bool


# ---------------------------------------------------------------------------------------------
# Option parsing
# ---------------------------------------------------------------------------------------------


def _power_option(text: str) -> str | float:
    if text.strip().lower() == "auto":
        return "auto"
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected 'auto' or a number > 0, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"the power must be a finite number > 0, got {text!r}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"expected a finite number > 0, got {text!r}")
    return value


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1), got {text!r}") from None
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(
            f"expected a number strictly between 0 and 1, got {text!r}"
        )
    return value


def _int_at_least(minimum: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected an integer >= {minimum}, got {value}")
        return value

    parse.__name__ = f"integer >= {minimum}"
    return parse


def _n_jobs(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a non-zero integer, got {text!r}") from None
    if value == 0:
        raise argparse.ArgumentTypeError("expected a non-zero integer (-1 = all cores), got 0")
    return value


def _grid_option(text: str) -> np.ndarray:
    """Parse ``START:STOP:STEP`` (both ends included) or a comma-separated list of powers."""
    text = text.strip()
    try:
        if ":" in text:
            parts = [float(p) for p in text.split(":")]
            if len(parts) != 3:
                raise ValueError
            start, stop, step = parts
            if step <= 0 or stop < start:
                raise argparse.ArgumentTypeError(
                    f"in START:STOP:STEP the step must be > 0 and STOP >= START, got {text!r}"
                )
            count = math.floor((stop - start) / step + 1e-9) + 1
            grid = np.round(start + step * np.arange(count), 10)
        else:
            grid = np.array([float(p) for p in text.split(",") if p.strip()])
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected START:STOP:STEP (e.g. {_DEFAULT_GRID}) or a comma-separated list of "
            f"powers (e.g. 1.0,1.1,1.25), got {text!r}"
        ) from None
    if grid.size < 2 or np.unique(grid).size != grid.size:
        raise argparse.ArgumentTypeError(
            f"the grid needs at least two distinct powers, got {text!r}"
        )
    if not np.all(np.isfinite(grid)) or np.any(grid <= 0):
        raise argparse.ArgumentTypeError(f"every power of the grid must be > 0, got {text!r}")
    return np.sort(grid)


_EPILOG = f"""\
outputs (written into DIR):
  labels.csv        row,label: 0-based data-row index (header excluded) and its cluster in
                    the point estimate minimising the posterior expected variation of
                    information (clusters numbered 0, 1, ... by first appearance)
  idata.nc          the posterior (arviz.from_netcdf); settings in its posterior attributes
  summary.md        data, settings, chosen r and CV table (auto), posterior of K, R-hat and
                    ESS of n_clusters and log_joint, point-estimate cluster sizes, and the
                    command line
  k_trace.png       number of clusters per draw and chain
  k_posterior.png   posterior probability of each number of clusters
  clusters_2d.png   point estimate on the two columns (D = 2) or the first two (D > 2)
  density_1d.png    posterior predictive density (D = 1, instead of clusters_2d.png)
  similarity.png    posterior co-clustering matrix (skipped above {_MAX_SIMILARITY_ROWS} rows)
  cv_curve.png      held-out loss against r (--power auto only)

power auto: the rows are split at random into a training part (--cv-fraction) and a
  held-out part; r is chosen on the grid by the jump of the held-out loss
  (pymc_pcrp.cross_validate_power); then ALL rows are clustered with the chosen r.

data: a .npy file (1-D or 2-D numeric array) or a delimited text file (comma, or tab for
  .tsv/.tab; see --delimiter). With --header auto the first non-empty line is a header
  when none of its cells is a number. Every selected cell must be a finite number.

output safety: results are written into a temporary directory beside DIR and renamed to
  DIR at the end, so DIR never holds a half-written result; on error nothing is left.

exit status: 0 on success, 2 on invalid options or input (message on stderr).

example:
  python -m pymc_pcrp cluster data.csv --columns x,y --standardize --power auto --out res
"""


def add_cluster_parser(subparsers) -> argparse.ArgumentParser:
    """Add the ``cluster`` subcommand to an argparse subparsers object.

    Parameters
    ----------
    subparsers : argparse._SubParsersAction
        The object returned by :meth:`argparse.ArgumentParser.add_subparsers`.

    Returns
    -------
    argparse.ArgumentParser
        The subcommand's parser; after parsing, pass the namespace to
        :func:`run_cluster`.
    """
    parser = subparsers.add_parser(
        "cluster",
        help="cluster the rows of a CSV or .npy file with the pCRP mixture and write a report",
        description=(
            "Cluster the rows of DATA with the powered Chinese restaurant process (pCRP)\n"
            "mixture (NIW components, collapsed Gibbs sampling), summarise the posterior by\n"
            "the clustering minimising the expected variation of information, and write\n"
            "labels, the posterior, a summary and figures into DIR."
        ),
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("data", metavar="DATA", help="a .csv/.tsv/.txt file or a .npy file")
    parser.add_argument(
        "--out", required=True, metavar="DIR", help="output directory (required; see below)"
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace DIR if it already holds the output of an earlier run",
    )
    model = parser.add_argument_group("model")
    model.add_argument(
        "--power",
        type=_power_option,
        default="auto",
        metavar="auto|R",
        help="pCRP power r > 0 (1 = CRP), or 'auto' to choose it by cross-validation "
        "(default: auto)",
    )
    model.add_argument(
        "--alpha", type=_positive_float, default=1.0, help="concentration > 0 (default: 1)"
    )
    data = parser.add_argument_group("data")
    data.add_argument(
        "--columns",
        metavar="COLS",
        help="comma-separated columns to cluster, by header name or 0-based index, e.g. "
        "'x,y' or '0,2' (a header name wins over an index); default: all columns",
    )
    data.add_argument(
        "--standardize",
        action="store_true",
        help="rescale each selected column to mean 0 and standard deviation 1 before "
        "clustering (idata.nc and the figures then hold the rescaled data)",
    )
    data.add_argument(
        "--header",
        choices=("auto", "yes", "no"),
        default="auto",
        help="whether the first line of a text file is a header (default: auto)",
    )
    data.add_argument(
        "--delimiter",
        default=None,
        help="field delimiter of a text file (default: tab for .tsv/.tab, comma otherwise)",
    )
    sampling = parser.add_argument_group("sampling")
    sampling.add_argument(
        "--draws", type=_int_at_least(1), default=1000, help="kept draws per chain (default: 1000)"
    )
    sampling.add_argument(
        "--tune",
        type=_int_at_least(0),
        default=1000,
        help="burn-in draws per chain, discarded (default: 1000)",
    )
    sampling.add_argument(
        "--chains", type=_int_at_least(1), default=4, help="number of chains (default: 4)"
    )
    sampling.add_argument(
        "--cores",
        type=_int_at_least(1),
        default=1,
        help="processes running the chains in parallel (default: 1)",
    )
    sampling.add_argument(
        "--sweeps-per-draw",
        type=_int_at_least(1),
        default=1,
        help="Gibbs sweeps between kept draws (default: 1)",
    )
    sampling.add_argument(
        "--split-merge",
        type=_int_at_least(0),
        default=0,
        metavar="M",
        help="split-merge proposals after every Gibbs sweep (see pymc_pcrp.PCRPGibbs); 1 frees "
        "chains stuck in a merged or split state at a few times the cost per sweep "
        "(default: 0, the paper's Gibbs sampler alone)",
    )
    sampling.add_argument(
        "--init",
        choices=("random", "prior", "one", "singletons"),
        default="random",
        help="initial partition of each chain, for the final and the cross-validation fits "
        "(see pymc_pcrp.PCRPGibbs; default: random)",
    )
    sampling.add_argument(
        "--seed",
        type=_int_at_least(0),
        default=None,
        help="random seed making the whole run reproducible (default: drawn at random and "
        "written into summary.md)",
    )
    sampling.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="show a progress bar while sampling (default: only when stdout is a terminal)",
    )
    cv = parser.add_argument_group("cross-validation (--power auto)")
    cv.add_argument(
        "--cv-grid",
        type=_grid_option,
        default=_DEFAULT_GRID,
        metavar="GRID",
        help=f"powers to try: START:STOP:STEP, both ends included, or a comma-separated list "
        f"(default: {_DEFAULT_GRID})",
    )
    cv.add_argument(
        "--cv-fraction",
        type=_fraction,
        default=0.5,
        help="fraction of the rows used for training; the rest is held out (default: 0.5)",
    )
    cv.add_argument(
        "--cv-draws",
        type=_int_at_least(1),
        default=500,
        help="kept draws per chain of each cross-validation fit (default: 500)",
    )
    cv.add_argument(
        "--cv-tune",
        type=_int_at_least(0),
        default=500,
        help="burn-in draws of each cross-validation fit (default: 500)",
    )
    cv.add_argument(
        "--cv-chains",
        type=_int_at_least(1),
        default=2,
        help="chains of each cross-validation fit (default: 2)",
    )
    cv.add_argument(
        "--cv-jump-tol",
        type=_positive_float,
        default=0.1,
        help="relative rise of the held-out loss that counts as the jump (default: 0.1)",
    )
    cv.add_argument(
        "--n-jobs",
        type=_n_jobs,
        default=1,
        help="grid points fitted in parallel (joblib; -1 = all cores; default: 1)",
    )
    return parser


# ---------------------------------------------------------------------------------------------
# Reading the data
# ---------------------------------------------------------------------------------------------


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
        raise _InputError(
            f"cannot read '{path}': it is not UTF-8 text ({err.reason} at byte {err.start}). "
            "Pass a CSV text file or a .npy array."
        ) from None
    except csv.Error as err:
        raise _InputError(f"cannot read '{path}' as delimited text: {err}") from None
    return rows


def _resolve_columns(spec: str | None, names: list[str], has_header: bool) -> list[int]:
    """Return the 0-based indices of the columns in ``spec`` (all columns when it is None)."""
    if spec is None:
        return list(range(len(names)))
    requested = [token.strip() for token in spec.split(",") if token.strip()]
    if not requested:
        raise _InputError("--columns names no column")
    indices = []
    for token in requested:
        if token in names and has_header:
            index = names.index(token)
        else:
            try:
                index = int(token)
            except ValueError:
                available = ", ".join(repr(n) for n in names) if has_header else "none"
                raise _InputError(
                    f"column {token!r} not found in the data; header names: {available}; "
                    f"indices run from 0 to {len(names) - 1}"
                ) from None
            if not 0 <= index < len(names):
                raise _InputError(
                    f"column index {index} is out of range: the data have {len(names)} "
                    f"column(s), indices 0 to {len(names) - 1}"
                )
        if index in indices:
            raise _InputError(f"column {names[index]!r} is selected more than once in --columns")
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
                raise _InputError(
                    f"{where} is empty; fill in or drop rows with missing values before clustering"
                )
            try:
                value = float(cell)
            except ValueError:
                raise _InputError(f"{where}: {cell!r} is not a number") from None
            if not math.isfinite(value):
                raise _InputError(
                    f"{where}: {cell!r} is not a finite number; NaN and infinite values are not "
                    "allowed (drop or impute those rows)"
                )
            x[i, j] = value
    return x


def _load_text(path: Path, columns: str | None, header: str, delimiter: str | None) -> _Data:
    if delimiter is None:
        delimiter = "\t" if path.suffix.lower() in (".tsv", ".tab") else ","
    elif delimiter == "\\t":
        delimiter = "\t"
    if len(delimiter) != 1:
        raise _InputError(f"--delimiter must be a single character, got {delimiter!r}")
    rows = _read_text_rows(path, delimiter)
    if not rows:
        raise _InputError(f"'{path}' holds no data: it is empty")
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
            raise _InputError(
                f"line {line} of '{path}' has {len(cells)} field(s) but line {first_line} has "
                f"{width}; check the delimiter (--delimiter) and quoting"
            )
    indices = _resolve_columns(columns, names, has_header)
    x = _parse_cells(rows, indices, names)
    return _Data(x=x, names=[names[j] for j in indices], has_header=has_header)


def _load_npy(path: Path, columns: str | None) -> _Data:
    try:
        arr = np.load(path, allow_pickle=False)
    except (ValueError, EOFError) as err:
        reason = str(err) or "the file is truncated"
        raise _InputError(f"cannot read '{path}' as a .npy array: {reason}") from None
    if not isinstance(arr, np.ndarray):
        raise _InputError(f"'{path}' is not a single .npy array (an .npz archive?)")
    if arr.dtype.names is not None or not (
        np.issubdtype(arr.dtype, np.integer)
        or np.issubdtype(arr.dtype, np.floating)
        or arr.dtype == np.bool_
    ):
        raise _InputError(
            f"'{path}' holds an array of dtype {arr.dtype}; a plain numeric (integer or float) "
            "array is needed"
        )
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise _InputError(
            f"'{path}' holds an array of shape {arr.shape}; expected (N,) or (N, D) with one "
            "row per point"
        )
    names = [str(j) for j in range(arr.shape[1])]
    indices = _resolve_columns(columns, names, has_header=False)
    x = np.asarray(arr[:, indices], dtype=np.float64)
    bad = ~np.isfinite(x)
    if bad.any():
        row, col = (int(v) for v in np.argwhere(bad)[0])
        raise _InputError(
            f"'{path}' row {row}, column {names[indices[col]]}: {x[row, col]} is not a finite "
            f"number ({int(bad.sum())} such value(s)); NaN and infinite values are not allowed"
        )
    return _Data(x=x, names=[names[j] for j in indices], has_header=False)


def _load_data(args: argparse.Namespace) -> _Data:
    path = Path(args.data)
    if not path.exists():
        raise _InputError(f"data file '{path}' does not exist")
    if not path.is_file():
        raise _InputError(f"data file '{path}' is not a regular file")
    if path.suffix.lower() == ".npz":
        raise _InputError(
            f"'{path}' is an .npz archive; save the array on its own with numpy.save (.npy)"
        )
    try:
        if path.suffix.lower() == ".npy":
            data = _load_npy(path, args.columns)
        else:
            data = _load_text(path, args.columns, args.header, args.delimiter)
    except OSError as err:
        raise _InputError(f"cannot read data file '{path}': {err.strerror or err}") from None
    n = data.x.shape[0]
    if n < 2:
        raise _InputError(f"'{path}' has {n} data row(s); clustering needs at least 2")
    constant = [name for name, col in zip(data.names, data.x.T, strict=True) if np.ptp(col) == 0]
    if constant:
        raise _InputError(
            f"column(s) {', '.join(map(repr, constant))} of '{path}' are constant; they carry no "
            "information for the clustering (leave them out with --columns)"
        )
    return data


# ---------------------------------------------------------------------------------------------
# The output directory
# ---------------------------------------------------------------------------------------------


def _check_output(out: Path, overwrite: bool, data_file: Path) -> None:
    """Refuse an output path that is in the way, before any work is done."""
    resolved = out.resolve()
    if not out.name or resolved == Path.cwd().resolve() or resolved in Path.cwd().parents:
        raise _InputError(
            f"--out '{out}' is the current directory or one of its parents; name a new "
            "directory for the results"
        )
    if resolved in data_file.resolve().parents:
        raise _InputError(f"--out '{out}' contains the data file; name another directory")
    if out.exists() and not out.is_dir():
        raise _InputError(f"--out '{out}' exists and is not a directory")
    if out.is_dir() and any(out.iterdir()):
        if not overwrite:
            raise _InputError(
                f"output directory '{out}' already exists and is not empty; choose another "
                "--out or pass --overwrite to replace an earlier result"
            )
        if not (out / "summary.md").is_file():
            raise _InputError(
                f"output directory '{out}' is not empty and does not look like an earlier "
                "result of this command (no summary.md); refusing to overwrite it"
            )


def _make_temporary_dir(out: Path) -> Path:
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


def _publish(tmp: Path, out: Path) -> None:
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


# ---------------------------------------------------------------------------------------------
# Writing the results
# ---------------------------------------------------------------------------------------------


def _save_figure(path: Path, draw, figsize=(6.0, 4.0)) -> None:
    """Draw into a fresh pyplot-free figure and save it as PNG."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize, layout="constrained")
    draw(fig.add_subplot())
    fig.savefig(path, dpi=_DPI)


def _marginal_prior(prior: NIWPrior, keep: int) -> NIWPrior | None:
    """Return the NIW prior of the first ``keep`` coordinates (its exact marginal), if valid."""
    drop = prior.dim - keep
    try:
        return NIWPrior(
            mu0=prior.mu0[:keep],
            kappa0=prior.kappa0,
            nu0=prior.nu0 - drop,
            psi0=prior.psi0[:keep, :keep],
        )
    except ValueError:
        return None


def _write_figures(
    tmp: Path,
    idata: az.InferenceData,
    x: np.ndarray,
    names: list[str],
    estimate: PointEstimate,
    prior: NIWPrior,
    power: float,
    alpha: float,
    cv: CVResult | None,
) -> list[str]:
    from pymc_pcrp.plots import (
        plot_clusters_2d,
        plot_cv_curve,
        plot_k_posterior,
        plot_k_trace,
        plot_predictive_density,
    )
    from pymc_pcrp.summaries import plot_similarity

    written = ["k_trace.png", "k_posterior.png"]
    _save_figure(tmp / "k_trace.png", lambda ax: plot_k_trace(idata, ax=ax), (7.0, 3.5))
    _save_figure(
        tmp / "k_posterior.png",
        lambda ax: plot_k_posterior({f"pCRP (r = {power:g})": idata}, ax=ax),
    )
    if x.shape[1] == 1:

        def density(ax):
            plot_predictive_density(idata, power=power, alpha=alpha, prior=prior, ax=ax)
            ax.set_xlabel(names[0])

        _save_figure(tmp / "density_1d.png", density)
        written.append("density_1d.png")
    else:
        plane_prior = prior if x.shape[1] == 2 else _marginal_prior(prior, 2)

        def clusters(ax):
            plot_clusters_2d(x[:, :2], estimate, prior=plane_prior, ax=ax)
            ax.set(
                xlabel=names[0],
                ylabel=names[1],
                title=f"Point estimate: {estimate.n_clusters} cluster(s)",
            )

        _save_figure(tmp / "clusters_2d.png", clusters, (6.0, 5.0))
        written.append("clusters_2d.png")
    if x.shape[0] <= _MAX_SIMILARITY_ROWS:
        _save_figure(
            tmp / "similarity.png", lambda ax: plot_similarity(idata, estimate, ax=ax), (6.0, 5.0)
        )
        written.append("similarity.png")
    if cv is not None:
        _save_figure(tmp / "cv_curve.png", lambda ax: plot_cv_curve(cv, ax=ax, show_k=True))
        written.append("cv_curve.png")
    return written


def _write_labels(path: Path, labels: np.ndarray) -> None:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["row", "label"])
        writer.writerows(zip(range(labels.size), labels.tolist(), strict=True))


@contextmanager
def _quiet_arviz():
    """Silence ArviZ's log warnings and numpy's division warnings (for a constant draw)."""
    logger = logging.getLogger("arviz")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            yield
    finally:
        logger.setLevel(level)


def _fmt(value: float, digits: int = 2) -> str:
    return "n/a" if not np.isfinite(value) else f"{value:.{digits}f}"


def _markdown_table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def _invoked_command() -> str:
    """Return the process command line, spelling the module entry point ``python -m pymc_pcrp``."""
    program = Path(sys.argv[0]).name if sys.argv else ""
    if program == "__main__.py" and Path(sys.argv[0]).parent.name == "pymc_pcrp":
        return shlex.join(["python", "-m", "pymc_pcrp", *sys.argv[1:]])
    return shlex.join(sys.argv)


def _full_command(args: argparse.Namespace, seed: int, power_text: str) -> str:
    """Return a command line that reproduces this run, with every option spelled out."""
    parts = ["python", "-m", "pymc_pcrp", "cluster", str(args.data), "--out", str(args.out)]
    parts += ["--power", power_text, "--alpha", repr(args.alpha)]
    if args.columns:
        parts += ["--columns", args.columns]
    if args.standardize:
        parts.append("--standardize")
    parts += ["--header", args.header]
    if args.delimiter is not None:
        parts += ["--delimiter", args.delimiter]
    parts += ["--draws", str(args.draws), "--tune", str(args.tune), "--chains", str(args.chains)]
    parts += ["--cores", str(args.cores), "--sweeps-per-draw", str(args.sweeps_per_draw)]
    parts += ["--init", args.init, "--split-merge", str(args.split_merge)]
    parts += ["--seed", str(seed)]
    if power_text == "auto":
        grid = ",".join(f"{r:g}" for r in args.cv_grid)
        parts += ["--cv-grid", grid, "--cv-fraction", repr(args.cv_fraction)]
        parts += ["--cv-draws", str(args.cv_draws), "--cv-tune", str(args.cv_tune)]
        parts += ["--cv-chains", str(args.cv_chains), "--cv-jump-tol", repr(args.cv_jump_tol)]
        parts += ["--n-jobs", str(args.n_jobs)]
    return shlex.join(parts)


def _summary(
    *,
    args: argparse.Namespace,
    data: _Data,
    scaling: tuple[np.ndarray, np.ndarray] | None,
    power: float,
    seed: int,
    idata: az.InferenceData,
    estimate: PointEstimate,
    cv_info: tuple[CVResult, tuple[int, int], list[str]] | None,
    files: list[str],
    seconds: float,
) -> str:
    n, d = data.x.shape
    lines = ["# pCRP clustering", ""]
    lines += ["## Data", ""]
    lines.append(f"- file: `{args.data}` ({'with' if data.has_header else 'no'} header row)")
    lines.append(f"- N = {n} rows, D = {d} column(s): {', '.join(f'`{c}`' for c in data.names)}")
    if scaling is None:
        lines.append("- columns used as they are (no standardisation)")
    else:
        mean, sd = scaling
        lines.append(
            "- standardised to mean 0 and sd 1 (sd with ddof=1); means "
            + ", ".join(f"{v:.6g}" for v in mean)
            + "; sds "
            + ", ".join(f"{v:.6g}" for v in sd)
        )
    lines += ["", "## Model and sampler", ""]
    how = "chosen by cross-validation" if cv_info is not None else "given"
    lines.append(f"- power r = {power:g} ({how}); alpha = {args.alpha:g}")
    lines.append("- NIW prior: `NIWPrior.from_data` of the clustered data (defaults)")
    lines.append(
        f"- {args.chains} chain(s) x {args.draws} draws after {args.tune} burn-in draws, "
        f"{args.sweeps_per_draw} Gibbs sweep(s) per draw, {args.split_merge} split-merge "
        f"proposal(s) per sweep, initial partition '{args.init}'; "
        f"seed {seed}"
    )
    if cv_info is not None:
        cv, cv_sizes, cv_warnings = cv_info
        lines += ["", "## Cross-validation of r", ""]
        lines.append(
            f"Random split: {cv_sizes[0]} training rows, {cv_sizes[1]} held-out rows. Each r was "
            f"fitted on the training rows ({args.cv_chains} chain(s) x {args.cv_draws} draws "
            f"after {args.cv_tune}); the held-out loss is averaged over draws. The chosen r is "
            f"the last before the loss first rises by more than {cv.jump_tol:.0%}. All {n} rows "
            "were then clustered with it."
        )
        lines.append("")
        rows = []
        for i, r in enumerate(cv.powers):
            mark = "chosen" if r == cv.chosen_power else ("jump" if i == cv.jump_index else "")
            rows.append(
                [f"{r:g}", f"{cv.loss[i]:.4g}", f"{cv.loss_se[i]:.2g}", f"{cv.mean_k[i]:.2f}", mark]
            )
        lines += _markdown_table(["r", "held-out loss", "MC s.e.", "mean K (training)", ""], rows)
        lines += [f"\n> Warning: {message}" for message in cv_warnings]
    k = np.asarray(idata.posterior["n_clusters"].values)
    values = np.arange(int(k.min()), int(k.max()) + 1)
    lines += ["", "## Posterior of the number of clusters K", ""]
    header = ["K", "all chains"]
    per_chain = k.shape[0] > 1
    if per_chain:
        header += [f"chain {c}" for c in range(k.shape[0])]
    rows = []
    for value in values:
        row = [str(value), f"{np.mean(k == value):.3f}"]
        if per_chain:
            row += [f"{np.mean(k[c] == value):.3f}" for c in range(k.shape[0])]
        rows.append(row)
    lines += _markdown_table(header, rows)
    lines += ["", "## Convergence", ""]
    with _quiet_arviz():  # one chain or a constant K: R-hat and MCSE are undefined
        post = az.summary(idata, var_names=["n_clusters"], kind="all")
        stats = az.summary(idata, group="sample_stats", var_names=["log_joint"], kind="all")
    rows = []
    for name, s in (("n_clusters", post.loc["n_clusters"]), ("log_joint", stats.loc["log_joint"])):
        rows.append(
            [
                name,
                _fmt(s["mean"]),
                _fmt(s["sd"]),
                _fmt(s["r_hat"]),
                _fmt(s["ess_bulk"], 0),
                _fmt(s["ess_tail"], 0),
            ]
        )
    lines += _markdown_table(["quantity", "mean", "sd", "R-hat", "bulk ESS", "tail ESS"], rows)
    if args.chains == 1:
        lines.append("\nR-hat needs at least two chains.")
    lines += ["", "## Point estimate", ""]
    sizes = np.sort(estimate.sizes)[::-1]
    lines.append(
        f"The clustering minimising the posterior expected variation of information has "
        f"{estimate.n_clusters} cluster(s) (expected VI {estimate.expected_loss:.3f} bits, "
        f"from {estimate.n_draws} draws). Sizes, largest first: "
        + ", ".join(str(s) for s in sizes)
        + ". Labels per row are in `labels.csv`."
    )
    lines += ["", "## Files", ""]
    lines += [f"- `{name}`" for name in ["labels.csv", "idata.nc", "summary.md", *files]]
    power_text = "auto" if cv_info is not None else repr(power)
    lines += ["", "## Command", ""]
    lines += ["As invoked:", "", "```", _invoked_command(), "```", ""]
    lines += ["With every setting spelled out (reproduces this run):", ""]
    lines += ["```", _full_command(args, seed, power_text), "```", ""]
    lines.append(f"Run time: {seconds:.1f} s.")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# The command
# ---------------------------------------------------------------------------------------------


def _error(message: str) -> int:
    print(f"{_PROG}: error: {message}", file=sys.stderr)
    return 2


def _seed_int(seq: np.random.SeedSequence) -> int:
    return int(seq.generate_state(1, dtype=np.uint32)[0])


def run_cluster(args: argparse.Namespace) -> int:
    """Run ``python -m pymc_pcrp cluster`` with parsed arguments.

    Parameters
    ----------
    args : argparse.Namespace
        As produced by the parser of :func:`add_cluster_parser`.

    Returns
    -------
    int
        ``0`` on success, ``2`` when the input or the options are invalid (a
        message has then been printed to stderr and no output directory is
        left behind).

    Notes
    -----
    See the module docstring for how ``r`` is chosen, how the seeds are derived
    and how the output directory is protected from half-written results.
    Unexpected failures (for example inside the sampler) also remove the
    temporary directory, then propagate.
    """
    start = time.perf_counter()
    try:
        data = _load_data(args)
        out = Path(args.out)
        _check_output(out, args.overwrite, Path(args.data))
        n = data.x.shape[0]
        if args.power == "auto":
            n_train = min(max(round(args.cv_fraction * n), 2), n - 1)
            if n < 4:
                raise _InputError(
                    f"--power auto needs at least 4 rows (2 to train, 1 to hold out), got {n}; "
                    "give --power R"
                )
    except _InputError as err:
        return _error(str(err))

    x = data.x
    scaling = None
    if args.standardize:
        mean, sd = x.mean(axis=0), x.std(axis=0, ddof=1)
        x = (x - mean) / sd
        scaling = (mean, sd)
    seed = args.seed if args.seed is not None else _seed_int(np.random.SeedSequence())
    split_seq, cv_seq, fit_seq, estimate_seq = np.random.SeedSequence(seed).spawn(4)
    progress = args.progress
    if progress is None:
        progress = bool(getattr(sys.stdout, "isatty", lambda: False)())

    try:
        tmp = _make_temporary_dir(out)
    except OSError as err:
        return _error(f"cannot create the output directory '{out}': {err.strerror or err}")

    try:
        cv = None
        cv_sizes = (0, 0)
        cv_warnings: list[str] = []
        if args.power == "auto":
            train, test = split_train_test(x, n_train, seed=_seed_int(split_seq))
            cv_sizes = (train.shape[0], test.shape[0])
            grid = args.cv_grid
            print(
                f"Choosing r by cross-validation over {grid.size} values "
                f"({grid[0]:g} to {grid[-1]:g}) on {cv_sizes[0]} training / {cv_sizes[1]} "
                "held-out rows ...",
                flush=True,
            )
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", UserWarning)
                cv = cross_validate_power(
                    train,
                    test,
                    grid,
                    alpha=args.alpha,
                    draws=args.cv_draws,
                    tune=args.cv_tune,
                    chains=args.cv_chains,
                    sweeps_per_draw=args.sweeps_per_draw,
                    random_seed=_seed_int(cv_seq),
                    n_jobs=args.n_jobs,
                    jump_tol=args.cv_jump_tol,
                    fit_kwargs={
                        "init": args.init,
                        "pcrp_gibbs": {"split_merge": args.split_merge},
                    },
                )
            cv_warnings = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
            for message in cv_warnings:
                print(f"{_PROG}: warning: {message}", file=sys.stderr)
            power = cv.chosen_power
            print(f"Chosen r = {power:g}", flush=True)
        else:
            power = float(args.power)

        prior = NIWPrior.from_data(x)
        print(
            f"Sampling the pCRP posterior of {n} rows (r = {power:g}, alpha = {args.alpha:g}) ...",
            flush=True,
        )
        idata = fit(
            x,
            power=power,
            alpha=args.alpha,
            prior=prior,
            draws=args.draws,
            tune=args.tune,
            chains=args.chains,
            cores=args.cores,
            sweeps_per_draw=args.sweeps_per_draw,
            init=args.init,
            pcrp_gibbs={"split_merge": args.split_merge},
            random_seed=_seed_int(fit_seq),
            progressbar=progress,
            compute_convergence_checks=args.chains > 1,
        )
        estimate = point_estimate(idata, loss="vi", random_seed=_seed_int(estimate_seq))
        idata.posterior.attrs.update(
            pcrp_power=power,
            pcrp_alpha=args.alpha,
            pcrp_power_choice="cross-validation" if cv is not None else "given",
            pcrp_data_file=str(args.data),
            pcrp_columns=", ".join(data.names),
            pcrp_standardized=int(args.standardize),
            pcrp_prior="NIWPrior.from_data of observed_data",
            pcrp_seed=seed,
        )
        if scaling is not None:
            idata.posterior.attrs.update(
                pcrp_standardize_mean=scaling[0].tolist(), pcrp_standardize_sd=scaling[1].tolist()
            )
        _write_labels(tmp / "labels.csv", estimate.labels)
        az.to_netcdf(idata, str(tmp / "idata.nc"))
        files = _write_figures(tmp, idata, x, data.names, estimate, prior, power, args.alpha, cv)
        text = _summary(
            args=args,
            data=data,
            scaling=scaling,
            power=power,
            seed=seed,
            idata=idata,
            estimate=estimate,
            cv_info=None if cv is None else (cv, cv_sizes, cv_warnings),
            files=files,
            seconds=time.perf_counter() - start,
        )
        (tmp / "summary.md").write_text(text, encoding="utf-8")
        _publish(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    print(
        f"{estimate.n_clusters} cluster(s) in the point estimate; results written to '{out}'",
        flush=True,
    )
    return 0
