"""Running the experiments: cross-validation, the fits of every method, progress lines."""

from __future__ import annotations

import math
import os
import pickle
import platform
import sys
import time
import warnings

from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import numpy as np

from pymc_pcrp._runtime.logging import quiet_loggers
from pymc_pcrp.cli.reproduce.data import (
    PaperDataSet,
    PaperSample,
    digits_data_set,
    old_faithful_data_set,
    simulation_data_set,
)
from pymc_pcrp.cli.reproduce.figures import figures_for_dataset, figures_for_sample
from pymc_pcrp.cli.reproduce.moves import (
    ALGORITHM_1,
    DEFAULT_MOVES,
    default_step_options,
    describe_options,
    paper_prior,
)
from pymc_pcrp.cli.reproduce.paper_values import (
    K_TRUE,
    METHODS,
)
from pymc_pcrp.cli.reproduce.protocol import (
    CVRun,
    Protocol,
    ReproductionResult,
    RunResult,
    select_protocol,
)
from pymc_pcrp.cli.reproduce.report import format_tables
from pymc_pcrp.datasets import SIM1_PARAMS, SIM2_PARAMS
from pymc_pcrp.datasets import sim1 as _sim1
from pymc_pcrp.datasets import sim2 as _sim2
from pymc_pcrp.fitting import fit
from pymc_pcrp.posterior import point_estimate
from pymc_pcrp.prior import crp_oracle_alpha
from pymc_pcrp.stats.cross_validation import cross_validate_power
from pymc_pcrp.stats.metrics import clustering_summary

if TYPE_CHECKING:
    import arviz as az


# --------------------------------------------------------------------------- running


def _machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    import pymc

    load = ""
    if hasattr(os, "getloadavg"):
        load = f"; load average at start {os.getloadavg()[0]:.1f}"
    return (
        f"{cpu}, {os.cpu_count()} logical CPUs; {platform.system()} {platform.release()}; "
        f"Python {platform.python_version()}, PyMC {pymc.__version__}, NumPy {np.__version__}"
        f"{load}"
    )


def _code_version() -> str:
    """Git commit of the package source and the package files changed since, if any."""
    import subprocess

    root = Path(__file__).resolve().parents[3]
    try:
        head = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
            timeout=20,
        ).stdout.strip()
        status = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--", "pymc_pcrp"],
            capture_output=True,
            text=True,
            check=True,
            timeout=20,
        ).stdout.splitlines()
    except (OSError, subprocess.SubprocessError):
        return "not a git checkout"
    changed = sorted(line[3:] for line in status if line.strip())
    if not changed:
        return f"git commit {head}, no uncommitted changes in pymc_pcrp/"
    return f"git commit {head} plus uncommitted changes to {', '.join(changed)}"


def _k_diagnostics(idata: az.InferenceData) -> dict[str, float]:
    """R-hat, bulk and tail ESS of ``K`` by their :class:`RunResult` names (NaN: K is fixed)."""
    import arviz as az

    k = idata.posterior["n_clusters"].astype(np.float64)
    names = ("k_rhat", "k_ess_bulk", "k_ess_tail")
    if np.ptp(k.values) == 0 or k.sizes["draw"] < 4:
        return dict.fromkeys(names, math.nan)
    dataset = k.to_dataset(name="K")
    rhat = float(az.rhat(dataset)["K"]) if k.sizes["chain"] > 1 else math.nan
    bulk = float(az.ess(dataset, method="bulk")["K"])
    tail = float(az.ess(dataset, method="tail")["K"])
    return dict(zip(names, (rhat, bulk, tail), strict=True))


def _point_estimate(idata: az.InferenceData, seed: int) -> tuple[np.ndarray, str]:
    """Return the point estimate of the partition minimising the expected VI."""
    estimate = point_estimate(idata, random_seed=seed)
    return estimate.labels, "minimum expected VI (point_estimate)"


def _say(stream: TextIO, message: str) -> None:
    print(message, file=stream, flush=True)


def _cross_validate(
    data: PaperDataSet, protocol: Protocol, seed: int, stream: TextIO
) -> tuple[CVRun, list[str]]:
    start = time.perf_counter()
    with quiet_loggers("pymc"), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        cv = cross_validate_power(
            data.cv_train,
            data.cv_test,
            protocol.powers,
            draws=protocol.cv_draws,
            tune=protocol.cv_tune,
            chains=protocol.cv_chains,
            sweeps_per_draw=protocol.cv_sweeps_per_draw,
            random_seed=seed,
            n_jobs=protocol.n_jobs,
            prior=paper_prior(data.cv_train),
            fit_kwargs={"pcrp_gibbs": dict(ALGORITHM_1)},
        )
    seconds = time.perf_counter() - start
    messages = [str(w.message) for w in caught if "never rose" in str(w.message)]
    run = CVRun(data.name, len(data.cv_train), len(data.cv_test), cv, seed, seconds)
    curve = ", ".join(f"{r:g}: {loss:.3f}" for r, loss in zip(cv.powers, cv.loss, strict=True))
    _say(
        stream,
        f"  CV {data.name}: chosen r = {cv.chosen_power:g} ({seconds:.1f} s); loss by r: {curve}",
    )
    for message in messages:
        _say(stream, f"  CV {data.name}: warning: {message}")
    return run, messages


