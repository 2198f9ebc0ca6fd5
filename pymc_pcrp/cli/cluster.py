"""``python -m pymc_pcrp cluster``: cluster the rows of a CSV or ``.npy`` file, write a report.

The command reads a data file, optionally chooses the power ``r`` by
cross-validation, samples the pCRP mixture posterior with
:func:`pymc_pcrp.fit`, summarises it with the expected-VI point estimate, and
writes the results into one output directory.

**Choosing r** (``--power auto``). The rows are split at random into a training
part (``--cv-fraction`` of them) and a held-out part with
:func:`~pymc_pcrp.stats.cross_validation.split_train_test`;
:func:`~pymc_pcrp.stats.cross_validation.cross_validate_power` fits the training part at
every ``r`` of ``--cv-grid`` and picks the ``r`` just
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
``idata.nc`` (the posterior, readable with :func:`arviz.from_netcdf`; ``r``,
``alpha`` and the NIW prior are in its ``constant_data`` group, as
:func:`pymc_pcrp.fit` stores them, the other settings in the attributes of its
posterior group), ``summary.md`` and PNG figures.

**Convergence.** R-hat and bulk ESS of the number of clusters and of the log
joint (:func:`pymc_pcrp.stats.convergence.check_convergence`) are printed on stdout
and tabled in ``summary.md``. When an R-hat exceeds 1.01 or a bulk ESS is
below 100 per chain, stdout and the top of ``summary.md`` say so, with the
remedy: more draws, more chains, another ``r``, more split-merge proposals
(``--split-merge 1``). With one chain only the ESS is
checked. If ``--power auto`` finds no jump of the loss, the output likewise
says that ``r`` is only the top of the grid.

**No half-written output, no user file lost** (:mod:`pymc_pcrp.cli.publish`).
Everything is written into a fresh temporary directory next to ``DIR`` (in the
same parent, named ``.DIR.incomplete-XXXXXXXX``) that is renamed to ``DIR``
only after every file has been written. ``DIR`` is locked for the run and
checked before the fit and again just before publishing. An existing non-empty
``DIR`` is replaced only with ``--overwrite`` and only if this command wrote it
(its marker file ``.pymc_pcrp-result``), by an atomic exchange; anything that
appeared at ``DIR`` during the run is left alone and the results go to
``DIR-2`` (or the next free name) instead, with exit status 1. Leftovers of
killed runs are removed by the next run. An interrupted run (Ctrl-C at any
moment, or sampling that returned fewer chains or draws than asked) publishes
nothing, leaves an earlier result in ``DIR`` as it was, says so on stderr and
exits with status 130.

**Errors.** Problems with the input (missing or unreadable file, unknown
column, non-numeric, empty, NaN or infinite cells, fewer than two rows, a
constant column, an output directory in the way) and invalid options are
reported on stderr as one message naming the problem, with exit status 2,
before any work is done. Results that could not be written (a full disk) or
not be published at ``DIR`` give status 1 and a message saying what happened.
"""

from __future__ import annotations

import argparse
import errno
import sys
import time
import warnings

from pathlib import Path

import arviz as az
import numpy as np
import pandas as pd

from pymc_pcrp import _startup
from pymc_pcrp._runtime.interrupts import caused_by_interrupt, watch_interrupts
from pymc_pcrp._validation import check_power, max_power
from pymc_pcrp.cli import publish as publishing
from pymc_pcrp.cli.cluster_figures import write_figures
from pymc_pcrp.cli.cluster_options import add_cluster_parser
from pymc_pcrp.cli.cluster_report import (
    ClusterRun,
    convergence_advice,
    power_choice,
    summary,
)
from pymc_pcrp.cli.cluster_table import check_table_inputs, table_fit_settings, table_prior_text
from pymc_pcrp.cli.io import (
    ClusterData,
    InputError,
    check_magnitude,
    load_data,
    standardize,
    write_labels,
)
from pymc_pcrp.distributions import NIWPrior
from pymc_pcrp.fitting import fit
from pymc_pcrp.posterior import point_estimate
from pymc_pcrp.sampler.options import auto_sweeps_per_draw
from pymc_pcrp.stats.chain_comparison import ChainComparison, compare_chains
from pymc_pcrp.stats.convergence import ConvergenceReport, SamplingInterrupted, check_convergence
from pymc_pcrp.stats.cross_validation import CVResult, cross_validate_power, split_train_test
from pymc_pcrp.stats.power_choice import (
    AUTO_POWERS,
    DEFAULT_POWER,
    PowerChoice,
    PowerSensitivityWarning,
    choose_power,
)

