"""Seconds to a converged answer against N, beside scikit-learn's variational DP mixture.

Run from the repository root (``PYTHONPATH=.`` when the package is not installed)::

    python benchmarks/scaling.py                                 # N = 1e4, 1e5, 1e6
    python benchmarks/scaling.py --sizes 10000,100000 --json benchmarks/results/scaling.json \\
        --out benchmarks/results/scaling.md
    python benchmarks/scaling.py --render-only --append --json benchmarks/results/scaling.json \\
        --out benchmarks/results/scaling.md                      # the page's table, no fitting

Data: a mixture of 10 Gaussian components with equal weights and identity
covariances in D = 10, in two versions drawn with fixed seeds. ``separated``:
component means drawn so that two means are 8 standard deviations apart on
average; ``overlapping``: 2.5 standard deviations apart on average, so that
neighbouring components share a good part of their points.

For each size and case the script measures:

* **pCRP** (``pymc_pcrp.fit`` with its defaults, r = 1.1, 4 chains on
  ``--cores`` processes): fits with a growing budget (``--budgets`` kept draws,
  half as many tuning draws), each a fresh run from the same seed, until one
  reaches R-hat <= 1.01 and bulk ESS >= 400 for both the number of clusters K
  and the log joint. Reported: the wall and CPU seconds of that first converged
  fit ("seconds to a converged answer"), the seconds of all attempts together,
  the posterior mean K and the ARI of the highest-log-joint draw to the true
  components. Above ``--labels-up-to`` points (200,000) the fits keep K and the
  log joint of each draw but not its labels (``var_names=["n_clusters"]``): the
  labels of every draw would not fit in memory at N = 1e6, and the ARI is then
  not reported.
* **scikit-learn** ``BayesianGaussianMixture`` (Dirichlet-process weights, 20
  components, full covariances, ``max_iter=1000``), fitted once: wall and CPU
  seconds, the number of components that hold points, the ARI and whether
  scikit-learn reports convergence.

Every measurement runs in a fresh child process (the script calls itself with
``--worker``); its peak memory is the largest sum of resident set sizes of that
process and its descendants (PyMC's chain processes), sampled every 0.1 s, with
the imports and the data included. The numba kernels are compiled (or loaded)
by an untimed warm-up fit in each pCRP child.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import datetime  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import resource  # noqa: E402
import shlex  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
COMPONENTS = 10
SEPARATION = {"separated": 8.0, "overlapping": 2.5}  # mean distance between two means, in sd
RHAT_MAX, ESS_MIN = 1.01, 400.0


def make_data(n: int, d: int, case: str, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` points of the 10-component mixture of ``case``, and their components."""
    if case not in SEPARATION:
        raise ValueError(f"Argument 'case' must be one of {sorted(SEPARATION)}, got {case!r}.")
    rng = np.random.default_rng([seed, n, d, list(SEPARATION).index(case)])
    # Two independent N(0, s^2 I_d) means are s sqrt(2 d) apart on average.
    spread = SEPARATION[case] / np.sqrt(2.0 * d)
    means = rng.normal(0.0, spread, size=(COMPONENTS, d))
    truth = rng.integers(0, COMPONENTS, size=n)
    X = means[truth] + rng.normal(size=(n, d))
    return X, truth


def _cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _diagnostics(values: np.ndarray) -> tuple[float, float]:
    """Rank-normalised R-hat and bulk ESS of a ``(chain, draw)`` array (constant: 1, inf)."""
    import arviz as az

    arr = np.asarray(values, dtype=np.float64)
    if np.ptp(arr) == 0:
        return 1.0, float("inf")
    ds = az.convert_to_dataset({"v": arr})
    return float(az.rhat(ds)["v"]), float(az.ess(ds, method="bulk")["v"])


def _ari(truth: np.ndarray, labels: np.ndarray) -> float:
    from sklearn.metrics import adjusted_rand_score

    return float(adjusted_rand_score(truth, labels))