def _fit_method(
    data: PaperDataSet,
    sample: PaperSample,
    method: str,
    power: float,
    protocol: Protocol,
    seed: int,
    counter: str,
    stream: TextIO,
) -> tuple[RunResult, az.InferenceData, np.ndarray]:
    alpha = crp_oracle_alpha(data.k_true, sample.n) if method == "CRP-Oracle" else 1.0
    r = power if method in ("pCRP", DEFAULT_MOVES) else 1.0
    # The paper's fits pin Algorithm 1; the extra fit takes the step's defaults.
    step = {} if method == DEFAULT_MOVES else {"pcrp_gibbs": dict(ALGORITHM_1)}
    _say(
        stream,
        f"{counter} {data.name}, N = {sample.n}, {method}: alpha = {alpha:.3f}, r = {r:g}, "
        f"seed {seed} ...",
    )
    start = time.perf_counter()
    with quiet_loggers("pymc"):
        idata = fit(
            sample.X,
            power=r,
            alpha=alpha,
            prior=paper_prior(sample.X),
            draws=protocol.draws,
            tune=protocol.tune,
            chains=protocol.chains,
            cores=protocol.cores,
            sweeps_per_draw=protocol.sweeps_per_draw,
            random_seed=seed,
            compute_convergence_checks=False,
            **step,
        )
    seconds = time.perf_counter() - start
    summary = clustering_summary(idata, sample.labels)
    labels, how = _point_estimate(idata, seed)
    sizes = tuple(int(s) for s in np.sort(np.unique(labels, return_counts=True)[1])[::-1])
    result = RunResult(
        dataset=data.name,
        n=sample.n,
        method=method,
        alpha=alpha,
        power=r,
        seed=seed,
        summary=summary,
        k_draws=np.asarray(idata.posterior["n_clusters"].values, dtype=np.int64),
        **_k_diagnostics(idata),
        point_sizes=sizes,
        point_method=how,
        seconds=seconds,
    )
    _say(
        stream,
        f"{counter} {data.name}, N = {sample.n}, {method}: {seconds:.1f} s; "
        f"K {summary.k_mean:.2f} (max {summary.k_max}), NMI {summary.nmi_mean:.3f}, "
        f"VI {summary.vi_mean:.3f}; R-hat(K) {result.k_rhat:.3f}, ESS(K) {result.k_ess_bulk:.0f}; "
        f"point estimate K = {len(sizes)}",
    )
    return result, idata, labels


def _fit_sample(
    data: PaperDataSet,
    sample: PaperSample,
    power: float,
    protocol: Protocol,
    seeds: list[int],
    total: int,
    result: ReproductionResult,
    stream: TextIO,
) -> dict[str, tuple[RunResult, az.InferenceData, np.ndarray]]:
    """Fit the paper's methods (seeds in order), then the pCRP with the default moves.

    The runs are appended to ``result``; the fits of the paper's methods are returned
    for the figures.
    """
    fits = {}
    for method, run_seed in zip(METHODS, seeds, strict=True):
        counter = f"[{len(result.runs) + 1:>2}/{total}]"
        run, idata, labels = _fit_method(
            data, sample, method, power, protocol, run_seed, counter, stream
        )
        result.runs.append(run)
        fits[method] = (run, idata, labels)
    # The default sampler beside Algorithm 1: the pCRP again, with the same seed.
    counter = f"[{len(result.runs) + 1:>2}/{total}]"
    pcrp_seed = fits["pCRP"][0].seed
    run, _, _ = _fit_method(
        data, sample, DEFAULT_MOVES, power, protocol, pcrp_seed, counter, stream
    )
    result.runs.append(run)
    return fits


def _announce(stream: TextIO, result: ReproductionResult, out: Path) -> None:
    """Print the protocol, machine and code of the run before it starts."""
    protocol, seed = result.protocol, result.seed
    _say(stream, f"pCRP reproduction ({protocol.name} protocol), base seed {seed}, output {out}")
    _say(stream, f"Machine: {result.machine}")
    _say(stream, f"Code: {result.code}")
    _say(
        stream,
        f"Main fits: {protocol.chains} chains x {protocol.sweeps} sweeps "
        f"({protocol.tune * protocol.sweeps_per_draw} burn-in, then one sweep in "
        f"{protocol.sweeps_per_draw} kept); CV fits: {protocol.cv_chains} "
        f"chain(s) x {protocol.cv_sweeps} sweeps per r over {list(protocol.powers)}",
    )