__all__ = ["add_cluster_parser", "run_cluster"]

_PROG = "pymc_pcrp cluster"


def _error(message: str) -> int:
    print(f"{_PROG}: error: {message}", file=sys.stderr)
    return 2


def _interrupted(plan: publishing.OutputPlan, given: str, err: BaseException) -> int:
    """Say that the run was cut short and nothing was published; return 130 (as for SIGINT)."""
    what = str(err) if isinstance(err, SamplingInterrupted) else "Interrupted."
    earlier = " (the earlier result there was not touched)" if plan.start_state == "result" else ""
    print(
        f"error: {what}\nNothing was written to '{given}'{earlier}.",
        file=sys.stderr,
        flush=True,
    )
    return 130


def _interrupted_after_publishing(given: str, published: publishing.Published) -> int:
    """Ctrl-C after the results were in place: say where they are; return 130."""
    where = "" if published.where == Path(given) else f" (at '{published.where}')"
    print(
        f"error: Interrupted just after the results were published: '{given}'{where} holds "
        "the new, complete result." + _leftover_note(published),
        file=sys.stderr,
        flush=True,
    )
    return 130


def _leftover_note(published: publishing.Published) -> str:
    if published.leftover is None:
        return ""
    return (
        f" The earlier result is still at '{published.leftover}' (it could not be removed); "
        "the next run on this --out removes it."
    )


def _could_not_publish(given: str, plan: publishing.OutputPlan, err: OSError) -> int:
    """Keep the finished results where they are when the renames fail; say so, return 1."""
    kept, plan.tmp = plan.tmp, None  # not removed at the end: they are complete
    print(
        f"{_PROG}: error: could not publish the results at '{given}' "
        f"({err.strerror or err}); they are complete in '{kept}': move them yourself "
        "(the next run on this --out would remove that folder)",
        file=sys.stderr,
        flush=True,
    )
    return 1


def _could_not_write(given: str, err: OSError) -> int:
    reason = err.strerror or str(err)
    hint = {
        errno.ENOSPC: "free some space or choose another --out",
        errno.EDQUOT: "free some space (disk quota) or choose another --out",
    }.get(err.errno, "check the folder of --out")
    print(
        f"{_PROG}: error: could not write the results ({reason}); nothing was published at "
        f"'{given}' and an earlier result there was not touched: {hint}",
        file=sys.stderr,
        flush=True,
    )
    return 1


def _seed_int(seq: np.random.SeedSequence) -> int:
    return int(seq.generate_state(1, dtype=np.uint32)[0])


def _check_inputs(
    args: argparse.Namespace,
) -> tuple[ClusterData, np.ndarray, tuple | None, int, NIWPrior]:
    """Read and check the data and the options that depend on it, before any work.

    Returns the data, the array to cluster (standardised with ``--standardize``),
    the standardisation's mean and sd, the size of the training part of
    ``--power auto`` and the NIW prior; raises InputError if anything is invalid.
    """
    data = load_data(args)
    if data.frame is not None:  # the table family: pymc_pcrp.cli.cluster_table
        return check_table_inputs(args, data)
    x, scaling = data.x, None
    if args.standardize:
        x, mean, sd = standardize(x)
        scaling = (mean, sd)
    check_magnitude(x, data.names, args.data, args.standardize)
    n = x.shape[0]
    n_train = 0
    if args.power == "cv":
        n_train = min(max(round(args.cv_fraction * n), 2), n - 1)
        if n < 4:
            raise InputError(
                f"--power cv needs at least 4 rows (2 to train, 1 to hold out), got {n}; "
                "give --power R"
            )
        if args.cv_grid[-1] > max_power(n):
            raise InputError(
                f"--cv-grid reaches r = {args.cv_grid[-1]:g}, too large for {n} rows: the pCRP "
                f"weight n^r overflows double precision above r = {max_power(n):.4g}; usual "
                "powers are between 1 and 2"
            )
    elif args.power != "auto":  # auto fits r = 1, 1.1 and 1.3, all far below the bound
        try:
            check_power(args.power, n)
        except ValueError as err:
            message = str(err).replace("Argument 'power'", "--power")
            message = message.replace(f"too large for {n} points", f"too large for {n} rows")
            raise InputError(message) from None
    try:
        prior = NIWPrior.from_data(x)
    except ValueError as err:
        raise InputError(f"the data of '{args.data}' cannot be clustered: {err}") from None
    return data, x, scaling, n_train, prior


