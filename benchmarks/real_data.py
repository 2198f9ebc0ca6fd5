"""Real-data panel: does the pCRP sampler give trustworthy answers on standard data sets?

Run from the repository root (``PYTHONPATH=.`` when the package is not installed)::

    python benchmarks/real_data.py                       # full panel, package defaults
    python benchmarks/real_data.py --datasets iris,wine --no-cv --no-peers
    python benchmarks/real_data.py --step-kwargs '{"split_merge": 5}' --out run.md

For every data set (each column standardised to mean 0, sd 1) and every power
``r`` of ``--powers`` (plus the cross-validated ``r`` unless ``--no-cv``), the
script fits ``--chains`` chains with the package's ``fit`` (whatever its current
defaults are; ``--step-kwargs`` adds options of the step method) and reports:

* posterior mean K (pooled) and the mean K of each chain;
* rank-normalised R-hat and bulk ESS (ArviZ) of K (``sample_stats.n_clusters``)
  and of the log joint (``sample_stats.log_joint``);
* the VI point estimate's K, its cluster sizes and its ARI to the true classes;
* wall seconds of the ``fit`` call (after one untimed warm-up fit, so numba
  kernels are compiled and cached before anything is timed);
* ``ok``: R-hat <= 1.01 and bulk ESS >= 400 for both K and log joint, and
  ``<= 30`` seconds (the issue's target).

Beside them, on the same standardised data: scikit-learn's
``BayesianGaussianMixture`` (DP weights, 20 components) and, through
``Rscript benchmarks/peers.R``, ``mclust::Mclust`` and ``bayesm::rDPGibbs``. A peer
whose software is absent is skipped with a printed message. See
``docs/real_data.md`` for the definitions and the recorded runs.

Every name taken from ``pymc_pcrp`` is imported in the adapter section below, so
a change of the package layout needs an edit there only.
"""

from __future__ import annotations

import os

# One thread per process for BLAS/OpenMP/numba (the machine is small and shared, and pm.sample
# runs its chains in separate processes); an explicit setting in the environment wins.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import datetime  # noqa: E402
import importlib  # noqa: E402
import inspect  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import shlex  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

from dataclasses import asdict, dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

REPO = Path(__file__).resolve().parent.parent

# =============================================================================================
# Adapter: the only place that touches pymc_pcrp. Each name is looked up in the listed modules
# in order (today one module each), so a future move of a name is a one-line change here.
# =============================================================================================

_LOCATIONS = {
    "fit": ("pymc_pcrp",),
    "point_estimate": ("pymc_pcrp",),
    "compare_chains": ("pymc_pcrp.diagnostics",),
    "cross_validate_power": ("pymc_pcrp.model_selection",),
    "split_train_test": ("pymc_pcrp.model_selection",),
    "load_old_faithful": ("pymc_pcrp.datasets",),
    "load_digits_1to4": ("pymc_pcrp.datasets",),
    "sim2": ("pymc_pcrp.datasets",),
    "PCRPGibbs": ("pymc_pcrp",),
    "NIWPrior": ("pymc_pcrp",),
}


def _pcrp(name: str):
    """Return ``name`` from the first module of ``_LOCATIONS[name]`` that defines it."""
    for module in _LOCATIONS[name]:
        try:
            obj = getattr(importlib.import_module(module), name, None)
        except ImportError:
            continue
        if obj is not None:
            return obj
    raise ImportError(f"pymc_pcrp.{name} not found in any of {_LOCATIONS[name]}")


def pcrp_fit(
    X, power, *, draws, tune, chains, cores, seed, step_kwargs, covariance="full", nu0=None
):
    """Sample the pCRP posterior with the package defaults plus ``step_kwargs``.

    ``covariance="diag"`` fits the diagonal-covariance family, with the default
    prior of that family (``NIWPrior.from_data(X, covariance="diag")``); ``nu0``
    replaces the prior's default ``nu0`` (either family); ``"D+2"`` means
    ``X.shape[1] + 2`` and ``"learn"`` the hyperprior of ``from_data(nu0="learn")``.
    """
    extra = {"pcrp_gibbs": dict(step_kwargs)} if step_kwargs else {}
    if nu0 == "D+2":
        nu0 = X.shape[1] + 2.0
    if covariance != "full" or nu0 is not None:
        extra["prior"] = _pcrp("NIWPrior").from_data(X, covariance=covariance, nu0=nu0)
    return _pcrp("fit")(
        X,
        power=power,
        draws=draws,
        tune=tune,
        chains=chains,
        cores=cores,
        random_seed=seed,
        progressbar=False,
        compute_convergence_checks=False,
        **extra,
    )


