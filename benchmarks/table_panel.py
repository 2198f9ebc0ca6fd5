"""Table panel: pCRP clustering of binary, categorical, count and mixed tables beside its peers.

The data sets are three of R's ``mlbench`` package (exported once through ``Rscript``
into a cache folder; Debian ``r-cran-mlbench``) and one count data set:

* **HouseVotes84**: 435 members of the US House of Representatives, 16 yes/no votes
  (392 missing votes), classes democrat / republican;
* **Zoo**: 101 animals, 15 yes/no attributes and the number of legs, 7 types;
* **Soybean**: 683 plants, 35 categorical attributes (2,337 missing cells), 19 diseases;
* **BreastCancer** (mlbench): 699 breast tissue samples, nine cytology scores 1-10
  read as counts 0-9 (16 missing), classes benign / malignant;
* **digits (counts)**: scikit-learn's 1,797 8x8 digit images, each pixel an intensity
  count 0-16 (the 61 pixels that vary), 10 digits.

For each, the pCRP (``pymc_pcrp.fit`` with the table family, its column types read
from the frame: bool columns Bernoulli, categories categorical, the digits' pixels
and Zoo's legs counts) with the defaults (r = 1.1, 4 chains), and the peers:

* **StepMix** (latent class / profile model, the number of classes 1..``--k-max``
  chosen by BIC; binary and categorical indicators with their ``_nan`` variants,
  Gaussian for counts);
* **k-modes** (categorical data; Zoo's legs as a category) and **k-prototypes**
  (Zoo: legs numeric), both told the true number of classes, which the others are
  not.

Reported: K (the point estimate's clusters; the peers' chosen or given K), the
adjusted Rand index (ARI) to the known classes, the pCRP's R-hat of K and of the
log joint, and seconds. Run from the repository root::

    python benchmarks/table_panel.py --out benchmarks/results/table_panel.md

``--datasets``, ``--seed``, ``--draws`` and ``--split-merge`` change the run;
``--append`` adds it to the runs recorded in ``--json`` (each keeps its header line)
and writes all of them to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
import warnings

from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd

from sklearn.metrics import adjusted_rand_score

DATASETS = ("house_votes", "zoo", "soybean", "breast_cancer")
EXTRA_DATASETS = ("digits_counts",)  # loadable with --datasets, not in the default panel
R_NAMES = {
    "house_votes": "HouseVotes84",
    "zoo": "Zoo",
    "soybean": "Soybean",
    "breast_cancer": "BreastCancer",
}
CLASS_COLUMN = {
    "house_votes": "Class",
    "zoo": "type",
    "soybean": "Class",
    "breast_cancer": "Class",
}


def _cache() -> Path:
    root = Path(os.environ.get("PYMC_PCRP_DATA", Path.home() / ".cache" / "pymc_pcrp"))
    return root / "mlbench"


def _export(name: str) -> Path:
    """Write mlbench's data set ``name`` as CSV into the cache (once), with R."""
    path = _cache() / f"{R_NAMES[name]}.csv"
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    script = (
        f"library(mlbench); data({R_NAMES[name]}); "
        f"write.csv({R_NAMES[name]}, '{path}', row.names = FALSE, na = '')"
    )
    try:
        subprocess.run(["Rscript", "-e", script], check=True, capture_output=True, text=True)
    except (FileNotFoundError, subprocess.CalledProcessError) as err:
        raise SystemExit(
            f"Could not export {R_NAMES[name]} with R ({err}); install R and mlbench "
            "(Debian: apt-get install r-base-core r-cran-mlbench)."
        ) from err
    return path


def load(name: str) -> tuple[pd.DataFrame, np.ndarray]:
    """Return the table (typed columns, missing cells as NA) and the known classes."""
    if name == "digits_counts":
        from sklearn.datasets import load_digits

        digits = load_digits()
        frame = pd.DataFrame(digits.data.astype(np.int64))
        frame = frame.loc[:, frame.nunique() > 1]
        frame.columns = [f"px{c}" for c in frame.columns]
        return frame, digits.target
    raw = pd.read_csv(_export(name), keep_default_na=False, na_values=[""], dtype=str)
    classes = pd.factorize(raw.pop(CLASS_COLUMN[name]))[0]
    if name == "breast_cancer":  # nine cytology scores 1-10, read as counts 0-9
        scores = raw.drop(columns="Id").astype("Int64") - 1
        return scores.rename(columns=lambda c: c.replace(".", "_")), classes
    frame = pd.DataFrame(index=raw.index)
    for column in raw:
        values = raw[column]
        if name == "zoo" and column == "legs":
            frame[column] = values.astype(np.int64)
        elif set(values.dropna()) <= {"TRUE", "FALSE"}:
            frame[column] = values.map({"TRUE": True, "FALSE": False}).astype("boolean")
        elif set(values.dropna()) <= {"y", "n"}:
            frame[column] = values.map({"y": True, "n": False}).astype("boolean")
        else:
            frame[column] = values.astype("category")
    return frame, classes


