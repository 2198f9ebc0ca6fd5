"""The options of ``python -m pymc_pcrp cluster``: their parsers, groups and help text."""

from __future__ import annotations

import argparse
import math

import numpy as np

_DEFAULT_GRID = "1.0:1.5:0.05"
# Above this many rows the N x N similarity matrix (and its figure) is skipped.
MAX_SIMILARITY_ROWS = 3000


def _checked_float(text: str, not_a_number: str, valid, out_of_range: str) -> float:
    """``float(text)``, or an argparse error: ``not_a_number`` or ``out_of_range``."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{not_a_number}, got {text!r}") from None
    if not valid(value):
        raise argparse.ArgumentTypeError(f"{out_of_range}, got {text!r}")
    return value


def _is_positive(value: float) -> bool:
    return math.isfinite(value) and value > 0


def _power_option(text: str) -> str | float:
    if text.strip().lower() in ("auto", "cv"):
        return text.strip().lower()
    return _checked_float(
        text,
        "expected 'auto', 'cv' or a number > 0",
        _is_positive,
        "the power must be a finite number > 0",
    )


def _positive_float(text: str) -> float:
    return _checked_float(
        text, "expected a number > 0", _is_positive, "expected a finite number > 0"
    )


def _rate(text: str) -> float:
    return _checked_float(
        text,
        "expected a number >= 0",
        lambda value: math.isfinite(value) and value >= 0.0,
        "expected a finite number >= 0",
    )


def _fraction(text: str) -> float:
    return _checked_float(
        text,
        "expected a number in (0, 1)",
        lambda value: 0.0 < value < 1.0,
        "expected a number strictly between 0 and 1",
    )


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


def _int_option(group, flag: str, minimum: int, default, help_text: str, **extra) -> None:
    """Add an integer option that must be at least ``minimum``."""
    group.add_argument(flag, type=_int_at_least(minimum), default=default, help=help_text, **extra)


def _n_jobs(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a non-zero integer, got {text!r}") from None
    if value == 0:
        raise argparse.ArgumentTypeError("expected a non-zero integer (-1 = all cores), got 0")
    return value


#: The column kinds of the table family (pymc_pcrp.distributions.table.COLUMN_KINDS).
TABLE_KINDS = ("bernoulli", "categorical", "poisson", "gaussian")


def _kinds_option(text: str) -> dict[str, str]:
    """Parse ``NAME=KIND,NAME=KIND`` into a mapping of column names to kinds."""
    kinds = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        name, sep, kind = item.rpartition("=")
        name, kind = name.strip(), kind.strip().lower()
        if not sep or not name:
            raise argparse.ArgumentTypeError(
                f"expected NAME=KIND pairs separated by commas (e.g. visits=poisson,"
                f"smoker=bernoulli), got {item!r}"
            )
        if kind not in TABLE_KINDS:
            raise argparse.ArgumentTypeError(
                f"column {name!r}: the kind must be one of {', '.join(TABLE_KINDS)}, got {kind!r}"
            )
        if name in kinds:
            raise argparse.ArgumentTypeError(f"column {name!r} is given twice")
        kinds[name] = kind
    if not kinds:
        raise argparse.ArgumentTypeError("expected at least one NAME=KIND pair")
    return kinds


#: Largest cross-validation grid: every power costs a separate set of fits.
MAX_GRID_SIZE = 200


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
            if count > MAX_GRID_SIZE:
                raise argparse.ArgumentTypeError(
                    f"{text!r} makes a grid of {count:,} powers; at most {MAX_GRID_SIZE} are "
                    "allowed (each is a separate fit): use a larger STEP or a shorter range"
                )
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
  idata.nc          the posterior (arviz.from_netcdf); r, alpha and the NIW prior in its
                    constant_data group, other settings in its posterior attributes
  summary.md        data, settings, chosen r with the answers at r = 1, 1.1, 1.3 (auto) or the
                    CV table (cv), posterior of K, R-hat and
                    ESS of n_clusters and log_joint, point-estimate cluster sizes, and the
                    command line; a warning at the top if the chains have not converged
                    (R-hat > 1.01 or bulk ESS < 100 per chain) or the CV loss never jumped;
                    then also how the chains' clusterings differ (groups of chains and
                    the points they dispute, pymc_pcrp.stats.compare_chains)
  k_trace.png       number of clusters per draw and chain
  k_posterior.png   posterior probability of each number of clusters
  clusters_2d.png   point estimate on the two columns (D = 2) or the first two (D > 2)
  chain_groups.png  one panel per group of chains that cluster the data differently,
                    disputed points ringed (D >= 2, only when the chains form groups)
  density_1d.png    posterior predictive density (D = 1, instead of clusters_2d.png)
  similarity.png    posterior co-clustering matrix (skipped above {MAX_SIMILARITY_ROWS} rows)
  cv_curve.png      held-out loss against r (--power cv only)

power auto (default): all rows are clustered at r = 1, 1.1 and 1.3; the answer is the
  fit at r = 1.1 (the default, chosen on real data in docs/choice_of_r.md), and
  summary.md tables the three point estimates and says at the top when they differ
  materially (pymc_pcrp.stats.choose_power).
power cv: the paper's rule. The rows are split at random into a training part
  (--cv-fraction) and a held-out part; r is chosen on the grid by the jump of the
  held-out loss (pymc_pcrp.stats.cross_validate_power); then ALL rows are
  clustered with the chosen r. If the loss never jumps, the top of the grid is used
  and the output says so: extend --cv-grid.

convergence: R-hat and bulk ESS of the number of clusters and of the log joint are
  printed; if R-hat > 1.01 or a bulk ESS < 100 per chain (R-hat needs 2+ chains), the
  command says so on stdout and atop summary.md: run more --draws, more --chains, or
  try another --power.

data: a .npy file (1-D or 2-D numeric array), a Parquet file (.parquet, needs pyarrow)
  or a delimited text file (comma, tab, semicolon, pipe or spaces, detected, or see
  --delimiter; quoted numbers and a UTF-8 byte order mark are fine). With --header auto
  the first non-empty line is a header when none of its cells is a number. For the
  Gaussian family every selected cell must be a finite number; missing values (empty,
  NA) are refused naming the line (--family table integrates them out).

table family: a text file whose selected columns are not all numeric (text, category
  or true/false columns) is clustered with the table family (pymc_pcrp.TableMixture,
  docs/tables.md), each column's kind inferred as pymc_pcrp.fit infers it: numbers ->
  gaussian, true/false -> bernoulli, text -> categorical; --kinds gives kinds
  (e.g. --kinds visits=poisson,smoker=bernoulli). Missing cells are integrated out.
  Columns of dates or times, and numeric columns with a stray text cell, are refused
  naming the line. --standardize, --power cv, pair moves and template jumps are for the
  Gaussian family; clusters_2d.png, chain_groups.png and density_1d.png are skipped
  (summary.md says why).

output safety: results are written into a temporary directory beside DIR and swapped
  into place at the end in one atomic step, so DIR never holds a half-written result.
  DIR is locked for the run. An existing DIR is replaced only with --overwrite and only
  if this command wrote it (its marker file .pymc_pcrp-result); anything that appears at
  DIR during the run is left alone and the results go to DIR-2 (or the next free name).

exit status: 0 on success, 1 when the results could not be written or published at DIR
  (the message says why, and where they are), 2 on invalid options or input, before any
  work (message on stderr), 130 when interrupted (nothing published).

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
    parser.add_argument(
        "data", metavar="DATA", help="a .csv/.tsv/.txt file, a .parquet file or a .npy file"
    )
    parser.add_argument(
        "--out", required=True, metavar="DIR", help="output directory (required; see below)"
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace DIR if it already holds the output of an earlier run",
    )
    _add_model_and_data_options(parser)
    _add_sampling_options(parser)
    _add_cv_options(parser)
    return parser


def _add_model_and_data_options(parser: argparse.ArgumentParser) -> None:
    model = parser.add_argument_group("model")
    model.add_argument(
        "--power",
        type=_power_option,
        default="auto",
        metavar="auto|cv|R",
        help="pCRP power r > 0 (1 = CRP); 'auto' for r = 1.1 checked against 1 and 1.3 "
        "(see below), 'cv' for the paper's cross-validation (default: auto)",
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
        "--family",
        choices=("auto", "gaussian", "table"),
        default="auto",
        help="likelihood: 'gaussian' (NIW mixture of numeric columns), 'table' (columns of "
        "any kind, missing cells allowed), or 'auto': table when a selected column of a text "
        "file is not numeric or --kinds is given, else gaussian (default: auto)",
    )
    data.add_argument(
        "--kinds",
        type=_kinds_option,
        default=None,
        metavar="NAME=KIND,...",
        help="the table family's column kinds (bernoulli, categorical, poisson, gaussian) "
        "for the columns named, the others inferred, e.g. 'visits=poisson,smoker=bernoulli'",
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
        help="field delimiter of a text file (default: tab for .tsv/.tab, otherwise the one "
        "of comma, tab, semicolon, pipe or spaces that splits the first lines evenly)",
    )


def _add_sampling_options(parser: argparse.ArgumentParser) -> None:
    sampling = parser.add_argument_group("sampling")
    _int_option(sampling, "--draws", 1, 1000, "kept draws per chain (default: 1000)")
    _int_option(sampling, "--tune", 0, 1000, "burn-in draws per chain, discarded (default: 1000)")
    _int_option(sampling, "--chains", 1, 4, "number of chains (default: 4)")
    _int_option(sampling, "--cores", 1, 1, "processes running the chains in parallel (default: 1)")
    _int_option(
        sampling,
        "--sweeps-per-draw",
        1,
        None,
        "Gibbs sweeps between kept draws (default: automatic, "
        "min(20, ceil(45000 / (N max(D, 2)))))",
    )
    sampling.add_argument(
        "--split-merge",
        type=_rate,
        default=None,
        help="expected split-merge proposals per Gibbs sweep (a fraction is allowed), for "
        "the final and the cross-validation fits (see pymc_pcrp.PCRPGibbs); 0 is the "
        "paper's Gibbs sampler alone, 1 frees stuck chains faster at a few times the cost "
        "per sweep (default: the step's own, min(1, max(0.1, 600 / (N D))) per sweep while "
        "tuning (a table: at least min(100, K / (2 f))), then min(3, max(0.1, 720 / (N D f))), "
        "f the share of the points a proposal visits, set from each chain's partition when "
        "tuning ends)",
        metavar="M",
    )
    sampling.add_argument(
        "--speck-moves",
        type=_rate,
        default=None,
        help="expected further split-merge proposals per sweep whose two points are drawn "
        "among the clusters of at most 8 points (see pymc_pcrp.PCRPGibbs, speck_moves); 0 "
        "turns them off (default: the step's own, 4 per sweep, or 0 with --split-merge 0)",
        metavar="M",
    )
    sampling.add_argument(
        "--informed-moves",
        type=_rate,
        default=None,
        help="expected informed split-merge proposals per sweep, merges aimed at similar "
        "clusters (see pymc_pcrp.PCRPGibbs, informed_moves); tables only, 0 turns them off "
        "(default: the step's own on a table, min(40, K^2 / 6) per sweep, K the number of "
        "clusters when tuning ends; 0 with --split-merge 0)",
        metavar="M",
    )
    sampling.add_argument(
        "--pair-moves",
        type=_rate,
        default=None,
        help="expected moves per sweep that carry two nearby points of one cluster to "
        "another cluster together (see pymc_pcrp.PCRPGibbs, pair_moves); 0 turns them off "
        "(default: the step's own, 2 per sweep in 3 or more dimensions on up to 10,000 "
        "points, else 0; 0 with --split-merge 0)",
        metavar="M",
    )
    sampling.add_argument(
        "--template-jumps",
        type=_rate,
        default=None,
        help="expected proposals per kept draw of a partition drawn from the templates "
        "remembered during tuning (see pymc_pcrp.PCRPGibbs, template_jumps); 0 turns them "
        "off (default: the step's own, min(25, max(1, 500000 / (N D))), or 0 with "
        "--split-merge 0)",
        metavar="M",
    )
    sampling.add_argument(
        "--init",
        choices=("random", "prior", "one", "singletons"),
        default="random",
        help="initial partition of each chain, for the final and the cross-validation fits "
        "(see pymc_pcrp.PCRPGibbs; default: random)",
    )
    _int_option(
        sampling,
        "--seed",
        0,
        None,
        "random seed making the whole run reproducible (default: drawn at random and "
        "written into summary.md)",
    )
    sampling.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="show a progress bar while sampling (default: only when stdout is a terminal)",
    )


def _add_cv_options(parser: argparse.ArgumentParser) -> None:
    cv = parser.add_argument_group("cross-validation (--power cv)")
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
    _int_option(
        cv, "--cv-draws", 1, 500, "kept draws per chain of each cross-validation fit (default: 500)"
    )
    _int_option(
        cv, "--cv-tune", 0, 500, "burn-in draws of each cross-validation fit (default: 500)"
    )
    _int_option(cv, "--cv-chains", 1, 2, "chains of each cross-validation fit (default: 2)")
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