def _choose_power(
    args: argparse.Namespace,
    x: np.ndarray,
    n_train: int,
    split_seq: np.random.SeedSequence,
    cv_seq: np.random.SeedSequence,
    prior: NIWPrior,
) -> tuple[float, tuple[CVResult, tuple[int, int], list[str]] | None]:
    """Return ``r`` (given, or chosen by cross-validation) and the cross-validation record.

    The training fits use ``prior``, the prior of the final fit, built from all the
    data: a prior built from the training half alone would fail on a column that
    happens to be constant in that half (a rare binary flag, say).
    """
    if args.power == "auto":
        return float("nan"), None  # chosen by _sample_auto
    if args.power != "cv":
        return float(args.power), None
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
            **_fit_settings(args, prior, cv=True),
            random_seed=_seed_int(cv_seq),
            n_jobs=args.n_jobs,
            jump_tol=args.cv_jump_tol,
            fit_kwargs={"init": args.init, **_step_options(args)},
        )
    cv_warnings = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
    for message in cv_warnings:
        print(f"{_PROG}: warning: {message}", file=sys.stderr)
    if cv.jumped:
        print(f"Chosen r = {cv.chosen_power:g}", flush=True)
    else:
        print(
            f"No jump: the held-out loss never rose by more than {cv.jump_tol:.0%} over the "
            f"grid, so r = {cv.chosen_power:g} is the top of the grid, not a cross-validated "
            "choice. Extend --cv-grid to larger r.",
            flush=True,
        )
    return cv.chosen_power, (cv, cv_sizes, cv_warnings)


def _sample(
    args: argparse.Namespace,
    x: np.ndarray,
    power: float,
    prior: NIWPrior,
    fit_seq: np.random.SeedSequence,
) -> az.InferenceData:
    progress = args.progress
    if progress is None:
        progress = bool(getattr(sys.stdout, "isatty", lambda: False)())
    print(
        f"Sampling the pCRP posterior of {x.shape[0]} rows (r = {power:g}, "
        f"alpha = {args.alpha:g}) ...",
        flush=True,
    )
    return fit(
        x,
        power=power,
        **_fit_settings(args, prior, cv=False),
        cores=args.cores,
        init=args.init,
        random_seed=_seed_int(fit_seq),
        progressbar=progress,
        # Convergence is checked and reported below, on stdout and in summary.md.
        compute_convergence_checks=False,
        **_step_options(args),
    )


def _sample_auto(
    args: argparse.Namespace,
    x: np.ndarray,
    prior: NIWPrior,
    fit_seq: np.random.SeedSequence,
    estimate_seed: int,
) -> PowerChoice:
    """Fit every r of ``AUTO_POWERS`` and keep the one ``choose_power`` picks; print its table."""
    progress = args.progress
    if progress is None:
        progress = bool(getattr(sys.stdout, "isatty", lambda: False)())
    grid = ", ".join(f"{r:g}" for r in AUTO_POWERS)
    print(
        f"Sampling the pCRP posterior of {x.shape[0]} rows at r = {grid} (alpha = "
        f"{args.alpha:g}): the default r = {DEFAULT_POWER:g} and its check ...",
        flush=True,
    )
    with warnings.catch_warnings():
        # the command reports the sensitivity itself, at the top of its output
        warnings.simplefilter("ignore", PowerSensitivityWarning)
        choice = choose_power(
            x,
            powers=AUTO_POWERS,
            **_fit_settings(args, prior, cv=False),
            cores=args.cores,
            init=args.init,
            random_seed=_seed_int(fit_seq),
            point_estimate_seed=estimate_seed,
            progressbar=progress,
            compute_convergence_checks=False,
            **_step_options(args),
        )
    print(f"Reported: r = {choice.chosen_power:g}. The point estimate at each r:", flush=True)
    print(choice.sensitivity.summary(), flush=True)
    if choice.sensitivity.material:
        print(f"WARNING: {choice.sensitivity.warning()}", flush=True)
    return choice


def _fit_settings(args: argparse.Namespace, prior: NIWPrior, *, cv: bool) -> dict:
    """``alpha``, ``prior``, ``draws``, ``tune``, ``chains`` and ``sweeps_per_draw`` of a fit.

    The cross-validation fits (``cv=True``: ``--cv-draws``, ``--cv-tune``,
    ``--cv-chains``) and the final fit share the concentration, the prior and
    the sweeps per draw; they differ in the number and length of the chains.
    """
    if cv:
        draws, tune, chains = args.cv_draws, args.cv_tune, args.cv_chains
    else:
        draws, tune, chains = args.draws, args.tune, args.chains
    return {
        "alpha": args.alpha,
        **({"prior": prior} if prior is not None else table_fit_settings(args.kinds)),
        "draws": draws,
        "tune": tune,
        "chains": chains,
        "sweeps_per_draw": args.sweeps_per_draw,
    }