def _codes(frame: pd.DataFrame) -> np.ndarray:
    """Integer codes of every column (NaN where missing), for StepMix."""
    out = np.empty(frame.shape, dtype=float)
    for j, column in enumerate(frame):
        values = frame[column]
        if isinstance(values.dtype, pd.CategoricalDtype):
            codes = values.cat.codes.to_numpy().astype(float)
            codes[codes < 0] = np.nan
        else:
            codes = values.astype("float64").to_numpy()
        out[:, j] = codes
    return out


def _stepmix_measurement(frame: pd.DataFrame) -> dict | str:
    kinds = []
    for column in frame:
        values = frame[column]
        missing = bool(values.isna().any())
        if isinstance(values.dtype, pd.CategoricalDtype):
            kind = "categorical"
        elif values.dtype == "boolean" or values.dtype == bool:
            kind = "binary"
        else:
            kind = "continuous"
        kinds.append(kind + ("_nan" if missing else ""))
    if len(set(kinds)) == 1:
        return kinds[0]
    return {kind: {"model": kind, "n_columns": kinds.count(kind)} for kind in dict.fromkeys(kinds)}


def run_stepmix(frame: pd.DataFrame, truth: np.ndarray, k_max: int, seed: int) -> dict:
    """StepMix with the number of classes chosen by BIC over 1..k_max."""
    from stepmix.stepmix import StepMix

    # one block per kind (a column without missing cells joins its kind's _nan block),
    # the columns ordered block by block as StepMix reads them
    kinds = _stepmix_kinds(frame)
    blocks = list(dict.fromkeys(kinds))
    measurement = (
        blocks[0]
        if len(blocks) == 1
        else {kind: {"model": kind, "n_columns": kinds.count(kind)} for kind in blocks}
    )
    pairs = list(zip(frame.columns, kinds, strict=True))
    order = [c for kind in blocks for c, k in pairs if k == kind]
    x = _codes(frame[order])
    init = "random" if np.isnan(x).any() else "kmeans"  # k-means cannot start from NaN
    start = time.perf_counter()
    best = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for k in range(1, k_max + 1):
            model = StepMix(
                n_components=k, measurement=measurement, n_init=3, init_params=init,
                random_state=seed, verbose=0, progress_bar=0,
            )  # fmt: skip
            model.fit(x)
            bic = model.bic(x)
            if np.isfinite(bic) and (best is None or bic < best[0]):
                best = (bic, k, model)
    if best is None:  # no fit gave a finite BIC: reported as a failure, not as one class
        return {"method": "StepMix (BIC)", "K": 0, "ARI": float("nan"),
                "seconds": time.perf_counter() - start}  # fmt: skip
    labels = best[2].predict(x)
    return {
        "method": "StepMix (BIC)",
        "K": len(np.unique(labels)),
        "ARI": adjusted_rand_score(truth, labels),
        "seconds": time.perf_counter() - start,
    }


def _stepmix_kinds(frame: pd.DataFrame) -> list[str]:
    measurement = _stepmix_measurement(frame)
    if isinstance(measurement, str):
        return [measurement] * frame.shape[1]
    kinds = []
    for column in frame:
        single = _stepmix_measurement(frame[[column]])
        base = single if isinstance(single, str) else next(iter(single))
        # a column without missing cells joins the _nan block of its kind when there is one
        kinds.append(base + "_nan" if base + "_nan" in measurement else base)
    return kinds


def run_kmodes(frame: pd.DataFrame, truth: np.ndarray, seed: int, numeric=()) -> dict:
    """k-modes (k-prototypes when some columns are numeric), told the true K."""
    from kmodes.kmodes import KModes
    from kmodes.kprototypes import KPrototypes

    k = len(np.unique(truth))
    table = frame.astype(object).where(frame.notna(), "missing").astype(str)
    start = time.perf_counter()
    if numeric:
        for column in numeric:
            table[column] = frame[column].astype(float)
        model = KPrototypes(n_clusters=k, init="Cao", n_init=5, random_state=seed)
        labels = model.fit_predict(
            table.to_numpy(dtype=object),
            categorical=[j for j, c in enumerate(frame) if c not in numeric],
        )
        method = "k-prototypes (true K)"
    else:
        model = KModes(n_clusters=k, init="Huang", n_init=5, random_state=seed)
        labels = model.fit_predict(table.to_numpy())
        method = "k-modes (true K)"
    return {
        "method": method,
        "K": len(np.unique(labels)),
        "ARI": adjusted_rand_score(truth, labels),
        "seconds": time.perf_counter() - start,
    }


COUNT_COLUMNS = {"zoo": {"legs": "poisson"}, "breast_cancer": "poisson", "digits_counts": "poisson"}