def worker_pcrp(
    n: int, d: int, case: str, seed: int, draws: int, cores: int, power: float, labels: bool
):
    """One pCRP fit; ``labels=False`` keeps only K of each draw (``var_names``), not ``z``."""
    import logging

    import pymc_pcrp as pcrp

    for name in ("pymc", "pymc.sampling", "pymc.stats.convergence", "pymc_pcrp"):
        logging.getLogger(name).setLevel(logging.ERROR)
    warnings.filterwarnings("ignore")
    X, truth = make_data(n, d, case, seed)
    warm = np.random.default_rng(0).normal(size=(40, d))
    pcrp.fit(warm, power=power, draws=10, tune=10, chains=4, cores=cores, random_seed=0)
    cpu0, wall0 = _cpu_seconds(), time.perf_counter()
    idata = pcrp.fit(
        X, power=power, draws=draws, tune=max(100, draws // 2), chains=4, cores=cores,
        random_seed=seed, compute_convergence_checks=False,
        **({} if labels else {"var_names": ["n_clusters"]}),
    )  # fmt: skip
    wall, cpu = time.perf_counter() - wall0, _cpu_seconds() - cpu0
    k = idata.posterior["n_clusters"].values
    lj = idata.sample_stats["log_joint"].values
    rhat_k, ess_k = _diagnostics(k)
    rhat_lj, ess_lj = _diagnostics(lj)
    ari, k_best = float("nan"), 0  # without the labels: not known
    if labels:
        chain, draw = np.unravel_index(np.argmax(lj), lj.shape)
        best = idata.posterior["z"].values[chain, draw]
        ari, k_best = _ari(truth, best), int(np.unique(best).size)
    return {
        "draws": draws,
        "tune": max(100, draws // 2),
        "wall_s": wall,
        "cpu_s": cpu,
        "mean_k": float(k.mean()),
        "rhat_k": rhat_k,
        "ess_k": ess_k,
        "rhat_lj": rhat_lj,
        "ess_lj": ess_lj,
        "ari_best_draw": ari,
        "k_best_draw": k_best,
        "converged": bool(
            rhat_k <= RHAT_MAX and rhat_lj <= RHAT_MAX and ess_k >= ESS_MIN and ess_lj >= ESS_MIN
        ),
    }


def worker_sklearn(n: int, d: int, case: str, seed: int):
    from sklearn.mixture import BayesianGaussianMixture

    X, truth = make_data(n, d, case, seed)
    model = BayesianGaussianMixture(
        n_components=20,
        weight_concentration_prior_type="dirichlet_process",
        covariance_type="full",
        max_iter=1000,
        random_state=seed,
    )
    cpu0, wall0 = _cpu_seconds(), time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X)
    wall, cpu = time.perf_counter() - wall0, _cpu_seconds() - cpu0
    labels = model.predict(X)
    return {
        "wall_s": wall,
        "cpu_s": cpu,
        "k": int(np.unique(labels).size),
        "ari": _ari(truth, labels),
        "converged": bool(model.converged_),
        "n_iter": int(model.n_iter_),
    }


def _tree_rss(proc) -> int:
    import psutil

    try:
        procs = [proc, *proc.children(recursive=True)]
    except psutil.Error:
        return 0
    total = 0
    for p in procs:
        try:
            total += p.memory_info().rss
        except psutil.Error:
            pass
    return total


def run_child(args: list[str]) -> dict:
    """Run ``--worker args`` in a child process; its JSON result plus peak memory."""
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", *args]
    child = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=dict(os.environ))
    peak = 0
    try:
        import psutil

        proc = psutil.Process(child.pid)
        while child.poll() is None:
            peak = max(peak, _tree_rss(proc))
            time.sleep(0.1)
    except ImportError:  # no psutil: the largest single process instead of the tree
        child.wait()
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    out = child.stdout.read() if child.stdout else ""
    if child.returncode != 0:
        raise RuntimeError(f"worker {args} failed with status {child.returncode}")
    result = json.loads(out.strip().splitlines()[-1])
    result["peak_mb"] = peak / 2**20
    return result