def _prepare_data(protocol: Protocol, seed: int, mnist: str | Path | None) -> list[PaperDataSet]:
    """Build the four data sets of the paper in the order of its tables."""
    datasets = [
        simulation_data_set("Sim 1", "sim1", _sim1, K_TRUE["Sim 1"], SIM1_PARAMS, protocol, seed),
        simulation_data_set("Sim 2", "sim2", _sim2, K_TRUE["Sim 2"], SIM2_PARAMS, protocol, seed),
        digits_data_set(protocol, seed, mnist),
    ]
    faithful, _ = old_faithful_data_set(protocol, seed)
    datasets.append(faithful)
    return datasets


def run_reproduction(
    out: str | Path,
    *,
    quick: bool = False,
    mnist: str | Path | None = None,
    seed: int = 2018,
    n_jobs: int | None = None,
    stream: TextIO | None = None,
    command: str | None = None,
) -> ReproductionResult:
    """Run the paper's experiments and write ``tables.md`` and the figures to ``out``.

    Parameters
    ----------
    out : str or pathlib.Path
        Output folder (created if needed).
    quick : bool, default=False
        Use :data:`QUICK_PROTOCOL` (small data, few sweeps) instead of
        :data:`FULL_PROTOCOL`.
    mnist : str or pathlib.Path, optional
        Folder with the four MNIST IDX files; without it the digits experiment
        uses scikit-learn's 8x8 digits, and ``tables.md`` says so.
    seed : int, default=2018
        Base seed: data seeds, sampler seeds and cross-validation seeds are fixed
        offsets from it, and all are written into ``tables.md``.
    n_jobs : int, optional
        Parallel cross-validation grid points; defaults to the protocol's.
    stream : file-like, optional
        Where progress is printed (default ``sys.stdout``).
    command : str, optional
        The command line to record in ``tables.md``.

    Returns
    -------
    ReproductionResult
        Also pickled to ``out / "result.pkl"``.
    """
    stream = sys.stdout if stream is None else stream
    protocol = select_protocol(quick, n_jobs)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if command is None:
        command = "python -m pymc_pcrp reproduce --out " + str(out)
        command += " --quick" if quick else ""
        command += f" --mnist {mnist}" if mnist is not None else ""
        command += f" --seed {seed}" if seed != 2018 else ""
    result = ReproductionResult(protocol=protocol, seed=seed, command=command)
    result.started = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    result.machine = _machine()
    result.code = _code_version()
    wall = time.perf_counter()
    _announce(stream, result, out)
    _say(stream, "Preparing the data ...")
    datasets = _prepare_data(protocol, seed, mnist)
    result.digits_source = "mnist-train" if mnist is not None else "sklearn-8x8"
    for data in datasets:
        result.notes[data.name] = data.note
        _say(stream, "  " + data.note)

    result.default_moves = describe_options(default_step_options())
    _say(stream, f"Default moves of PCRPGibbs (extra pCRP fit): {result.default_moves}")
    total = sum(len(d.samples) for d in datasets) * (len(METHODS) + 1)
    done = 0  # fits of the paper's methods; their seeds follow this count
    for index, data in enumerate(datasets):
        cv_seed = seed + 2000 + index
        _say(stream, f"Cross-validating r for {data.name} (seed {cv_seed}) ...")
        cv, _ = _cross_validate(data, protocol, cv_seed, stream)
        result.cv[data.name] = cv
        for sample in data.samples:
            seeds = [seed + 1000 + done + i for i in range(1, len(METHODS) + 1)]
            done += len(METHODS)
            power = cv.result.chosen_power
            fits = _fit_sample(data, sample, power, protocol, seeds, total, result, stream)
            figures_for_sample(data, sample, fits, out, protocol, result)
            del fits
        figures_for_dataset(data, result, out, cv)
        _say(stream, f"  {data.name} done; {time.perf_counter() - wall:.0f} s elapsed")

    result.seconds = time.perf_counter() - wall
    result.tables = out / "tables.md"
    result.tables.write_text(format_tables(result), encoding="utf-8")
    with open(out / "result.pkl", "wb") as handle:
        pickle.dump(result, handle)
    _say(stream, f"Wrote {result.tables}, {out / 'result.pkl'} and {len(result.figures)} figures")
    _say(stream, f"Total wall time {result.seconds:.0f} s ({result.seconds / 60:.1f} min)")
    return result
