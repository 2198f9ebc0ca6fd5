"""The ``cluster`` command on a table (:class:`~pymc_pcrp.TableMixture`): checks and text.

:mod:`pymc_pcrp.cli.table_io` reads the table; this module checks the options
that depend on the family before any work, gives :func:`pymc_pcrp.fit` its
table arguments, and writes the lines of ``summary.md`` that differ from the
Gaussian family's.
"""

from __future__ import annotations

import argparse

import numpy as np

from pymc_pcrp._validation import check_power
from pymc_pcrp.cli.io import ClusterData, InputError
from pymc_pcrp.distributions.table import table_spec

__all__ = [
    "SKIPPED_FIGURES",
    "check_table_inputs",
    "table_fit_settings",
    "table_model_lines",
    "table_prior_text",
]

#: The figures of the Gaussian family that a table run skips, and why.
SKIPPED_FIGURES = (
    "`clusters_2d.png`, `chain_groups.png` and `density_1d.png` are skipped: they draw the "
    "rows as points of a plane (or a line) with each cluster's Gaussian ellipse or density, "
    "which a table of categorical, binary and count columns does not have"
)


def check_table_inputs(args: argparse.Namespace, data: ClusterData):
    """Check the options and the table of a table-family run; raise InputError if invalid.

    Returns what :func:`pymc_pcrp.cli.cluster.run_cluster` expects of its
    checks: the data, the table (a DataFrame, in place of the array), no
    standardisation, no training part and no NIW prior.
    """
    given = [
        flag
        for flag, on in (
            ("--standardize", args.standardize),
            ("--power cv", args.power == "cv"),
            ("--pair-moves", bool(args.pair_moves)),
            ("--template-jumps", bool(args.template_jumps)),
        )
        if on
    ]
    if given:
        raise InputError(
            f"{', '.join(given)}: for the Gaussian family only, and '{args.data}' is clustered "
            "with the table family (its columns are not all numeric, or --family table / "
            "--kinds was given); leave them out (--power auto or --power R choose r)"
        )
    frame = data.frame
    if args.power != "auto":
        try:
            check_power(args.power, frame.shape[0])
        except ValueError as err:
            raise InputError(str(err).replace("Argument 'power'", "--power")) from None
    try:
        table_spec(frame, data.kinds or None).encode(frame)
    except ValueError as err:
        message = str(err).replace("give the levels in TableColumn(levels=...)", "check --kinds")
        raise InputError(f"'{args.data}': {message}") from None
    return data, frame, None, 0, None


def table_fit_settings(kinds: dict | None) -> dict:
    """Return the arguments of :func:`pymc_pcrp.fit` that select the table family and spec."""
    return {"family": "table", "columns": kinds or None}


def table_prior_text(data: ClusterData) -> str:
    """Return one line naming each column's kind (its levels for categorical columns)."""
    spec = table_spec(data.frame, data.kinds or None)
    parts = []
    for name, col in zip(spec.names, spec.columns, strict=True):
        levels = f" ({len(col.levels)} levels)" if col.kind == "categorical" else ""
        parts.append(f"`{name}` {col.kind}{levels}")
    return ", ".join(parts)


def table_model_lines(data: ClusterData) -> list[str]:
    """Return the lines of summary.md's model section that describe the table family."""
    missing = int(np.asarray(data.frame.isna()).sum())
    given = ", ".join(f"{k}={v}" for k, v in data.kinds.items()) or "none"
    return [
        "- family: table (`pymc_pcrp.TableMixture`, docs/tables.md): "
        + table_prior_text(data)
        + f"; kinds given with --kinds: {given}; the others inferred as `pymc_pcrp.fit` "
        "infers them; default conjugate priors (`pymc_pcrp.table_spec`)",
        f"- {missing} missing cell(s), integrated out",
    ]