def run_pcrp(
    name: str,
    frame: pd.DataFrame,
    truth: np.ndarray,
    seed: int,
    draws: int,
    split_merge: float | None = None,
    sweeps_per_draw: int | None = None,
) -> dict:
    """The pCRP with its defaults at r = 1.1 (4 chains), the table family read from the frame.

    ``split_merge`` sets ``PCRPGibbs(split_merge=...)`` (proposals per sweep) instead of
    the automatic rate, ``sweeps_per_draw`` the sweeps per kept draw instead of the
    automatic number; the method's name in the table says when either is set.
    """
    import pymc_pcrp as pcrp

    from pymc_pcrp.stats.convergence import check_convergence

    options = {"draws": draws, "tune": draws, "chains": 4, "cores": 2, "random_seed": seed}
    method = "pCRP r = 1.1"
    if split_merge is not None:
        options["pcrp_gibbs"] = {"split_merge": split_merge}
        method += f", split_merge = {split_merge:g}"
    if sweeps_per_draw is not None:
        options["sweeps_per_draw"] = sweeps_per_draw
        method += f", sweeps_per_draw = {sweeps_per_draw}"
    columns = COUNT_COLUMNS.get(name)
    fit_kwargs = {"columns": columns} if columns is not None else {"family": "table"}
    with warnings.catch_warnings():  # compile the kernels before the clock starts
        warnings.simplefilter("ignore")
        pcrp.fit(frame.iloc[:40], power=1.1, draws=5, tune=5, chains=1, **fit_kwargs)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = pcrp.fit(frame, power=1.1, **fit_kwargs, **options)
    seconds = time.perf_counter() - start
    rhat = {q.name: q.r_hat for q in check_convergence(idata).quantities}
    labels = pcrp.point_estimate(idata, random_seed=seed).labels
    k_mean = float(idata.posterior["n_clusters"].mean())
    return {
        "method": method,
        "K": len(np.unique(labels)),
        "ARI": adjusted_rand_score(truth, labels),
        "seconds": seconds,
        "rhat": (rhat["n_clusters"], rhat["log_joint"]),
        "mean_k": k_mean,
    }


def _commit() -> str:
    """Short hash of the measured package's commit (the repository holding this script)."""
    root = Path(__file__).resolve().parents[1]
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=root, check=True, capture_output=True, text=True,
        )  # fmt: skip
    except (FileNotFoundError, subprocess.CalledProcessError):
        return "unknown"
    return out.stdout.strip()


def _plain(value):
    """numpy scalars as Python numbers, for JSON."""
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--seed", type=int, default=20261202)
    parser.add_argument("--k-max", type=int, default=12)
    parser.add_argument("--draws", type=int, default=1000, help="pCRP draws (and tuning draws)")
    parser.add_argument("--no-peers", action="store_true")
    parser.add_argument(
        "--split-merge",
        type=float,
        default=None,
        help="the pCRP's split-merge proposals per sweep (default: the automatic rate)",
    )
    parser.add_argument(
        "--sweeps-per-draw",
        type=int,
        default=None,
        help="the pCRP's sweeps per kept draw (default: the automatic number)",
    )
    parser.add_argument("--out", default=None)
    parser.add_argument("--json", default=None, help="also write the header and all rows as JSON")
    parser.add_argument(
        "--append",
        action="store_true",
        help="keep the runs recorded in --json (each with its header) and add this one; "
        "--out then shows them all",
    )
    args = parser.parse_args(argv)
    if args.append and not args.json:
        parser.error("--append needs --json, the file that holds the recorded runs")
    rows = []
    for name in args.datasets.split(","):
        frame, truth = load(name)
        print(f"{name}: {frame.shape[0]} rows x {frame.shape[1]} columns", flush=True)
        numeric = ("legs",) if name == "zoo" else ()
        runs = [
            partial(
                run_pcrp,
                name,
                frame,
                truth,
                args.seed,
                args.draws,
                args.split_merge,
                args.sweeps_per_draw,
            )
        ]
        if not args.no_peers:
            runs.append(partial(run_stepmix, frame, truth, args.k_max, args.seed))
            runs.append(partial(run_kmodes, frame, truth, args.seed, numeric=numeric))
        for run in runs:
            result = run()
            rows.append({"data": name, **result})
            print(f"  {result}", flush=True)
    header = (
        f"date {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; commit {_commit()}; "
        f"machine {os.cpu_count()} CPUs {platform.machine()}; python {sys.version.split()[0]}"
    )
    recorded = []
    if args.append and Path(args.json).exists():
        recorded = json.loads(Path(args.json).read_text())["runs"]
    record = {"runs": [*recorded, {"header": header, "rows": rows}]}
    text = "\n".join(_markdown(run) for run in record["runs"])
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    if args.json:
        Path(args.json).write_text(json.dumps(record, indent=2, default=_plain) + "\n")
    return 0


def _markdown(run: dict) -> str:
    """One recorded run as its header line and a table."""
    lines = [
        run["header"],
        "",
        "| data | method | K | mean K | ARI | R-hat K / log joint | s |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in run["rows"]:
        rhat = "" if "rhat" not in row else f"{row['rhat'][0]:.3f} / {row['rhat'][1]:.3f}"
        mean_k = f"{row['mean_k']:.2f}" if "mean_k" in row else ""
        lines.append(
            f"| {row['data']} | {row['method']} | {row['K']} | {mean_k} | {row['ARI']:.3f} | "
            f"{rhat} | {row['seconds']:.1f} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