def _git_commit() -> str:
    try:
        sha = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
        dirty = subprocess.run(
            ["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return sha + (" (with uncommitted changes)" if dirty else "")


def _fmt_s(x: float) -> str:
    return f"{x:,.0f}" if x >= 100 else f"{x:.1f}"


def _fmt_ari(x: float) -> str:
    return "labels not kept" if x != x else f"{x:.3f}"  # NaN: the fit kept K only


def table(results: list[dict]) -> str:
    lines = [
        "| N | case | pCRP: s to converged (CPU s) | draws | R-hat K / logp | ESS K / logp "
        "| mean K | ARI | all attempts s | peak MB | sklearn: s (CPU s) | K | ARI | converged "
        "| peak MB |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        p, s = r["pcrp"], r["sklearn"]
        final = p["attempts"][-1]
        head = "" if final["converged"] else "not reached: "
        lines.append(
            f"| {r['n']:,} | {r['case']} | {head}{_fmt_s(final['wall_s'])} "
            f"({_fmt_s(final['cpu_s'])}) | {final['draws']} "
            f"| {final['rhat_k']:.3f} / {final['rhat_lj']:.3f} "
            f"| {final['ess_k']:.0f} / {final['ess_lj']:.0f} | {final['mean_k']:.2f} "
            f"| {_fmt_ari(final['ari_best_draw'])} | {_fmt_s(p['total_wall_s'])} "
            f"| {max(a['peak_mb'] for a in p['attempts']):,.0f} "
            + (
                "| not collected (run cut short) | | | | |"
                if s.get("pending")
                else f"| {_fmt_s(s['wall_s'])} ({_fmt_s(s['cpu_s'])}) | {s['k']} "
                f"| {s['ari']:.3f} | {'yes' if s['converged'] else 'no'} ({s['n_iter']} it.) "
                f"| {s['peak_mb']:,.0f} |"
            )
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--worker":
        kind, n, d, case, seed = argv[1], int(argv[2]), int(argv[3]), argv[4], int(argv[5])
        if kind == "pcrp":
            out = worker_pcrp(
                n, d, case, seed, int(argv[6]), int(argv[7]), float(argv[8]), argv[9] == "1"
            )
        else:
            out = worker_sklearn(n, d, case, seed)
        print(json.dumps(out), flush=True)
        return 0

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000", help="comma-separated N")
    parser.add_argument("--dim", type=int, default=10)
    parser.add_argument("--cases", default="separated,overlapping")
    parser.add_argument("--budgets", default="250,500,1000,2000", help="kept draws per attempt")
    parser.add_argument("--power", type=float, default=1.1)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-sklearn", dest="sklearn", action="store_false")
    parser.add_argument(
        "--peer-alongside",
        action="store_true",
        help="start every scikit-learn fit at once, beside the pCRP fits, so that all cores "
        "are busy (its single-threaded fit would leave one idle); wall seconds are then "
        "measured under shared cores and the CPU seconds are the ones to compare",
    )
    parser.add_argument(
        "--labels-up-to",
        type=int,
        default=200_000,
        help="keep every draw's labels (for the ARI) only up to this N; above, K and the "
        "log joint only, whose memory does not grow with the draws",
    )
    parser.add_argument(
        "--render-only",
        action="store_true",
        help="fit nothing: write the markdown of the cells recorded in --json (with --append)",
    )
    parser.add_argument("--out", default=None, help="also write the markdown here")
    parser.add_argument("--json", default=None, help="also write the raw results here")
    parser.add_argument(
        "--append",
        action="store_true",
        help="keep the cells already in --json (each keeps its own run header) and add these",
    )
    args = parser.parse_args(argv)
    if args.render_only and not (args.append and args.json):
        parser.error("--render-only needs --append and --json (the recorded cells to render)")
    sizes = [] if args.render_only else [int(float(s)) for s in args.sizes.split(",")]
    cases = args.cases.split(",")
    for case in cases:
        if case not in SEPARATION:
            parser.error(f"--cases: unknown case {case!r}; choose from {sorted(SEPARATION)}")
    budgets = [int(b) for b in args.budgets.split(",")]

    chunks: list[str] = []

    def emit(text: str) -> None:
        chunks.append(text)
        print(text, flush=True)

    import pymc_pcrp

    load = os.getloadavg()
    header = {
        "command": "python benchmarks/scaling.py " + " ".join(shlex.quote(a) for a in argv),
        "date": f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
        "commit": _git_commit(),
        "machine": f"{os.cpu_count()} CPUs, {platform.machine()}, load average at start "
        f"{load[0]:.2f}/{load[1]:.2f}/{load[2]:.2f}",
        "versions": f"python {platform.python_version()}, pymc_pcrp {pymc_pcrp.__version__}",
    }
    header["setting"] = f"pCRP at r = {args.power}, 4 chains on {args.cores} cores"
    if args.sklearn and args.peer_alongside:
        header["setting"] += (
            "; scikit-learn fitted alongside the pCRP fits (wall seconds under shared cores, "
            "compare the CPU seconds)"
        )
    results = []
    if args.append and args.json and Path(args.json).is_file():
        old = json.loads(Path(args.json).read_text())
        results = old["results"]
        for cell in results:  # cells of a file written before headers were kept per cell
            cell.setdefault("header", old.get("header"))
    runs = [r["header"] for r in results if "header" in r]
    runs = [h for i, h in enumerate(runs) if h not in runs[:i]]
    runs += [] if args.render_only else [header]
    for run in runs:
        emit(f"- command: `{run['command'].strip()}`")
        emit(f"  - date: {run['date']}; git commit: {run['commit']}; machine: {run['machine']}")
        emit(f"  - {run['versions']}; {run.get('setting', '')}")
    started = time.perf_counter()
    peer_fits = {}
    if args.sklearn and args.peer_alongside:
        from concurrent.futures import ThreadPoolExecutor

        pool = ThreadPoolExecutor(max_workers=len(sizes) * len(cases))
        for n in sizes:
            for case in cases:
                peer_fits[n, case] = pool.submit(
                    run_child, ["sklearn", str(n), str(args.dim), case, str(args.seed)]
                )
    for n in sizes:
        for case in cases:
            attempts = []
            for draws in budgets:
                res = run_child(
                    ["pcrp", str(n), str(args.dim), case, str(args.seed), str(draws),
                     str(args.cores), str(args.power), str(int(n <= args.labels_up_to))]
                )  # fmt: skip
                attempts.append(res)
                print(f"  N={n} {case} pCRP draws={draws}: {json.dumps(res)}", file=sys.stderr)
                if res["converged"]:
                    break
            sk = {"wall_s": float("nan"), "cpu_s": float("nan"), "k": 0, "ari": float("nan"),
                  "converged": False, "n_iter": 0, "peak_mb": float("nan")}  # fmt: skip
            if (n, case) in peer_fits:  # collected after the pCRP cells: no waiting for it
                sk = dict(sk, pending=True)
            elif args.sklearn:
                sk = run_child(["sklearn", str(n), str(args.dim), case, str(args.seed)])
                print(f"  N={n} {case} sklearn: {json.dumps(sk)}", file=sys.stderr)
            results.append(
                {
                    "n": n,
                    "d": args.dim,
                    "case": case,
                    "header": header,
                    "pcrp": {
                        "attempts": attempts,
                        "total_wall_s": sum(a["wall_s"] for a in attempts),
                    },
                    "sklearn": sk,
                }
            )
            if args.json:  # after every cell, so that a run cut short keeps what it measured
                Path(args.json).write_text(
                    json.dumps({"header": header, "results": results}, indent=1)
                )
    for cell in results:  # the scikit-learn fits run alongside: collect them now
        if cell["sklearn"].get("pending") and (cell["n"], cell["case"]) in peer_fits:
            cell["sklearn"] = peer_fits[cell["n"], cell["case"]].result()
            print(f"  N={cell['n']} {cell['case']} sklearn: {json.dumps(cell['sklearn'])}",
                  file=sys.stderr)  # fmt: skip
            if args.json:
                Path(args.json).write_text(
                    json.dumps({"header": header, "results": results}, indent=1)
                )
    emit("")
    emit(table(results))
    if not args.render_only:
        load = os.getloadavg()
        emit("")
        emit(
            f"Total {time.perf_counter() - started:,.0f} s; load average at end "
            f"{load[0]:.2f}/{load[1]:.2f}/{load[2]:.2f}."
        )
    if args.out:
        Path(args.out).write_text("\n".join(chunks) + "\n")
    if args.json and not args.render_only:
        Path(args.json).write_text(json.dumps({"header": header, "results": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