def _step_options(args: argparse.Namespace) -> dict:
    """``pcrp_gibbs`` options given on the command line; none means the step's defaults."""
    options = {
        name: getattr(args, name)
        for name in (
            "split_merge",
            "speck_moves",
            "informed_moves",
            "pair_moves",
            "template_jumps",
        )
        if getattr(args, name) is not None
    }
    return {"pcrp_gibbs": options} if options else {}


def _report_convergence(idata: az.InferenceData) -> ConvergenceReport:
    """Check convergence and print the numbers and the verdict on stdout."""
    report = check_convergence(idata)
    numbers, *notes = report.summary().splitlines()
    print(f"Convergence: {numbers}", flush=True)
    if report.converged:
        print(" ".join(notes), flush=True)
    else:
        if report.n_chains < 2:
            print(notes[0], flush=True)  # that R-hat was not checked
        print(f"WARNING: {convergence_advice(report)}", flush=True)
    return report


def _report_chain_comparison(
    idata: az.InferenceData, report: ConvergenceReport, seed: int
) -> ChainComparison | None:
    """Compare the clusterings of several chains that have not converged; print how they differ."""
    if report.converged or report.n_chains < 2:
        return None
    comparison = compare_chains(idata, random_seed=seed)
    print("How the chains differ: " + comparison.summary(), flush=True)
    return comparison


def _record_settings(idata, run: ClusterRun) -> None:
    """Write the run's settings into the attributes of the posterior group."""
    args, data, scaling, power, seed, cv_info = run[:6]
    idata.posterior.attrs.update(
        pcrp_power=power,
        pcrp_alpha=args.alpha,
        pcrp_power_choice=power_choice(None if cv_info is None else cv_info[0], run.sensitivity),
        pcrp_data_file=str(args.data),
        pcrp_columns=", ".join(data.names),
        pcrp_standardized=int(args.standardize),
        pcrp_prior="NIWPrior.from_data of observed_data"
        if data.frame is None
        else f"table_spec of the data: {table_prior_text(data)}",
        pcrp_seed=seed,
    )
    if scaling is not None:
        idata.posterior.attrs.update(
            pcrp_standardize_mean=scaling[0].tolist(), pcrp_standardize_sd=scaling[1].tolist()
        )


def run_cluster(args: argparse.Namespace) -> int:
    """Run ``python -m pymc_pcrp cluster`` with parsed arguments.

    Parameters
    ----------
    args : argparse.Namespace
        As produced by the parser of :func:`add_cluster_parser`.

    Returns
    -------
    int
        ``0`` on success; ``1`` when the results could not be written (a full
        disk: nothing published) or not at ``--out`` (something appeared there
        during the run: the message names the folder that holds them); ``2``
        when the input or the options are invalid (a message has then been
        printed to stderr, before any work, and no output directory is left
        behind); ``130`` when the run was interrupted (nothing published, or
        the message says that the interrupt came just after publishing).

    Notes
    -----
    See the module docstring for how ``r`` is chosen, how the seeds are derived
    and how the output directory is protected from half-written results.
    Unexpected failures (for example inside the sampler) also remove the
    temporary directory, then propagate.
    """
    start = time.perf_counter()
    try:
        data, x, scaling, n_train, prior = _check_inputs(args)
    except InputError as err:
        return _error(str(err))

    if args.sweeps_per_draw is None:
        # resolved here so that summary.md states (and its command repeats) the value used
        args.sweeps_per_draw = auto_sweeps_per_draw(*x.shape)
    seed = args.seed if args.seed is not None else _seed_int(np.random.SeedSequence())
    split_seq, cv_seq, fit_seq, estimate_seq, compare_seq = np.random.SeedSequence(seed).spawn(5)

    needed = publishing.estimated_result_bytes(*x.shape, args.chains, args.draws)
    try:
        plan = publishing.prepare(args.out, args.overwrite, Path(args.data), needed)
    except publishing.OutputError as err:
        return _error(str(err))
    except OSError as err:
        return _error(f"cannot prepare --out '{args.out}': {err.strerror or err}")
    status = None
    try:
        for note in plan.notes:
            print(note, flush=True)
        seqs = (split_seq, cv_seq, fit_seq, estimate_seq, compare_seq)
        status = _run_and_publish(args, plan, data, (x, scaling, prior), n_train, seed, start, seqs)
        return status
    finally:
        try:
            with publishing.sigint_blocked():  # the lock is released whole, then the Ctrl-C
                publishing.release(plan)
        except KeyboardInterrupt:
            if status is None:
                raise
            # the outcome is decided and reported: a Ctrl-C after that changes nothing


