"""The figures of docs/gallery.md (and the README's), each from a small run or a recorded one.

Run from the repository root (``PYTHONPATH=.`` when the package is not installed)::

    python benchmarks/gallery.py                      # every figure, a few minutes
    python benchmarks/gallery.py --only k_posterior,similarity

Sections (``--only``):

``k_posterior``
    Old Faithful, the CRP (r = 1) and the pCRP at the paper's r = 1.11: posterior
    of the number of clusters K (4 chains of 500 draws after 500 tuning draws).
``similarity``
    The pCRP fit above: posterior similarity matrix ordered by the point estimate
    (minimum posterior expected variation of information), and the point
    estimate on the data.
``choosing_r``
    Old Faithful: the held-out loss of cross-validation against r (a 2/3 : 1/3
    split) and the PSIS-LOO expected log predictive density against r, on the
    same grid (2 chains of 300 draws after 300 tuning draws per r).
``real_data``
    Read from ``benchmarks/results/real_data.json`` (written by
    ``benchmarks/real_data.py --json``): the point estimates' ARI to the true
    classes at each r, beside the peers of the same run.
``scaling``
    Read from ``benchmarks/results/scaling.json`` (written by
    ``benchmarks/scaling.py --json``): CPU seconds of the fits against N, the pCRP's
    last budget marked when it missed the convergence criterion.

The figures are written to ``docs/gallery/`` (``--out`` to change it).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

from pathlib import Path  # noqa: E402

import matplotlib  # noqa: E402

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benchmarks" / "results"
SECTIONS = ("k_posterior", "similarity", "choosing_r", "real_data", "scaling")
PAPER_POWER = 1.11
SEED = 1


def _quiet() -> None:
    for name in ("pymc", "pymc.sampling", "pymc.stats.convergence", "pymc_pcrp", "arviz"):
        logging.getLogger(name).setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", category=UserWarning)
    warnings.filterwarnings("ignore", category=FutureWarning)


def _save(fig, out: Path, name: str) -> None:
    path = out / name
    fig.tight_layout()
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    print(f"wrote {path.relative_to(REPO) if path.is_relative_to(REPO) else path}")


def _faithful_fits(cache: dict):
    import pymc_pcrp as pcrp

    if "fits" not in cache:
        X = pcrp.datasets.load_old_faithful()
        fits = {}
        for name, power in (("CRP (r = 1)", 1.0), (f"pCRP (r = {PAPER_POWER})", PAPER_POWER)):
            fits[name] = pcrp.fit(
                X, power=power, draws=500, tune=500, chains=4, cores=2, random_seed=SEED
            )
        cache["X"], cache["fits"] = X, fits
    return cache["X"], cache["fits"]


def k_posterior(out: Path, cache: dict) -> None:
    import pymc_pcrp as pcrp

    X, fits = _faithful_fits(cache)
    fig, ax = plt.subplots(figsize=(5.5, 3.4))
    pcrp.plots.plot_k_posterior(fits, ax=ax)
    ax.set_title(f"Old Faithful (N = {len(X)}): posterior of K")
    _save(fig, out, "k_posterior.png")
    for name, idata in fits.items():
        k = idata.posterior["n_clusters"].values
        print(f"  {name}: mean K {k.mean():.2f}, P(K = 2) {np.mean(k == 2):.3f}")


def similarity(out: Path, cache: dict) -> None:
    import pymc_pcrp as pcrp

    X, fits = _faithful_fits(cache)
    idata = fits[f"pCRP (r = {PAPER_POWER})"]
    pe = pcrp.point_estimate(idata, random_seed=SEED)
    psm = pcrp.posterior_similarity(idata)
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    pcrp.plots.plot_similarity(psm, pe, ax=left)
    left.set_title("Posterior similarity (sorted by the estimate)", fontsize=10)
    pcrp.plots.plot_clusters_2d(X, pe, prior=pcrp.NIWPrior.from_data(X), ax=right)
    right.set_title(f"Point estimate: {len(np.unique(pe.labels))} clusters")
    right.set_xlabel("eruption duration (min)")
    right.set_ylabel("waiting time (min)")
    _save(fig, out, "similarity.png")


def choosing_r(out: Path, cache: dict) -> None:
    import arviz as az

    import pymc_pcrp as pcrp

    X = pcrp.datasets.load_old_faithful()
    grid = [1.0, 1.1, 1.2, 1.4, 1.7, 2.0]
    sample = {"draws": 300, "tune": 300, "chains": 2}
    X_train, X_test = pcrp.model_selection.split_train_test(X, n_train=2 * len(X) // 3, seed=SEED)
    cv = pcrp.model_selection.cross_validate_power(
        X_train, X_test, powers=grid, random_seed=SEED, n_jobs=2, **sample
    )
    elpd, se = [], []
    for power in grid:
        idata = pcrp.fit(
            X,
            power=power,
            random_seed=SEED,
            cores=2,
            idata_kwargs={"log_likelihood": True},
            **sample,
        )
        loo = az.loo(idata)
        elpd.append(loo.elpd_loo)
        se.append(loo.se)
    best = grid[int(np.argmax(elpd))]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6))
    pcrp.plots.plot_cv_curve(cv, ax=left)
    left.set_title(f"Cross-validation: r = {cv.chosen_power:g}")
    right.errorbar(grid, elpd, yerr=se, marker="o", capsize=3)
    right.axvline(best, color="k", ls="--", lw=1)
    right.set_xlabel("power r")
    right.set_ylabel("elpd (PSIS-LOO)")
    right.set_title(f"LOO: highest at r = {best:g}")
    _save(fig, out, "choosing_r.png")
    print(f"  CV chooses r = {cv.chosen_power:g} (jumped: {cv.jumped}); LOO highest at {best:g}")
    pairs = zip(grid, elpd, se, strict=True)
    print("  elpd_loo: " + ", ".join(f"{p:g}: {e:.1f} +- {s:.1f}" for p, e, s in pairs))


def _peer_short(method: str) -> str:
    for key, short in (("sklearn", "scikit-learn DP"), ("mclust", "mclust"), ("rDP", "rDPGibbs")):
        if key.lower() in method.lower():
            return short
    return method


def real_data(out: Path, cache: dict) -> None:
    path = RESULTS / "real_data.json"
    if not path.exists():
        raise FileNotFoundError(
            f"{path} is missing: run `python benchmarks/real_data.py --json {path}` first."
        )
    panel = json.loads(path.read_text())
    if isinstance(panel, dict):  # a file that keeps an earlier recorded run
        panel = panel["datasets"]
    names = [d["name"] for d in panel]
    series: dict[str, list[float]] = {}
    for i, data in enumerate(panel):
        for row in data["rows"]:
            if row["power"] in (1.0, 1.1, 1.3) and row.get("ari") is not None:
                series.setdefault(f"pCRP r = {row['power']:g}", [np.nan] * len(panel))[i] = row[
                    "ari"
                ]
        for peer in data["peers"]:
            if peer["ari"] is not None:
                short = _peer_short(peer["method"])
                series.setdefault(short, [np.nan] * len(panel))[i] = peer["ari"]
    fig, ax = plt.subplots(figsize=(9, 3.6))
    width = 0.8 / max(len(series), 1)
    for j, (label, values) in enumerate(series.items()):
        x = np.arange(len(panel)) + (j - (len(series) - 1) / 2) * width
        ax.bar(x, values, width=width, label=label, color=f"C{j}")
    ax.set_xticks(np.arange(len(panel)), [n.replace("_", " ") for n in names])
    ax.set_ylabel("ARI of the point estimate")
    ax.set_ylim(0, 1.05)
    ax.legend(ncol=6, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.1), frameon=False)
    ax.set_title("Real-data panel: agreement with the true classes")
    _save(fig, out, "real_data_ari.png")


def scaling(out: Path, cache: dict) -> None:
    path = RESULTS / "scaling.json"
    if not path.exists():
        raise FileNotFoundError(
            f"{path} is missing: run `python benchmarks/scaling.py --json {path}` first."
        )
    results = json.loads(path.read_text())["results"]
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    for j, case in enumerate(sorted({r["case"] for r in results})):
        rows = sorted((r for r in results if r["case"] == case), key=lambda r: r["n"])
        n = [r["n"] for r in rows]
        pcrp = [r["pcrp"]["attempts"][-1]["cpu_s"] for r in rows]
        done = [r["pcrp"]["attempts"][-1]["converged"] for r in rows]
        ax.plot(n, pcrp, marker="o", color=f"C{j}", label=f"pCRP, {case}")
        for x, y, ok in zip(n, pcrp, done, strict=True):
            if not ok:
                ax.annotate(" not converged", (x, y), fontsize=7)
        sk = [r["sklearn"]["cpu_s"] for r in rows]
        ax.plot(n, sk, marker="s", ls="--", color=f"C{j}", label=f"scikit-learn DP, {case}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("N (D = 10, 10 components)")
    ax.set_ylabel("CPU seconds of the fit")
    ax.set_title("Cost of a fit against N (pCRP: the last budget tried)", fontsize=10)
    ax.legend(fontsize=8)
    _save(fig, out, "scaling.png")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(SECTIONS), help="comma-separated sections")
    parser.add_argument("--out", default=str(REPO / "docs" / "gallery"))
    args = parser.parse_args(argv)
    chosen = [s for s in args.only.split(",") if s]
    unknown = sorted(set(chosen) - set(SECTIONS))
    if unknown:
        parser.error(f"--only: unknown section(s) {unknown}; choose from {list(SECTIONS)}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    _quiet()
    cache: dict = {}
    for name in SECTIONS:
        if name in chosen:
            start = time.perf_counter()
            globals()[name](out, cache)
            print(f"  [{name}: {time.perf_counter() - start:.0f} s]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
