"""Every performance figure of pymc_pcrp, with its baseline, in one table.

Run from the repository root (``PYTHONPATH=.`` when the package is not installed)::

    python benchmarks/run.py                    # full run, about 10-15 minutes
    python benchmarks/run.py --quick            # smoke run, small sizes, about a minute
    python benchmarks/run.py --only kernel,paper
    python benchmarks/run.py --update-doc       # also writes the run into docs/performance.md

Everything is measured by this script, single-threaded (BLAS, OpenMP and numba
thread pools set to 1 unless the environment says otherwise), on the fixed-seed
three-component Gaussian mixture of ``benchmarks/common.py``, with each baseline
run in the same process next to the figure it is compared with, so that ratios
hold on a noisy machine. Times are medians of repeats. The output ends with one
markdown table: each figure, what it is compared with (a goal or a baseline),
their ratio and whether the goal is met, and by how much it is missed if not.

Sections (``--only`` takes a comma-separated list of these names):

check      the NumPy reference's conditional log weights equal the kernel's (1e-9)
kernel     kernel ns per point-update, N=2,000 D=2 and N=100,000 D=10, from the true clusters
paper      the paper's protocol through pm.sample (N=2,000, D=2, 20,000 sweeps kept every
           5th, one chain) against the kernel alone on the same sweeps; then two chains
           on two cores against one chain
reference  kernel against the pure-NumPy reference of the same algorithm, per sweep
naive      pm.sample with PCRPGibbs against a naive PyMC finite mixture, per sweep
sklearn    scikit-learn's BayesianGaussianMixture (DP prior) against pm.sample from the
           default initialisation: time, number of clusters and adjusted Rand index
memory     peak memory of pm.sample at N=100,000, 1,000 draws, keeping only n_clusters
           (var_names) or everything; then one draw (default prior, init and moves) at
           N=100,000 D=50 (learned and fixed prior scale) and N=10,000,000 D=10: time and
           peak RSS (subprocesses)
startup    import pymc_pcrp to first sweep, cold (empty numba cache) and warm (subprocesses)
scale      N=100,000, D=10: single-site Gibbs from one cluster and from the default
           (random) initialisation; from one cluster with split-merge moves
scaling    kernel seconds per sweep against N for D = 1, 2, 10; writes the log-log plot
moves      the default move set (sweep + split-merge at PCRPGibbs's default rate) against
           plain sweeps (split_merge=0), per sweep, N=2,000 D=2, same data and start
nu0        the learned nu0 of the default prior (a draw of nu0 per draw) against the same
           learned scale with nu0 fixed: CPU per draw of one sweep (the worst case, one
           nu0 draw per sweep), N=2,000 (D=2, 10), paired interleaved blocks
restarts   a whole one-chain fit (1,000 draws after 500 tuning draws) with the default
           restarts during tuning against restarts=1: CPU seconds, paired interleaved
           fits, N=272 and 2,000 (D=2) and N=569 (D=30)
logjoint   the log joint the step reports, computed afresh from the labels at each draw
           (fixed and learned NIW scale), against one plain sweep; N=2,000 (D=2, 10)
           and N=100,000 (D=10)
start      the default initialisation at N=1,000,000, D=10: seconds to the first draw
           (step built, start drawn, first sweep and moves), with the largest K0 it can draw
hyper      a random alpha (Gamma(2, 1), updated by PCRPGibbs in its own kernel call) against
           a fixed alpha, in-loop seconds per draw through pm.sample, N=2,000 D=2, paired
           runs; a random power (Uniform(0.8, 2), PCRPHyper) beside them; the cost of log Z_N
           by Stirling row and recursion
diag       the diagonal-covariance family (NIWPrior covariance="diag") against the full one:
           kernel ns per point-update (one Gibbs sweep, CPU time) at N=100,000, D=10 and
           D=50 (and N=5,000, D=10, whose data stay in cache), same data and start (the
           true clusters), paired and interleaved
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import copy  # noqa: E402
import datetime  # noqa: E402
import hashlib  # noqa: E402
import inspect  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import platform  # noqa: E402
import shlex  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SECTIONS = (
    "check",
    "kernel",
    "paper",
    "reference",
    "naive",
    "sklearn",
    "memory",
    "startup",
    "scale",
    "scaling",
    "moves",
    "nu0",
    "restarts",
    "logjoint",
    "start",
    "hyper",
    "diag",
)
DOC = REPO / "docs" / "performance.md"
PLOT = REPO / "docs" / "performance_scaling.png"
DOC_BEGIN = "<!-- run.py output: begin -->"
DOC_END = "<!-- run.py output: end -->"


# ---------------------------------------------------------------------------
# sizes


@dataclass
class Config:
    """Sizes of every section; ``quick()`` is the smoke-run variant."""

    repeats: int = 3
    kernel_small: tuple = (2000, 2, 1000)  # N, D, sweeps per repeat
    kernel_big: tuple = (100_000, 10, 10)
    paper: tuple = (2000, 2, 4000, 5)  # N, D, draws, sweeps per draw
    paper_repeats: int = 3
    reference_sweeps: int = 3
    reference_kernel_sweeps: int = 200
    naive: tuple = (2000, 2, 4, 3)  # N, D, draws, tune
    naive_ours_draws: int = 1000
    sklearn_sizes: tuple = (2000, 20_000)
    sklearn_ours: tuple = (100, 100)  # tune, draws (sweeps_per_draw = 1)
    memory: tuple = (100_000, 2, 1000)  # N, D, draws
    # N, D, NIWPrior.from_data scale ("learn" or a fixed number), goal MB
    memory_big: tuple = (
        (100_000, 50, "learn", 600.0),
        (100_000, 50, "0.1", 600.0),
        (10_000_000, 10, "learn", 10_000.0),
    )
    startup: tuple = (2000, 2)
    startup_cold: bool = True
    startup_warm_repeats: int = 3
    scale: tuple = (100_000, 10)
    scale_one_sweeps: int = 20
    scale_random_max: int = 200
    scale_after_found: int = 10
    scale_time_cap: float = 600.0
    scaling_ns: tuple = (1000, 3162, 10_000, 31_623, 100_000)
    scaling_ds: tuple = (1, 2, 10)
    scaling_updates: float = 1e6  # point-updates per timed measurement (>= 10 sweeps at 1e5)
    moves: tuple = (2000, 2, 2000, 9)  # N, D, sweeps per block, paired blocks
    nu0: tuple = ((2000, 2), (2000, 10))  # (N, D) cases of the learned-nu0 cost
    nu0_draws: tuple = (400, 7)  # draws per block, paired blocks
    restarts: tuple = ((272, 2), (2000, 2), (569, 30))  # (N, D) of the restart-cost fits
    restarts_fit: tuple = (1000, 500, 3)  # draws, tune, paired blocks
    logjoint: tuple = ((2000, 2), (2000, 10), (100_000, 10))  # (N, D) cases
    logjoint_calls: int = 200
    start: tuple = (1_000_000, 10)
    hyper: tuple = (2000, 2, 2000, 200, 3)  # N, D, draws, tune, paired runs
    diag: tuple = ((5_000, 10, 60), (100_000, 10, 3), (100_000, 50, 1))  # N, D, sweeps
    quick: bool = False

    @classmethod
    def quick_config(cls) -> Config:
        return cls(
            repeats=2,
            kernel_small=(2000, 2, 100),
            kernel_big=(20_000, 10, 1),
            paper=(2000, 2, 200, 5),
            paper_repeats=1,
            reference_sweeps=1,
            reference_kernel_sweeps=50,
            naive=(300, 2, 2, 1),
            naive_ours_draws=100,
            sklearn_sizes=(2000,),
            sklearn_ours=(50, 50),
            memory=(20_000, 2, 100),
            memory_big=((20_000, 50, "learn", 600.0), (1_000_000, 10, "learn", 10_000.0)),
            startup_cold=False,
            startup_warm_repeats=1,
            scale=(10_000, 10),
            scale_one_sweeps=3,
            scale_random_max=30,
            scale_after_found=2,
            scale_time_cap=20.0,
            scaling_ns=(1000, 3000, 10_000),
            scaling_updates=3e4,
            moves=(2000, 2, 500, 3),
            nu0=((2000, 2),),
            nu0_draws=(100, 3),
            restarts=((272, 2),),
            restarts_fit=(100, 100, 1),
            logjoint=((2000, 2),),
            logjoint_calls=20,
            start=(100_000, 10),
            hyper=(2000, 2, 300, 100, 1),
            diag=((10_000, 10, 1), (10_000, 50, 1)),
            quick=True,
        )


# ---------------------------------------------------------------------------
# output


@dataclass
class Row:
    """One line of the final table."""

    figure: str
    measured: str
    target: str
    ratio: str = "-"
    status: str = "reported"


@dataclass
class Report:
    """Collects the printed lines (for --update-doc) and the table rows."""

    lines: list = field(default_factory=list)
    rows: list = field(default_factory=list)

    def log(self, text: str = "") -> None:
        print(text, flush=True)
        self.lines.append(text)

    def row(self, *args, **kwargs) -> None:
        self.rows.append(Row(*args, **kwargs))

    def table(self) -> list[str]:
        head = ["figure", "measured", "goal / baseline", "ratio", "status"]
        body = [[r.figure, r.measured, r.target, r.ratio, r.status] for r in self.rows]
        widths = [max(len(str(c[j])) for c in [head, *body]) for j in range(len(head))]

        def fmt(cells):
            padded = (str(c).ljust(w) for c, w in zip(cells, widths, strict=True))
            return "| " + " | ".join(padded) + " |"

        return [fmt(head), "|" + "|".join("-" * (w + 2) for w in widths) + "|"] + [
            fmt(b) for b in body
        ]


def goal_max(value: float, limit: float, unit: str = "") -> tuple[str, str]:
    """Ratio and status of a figure that must stay at or below ``limit``."""
    ratio = value / limit
    if value <= limit:
        return f"{ratio:.2f}", "met"
    return f"{ratio:.2f}", f"NOT MET: {ratio:.1f}x the goal ({value - limit:+.3g}{unit})"


def goal_min(value: float, limit: float, unit: str = "x") -> tuple[str, str]:
    """Ratio and status of a figure that must reach at least ``limit``."""
    ratio = value / limit
    if value >= limit:
        return f"{ratio:.2f}", "met"
    return f"{ratio:.2f}", f"NOT MET: {ratio:.2f} of the goal ({limit / value:.1f}x short)"


def load() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def med(values) -> float:
    return float(statistics.median(values))


def fmt_list(values, spec=".3g") -> str:
    return "[" + ", ".join(format(v, spec) for v in values) + "]"


# ---------------------------------------------------------------------------
# shared helpers


def quiet() -> None:
    import pymc  # noqa: F401  (importing pymc sets its logger's level; override it after)

    logging.getLogger("pymc").setLevel(logging.ERROR)
    logging.getLogger("pytensor").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore")


def problem(n: int, d: int):
    """Data, true labels, prior, centred data, kernel parameters and tables."""
    import numpy as np

    from common import ALPHA, POWER, mixture_data

    import pymc_pcrp as pcrp

    from pymc_pcrp._kernels.sweep import make_params, sweep_tables

    x, z = mixture_data(n, d)
    prior = pcrp.NIWPrior.from_data(x)
    xc = np.ascontiguousarray(x - prior.mu0)
    params = make_params(ALPHA, POWER, prior.kappa0, prior.nu0, prior.psi0)
    return x, z, prior, xc, params, sweep_tables(xc, params)


def settled_rate(z, d: int) -> float:
    """The split-merge rate a chain of the default step sets after tuning in partition ``z``."""
    import numpy as np

    from pymc_pcrp.sampler import options as pcrp_gibbs

    visited = pcrp_gibbs.visited_fraction(np.bincount(z))
    return pcrp_gibbs.auto_split_merge(len(z), d, visited)


def build_model(x, prior):
    import pymc as pm

    from common import ALPHA, POWER

    import pymc_pcrp as pcrp

    with pm.Model() as model:
        z = pcrp.PowerCRP("z", alpha=ALPHA, power=POWER, n=len(x))
        pcrp.NIWMixture("x", z=z, prior=prior, observed=x)
    return model


def time_kernel(xc, z, params, tables, sweeps: int, seed: int) -> tuple[float, int, float]:
    """Wall seconds for ``sweeps`` kernel sweeps from labels ``z``, K at the end, CPU seconds.

    The CPU time (``time.thread_time``) is what the sweeps cost on a core of
    their own; on a loaded machine the wall time also counts waiting for one.
    """
    import numpy as np

    from pymc_pcrp._kernels.sweep import gibbs_sweeps, init_state

    state = init_state(xc, z, params)
    rng = np.random.default_rng(seed)
    c0 = time.thread_time()
    t0 = time.perf_counter()
    gibbs_sweeps(rng, (xc, state, params, tables), sweeps)
    return time.perf_counter() - t0, int(state.k[0]), time.thread_time() - c0


def sample(
    model,
    *,
    draws,
    spd=1,
    chains=1,
    cores=1,
    tune=0,
    init="point",
    z0=None,
    seed=0,
    sm=0.0,
    step=None,
    **kw,
):
    """``pm.sample`` as a user calls it (no progress bar); returns (idata, wall seconds).

    ``sm`` is ``PCRPGibbs(split_merge=...)``: 0 (Algorithm 1 alone) unless given,
    so that the step is compared with kernels and baselines that run plain sweeps;
    ``None`` leaves the step's default move set. ``step`` adds other ``PCRPGibbs``
    options (it wins over ``spd``, ``init`` and ``sm``).
    """
    import pymc as pm

    extra = {"initvals": {"z": z0}} if z0 is not None else {}
    t0 = time.perf_counter()
    with model:
        idata = pm.sample(
            draws=draws,
            tune=tune,
            chains=chains,
            cores=cores,
            progressbar=False,
            quiet=True,
            random_seed=seed,
            pcrp_gibbs={
                "sweeps_per_draw": spd,
                "init": init,
                **({} if sm is None else {"split_merge": sm}),
                **(step or {}),
            },
            **extra,
            **kw,
        )
    return idata, time.perf_counter() - t0


def child_env() -> dict:
    """Environment for subprocesses: they import the same pymc_pcrp as this process."""
    import pymc_pcrp

    env = dict(os.environ)
    root = str(Path(pymc_pcrp.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join([root, str(HERE), env.get("PYTHONPATH", "")])
    return env


def run_child(args: list[str], env: dict | None = None) -> dict:
    """Run ``run.py --child ...`` and return the JSON it prints last."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", *args]
    t0 = time.perf_counter()
    out = subprocess.run(cmd, env=env or child_env(), capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if out.returncode != 0:
        return {"error": (out.stderr or out.stdout).strip().splitlines()[-8:], "wall": wall}
    res = json.loads(out.stdout.strip().splitlines()[-1])
    res["wall"] = wall
    return res


# ---------------------------------------------------------------------------
# sections


def section_check(cfg: Config, rep: Report, cache: dict) -> None:
    from numpy_reference import verify

    err = verify(n=300 if cfg.quick else 500)
    rep.log(f"  reference vs kernel conditional log weights: max |diff| = {err:.2e}")
    status = "met" if err <= 1e-9 else f"NOT MET: {err / 1e-9:.1f}x the tolerance"
    rep.row(
        "NumPy reference = kernel: max |diff| of conditional log weights (3 states, D=2)",
        f"{err:.1e}",
        "<= 1e-9",
        f"{err / 1e-9:.2g}",
        status,
    )


def section_kernel(cfg: Config, rep: Report, cache: dict) -> None:
    for (n, d, sweeps), goal in ((cfg.kernel_small, 1e9 / 15e6), (cfg.kernel_big, 100.0)):
        _, z, _, xc, params, tables = problem(n, d)
        time_kernel(xc, z, params, tables, 1, 0)  # warm-up (numba cache load)
        ns, ks, cpu = [], [], []
        for r in range(cfg.repeats):
            t, k, c = time_kernel(xc, z, params, tables, sweeps, 1 + r)
            ns.append(t / (sweeps * n) * 1e9)
            cpu.append(c / (sweeps * n) * 1e9)
            ks.append(k)
        m = med(ns)
        rep.log(
            f"  N={n} D={d}: {sweeps} sweeps x {cfg.repeats} repeats from the true clusters: "
            f"ns/update {fmt_list(ns, '.1f')} (CPU {fmt_list(cpu, '.1f')}), K at end {ks}"
        )
        cache[("kernel", n, d)] = m / 1e9 * n  # seconds per sweep
        ratio, status = goal_max(m, goal, " ns")
        extra = f" = {1e3 / m:.2f} M updates/s" if goal < 100 else ""
        rep.row(
            f"kernel ns per point-update, N={n:,} D={d}, r=1.1, from true clusters "
            f"(K at end {'/'.join(map(str, ks))})",
            f"{m:.1f} ns{extra} (min {min(ns):.1f}; CPU {med(cpu):.1f})",
            f"<= {goal:.1f} ns" + (" (15 M/s)" if goal < 100 else ""),
            ratio,
            status,
        )


def section_paper(cfg: Config, rep: Report, cache: dict) -> None:
    n, d, draws, spd = cfg.paper
    x, z, prior, xc, params, tables = problem(n, d)
    model = build_model(x, prior)
    sweeps = draws * spd
    # warm-up: numba cache loading, PyTensor compilation, fork of the workers
    time_kernel(xc, z, params, tables, 2, 0)
    sample(model, draws=5, spd=spd, z0=z, seed=0)
    sample(model, draws=5, spd=spd, chains=2, cores=2, z0=z, seed=0)
    kern, one, one_loop, two, two_loop, ks, kcpu, ocpu = [], [], [], [], [], [], [], []
    for r in range(cfg.paper_repeats):
        seed = 100 + r
        t, k, c = time_kernel(xc, z, params, tables, sweeps, seed)
        kern.append(t)
        kcpu.append(c)
        c0 = time.process_time()
        idata, wall = sample(model, draws=draws, spd=spd, z0=z, seed=seed)
        ocpu.append(time.process_time() - c0)
        one.append(wall)
        one_loop.append(float(idata.sample_stats.attrs["sampling_time"]))
        ks.append((k, int(idata.sample_stats["n_clusters"].values[0, -1])))
        idata, wall = sample(model, draws=draws, spd=spd, chains=2, cores=2, z0=z, seed=seed)
        two.append(wall)
        two_loop.append(float(idata.sample_stats.attrs["sampling_time"]))
        rep.log(
            f"  repeat {r + 1}/{cfg.paper_repeats} (load {load()}): kernel {t:.2f} s "
            f"(CPU {c:.2f}), pm.sample 1 chain {one[-1]:.2f} s (in-loop {one_loop[-1]:.2f}, "
            f"CPU {ocpu[-1]:.2f}), "
            f"2 chains cores=2 {two[-1]:.2f} s (in-loop {two_loop[-1]:.2f}); "
            f"K at end kernel/pm.sample {ks[-1]}"
        )
    mk, m1, m2 = med(kern), med(one), med(two)
    # ratios paired within a repeat (the load drifts between repeats), then the median
    r_wall = med([o / k for o, k in zip(one, kern, strict=True)])
    r_cpu = med([o / k for o, k in zip(ocpu, kcpu, strict=True)])
    speed = med([2 * o / t for o, t in zip(one, two, strict=True)])
    speed_loop = med([2 * o / t for o, t in zip(one_loop, two_loop, strict=True)])
    protocol = f"N={n:,} D={d}, {sweeps:,} sweeps as {draws:,} draws x {spd} sweeps, tune=0"
    ratio, status = goal_max(m1, 5.0, " s")
    rep.row(
        f"pm.sample, paper protocol ({protocol}, 1 chain, init at the true labels), wall",
        f"{m1:.2f} s (in-loop {med(one_loop):.2f} s)",
        "<= 5 s",
        ratio,
        status,
    )
    ratio, status = goal_max(r_wall, 1.15)
    rep.row(
        "pm.sample paper protocol / kernel-only gibbs_sweeps, same sweeps and start "
        "(median of per-repeat ratios)",
        f"{r_wall:.3f} (medians {m1:.2f} s / {mk:.2f} s; CPU time ratio {r_cpu:.3f})",
        "<= 1.15",
        ratio,
        status,
    )
    ratio, status = goal_min(speed, 1.7)
    rep.row(
        "draws/s, 2 chains cores=2 / 1 chain (paper protocol per chain, wall of pm.sample)",
        f"{speed:.2f}x (medians {2 * draws / m2:.0f} / {draws / m1:.0f} draws/s; "
        f"in-loop {speed_loop:.2f}x)",
        ">= 1.7x",
        ratio,
        status,
    )
    # The same sweeps stored 5 times less often: how much of the gap above is
    # PyMC's per-draw cost in the main process (pipe, trace recording).
    few = max(1, draws // 5)
    one5, two5 = [], []
    for r in range(cfg.paper_repeats):
        one5.append(sample(model, draws=few, spd=spd * 5, z0=z, seed=200 + r)[1])
        two5.append(sample(model, draws=few, spd=spd * 5, chains=2, cores=2, z0=z, seed=200 + r)[1])
    speed5 = med([2 * o / t for o, t in zip(one5, two5, strict=True)])
    rep.log(
        f"  same sweeps as {few} draws x {spd * 5} sweeps: 1 chain {fmt_list(one5, '.2f')} s, "
        f"2 chains {fmt_list(two5, '.2f')} s"
    )
    rep.row(
        f"draws/s, 2 chains cores=2 / 1 chain, same sweeps as {few:,} draws x {spd * 5} sweeps",
        f"{speed5:.2f}x (medians {2 * few / med(two5):.0f} / {few / med(one5):.0f} draws/s)",
        "report (per-draw cost of pm.sample's parallel sampler)",
        "-",
        "reported",
    )


def section_reference(cfg: Config, rep: Report, cache: dict) -> None:
    import numpy as np

    from common import ALPHA, POWER
    from numpy_reference import NumpyPCRPGibbs

    n, d, _ = cfg.kernel_small
    _, z, prior, xc, params, tables = problem(n, d)
    time_kernel(xc, z, params, tables, 2, 0)
    ref = NumpyPCRPGibbs(
        xc, z, ALPHA, POWER, prior.kappa0, prior.nu0, prior.psi0, np.random.default_rng(7)
    )
    kern, base, kcpu, bcpu = [], [], [], []
    for r in range(cfg.reference_sweeps):
        t, _, c = time_kernel(xc, z, params, tables, cfg.reference_kernel_sweeps, 200 + r)
        kern.append(t / cfg.reference_kernel_sweeps)
        kcpu.append(c / cfg.reference_kernel_sweeps)
        c0 = time.thread_time()
        t0 = time.perf_counter()
        ref.sweep()
        base.append(time.perf_counter() - t0)
        bcpu.append(time.thread_time() - c0)
    speed = med([b / k for b, k in zip(base, kern, strict=True)])  # paired, then median
    speed_cpu = med([b / k for b, k in zip(bcpu, kcpu, strict=True)])
    rep.log(
        f"  N={n} D={d}: reference s/sweep {fmt_list(base)} (K {ref.n_clusters}), "
        f"kernel ms/sweep {fmt_list([1e3 * v for v in kern])}"
    )
    ratio, status = goal_min(speed, 400)
    rep.row(
        f"kernel vs pure-NumPy reference (benchmarks/numpy_reference.py), N={n:,} D={d}, "
        "per sweep (median of paired ratios)",
        f"{speed:.0f}x (medians {1e3 * med(kern):.3f} ms vs {med(base):.3f} s per sweep; "
        f"CPU time {speed_cpu:.0f}x)",
        ">= 400x",
        ratio,
        status,
    )


def section_naive(cfg: Config, rep: Report, cache: dict) -> None:
    from naive_pymc import K_MAX, time_naive

    n, d, draws, tune = cfg.naive
    x, z, prior, _, _, _ = problem(n, d)
    model = build_model(x, prior)
    sample(model, draws=5, z0=z, seed=0)  # warm-up
    ours = []
    for r in range(cfg.repeats):
        _, wall = sample(model, draws=cfg.naive_ours_draws, z0=z, seed=300 + r)
        ours.append(wall / cfg.naive_ours_draws)
    res = time_naive(x, draws=draws, tune=tune, seed=3)
    naive = res["per_sweep"]
    speed = naive / med(ours)
    rep.log(
        f"  N={n} D={d}: naive s/sweep {fmt_list(res['all'])} (whole call {res['wall']:.1f} s); "
        f"pm.sample+PCRPGibbs ms/sweep {fmt_list([1e3 * v for v in ours])}"
    )
    ratio, status = goal_min(speed, 500)
    rep.row(
        f"pm.sample+PCRPGibbs vs naive PyMC (K_max={K_MAX} finite mixture, "
        f"CategoricalGibbsMetropolis + NUTS), per sweep, N={n:,} D={d}",
        f"{1e3 * med(ours):.2f} ms vs {naive:.3f} s = {speed:.0f}x",
        ">= 500x",
        ratio,
        status,
    )


def section_sklearn(cfg: Config, rep: Report, cache: dict) -> None:
    import numpy as np

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.metrics import adjusted_rand_score
    from sklearn.mixture import BayesianGaussianMixture

    tune, draws = cfg.sklearn_ours
    for n in cfg.sklearn_sizes:
        x, z, prior, _, _, _ = problem(n, 2)
        model = build_model(x, prior)
        sample(model, draws=2, init="random", seed=0, sm=None)  # warm-up
        sk_t, sk_k, sk_ari, sk_conv = [], [], [], []
        our_t, our_k, our_ari = [], [], []
        for r in range(cfg.repeats):
            bgm = BayesianGaussianMixture(
                n_components=20,
                weight_concentration_prior_type="dirichlet_process",
                random_state=r,
            )
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                bgm.fit(x)
            sk_t.append(time.perf_counter() - t0)
            sk_k.append(int(np.sum(bgm.weights_ > 0.01)))
            sk_ari.append(adjusted_rand_score(z, bgm.predict(x)))
            sk_conv.append(f"{'yes' if bgm.converged_ else 'no'}@{bgm.n_iter_}")
            idata, wall = sample(
                model, draws=draws, tune=tune, init="random", seed=400 + r, sm=None
            )
            our_t.append(wall)
            k = idata.posterior["n_clusters"].values.ravel()
            our_k.append(float(k.mean()))
            our_ari.append(adjusted_rand_score(z, idata.posterior["z"].values[0, -1]))
        rep.log(
            f"  N={n} D=2: sklearn s {fmt_list(sk_t)}, K_eff {sk_k}, "
            f"ARI {fmt_list(sk_ari, '.3f')}, "
            f"converged@iterations {sk_conv}; pm.sample s {fmt_list(our_t)}, mean K "
            f"{fmt_list(our_k, '.2f')}, ARI {fmt_list(our_ari, '.3f')} (load {load()})"
        )
        i = int(np.argsort(sk_t)[len(sk_t) // 2])
        rep.row(
            f"sklearn BayesianGaussianMixture (DP, 20 components, defaults), N={n:,} D=2: "
            "fit time; components with weight > 0.01; ARI to the truth",
            f"{med(sk_t):.2f} s; K_eff {sk_k[i]}; ARI {sk_ari[i]:.3f}; converged {sk_conv[i]}",
            "true K = 3",
            "-",
            "reported",
        )
        j = int(np.argsort(our_t)[len(our_t) // 2])
        rep.row(
            f"pm.sample+PCRPGibbs, N={n:,} D=2, default init (random), {tune} tune + "
            f"{draws} draws, 1 chain: wall; posterior mean K; ARI of the last draw",
            f"{med(our_t):.2f} s; K {our_k[j]:.2f}; ARI {our_ari[j]:.3f}",
            f"sklearn {med(sk_t):.2f} s",
            f"{med(our_t) / med(sk_t):.2f} (time)",
            "reported",
        )


def section_memory(cfg: Config, rep: Report, cache: dict) -> None:
    n, d, draws = cfg.memory
    env = child_env()
    cmds = {
        keep: [
            sys.executable,
            str(Path(__file__).resolve()),
            "--child",
            "memory",
            str(n),
            str(d),
            str(draws),
            keep,
        ]
        for keep in ("n_clusters", "all")
    }
    # The two runs only measure memory, so they run side by side to save time.
    procs = {
        k: subprocess.Popen(c, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for k, c in cmds.items()
    }
    res = {}
    for keep, p in procs.items():
        out, err = p.communicate()
        if p.returncode != 0:
            res[keep] = {"error": (err or out).strip().splitlines()[-8:]}
        else:
            res[keep] = json.loads(out.strip().splitlines()[-1])
        rep.log(f"  keep={keep}: {json.dumps(res[keep])}")
    small, full = res["n_clusters"], res["all"]
    if "error" in small:
        rep.row(
            f"pm.sample(var_names=['n_clusters']) with PCRPGibbs, N={n:,}",
            "FAILED: " + " / ".join(small["error"][-2:]),
            "works",
            "-",
            "NOT MET: fails",
        )
    else:
        kept = ", ".join(small["posterior_vars"])
        ok = small["posterior_vars"] == ["n_clusters"]
        rep.row(
            f"pm.sample(var_names=['n_clusters']) with PCRPGibbs, N={n:,} D={d}, {draws:,} "
            "draws: works; peak RSS (ru_maxrss) and its rise over the RSS before sampling",
            f"works (posterior keeps: {kept}); peak {small['peak_mb']:.0f} MB "
            f"(+{small['peak_mb'] - small['rss_before_mb']:.0f} MB)",
            "works; report peak",
            "-",
            "met" if ok else "NOT MET: other variables kept",
        )
    if "error" in full:
        rep.row(f"pm.sample keeping the labels, N={n:,}", "FAILED", "-", "-", "error")
    else:
        import numpy as np

        from pymc_pcrp.distributions.pcrp import label_dtype

        bpl = full["z_bytes_per_label"]
        want = np.dtype(label_dtype(n)).itemsize
        rep.row(
            f"pm.sample keeping the labels (default), N={n:,} D={d}, {draws:,} draws: peak RSS; "
            "stored label dtype and size of the label trace",
            f"peak {full['peak_mb']:.0f} MB (+{full['peak_mb'] - full['rss_before_mb']:.0f} MB); "
            f"labels {full['z_dtype']} = {bpl} bytes/label, {full['z_mb']:.0f} MB",
            f"smallest dtype holding 0..N-1: {label_dtype(n)} ({want} bytes; int16 up to "
            "N = 32,768)",
            f"{bpl / want:.1f}",
            "met" if bpl <= want else f"NOT MET: {bpl / want:.0f}x the compact size",
        )

    _memory_one_draw(cfg, rep, env)


def _memory_one_draw(cfg: Config, rep: Report, env: dict) -> None:
    """One pm.sample draw at large N and D, each case alone in a subprocess: time and peak RSS.

    A smaller child with the same argument types (labels are int32 from N = 32,769)
    runs first, so that numba compiles, if it must, there: LLVM's memory while
    compiling (about 100 MB) is a once-per-environment cost, not the sampler's.
    """
    for n, d, scale, goal in cfg.memory_big:
        warm = run_child(["memory_draw", str(min(n, 40_000)), str(d), scale], env)
        rep.log(f"  warm-up N={min(n, 40_000)} D={d} scale={scale}: {json.dumps(warm)}")
        res = run_child(["memory_draw", str(n), str(d), scale], env)
        rep.log(f"  one draw N={n} D={d} scale={scale}: {json.dumps(res)}")
        prior = "NIWPrior.from_data(X)" if scale == "learn" else f"from_data(X, scale={scale})"
        figure = (
            f"pm.sample one draw (tune=0), N={n:,} D={d}, {prior}, default init "
            "and moves, kernels compiled by a warm-up child: peak RSS (VmHWM) of the "
            "whole process, MB = 10^6 bytes"
        )
        if "error" in res:
            rep.row(figure, "FAILED: " + " / ".join(res["error"][-2:]), "-", "-", "error")
            continue
        ratio, status = goal_max(res["peak_mb"], goal, " MB")
        rep.row(
            figure,
            f"{res['peak_mb']:.0f} MB (data and model {res['rss_before_mb']:.0f} MB); "
            f"pm.sample {res['sample_s']:.1f} s, K after the draw {res['k']}",
            f"<= {goal:,.0f} MB",
            ratio,
            status,
        )


def section_startup(cfg: Config, rep: Report, cache: dict) -> None:
    n, d = cfg.startup
    args = ["startup", str(n), str(d)]
    with tempfile.TemporaryDirectory(prefix="pcrp_numba_cache_") as cache_dir:
        env = child_env()
        if cfg.startup_cold:
            env["NUMBA_CACHE_DIR"] = cache_dir  # empty: the first run compiles everything
            cold = run_child(args, env)
            rep.log(f"  cold (empty NUMBA_CACHE_DIR): {json.dumps(cold)}")
        else:
            rep.log("  cold start skipped in --quick; warm start uses the existing numba cache")
        warm = [run_child(args, env) for _ in range(cfg.startup_warm_repeats)]
        for w in warm:
            rep.log(f"  warm: {json.dumps(w)}")
    if cfg.startup_cold:
        if "error" in cold:
            rep.row("cold start", "FAILED: " + " / ".join(cold["error"][-2:]), "-", "-", "error")
        else:
            rep.row(
                "cold start: import pymc_pcrp -> first sweep of pm.sample (empty numba cache; "
                f"N={n:,} D={d}); process wall in brackets",
                f"{cold['first_sweep']:.1f} s (import {cold['import']:.1f} s of which pymc "
                f"{cold['import_pymc']:.1f} s; CPU "
                f"{cold['first_sweep_cpu']:.1f} s; process {cold['wall']:.1f} s)",
                "report",
                "-",
                "reported",
            )
    if any("error" in w for w in warm):
        rep.row("warm start", "FAILED", "< 2 s", "-", "error")
        return
    first = [w["first_sweep"] for w in warm]
    m = med(first)
    ratio, status = goal_max(m, 2.0, " s")
    i = first.index(sorted(first)[len(first) // 2])
    rep.row(
        "warm start: import pymc_pcrp -> first sweep of pm.sample (numba cache filled), "
        f"median of {len(warm)}",
        f"{m:.2f} s (import {warm[i]['import']:.2f} s of which pymc "
        f"{warm[i]['import_pymc']:.2f} s; model {warm[i]['model']:.2f} s; "
        f"CPU {warm[i]['first_sweep_cpu']:.2f} s; process {warm[i]['wall']:.1f} s)",
        "< 2 s",
        ratio,
        status,
    )


def section_scale(cfg: Config, rep: Report, cache: dict) -> None:
    import numpy as np

    from sklearn.metrics import adjusted_rand_score

    import pymc_pcrp as pcrp

    from pymc_pcrp.sampler.restarts import random_init_max_k

    n, d = cfg.scale
    x, z, prior, _, _, _ = problem(n, d)
    model = build_model(x, prior)
    true_sizes = np.bincount(z)

    def drive(init: str, seed: int, max_sweeps: int, stop_after: int | None, **step_kw):
        """Run the step itself (one sweep per step); return per-sweep records."""
        step_kw.setdefault("split_merge", 0)  # single-site Gibbs unless asked otherwise
        with model:
            step = pcrp.PCRPGibbs(
                [model["z"]], init=init, rng=np.random.default_rng(seed), **step_kw
            )
        k0 = None
        if init == "random":
            k_max = random_init_max_k(n)
            k0 = int(copy.deepcopy(step.rng).integers(1, k_max + 1))
        point = model.initial_point()
        found, recs, t_start = None, [], time.perf_counter()
        for s in range(1, max_sweeps + 1):
            t0 = time.perf_counter()
            point, stats = step.step(point)
            dt = time.perf_counter() - t0
            labels = point["z"]
            sizes = np.sort(np.bincount(labels))[::-1]
            ari = adjusted_rand_score(z, labels)
            recs.append((s, int(stats[0]["n_clusters"]), sizes[:4].tolist(), ari, dt))
            if found is None and ari >= 0.99 and int(np.sum(sizes >= 0.01 * n)) == 3:
                found = (s, time.perf_counter() - t_start)
            if stop_after is not None and found and s >= found[0] + stop_after:
                break
            if time.perf_counter() - t_start > cfg.scale_time_cap:
                break
        return k0, recs, found, time.perf_counter() - t_start

    rep.log(f"  N={n} D={d}, true sizes {true_sizes.tolist()} (load {load()})")
    _, recs, _, total = drive("one", 11, cfg.scale_one_sweeps, None)
    for s, k, sizes, ari, dt in recs:
        if s <= 3 or s == len(recs) or s % 5 == 0:
            rep.log(f"  init=one sweep {s}: K={k} largest {sizes} ARI {ari:.3f} ({dt:.2f} s)")
    second = max(r[2][1] if len(r[2]) > 1 else 0 for r in recs)
    rep.row(
        f"single-site Gibbs from one cluster (init='one'), N={n:,} D={d}, r=1.1, "
        f"{len(recs)} sweeps: K at end; largest 2nd cluster seen; ARI",
        f"K {recs[-1][1]}; 2nd cluster <= {second} points; ARI {recs[-1][3]:.3f} ({total:.0f} s)",
        "report (true K = 3)",
        "-",
        "reported: no 2nd real cluster" if second < 0.01 * n else "reported: splits",
    )
    k0, recs, found, total = drive("random", 12, cfg.scale_random_max, cfg.scale_after_found)
    for s, k, sizes, ari, dt in recs:
        if s <= 2 or s == len(recs) or s % 5 == 0 or (found and s == found[0]):
            rep.log(f"  init=random sweep {s}: K={k} largest {sizes} ARI {ari:.3f} ({dt:.2f} s)")
    capped = len(recs) < cfg.scale_random_max and not found
    if found:
        status = "met" if found[0] <= 200 else f"NOT MET: {found[0]} sweeps"
        measured = (
            f"found at sweep {found[0]} ({found[1]:.0f} s; K0={k0}); "
            f"{len(recs)} sweeps: K {recs[-1][1]}, ARI {recs[-1][3]:.3f}"
        )
    else:
        status = "NOT MET: not found" + (" (time cap hit)" if capped else "")
        measured = f"not found in {len(recs)} sweeps ({total:.0f} s; K0={k0}), K {recs[-1][1]}"
    rep.row(
        f"default init (init='random'), single-site Gibbs, r=1.1, N={n:,} D={d}: sweeps until "
        "ARI >= 0.99 with 3 clusters of >= 1% of the points",
        measured,
        "<= 200 sweeps",
        f"{found[0] / 200:.2f}" if found else "-",
        status,
    )

    # split-merge moves (PCRPGibbs(split_merge=k), when this version of the step has them)
    if "split_merge" not in inspect.signature(pcrp.PCRPGibbs.__init__).parameters:
        rep.log("  split-merge: this version of PCRPGibbs has no split_merge option")
        rep.row(
            f"init='one' + split-merge moves, N={n:,} D={d}",
            "not available in this version",
            "<= 200 sweeps",
            "-",
            "not measured",
        )
        return
    _, recs, found, total = drive(
        "one", 13, cfg.scale_random_max, cfg.scale_after_found, split_merge=1
    )
    for s, k, sizes, ari, dt in recs:
        if s <= 3 or s == len(recs) or s % 5 == 0 or (found and s == found[0]):
            rep.log(
                f"  init=one split_merge=1 sweep {s}: K={k} largest {sizes} ARI {ari:.3f} "
                f"({dt:.2f} s)"
            )
    if found:
        status = "met" if found[0] <= 200 else f"NOT MET: {found[0]} sweeps"
        measured = (
            f"found at sweep {found[0]} ({found[1]:.0f} s); {len(recs)} sweeps: "
            f"K {recs[-1][1]}, ARI {recs[-1][3]:.3f}"
        )
    else:
        status = "NOT MET: not found"
        measured = f"not found in {len(recs)} sweeps ({total:.0f} s), K {recs[-1][1]}"
    rep.row(
        f"from one cluster (init='one') with split-merge (split_merge=1 proposal per sweep), "
        f"r=1.1, N={n:,} D={d}: sweeps until found (as above)",
        measured,
        "<= 200 sweeps",
        f"{found[0] / 200:.2f}" if found else "-",
        status,
    )


def section_scaling(cfg: Config, rep: Report, cache: dict, plot_path: Path) -> None:
    import numpy as np

    results = {}
    for d in cfg.scaling_ds:
        for n in cfg.scaling_ns:
            _, z, _, xc, params, tables = problem(n, d)
            time_kernel(xc, z, params, tables, 1, 0)
            sweeps = max(2, round(cfg.scaling_updates / n))
            per = [
                time_kernel(xc, z, params, tables, sweeps, 500 + r)[0] / sweeps
                for r in range(cfg.repeats)
            ]
            results[(d, n)] = med(per)
        line = ", ".join(f"N={n}: {results[(d, n)]:.3g}" for n in cfg.scaling_ns)
        rep.log(f"  D={d}: s/sweep {line}")
    ns = np.array(cfg.scaling_ns, dtype=float)
    for d in cfg.scaling_ds:
        t = np.array([results[(d, n)] for n in cfg.scaling_ns])
        slope = np.polyfit(np.log(ns), np.log(t), 1)[0]
        rep.row(
            f"kernel s/sweep vs N, D={d}, from true clusters (plot): at N={int(ns[-1]):,}; "
            "log-log slope",
            f"{t[-1]:.3g} s/sweep = {t[-1] / ns[-1] * 1e9:.0f} ns/update; slope {slope:.2f}",
            "plot",
            "-",
            "reported",
        )
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4.5))
    for d, marker in zip(cfg.scaling_ds, "osd^v"[: len(cfg.scaling_ds)], strict=True):
        ax.plot(ns, [results[(d, n)] for n in cfg.scaling_ns], marker=marker, label=f"D = {d}")
    ax.plot(ns, ns * 65e-9, "k--", lw=1, label="65 ns per point-update (goal, N = 2,000, D = 2)")
    ax.plot(ns, ns * 100e-9, "k:", lw=1, label="100 ns per point-update (goal, N = 1e5, D = 10)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("N (points)")
    ax.set_ylabel("seconds per sweep (numba kernel)")
    ax.set_title("pCRP collapsed Gibbs, r = 1.1, from the true 3 clusters")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="upper left", fontsize="small")
    fig.tight_layout()
    plot_path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(plot_path, dpi=110)
    plt.close(fig)
    rep.log(f"  plot written to {_shown(plot_path)}")


def section_moves(cfg: Config, rep: Report, cache: dict) -> None:
    """Default move set against plain sweeps, per sweep, in paired interleaved blocks."""
    import numpy as np

    from pymc_pcrp._kernels.chain import advance
    from pymc_pcrp._kernels.pair_moves import no_pairs, pair_picks
    from pymc_pcrp._kernels.sweep import init_state
    from pymc_pcrp.sampler import options as pcrp_gibbs

    n, d, sweeps, blocks = cfg.moves
    _, z, _, xc, params, tables = problem(n, d)
    rate = settled_rate(z, d)
    scans = pcrp_gibbs.SPLIT_MERGE_SCANS
    specks = pcrp_gibbs.auto_speck_moves(rate)
    n_pairs = pcrp_gibbs.auto_pair_moves(rate, n, d)
    pairs = (n_pairs, pair_picks(xc), np.zeros(2, dtype=np.int64))
    counts = np.empty(4, dtype=np.int64)
    out = np.empty(n, dtype=np.int64)

    def block(sm: float, sc: int, seed: int) -> tuple[float, np.ndarray]:
        state = init_state(xc, z, params)
        rng = np.random.default_rng(seed)
        plan = (sweeps, sm, sc, specks, pairs) if sm > 0 else (sweeps, 0.0, sc, 0.0, no_pairs())
        c0 = time.thread_time()
        advance(rng, (xc, state, params, tables), plan, (counts, out), None)
        return (time.thread_time() - c0) / sweeps, counts.copy()

    block(0.0, 0, 0)  # warm-up: numba cache load
    block(rate, scans, 0)
    plain, moves, ratios, tally = [], [], [], np.zeros(4, dtype=np.int64)
    for b in range(blocks):
        # alternate which runs first, so that a drift of the load hits both alike
        if b % 2:
            m, c = block(rate, scans, 10 + b)
            p, _ = block(0.0, 0, 10 + b)
        else:
            p, _ = block(0.0, 0, 10 + b)
            m, c = block(rate, scans, 10 + b)
        plain.append(p)
        moves.append(m)
        ratios.append(m / p)
        tally += c
    ratio = med(ratios)
    rep.log(
        f"  N={n} D={d}, from the true clusters, {blocks} paired blocks of {sweeps} sweeps "
        f"(CPU time, load {load()}): plain ms/sweep {fmt_list([1e3 * v for v in plain])}, "
        f"default (split_merge={rate:.3g}, split_merge_scans={scans}, speck_moves={specks:g}, "
        f"pair_moves={n_pairs:g}) "
        f"{fmt_list([1e3 * v for v in moves])}; ratios {fmt_list(ratios)}; "
        f"split acc/prop {tally[1]}/{tally[0]}, merge {tally[3]}/{tally[2]}"
    )
    r, status = goal_max(ratio, 1.5)
    rep.row(
        f"default move set (split_merge={rate:.3g}, split_merge_scans={scans}, "
        f"speck_moves={specks:g}, pair_moves={n_pairs:g}) / plain sweep "
        f"(split_merge=0), CPU per sweep, N={n:,} D={d}, same data and start "
        "(median of paired ratios)",
        f"{ratio:.2f} ({1e3 * med(moves):.3f} / {1e3 * med(plain):.3f} ms)",
        "<= 1.5",
        r,
        status,
    )


def section_nu0(cfg: Config, rep: Report, cache: dict) -> None:
    """The default prior's learned nu0 against a fixed nu0, per draw of one sweep."""
    for n, d in cfg.nu0:
        _nu0_case(n, d, *cfg.nu0_draws, rep)


def _nu0_case(n: int, d: int, draws: int, blocks: int, rep: Report) -> None:
    import numpy as np

    from pymc_pcrp._kernels.hyper import advance_scaled, make_scale_grid
    from pymc_pcrp._kernels.pair_moves import no_pairs
    from pymc_pcrp._kernels.sweep import init_state, sweep_tables
    from pymc_pcrp.sampler import options as pcrp_gibbs

    _, z, prior, xc, params, _ = problem(n, d)  # the default prior: it learns nu0
    rate = settled_rate(z, d)
    scans = pcrp_gibbs.SPLIT_MERGE_SCANS
    start = int(np.argmin(np.abs(prior.nu0_grid - prior.nu0)))
    grids = {
        "learned": (*prior.nu0_arrays(), start),
        "fixed": (np.array([prior.nu0]), np.zeros(1), 0),
    }
    counts = np.empty(4, dtype=np.int64)
    out = np.empty(n, dtype=np.int64)

    def block(which: str, seed: int) -> float:
        grid = make_scale_grid(xc, prior.psi0, *prior.grid_arrays(), *grids[which])
        tables = sweep_tables(xc, params)
        state = init_state(xc, z, params)
        rng = np.random.default_rng(seed)
        c0 = time.thread_time()
        for _ in range(draws):
            advance_scaled(
                rng,
                (xc, state, params, tables),
                grid,
                (1, rate, scans, 0.0, no_pairs()),
                (counts, out),
                None,
            )
        return (time.thread_time() - c0) / draws

    block("learned", 0)  # warm-up: numba cache load
    block("fixed", 0)
    learned, fixed, ratios = [], [], []
    for b in range(blocks):
        order = ("fixed", "learned") if b % 2 else ("learned", "fixed")
        got = {which: block(which, 20 + b) for which in order}
        learned.append(got["learned"])
        fixed.append(got["fixed"])
        ratios.append(got["learned"] / got["fixed"])
    ratio = med(ratios)
    rep.log(
        f"  N={n} D={d}, from the true clusters, {blocks} paired blocks of {draws} draws "
        f"of one sweep (CPU time, load {load()}): learned nu0 ms/draw "
        f"{fmt_list([1e3 * v for v in learned])}, fixed {fmt_list([1e3 * v for v in fixed])}; "
        f"ratios {fmt_list(ratios)}"
    )
    rep.row(
        f"learned nu0 ({prior.nu0_grid.size} values) / fixed nu0, both with the learned "
        f"scale and the default moves, CPU per draw of one sweep, N={n:,} D={d} "
        "(median of paired ratios)",
        f"{ratio:.2f} ({1e3 * med(learned):.3f} / {1e3 * med(fixed):.3f} ms)",
        "- (reported, no goal)",
        f"{ratio:.2f}",
        "reported",
    )


def section_restarts(cfg: Config, rep: Report, cache: dict) -> None:
    """What the default restarts during tuning cost: a whole fit with them and without."""
    draws, tune, blocks = cfg.restarts_fit
    for n, d in cfg.restarts:
        _restarts_case(n, d, draws, tune, blocks, rep)


def _restarts_case(n: int, d: int, draws: int, tune: int, blocks: int, rep: Report) -> None:
    from pymc_pcrp.sampler.options import auto_sweeps_per_draw
    from pymc_pcrp.sampler.restarts import auto_restarts

    x, _, prior, *_ = problem(n, d)
    model = build_model(x, prior)

    def fit(restarts, seed: int) -> float:
        c0 = time.process_time()  # one chain, in this process
        sample(
            model,
            draws=draws,
            tune=tune,
            spd=None,
            init="random",
            seed=seed,
            sm=None,
            step={"restarts": restarts},
            compute_convergence_checks=False,
        )
        return time.process_time() - c0

    fit(None, 0)  # warm-up: numba cache load
    on, off, ratios = [], [], []
    for b in range(blocks):
        order = (1, None) if b % 2 else (None, 1)
        got = {restarts: fit(restarts, 30 + b) for restarts in order}
        on.append(got[None])
        off.append(got[1])
        ratios.append(got[None] / got[1])
    ratio = med(ratios)
    starts = auto_restarts(auto_sweeps_per_draw(n, d), "random")
    rep.log(
        f"  N={n} D={d}: {blocks} paired fits of one chain, {draws} draws after {tune} tuning "
        f"draws (CPU s, load {load()}): default ({starts} restarts) {fmt_list(on)}, "
        f"restarts=1 {fmt_list(off)}; ratios {fmt_list(ratios)}"
    )
    rep.row(
        f"a fit with the default restarts during tuning ({starts} starts) / restarts=1, "
        f"one chain, {draws} draws after {tune} tuning draws, N={n:,} D={d} "
        "(CPU, median of paired ratios)",
        f"{ratio:.2f} ({med(on):.2f} / {med(off):.2f} s)",
        "- (reported, no goal)",
        f"{ratio:.2f}",
        "reported",
    )


def _cpu_per_call(calls: int, fn, *args) -> float:
    """CPU seconds per call of ``fn(*args)`` over ``calls`` calls, after one warm-up call."""
    fn(*args)  # numba cache load
    c0 = time.thread_time()
    for _ in range(calls):
        fn(*args)
    return (time.thread_time() - c0) / calls


def section_logjoint(cfg: Config, rep: Report, cache: dict) -> None:
    """The log joint the step reports, computed afresh each draw, against one plain sweep."""
    import numpy as np

    from pymc_pcrp._kernels.hyper import make_scale_grid, partition_log_joint_scaled
    from pymc_pcrp._kernels.log_joint import partition_log_joint
    from pymc_pcrp._kernels.sweep import gibbs_sweeps, init_state
    from pymc_pcrp.sampler.inputs import compiled_for

    for n, d in cfg.logjoint:
        _, z, prior, xc, params, tables = problem(n, d)
        grid = make_scale_grid(xc, prior.psi0, prior.scale_grid, prior.scale_log_weights, prior.nu0)
        state = init_state(xc, z, params)
        rng = np.random.default_rng(0)
        calls = max(2, cfg.logjoint_calls if n <= 10_000 else cfg.logjoint_calls // 50)
        # gibbs_sweeps through its compiled function: a call through numba's dispatcher
        # would also time the typing of the chain in Python (about 0.1 ms)
        args = (rng, (xc, state, params, tables), 1)
        sweep = _cpu_per_call(calls, compiled_for(gibbs_sweeps, args), *args)
        fixed = _cpu_per_call(calls, partition_log_joint, xc, z, params)
        scaled = _cpu_per_call(calls, partition_log_joint_scaled, xc, z, params, grid)
        k = int(z.max()) + 1
        rep.log(
            f"  N={n:,} D={d} K={k}: one sweep {1e3 * sweep:.3f} ms, fresh log joint "
            f"{1e3 * fixed:.3f} ms (fixed scale), {1e3 * scaled:.3f} ms (learned scale, "
            f"{grid.log_s.size} grid points); {calls} calls each, CPU time, load {load()}"
        )
        rep.row(
            f"fresh log joint per draw / one plain sweep, N={n:,} D={d} (learned scale)",
            f"{scaled / sweep:.2f} ({1e3 * scaled:.3f} / {1e3 * sweep:.3f} ms)",
            "- (reported, no goal)",
            f"{scaled / sweep:.2f}",
            "reported",
        )


def section_start(cfg: Config, rep: Report, cache: dict) -> None:
    """Seconds from building the step to its first draw, default init, the largest K0."""
    import numpy as np

    import pymc_pcrp as pcrp

    from pymc_pcrp.sampler.restarts import random_init_max_k

    n, d = cfg.start
    x, _, prior, _, _, _ = problem(n, d)
    model = build_model(x, prior)
    k_max = random_init_max_k(n)
    # The chain whose start costs most: the first seed that draws the largest K0.
    seed = next(
        s for s in range(10_000) if int(np.random.default_rng(s).integers(1, k_max + 1)) == k_max
    )
    # Warm-up on a smaller model: numba loads the compiled kernels from its cache once
    # per process (the 'startup' section measures that). 40,000 points, so that the
    # labels have the same dtype (int32) as at N = 1e6 and the same kernels are used.
    xs, _, ps, _, _, _ = problem(min(n, 40_000), d)
    small = build_model(xs, ps)
    with small:
        pcrp.PCRPGibbs([small["z"]], rng=1).step(small.initial_point())
    point = model.initial_point()
    c0, t0 = time.process_time(), time.perf_counter()
    with model:
        step = pcrp.PCRPGibbs([model["z"]], rng=np.random.default_rng(seed))
    built = time.perf_counter() - t0
    _, stats = step.step(point)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    k = int(stats[0]["n_clusters"])
    rep.log(
        f"  N={n} D={d}, seed {seed} draws K0={k_max} (the cap): first draw after {wall:.2f} s "
        f"wall (step built in {built:.2f} s), {cpu:.2f} s CPU (load {load()}); K after it {k}"
    )
    r, status = goal_max(wall, 10.0, " s")
    rep.row(
        f"default init (init='random', K0 <= {k_max}) to the first draw, N={n:,} D={d}, "
        f"worst case K0={k_max}, kernels cached: step built, start drawn, first sweep (wall)",
        f"{wall:.2f} s (CPU {cpu:.2f} s)",
        "< 10 s",
        r,
        status,
    )


# ---------------------------------------------------------------------------
# subprocess entry points


def section_hyper(cfg: Config, rep: Report, cache: dict) -> None:
    """Random alpha (and power) against fixed ones, in-loop seconds per draw; log Z_N costs."""
    import math

    import numpy as np
    import pymc as pm

    from common import ALPHA, POWER

    import pymc_pcrp as pcrp

    from pymc_pcrp.distributions.normaliser import log_normaliser

    n, d, draws, tune, runs = cfg.hyper
    x, _, prior, _, _, _ = problem(n, d)

    def run(kind: str, n_draws: int, seed: int) -> tuple[np.ndarray, dict]:
        """Seconds between consecutive kept draws (PyMC's callback), and posterior means.

        The gaps are wall seconds; the CPU seconds of the sampling thread between the
        same draws (``time.thread_time``, which a loaded machine inflates far less) go
        into ``cpu_gaps[kind]``.
        """
        stamps: list[float] = []
        cpu: list[float] = []
        with pm.Model() as model:
            alpha = pm.Gamma("alpha", 2.0, 1.0) if kind in ("alpha", "both") else ALPHA
            power = pm.Uniform("r", 0.8, 2.0) if kind in ("r", "both") else POWER
            z = pcrp.PowerCRP("z", alpha=alpha, power=power, n=n)
            pcrp.NIWMixture("x", z=z, prior=prior, observed=x)
        idata, _ = sample(
            model,
            draws=n_draws,
            tune=tune,
            init="random",
            sm=None,
            seed=seed,
            callback=lambda trace, draw: (
                stamps.append(time.perf_counter()),
                cpu.append(time.thread_time()),
            ),
        )
        post = idata.posterior
        means = {v: float(post[v].mean()) for v in ("n_clusters", "alpha", "r") if v in post}
        cpu_gaps[kind] = np.diff(cpu[tune:])
        return np.diff(stamps[tune:]), means

    cpu_gaps: dict = {}

    for kind in ("fixed", "alpha", "r"):  # warm-up: numba cache, Stirling rows of this r
        run(kind, 20, 0)
    with pm.Model() as model:  # which steps pm.sample builds for the random-alpha model
        z = pcrp.PowerCRP("z", alpha=pm.Gamma("alpha", 2.0, 1.0), power=POWER, n=n)
        pcrp.NIWMixture("x", z=z, prior=prior, observed=x)
    rep.log(f"  random alpha: pm.sample builds {_step_names(model)}")
    fixed, random_alpha, ratios, means, cpu_ratios = [], [], [], {}, []
    for b in range(runs):
        # alternate which runs first, so that a drift of the load hits both alike
        order = ("alpha", "fixed") if b % 2 else ("fixed", "alpha")
        per = {}
        for kind in order:
            gaps, means[kind] = run(kind, draws, 10 + b)
            per[kind] = gaps
        fixed.append(float(np.median(per["fixed"])))
        random_alpha.append(float(np.median(per["alpha"])))
        ratios.append(random_alpha[-1] / fixed[-1])
        mean_ratio = float(np.mean(per["alpha"]) / np.mean(per["fixed"]))
        cpu_f, cpu_a = (float(np.median(cpu_gaps[k])) for k in ("fixed", "alpha"))
        cpu_ratios.append(cpu_a / cpu_f)
        rep.log(
            f"  run {b}: per draw median fixed {1e3 * fixed[-1]:.3f} ms, random alpha "
            f"{1e3 * random_alpha[-1]:.3f} ms (ratio {ratios[-1]:.2f}; of the means "
            f"{mean_ratio:.2f}; CPU {1e3 * cpu_f:.3f} / {1e3 * cpu_a:.3f} ms, ratio "
            f"{cpu_ratios[-1]:.2f}); posterior means fixed {means['fixed']}, "
            f"random {means['alpha']}"
        )
    gaps_r, means["r"] = run("r", max(draws // 4, 50), 99)
    t_r = float(np.median(gaps_r))
    rep.log(f"  random r: per draw median {1e3 * t_r:.3f} ms; posterior means {means['r']}")
    # log Z_N at N: Stirling row (alpha varies, r fixed) and the recursion (r varies)
    log_normaliser(n, 1.0, POWER)
    t0 = time.perf_counter()
    alphas = np.exp(np.linspace(-2.0, 2.0, 200))
    for a in alphas:
        log_normaliser(n, float(a), POWER)
    t_row = (time.perf_counter() - t0) / alphas.size
    t0 = time.perf_counter()
    powers = np.linspace(1.01, 1.5, 10)
    for r in powers:
        log_normaliser(n, 1.0, float(r) + 1e-9 * math.pi, "recursion")
    t_rec = (time.perf_counter() - t0) / powers.size
    rep.log(
        f"  log Z_N at N={n}: {1e6 * t_row:.1f} us per alpha from the cached Stirling row "
        f"(r={POWER}); {1e3 * t_rec:.2f} ms per (alpha, r) by the O(N^2) recursion"
    )
    ratio = med(ratios)
    r, status = goal_max(ratio, 1.2)
    rep.row(
        f"random alpha (Gamma(2, 1), in PCRPGibbs) / fixed alpha, in-loop seconds per draw "
        f"through pm.sample, N={n:,} D={d} (median of {runs} paired runs of per-draw medians)",
        f"{ratio:.2f} ({1e3 * med(random_alpha):.3f} / {1e3 * med(fixed):.3f} ms)",
        "<= 1.2",
        r,
        status,
    )
    rep.row(
        f"the same in CPU seconds of the sampling thread per draw (time.thread_time), "
        f"N={n:,} D={d} (median of {runs} paired runs of per-draw medians)",
        f"{med(cpu_ratios):.2f}",
        "<= 1.2",
        *goal_max(med(cpu_ratios), 1.2),
    )
    rep.row(
        f"random power (Uniform(0.8, 2), PCRPHyper) / fixed, per draw, N={n:,} D={d}",
        f"{t_r / med(fixed):.1f} ({1e3 * t_r:.3f} / {1e3 * med(fixed):.3f} ms)",
        "-",
    )
    rep.row(
        f"log Z_N, N={n:,}: per alpha from the Stirling row / per (alpha, r) by recursion",
        f"{1e6 * t_row:.1f} us / {1e3 * t_rec:.2f} ms",
        "-",
    )


def section_diag(cfg: Config, rep: Report, cache: dict) -> None:
    """The diagonal family's sweep against the full family's, ns per point-update."""
    import numpy as np

    from common import ALPHA, POWER

    import pymc_pcrp as pcrp

    from pymc_pcrp._kernels.diag_state import diag_tables, init_diag_state, make_diag_params
    from pymc_pcrp._kernels.diag_sweep import diag_sweeps

    for n, d, sweeps in cfg.diag:
        x, z, _, xc, params, tables = problem(n, d)
        # the same prior scale as the full family's fixed default: psi0 = diag(var(X))
        dprior = pcrp.NIWPrior.from_data(x, covariance="diag")
        dxc = np.ascontiguousarray(x - dprior.mu0)
        dparams = make_diag_params(ALPHA, POWER, dprior.kappa0, dprior.nu0, np.diag(dprior.psi0))
        dtables = diag_tables(dxc, dparams)

        def diag_run(seed: int, dxc=dxc, z=z, dparams=dparams, dtables=dtables, sweeps=sweeps):
            state = init_diag_state(dxc, z, dparams)
            rng = np.random.default_rng(seed)
            c0 = time.thread_time()
            diag_sweeps(rng, (dxc, state, dparams, dtables), sweeps)
            return time.thread_time() - c0, int(state.k[0])

        diag_run(0)  # warm-up: numba cache load
        time_kernel(xc, z, params, tables, 1, 0)
        full_ns, diag_ns, ratios, ks = [], [], [], []
        for r in range(cfg.repeats):
            # alternate which runs first, so that a drift of the load hits both alike
            if r % 2:
                dc, dk = diag_run(1 + r)
                _, fk, fc = time_kernel(xc, z, params, tables, sweeps, 1 + r)
            else:
                _, fk, fc = time_kernel(xc, z, params, tables, sweeps, 1 + r)
                dc, dk = diag_run(1 + r)
            full_ns.append(fc / (sweeps * n) * 1e9)
            diag_ns.append(dc / (sweeps * n) * 1e9)
            ratios.append(diag_ns[-1] / full_ns[-1])
            ks.append(f"{fk}/{dk}")
        rep.log(
            f"  N={n:,} D={d}: {sweeps} sweep(s) x {cfg.repeats} paired repeats from the true "
            f"clusters (CPU time, load {load()}): full ns/update {fmt_list(full_ns, '.1f')}, "
            f"diag {fmt_list(diag_ns, '.1f')}; diag/full {fmt_list(ratios)}; K at end "
            f"(full/diag) {ks}"
        )
        ratio = med(ratios)
        rep.row(
            f"diagonal family / full family, kernel ns per point-update (one sweep, CPU), "
            f"N={n:,} D={d}, from the true clusters (median of paired ratios)",
            f"{ratio:.2f} ({med(diag_ns):.1f} / {med(full_ns):.1f} ns)",
            "- (reported, no goal)",
            f"{ratio:.2f}",
            "reported",
        )


def _step_names(model) -> str:
    """The steps ``pm.sample`` builds for ``model``: ``Class[var, ...]``, comma-separated."""
    import pymc as pm

    from pymc.sampling.mcmc import assign_step_methods, instantiate_steppers

    with model:
        _, selected = assign_step_methods(model)
        built = instantiate_steppers(model, [], selected)
    stack, names = list(built) if isinstance(built, list) else [built], []
    while stack:
        step = stack.pop()
        if isinstance(step, pm.CompoundStep):
            stack.extend(step.methods)
        else:
            names.append(f"{type(step).__name__}[{', '.join(v.name for v in step.vars)}]")
    return ", ".join(sorted(names))


def child_memory(n: int, d: int, draws: int, keep: str) -> None:
    import resource

    quiet()
    x, z, prior, _, _, _ = problem(n, d)
    model = build_model(x, prior)
    rss_before = _rss_mb()
    kw = {"var_names": ["n_clusters"]} if keep == "n_clusters" else {}
    idata, wall = sample(model, draws=draws, z0=z, seed=600, **kw)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    rss_after = _rss_mb()
    out = {
        "n": n,
        "d": d,
        "draws": draws,
        "keep": keep,
        "posterior_vars": sorted(idata.posterior.data_vars),
        "rss_before_mb": round(rss_before, 1),
        "peak_mb": round(peak, 1),
        "rss_after_mb": round(rss_after, 1),
        "sample_s": round(wall, 1),
        "k_end": int(idata.sample_stats["n_clusters"].values[0, -1]),
    }
    if "z" in idata.posterior:
        zz = idata.posterior["z"].values
        out["z_dtype"] = str(zz.dtype)
        out["z_bytes_per_label"] = int(zz.dtype.itemsize)
        out["z_mb"] = round(zz.nbytes / 2**20, 1)
        del zz
    print(json.dumps(out))


def child_memory_draw(n: int, d: int, scale: str) -> None:
    from common import mixture_data

    import pymc_pcrp as pcrp

    quiet()
    x, _ = mixture_data(n, d)
    prior = pcrp.NIWPrior.from_data(x, scale=scale if scale == "learn" else float(scale))
    model = build_model(x, prior)
    rss_before = _rss_mb()
    idata, wall = sample(
        model, draws=1, init="random", sm=None, seed=700, compute_convergence_checks=False
    )
    out = {
        "n": n,
        "d": d,
        "rss_before_mb": round(rss_before * 1024 * 1024 / 1e6, 1),
        "peak_mb": round(_peak_mb(), 1),
        "sample_s": round(wall, 2),
        "k": int(idata.sample_stats["n_clusters"].values[0, -1]),
    }
    print(json.dumps(out))


def _peak_mb() -> float:
    """Peak resident memory of this process (VmHWM), in MB of 10^6 bytes."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024 / 1e6
    return float("nan")


def _rss_mb() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def _cpu() -> float:
    import resource

    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def child_startup(n: int, d: int) -> None:
    t0 = time.perf_counter()
    c0 = _cpu()
    import pymc  # noqa: F401  (imported by pymc_pcrp anyway; timed apart)

    t_pymc = time.perf_counter() - t0
    import pymc_pcrp  # noqa: F401

    t_import = time.perf_counter() - t0
    quiet()
    x, z, prior, *_ = _startup_data(n, d)
    model = build_model(x, prior)
    t_model = time.perf_counter() - t0
    stamps = []

    def callback(trace, draw):
        stamps.append((time.perf_counter() - t0, _cpu() - c0))

    sample(model, draws=1, z0=z, seed=0, compute_convergence_checks=False, callback=callback)
    t_return = time.perf_counter() - t0
    print(
        json.dumps(
            {
                "import_pymc": round(t_pymc, 3),
                "import": round(t_import, 3),
                "model": round(t_model - t_import, 3),
                "first_sweep": round(stamps[0][0], 3),
                "first_sweep_cpu": round(stamps[0][1], 3),
                "sample_returned": round(t_return, 3),
            }
        )
    )


def _startup_data(n: int, d: int):
    from common import mixture_data

    import pymc_pcrp as pcrp

    x, z = mixture_data(n, d)
    return x, z, pcrp.NIWPrior.from_data(x)


# ---------------------------------------------------------------------------
# header


def machine_lines(argv: list[str]) -> list[str]:
    import numba
    import numpy as np
    import pymc as pm
    import pytensor
    import sklearn

    import pymc_pcrp

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            names = [ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name")]
        cpu = names[0] if names else cpu
    except OSError:
        pass
    try:
        with open("/proc/meminfo") as fh:
            mem = int(fh.readline().split()[1]) / 2**20
        mem_s = f"{mem:.1f} GiB"
    except (OSError, ValueError, IndexError):
        mem_s = "?"
    pkg = Path(pymc_pcrp.__file__).resolve().parent
    sweep = pkg / "_kernels" / "sweep.py"
    digest = hashlib.sha256(sweep.read_bytes()).hexdigest()[:12]
    git = _git(pkg)
    now = datetime.datetime.now(datetime.timezone.utc)
    return [
        f"date      {now:%Y-%m-%d %H:%M} UTC",
        "command   " + " ".join(["python", *[shlex.quote(a) for a in argv]]),
        f"machine   {cpu}; os.cpu_count() = {os.cpu_count()}, "
        f"usable {len(os.sched_getaffinity(0))}; memory {mem_s}; {platform.platform()}",
        f"load      {load()} (1/5/15 min, at start)",
        f"threads   OMP/OPENBLAS/MKL/NUMBA_NUM_THREADS = {os.environ['OMP_NUM_THREADS']}/"
        f"{os.environ['OPENBLAS_NUM_THREADS']}/{os.environ['MKL_NUM_THREADS']}/"
        f"{os.environ['NUMBA_NUM_THREADS']}",
        f"software  python {platform.python_version()}, numpy {np.__version__}, numba "
        f"{numba.__version__}, pymc {pm.__version__}, pytensor {pytensor.__version__}, "
        f"scikit-learn {sklearn.__version__}",
        f"pymc_pcrp {_shown(pkg)} ({git}); _kernels/sweep.py sha256 {digest}",
    ]


def _git(pkg: Path) -> str:
    try:
        head = subprocess.run(
            ["git", "-C", str(pkg), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(pkg), "status", "--porcelain", "--", "."],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        return f"git {head}" + (", with uncommitted changes" if dirty else ", clean")
    except (OSError, subprocess.CalledProcessError):
        return "not a git checkout"


def _shown(path: Path) -> str:
    """A path as printed in a recorded run: relative to the repository, never absolute."""
    path = Path(path).resolve()
    return (
        str(path.relative_to(REPO))
        if path.is_relative_to(REPO)
        else f"(outside the repository) {path.name}"
    )


def update_doc(lines: list[str]) -> None:
    text = DOC.read_text() if DOC.exists() else f"{DOC_BEGIN}\n{DOC_END}\n"
    if DOC_BEGIN not in text or DOC_END not in text:
        raise SystemExit(f"{DOC} has no {DOC_BEGIN} ... {DOC_END} block to replace")
    head, rest = text.split(DOC_BEGIN, 1)
    _, tail = rest.split(DOC_END, 1)
    block = "\n".join(["", "```", *lines, "```", ""])
    DOC.write_text(head + DOC_BEGIN + block + DOC_END + tail)


# ---------------------------------------------------------------------------


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--child":
        kind, *rest = argv[1:]
        sys.path.insert(0, str(HERE))
        if kind == "memory":
            child_memory(int(rest[0]), int(rest[1]), int(rest[2]), rest[3])
        elif kind == "memory_draw":
            child_memory_draw(int(rest[0]), int(rest[1]), rest[2] if len(rest) > 2 else "learn")
        elif kind == "startup":
            child_startup(int(rest[0]), int(rest[1]))
        return 0

    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n\n".join(__doc__.split("\n\n")[-1:]),
    )
    ap.add_argument("--quick", action="store_true", help="small sizes: a smoke run")
    ap.add_argument("--only", default="", help="comma-separated section names (default: all)")
    ap.add_argument("--repeats", type=int, help="timed repeats per figure (default 3)")
    ap.add_argument(
        "--paper-repeats", type=int, help="repeats of the paper protocol section (default 3)"
    )
    ap.add_argument("--plot", type=Path, help=f"where the scaling plot goes (default {PLOT})")
    ap.add_argument(
        "--update-doc",
        action="store_true",
        help=f"write this run's output into {DOC.relative_to(REPO)} between its markers",
    )
    args = ap.parse_args(argv)
    cfg = Config.quick_config() if args.quick else Config()
    if args.repeats:
        cfg.repeats = args.repeats
    if args.paper_repeats:
        cfg.paper_repeats = args.paper_repeats
    only = [s.strip() for s in args.only.split(",") if s.strip()] or list(SECTIONS)
    unknown = sorted(set(only) - set(SECTIONS))
    if unknown:
        ap.error(f"unknown section(s) {unknown}; choose from {', '.join(SECTIONS)}")
    plot = args.plot or (
        Path(tempfile.gettempdir()) / "pcrp_scaling_quick.png" if cfg.quick else PLOT
    )

    sys.path.insert(0, str(HERE))
    quiet()
    rep = Report()
    t_all = time.perf_counter()
    for line in machine_lines(["benchmarks/run.py", *argv]):
        rep.log(line)
    rep.log(
        "data      fixed-seed mixture of 3 Gaussians (benchmarks/common.py); model "
        "PowerCRP(alpha=1, r=1.1) + NIWMixture(NIWPrior.from_data(X))"
    )
    funcs = {
        "check": section_check,
        "kernel": section_kernel,
        "paper": section_paper,
        "reference": section_reference,
        "naive": section_naive,
        "sklearn": section_sklearn,
        "memory": section_memory,
        "startup": section_startup,
        "scale": section_scale,
        "scaling": lambda c, r, k: section_scaling(c, r, k, plot),
        "moves": section_moves,
        "nu0": section_nu0,
        "restarts": section_restarts,
        "logjoint": section_logjoint,
        "start": section_start,
        "hyper": section_hyper,
        "diag": section_diag,
    }
    cache: dict = {}
    for name in SECTIONS:
        if name not in only:
            continue
        rep.log()
        rep.log(f"[{name}] load {load()}")
        t0 = time.perf_counter()
        try:
            funcs[name](cfg, rep, cache)
        except Exception as exc:  # report and go on: one broken section must not hide the rest
            rep.log(f"  FAILED: {type(exc).__name__}: {exc}")
            rep.row(f"section {name}", f"FAILED: {type(exc).__name__}: {exc}", "-", "-", "error")
        rep.log(f"  ({time.perf_counter() - t0:.0f} s)")
    rep.log()
    rep.log(f"load      {load()} (1/5/15 min, at end); total {time.perf_counter() - t_all:.0f} s")
    rep.log(
        "ratio = measured / goal (or ours / baseline); medians of repeats; "
        "wall = whole pm.sample call, in-loop = PyMC's sampling_time"
    )
    rep.log()
    for line in rep.table():
        rep.log(line)
    if args.update_doc:
        update_doc(rep.lines)
        print(f"\nwritten into {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