def _run_and_publish(args, plan, data, model_data, n_train, seed, start, seqs) -> int:
    """Fit, write the results into ``plan.tmp`` and publish them; return the exit status."""
    split_seq, cv_seq, fit_seq, estimate_seq, compare_seq = seqs
    x, scaling, prior = model_data
    tmp = plan.tmp
    given = args.out

    def refuse_if_interrupted() -> None:
        # the last look, SIGINT already blocked: a Ctrl-C seen at any moment of the run,
        # even one a library swallowed, publishes nothing
        if interrupts.seen or _startup.interrupt_seen():
            raise KeyboardInterrupt

    # seen: a library may swallow or garble the KeyboardInterrupt (matplotlib's renderer
    # turns one into 'ValueError: Invalid bounding box'); any Ctrl-C before publishing
    # makes the run interrupted all the same
    with watch_interrupts() as interrupts:
        try:
            power, cv_info = _choose_power(args, x, n_train, split_seq, cv_seq, prior)
            choice = None
            # a DataFrame, so that the InferenceData keeps the file's column names
            frame = data.frame if data.frame is not None else pd.DataFrame(x, columns=data.names)
            if args.power == "auto":
                choice = _sample_auto(args, frame, prior, fit_seq, _seed_int(estimate_seq))
                idata, power = choice.idata, choice.chosen_power
            else:
                idata = _sample(args, frame, power, prior, fit_seq)
            report = _report_convergence(idata)
            comparison = _report_chain_comparison(idata, report, _seed_int(compare_seq))
            if choice is not None:
                estimate = choice.estimates[power]
            else:
                estimate = point_estimate(idata, loss="vi", random_seed=_seed_int(estimate_seq))
            run = ClusterRun(
                args, data, scaling, power, seed, cv_info, choice and choice.sensitivity
            )
            _record_settings(idata, run)
            try:
                write_labels(tmp / "labels.csv", estimate.labels)
                az.to_netcdf(idata, str(tmp / "idata.nc"))
                cv = None if cv_info is None else cv_info[0]
                files = write_figures(
                    tmp, idata, x, data.names, estimate, prior, power, args.alpha, cv, comparison
                )
                results = (report, estimate, files, comparison)
                text = summary(run, idata, results, time.perf_counter() - start)
                (tmp / "summary.md").write_text(text, encoding="utf-8")
            except OSError as err:
                if caused_by_interrupt(err) or interrupts.seen or _startup.interrupt_seen():
                    raise KeyboardInterrupt from err
                return _could_not_write(given, err)
            try:
                published = publishing.publish(plan, before_renaming=refuse_if_interrupted)
            except OSError as err:  # the folder of --out changed under the run
                return _could_not_publish(given, plan, err)
        except publishing.InterruptedAfterPublishing as err:
            return _interrupted_after_publishing(given, err.published)
        except BaseException as err:
            # caused_by_interrupt: Ctrl-C itself, or inside a compiled kernel (numba wraps it)
            seen = interrupts.seen or _startup.interrupt_seen()
            if isinstance(err, SamplingInterrupted) or caused_by_interrupt(err) or seen:
                return _interrupted(plan, given, err)
            raise
    try:
        return _report_published(given, published, estimate.n_clusters)
    except KeyboardInterrupt:
        return _interrupted_after_publishing(given, published)


def _report_published(given: str, published: publishing.Published, n_clusters: int) -> int:
    """Say where the results are; return 0, or 1 when they are not at ``--out``."""
    if published.instead is not None:
        print(
            f"{_PROG}: error: {published.instead}; the results of this run are in "
            f"'{published.where}' instead.",
            file=sys.stderr,
            flush=True,
        )
        return 1
    replaced = " (replacing the earlier result)" if published.replaced else ""
    print(
        f"{n_clusters} cluster(s) in the point estimate; results written to "
        f"'{given}'{replaced}.{_leftover_note(published)}",
        flush=True,
    )
    return 0