def pcrp_k_and_logjoint(idata) -> tuple[np.ndarray, np.ndarray]:
    """K and log joint of every draw, each of shape ``(chain, draw)``."""
    stats = idata.sample_stats
    return np.asarray(stats["n_clusters"].values), np.asarray(stats["log_joint"].values)


def pcrp_point_labels(idata_or_draws, seed: int) -> np.ndarray:
    """Labels of the VI point estimate (from InferenceData or ``(S, N)`` label draws)."""
    return np.asarray(_pcrp("point_estimate")(idata_or_draws, random_seed=seed).labels)


def pcrp_chain_groups(idata, seed: int) -> str:
    """How the chains' clusterings differ: ``"n (m)"``, ``n`` groups of chains, ``m`` points.

    ``m`` is the most points two chains' point estimates place differently (between
    groups when there are several); see ``pymc_pcrp.diagnostics.compare_chains``.
    """
    result = _pcrp("compare_chains")(idata, random_seed=seed)
    return f"{len(result.groups)} ({result.largest_difference})"


def pcrp_cross_validate(X, powers, *, draws, tune, seed, step_kwargs):
    """Half/half split, then the package's CV of ``r``; returns the CV result object."""
    x_train, x_test = _pcrp("split_train_test")(X, X.shape[0] // 2, seed=seed)
    fit_kwargs = {"pcrp_gibbs": dict(step_kwargs)} if step_kwargs else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _pcrp("cross_validate_power")(
            x_train,
            x_test,
            powers,
            draws=draws,
            tune=tune,
            chains=1,
            random_seed=seed,
            n_jobs=1,
            fit_kwargs=fit_kwargs,
        )


def pcrp_old_faithful() -> np.ndarray:
    return _pcrp("load_old_faithful")()


def pcrp_digits(n: int, mnist: str | None):
    """``(X, labels, source)`` of the package's digits 1-4 embedding."""
    data = _pcrp("load_digits_1to4")(n, seed=0, source=mnist)
    return data.X, data.labels, data.source


def pcrp_sim2(n: int) -> tuple[np.ndarray, np.ndarray]:
    return _pcrp("sim2")(n, seed=0)


def pcrp_defaults() -> str:
    """The keyword defaults of ``fit`` and of the step method, as measured (for the header)."""
    parts = []
    for name in ("fit", "PCRPGibbs"):
        try:
            target = _pcrp(name)
            sig = inspect.signature(target.__init__ if inspect.isclass(target) else target)
        except (ImportError, TypeError, ValueError) as err:
            parts.append(f"{name}: ? ({err})")
            continue
        skip = {"X", "vars", "model", "rng", "initial_point", "random_seed", "progressbar"}
        kw = [
            f"{p.name}={p.default!r}"
            for p in sig.parameters.values()
            if p.default is not inspect.Parameter.empty and p.name not in skip
        ]
        parts.append(f"`{name}({', '.join(kw)})`")
    return "; ".join(parts)


def pcrp_quiet() -> None:
    """Import the package (and PyMC), then silence PyMC's per-run log lines."""
    importlib.import_module("pymc_pcrp")
    logging.getLogger("pymc").setLevel(logging.ERROR)


def pcrp_version() -> str:
    return getattr(importlib.import_module("pymc_pcrp"), "__version__", "?")


# =============================================================================================
# Pure helpers (tested in tests/test_real_data_panel.py)
# =============================================================================================

RHAT_MAX = 1.01
ESS_MIN = 400
SECONDS_MAX = 30.0


def standardise(X) -> np.ndarray:
    """Centre each column and divide it by its sd (``ddof=0``); constant columns are centred."""
    x = np.asarray(X, dtype=np.float64)
    if x.ndim == 1:
        x = x[:, None]
    sd = x.std(axis=0)
    sd[sd == 0] = 1.0
    return np.ascontiguousarray((x - x.mean(axis=0)) / sd)


def parse_powers(text: str) -> list[float]:
    """``"1,1.1,1.3"`` -> ``[1.0, 1.1, 1.3]`` (positive, duplicates dropped, order kept)."""
    values: list[float] = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        value = float(item)
        if not value > 0:
            raise ValueError(f"powers must be > 0, got {value}")
        if value not in values:
            values.append(value)
    if not values:
        raise ValueError("no power given")
    return values


def bgm_k(weights, n: int) -> int:
    """Components of a fitted mixture whose weight is at least ``1 / n`` (one point's worth)."""
    return int(np.sum(np.asarray(weights) >= 1.0 / n))


def n_distinct(labels) -> int:
    return int(np.unique(np.asarray(labels)).size)


def chain_diagnostics(values) -> tuple[float, float]:
    """Rank-normalised R-hat and bulk ESS of a ``(chain, draw)`` array.

    When every draw of every chain has the same value, the chains agree exactly
    and a constant has no Monte Carlo error: R-hat and ESS are undefined, and
    this returns ``(1.0, inf)``, shown as ``const`` in the table and counted as
    meeting the target (e.g. K = 4 in all 4,000 draws of wine at r = 1.1).
    Chains that are each constant at different values are not equal draws and
    get ArviZ's R-hat (infinite). One chain gives a NaN R-hat.
    """
    import arviz as az

    arr = np.asarray(values, dtype=np.float64)
    if np.ptp(arr) == 0:
        return 1.0, math.inf
    ds = az.convert_to_dataset({"v": arr})
    rhat = float(az.rhat(ds)["v"]) if arr.shape[0] > 1 else float("nan")
    ess = float(az.ess(ds, method="bulk")["v"])
    return rhat, ess


def meets_target(rhat_k, ess_k, rhat_lj, ess_lj, seconds) -> bool:
    """The issue's target: R-hat <= 1.01, bulk ESS >= 400 (K and log joint), <= 30 s."""
    rhats_ok = all(np.isfinite(r) and r <= RHAT_MAX for r in (rhat_k, rhat_lj))
    ess_ok = all(e >= ESS_MIN for e in (ess_k, ess_lj))  # inf: constant (chain_diagnostics)
    return bool(rhats_ok and ess_ok and seconds <= SECONDS_MAX)


def top_sizes(labels, shown: int = 5) -> str:
    """Cluster sizes in decreasing order, the first ``shown`` then ``+m`` for the rest."""
    sizes = np.sort(np.bincount(np.unique(np.asarray(labels), return_inverse=True)[1]))[::-1]
    text = ",".join(str(int(s)) for s in sizes[:shown])
    if sizes.size > shown:
        text += f",+{sizes.size - shown}"
    return text


def fmt(value, digits: int = 2, cap: float | None = None) -> str:
    """Table cell: ``-`` for missing or non-finite values, ``>cap`` above ``cap``."""
    if value is None:
        return "-"
    if isinstance(value, float) and not np.isfinite(value):
        return "-"
    if isinstance(value, float):
        return f">{cap:g}" if cap is not None and value > cap else f"{value:.{digits}f}"
    return str(value)


def diag(value: float, ess: float, digits: int = 3) -> str:
    """R-hat or ESS cell: ``const`` for a quantity equal in every draw (infinite ESS)."""
    if ess == math.inf:
        return "const"
    return fmt(value, digits, 100 if digits else None)


def ari(truth, labels) -> float | None:
    if truth is None:
        return None
    from sklearn.metrics import adjusted_rand_score

    return float(adjusted_rand_score(truth, labels))


# =============================================================================================
# Data sets
# =============================================================================================


@dataclass
class Dataset:
    name: str
    X: np.ndarray
    truth: np.ndarray | None
    note: str
    extra_powers: tuple[float, ...] = ()


def load_dataset(name: str, mnist: str | None) -> Dataset:
    from sklearn import datasets as skd

    if name in ("iris", "wine", "breast_cancer"):
        loader = {
            "iris": skd.load_iris,
            "wine": skd.load_wine,
            "breast_cancer": skd.load_breast_cancer,
        }[name]
        X, y = loader(return_X_y=True)
        return Dataset(name, standardise(X), y, f"scikit-learn load_{name}")
    if name == "old_faithful":
        X = pcrp_old_faithful()
        # No true classes; the usual short/long eruption split serves as a proxy.
        proxy = (X[:, 0] >= 3.0).astype(np.int64)
        return Dataset(
            name, standardise(X), proxy, "pymc_pcrp; ARI against eruptions >= 3 min (proxy)"
        )
    if name == "digits":
        n = 1000 if mnist else 723
        X, y, source = pcrp_digits(n, mnist)
        return Dataset(name, standardise(X), y, f"digits 1-4, n={n}, source {source}")
    if name == "sim2":
        X, y = pcrp_sim2(2000)
        return Dataset(name, standardise(X), y, "pymc_pcrp sim2(2000, seed=0)", (1.5,))
    raise ValueError(f"unknown data set {name!r}")


ALL_DATASETS = ("iris", "wine", "breast_cancer", "old_faithful", "digits", "sim2")

# =============================================================================================
# pCRP rows
# =============================================================================================


@dataclass
class FitRow:
    label: str
    power: float
    mean_k: float
    chain_k: list[float]
    rhat_k: float
    ess_k: float
    rhat_lj: float
    ess_lj: float
    pe_k: int
    pe_sizes: str
    ari: float | None
    seconds: float
    ok: bool
    groups: str = ""


def fit_row(data: Dataset, label: str, power: float, args, seed: int) -> FitRow:
    start = time.perf_counter()
    idata = pcrp_fit(
        data.X,
        power,
        draws=args.draws,
        tune=args.tune,
        chains=args.chains,
        cores=args.cores,
        seed=seed,
        step_kwargs=args.step_kwargs,
        covariance=args.covariance,
        nu0=args.nu0,
    )
    seconds = time.perf_counter() - start
    k, lj = pcrp_k_and_logjoint(idata)
    rhat_k, ess_k = chain_diagnostics(k)
    rhat_lj, ess_lj = chain_diagnostics(lj)
    labels = pcrp_point_labels(idata, seed)
    return FitRow(
        label=label,
        power=power,
        mean_k=float(k.mean()),
        chain_k=[float(v) for v in k.mean(axis=1)],
        rhat_k=rhat_k,
        ess_k=ess_k,
        rhat_lj=rhat_lj,
        ess_lj=ess_lj,
        pe_k=n_distinct(labels),
        pe_sizes=top_sizes(labels),
        ari=ari(data.truth, labels),
        seconds=seconds,
        ok=meets_target(rhat_k, ess_k, rhat_lj, ess_lj, seconds),
        groups=pcrp_chain_groups(idata, seed) if args.chains > 1 else "",
    )


def fit_table(rows: list[FitRow]) -> str:
    head = (
        "| r | mean K | K by chain | R-hat K | ESS K | R-hat logp | ESS logp | PE K | PE sizes "
        "| ARI | s/fit | ok | groups (pts) |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"
    )
    lines = []
    for r in rows:
        chains = "/".join(f"{v:.1f}" for v in r.chain_k)
        lines.append(
            f"| {r.label} | {r.mean_k:.2f} | {chains} | {diag(r.rhat_k, r.ess_k)} "
            f"| {diag(r.ess_k, r.ess_k, 0)} | {diag(r.rhat_lj, r.ess_lj)} "
            f"| {diag(r.ess_lj, r.ess_lj, 0)} "
            f"| {r.pe_k} | {r.pe_sizes} "
            f"| {fmt(r.ari, 3)} | {r.seconds:.1f} | {'yes' if r.ok else 'no'} | {r.groups} |"
        )
    return head + "\n".join(lines) + "\n"


# =============================================================================================
# Peers
# =============================================================================================


@dataclass
class PeerRow:
    method: str
    k: str
    ari: float | None
    seconds: float | None
    note: str = ""


def bgm_peer(data: Dataset, seed: int) -> PeerRow:
    from sklearn.mixture import BayesianGaussianMixture

    model = BayesianGaussianMixture(
        n_components=20,
        weight_concentration_prior_type="dirichlet_process",
        max_iter=1000,
        random_state=seed,
    )
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(data.X)
    seconds = time.perf_counter() - start
    labels = model.predict(data.X)
    n = data.X.shape[0]
    return PeerRow(
        "sklearn BayesianGaussianMixture (DP, 20 comp.)",
        str(n_distinct(labels)),
        ari(data.truth, labels),
        seconds,
        f"{bgm_k(model.weights_, n)} weights >= 1/N, converged={model.converged_}, "
        f"sizes {top_sizes(labels)}",
    )


def _read_keyvals(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text().splitlines():
        key, _, value = line.partition(" ")
        out[key] = value
    return out


def _hyper_means(info: dict[str, str]) -> str:
    """``alpha``, ``a``, ``nu``, ``v`` of rDPGibbs as ``name=value`` (supports: a in [0.01, 10],
    nu - (D-1) in [e^0.01, e^3], v in [0.1, 4] by default)."""
    return ", ".join(
        f"{key}={float(info[key]):.3g}" for key in ("alpha", "a", "nu", "v") if key in info
    )


def r_peers(data: Dataset, args, seed: int) -> list[PeerRow]:
    """Run benchmarks/peers.R on a temporary CSV; skip (with a message) when R is absent."""
    rscript = shutil.which("Rscript")
    if rscript is None:
        print(f"[{data.name}] skipping mclust and rDPGibbs: Rscript not found", file=sys.stderr)
        return []
    rows: list[PeerRow] = []
    with tempfile.TemporaryDirectory(prefix="real_data_") as tmp:
        tmpdir = Path(tmp)
        np.savetxt(tmpdir / "x.csv", data.X, delimiter=",", fmt="%.17g")
        cmd = [
            rscript,
            str(REPO / "benchmarks" / "peers.R"),
            str(tmpdir / "x.csv"),
            str(tmpdir),
            str(args.rdp_iters),
            str(args.rdp_keep),
            str(seed),
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        status_file = tmpdir / "status.txt"
        if proc.returncode != 0 or not status_file.exists():
            tail = proc.stderr.strip().splitlines()[-3:]
            print(f"[{data.name}] skipping R peers: Rscript failed: {tail}", file=sys.stderr)
            return []
        status = dict(line.split(" ", 1) for line in status_file.read_text().splitlines())
        for peer, state in status.items():
            if state != "ok":
                print(f"[{data.name}] skipping {peer}: {state}", file=sys.stderr)
        if status.get("mclust") == "ok":
            info = _read_keyvals(tmpdir / "mclust.txt")
            labels = np.loadtxt(tmpdir / "mclust_labels.csv", dtype=np.int64, ndmin=1)
            rows.append(
                PeerRow(
                    "mclust::Mclust (BIC over models, G=1..9)",
                    info["G"],
                    ari(data.truth, labels),
                    float(info["seconds"]),
                    f"model {info['model']}, sizes {top_sizes(labels)}",
                )
            )
        if status.get("rdpgibbs") == "ok":
            info = _read_keyvals(tmpdir / "rdp.txt")
            z = np.loadtxt(tmpdir / "rdp_z.csv", delimiter=",", dtype=np.float64, ndmin=2)
            z = z.astype(np.int64)
            kept = z[round(args.rdp_burn * z.shape[0]) :]
            k_draws = np.array([n_distinct(row) for row in kept])
            labels = pcrp_point_labels(kept, seed)
            rows.append(
                PeerRow(
                    "bayesm::rDPGibbs (default priors)",
                    f"{k_draws.mean():.2f} (PE {n_distinct(labels)})",
                    ari(data.truth, labels),
                    float(info["seconds"]),
                    f"R={info['R']}, keep={info['keep']}, {kept.shape[0]} draws after burn-in, "
                    f"PE sizes {top_sizes(labels)}; posterior means (2nd half) "
                    f"{_hyper_means(info)}",
                )
            )
    return rows


def peer_table(rows: list[PeerRow]) -> str:
    head = "| peer | K | ARI | seconds | notes |\n|---|---|---|---|---|\n"
    lines = [
        f"| {r.method} | {r.k} | {fmt(r.ari, 3)} | {fmt(r.seconds, 1)} | {r.note} |" for r in rows
    ]
    return head + "\n".join(lines) + "\n"


# =============================================================================================
# Driver
# =============================================================================================


def _git_commit() -> str:
    try:
        sha = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        return sha + (" (with uncommitted changes)" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _versions() -> str:
    import arviz
    import numba
    import pymc
    import sklearn

    r_version = "absent"
    rscript = shutil.which("Rscript")
    if rscript:
        proc = subprocess.run(
            [
                rscript,
                "-e",
                "cat(R.version$major, R.version$minor, "
                "tryCatch(format(packageVersion('mclust')), error=function(e) 'absent'), "
                "tryCatch(format(packageVersion('bayesm')), error=function(e) 'absent'))",
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        parts = proc.stdout.split()
        if len(parts) == 4:
            r_version = f"{parts[0]}.{parts[1]} (mclust {parts[2]}, bayesm {parts[3]})"
    return (
        f"python {platform.python_version()}, pymc {pymc.__version__}, numba {numba.__version__}, "
        f"arviz {arviz.__version__}, scikit-learn {sklearn.__version__}, "
        f"pymc_pcrp {pcrp_version()}, R {r_version}"
    )


@dataclass
class DatasetResult:
    name: str
    note: str
    n: int
    d: int
    rows: list[FitRow] = field(default_factory=list)
    cv: dict | None = None
    peers: list[PeerRow] = field(default_factory=list)


def run_dataset(data: Dataset, args, emit) -> DatasetResult:
    result = DatasetResult(data.name, data.note, data.X.shape[0], data.X.shape[1])
    emit(f"\n## {data.name} (N={data.X.shape[0]}, D={data.X.shape[1]}; {data.note})\n")
    powers = list(args.powers) + [p for p in data.extra_powers if p not in args.powers]
    if args.peers_only:
        powers = []
    for i, power in enumerate(powers):
        row = fit_row(data, f"{power:g}", power, args, args.seed + 1000 * i)
        result.rows.append(row)
        print(f"  [{data.name}] r={power:g}: K={row.mean_k:.2f} {row.seconds:.1f}s", flush=True)
    if args.cv and not args.peers_only:
        start = time.perf_counter()
        cv = pcrp_cross_validate(
            data.X,
            args.cv_powers,
            draws=args.cv_draws,
            tune=args.cv_tune,
            seed=args.seed,
            step_kwargs=args.step_kwargs,
        )
        cv_seconds = time.perf_counter() - start
        chosen = float(cv.chosen_power)
        result.cv = {
            "powers": [float(p) for p in cv.powers],
            "loss": [float(v) for v in cv.loss],
            "mean_k": [float(v) for v in cv.mean_k],
            "chosen": chosen,
            "jump": cv.jump_index is not None,
            "seconds": cv_seconds,
        }
        row = fit_row(data, f"CV {chosen:g}", chosen, args, args.seed + 999)
        result.rows.append(row)
        print(f"  [{data.name}] CV r={chosen:g}: K={row.mean_k:.2f}", flush=True)
    if result.rows:
        emit(fit_table(result.rows))
    if result.cv is not None:
        curve = ", ".join(
            f"{p:g}: {loss:.1f} (K {k:.1f})"
            for p, loss, k in zip(
                result.cv["powers"], result.cv["loss"], result.cv["mean_k"], strict=True
            )
        )
        emit(
            f"\nCV (half/half split, 1 chain per r, {args.cv_draws} draws after {args.cv_tune} "
            f"tune; {result.cv['seconds']:.0f} s): held-out loss by r: {curve}; chosen r = "
            f"{result.cv['chosen']:g}"
            f"{'' if result.cv['jump'] else ' (no jump: the largest r of the grid)'}.\n"
        )
    if args.peers:
        result.peers.append(bgm_peer(data, args.seed))
        result.peers.extend(r_peers(data, args, args.seed))
        emit("\n" + peer_table(result.peers))
    return result


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", default=",".join(ALL_DATASETS), help="comma-separated")
    parser.add_argument("--powers", default="1,1.1,1.3", help="comma-separated r values")
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--tune", type=int, default=500)
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--seed", type=int, default=20261126)
    parser.add_argument(
        "--step-kwargs", default="{}", help="JSON of step options, e.g. '{\"split_merge\": 5}'"
    )
    parser.add_argument("--no-cv", dest="cv", action="store_false", help="skip the CV of r")
    parser.add_argument("--cv-powers", default="1,1.1,1.2,1.3,1.5,1.8")
    parser.add_argument("--cv-draws", type=int, default=300)
    parser.add_argument("--cv-tune", type=int, default=300)
    parser.add_argument("--no-peers", dest="peers", action="store_false")
    parser.add_argument(
        "--covariance",
        choices=("full", "diag"),
        default="full",
        help="cluster covariance family of the pCRP fits (NIWPrior.from_data(X, covariance=...))",
    )
    parser.add_argument(
        "--nu0",
        type=lambda v: v if v in ("D+2", "learn") else float(v),
        default=None,
        help="nu0 of NIWPrior.from_data for the pCRP fits, a number, 'D+2' or 'learn' (a "
        "hyperprior on nu0; default: the family's default)",
    )
    parser.add_argument("--peers-only", action="store_true", help="skip the pCRP fits")
    parser.add_argument("--rdp-iters", type=int, default=4000, help="rDPGibbs iterations R")
    parser.add_argument("--rdp-keep", type=int, default=4, help="rDPGibbs thinning")
    parser.add_argument(
        "--rdp-burn", type=float, default=0.25, help="fraction of kept rDPGibbs draws discarded"
    )
    parser.add_argument(
        "--mnist", default=None, help="MNIST folder for the digits (default: sklearn 8x8)"
    )
    parser.add_argument("--out", default=None, help="also write the markdown here")
    parser.add_argument("--json", default=None, help="also write the raw results here")
    args = parser.parse_args(argv)
    args.datasets = [d.strip() for d in args.datasets.split(",") if d.strip()]
    for name in args.datasets:
        if name not in ALL_DATASETS:
            parser.error(f"unknown data set {name!r}; choose from {', '.join(ALL_DATASETS)}")
    args.powers = parse_powers(args.powers)
    args.cv_powers = sorted(parse_powers(args.cv_powers))
    if args.covariance != "full" and args.cv and not args.peers_only:
        parser.error(
            "--covariance diag needs --no-cv: the cross-validation of r scores held-out points "
            "with the full family's predictive"
        )
    args.step_kwargs = json.loads(args.step_kwargs)
    if not isinstance(args.step_kwargs, dict):
        parser.error("--step-kwargs must be a JSON object")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    pcrp_quiet()
    warnings.filterwarnings("ignore", category=FutureWarning)
    chunks: list[str] = []

    def emit(text: str) -> None:
        chunks.append(text)
        print(text, flush=True)

    started = time.perf_counter()
    load_start = os.getloadavg()
    argv_text = " ".join(shlex.quote(a) for a in (sys.argv[1:] if argv is None else argv))
    emit("# Real-data panel\n")
    emit(f"- command: `python benchmarks/real_data.py {argv_text}`".rstrip() + "")
    emit(f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M:%S} UTC")
    emit(f"- git commit: {_git_commit()}")
    emit(
        f"- machine: {os.cpu_count()} CPUs, {platform.machine()}, "
        f"load average at start {load_start[0]:.2f}/{load_start[1]:.2f}/{load_start[2]:.2f}"
    )
    emit(f"- versions: {_versions()}")
    emit(f"- package defaults: {pcrp_defaults()}")
    emit(
        f"- sampling: {args.chains} chains x {args.draws} draws after {args.tune} tune, "
        f"cores={args.cores}, extra step kwargs {json.dumps(args.step_kwargs)}, seed {args.seed}, "
        f"covariance family {args.covariance}, nu0 {args.nu0 or 'default'}"
    )

    # Warm-up: compile (or load from cache) every kernel the fits use; not timed.
    warm_x = standardise(np.random.default_rng(0).normal(size=(40, 2)))
    warm_start = time.perf_counter()
    if not args.peers_only:
        pcrp_fit(
            warm_x,
            1.1,
            draws=10,
            tune=10,
            chains=args.chains,
            cores=args.cores,
            seed=0,
            step_kwargs=args.step_kwargs,
            covariance=args.covariance,
            nu0=args.nu0,
        )
    pcrp_point_labels(np.zeros((2, 40), dtype=np.int64), 0)
    emit(f"- warm-up fit (not counted): {time.perf_counter() - warm_start:.1f} s")

    results = []
    for name in args.datasets:
        data = load_dataset(name, args.mnist)
        results.append(run_dataset(data, args, emit))

    load_end = os.getloadavg()
    emit(
        f"\nTotal {time.perf_counter() - started:.0f} s; load average at end "
        f"{load_end[0]:.2f}/{load_end[1]:.2f}/{load_end[2]:.2f}."
    )
    if args.out:
        Path(args.out).write_text("\n".join(chunks) + "\n")
    if args.json:
        Path(args.json).write_text(json.dumps([asdict(r) for r in results], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
