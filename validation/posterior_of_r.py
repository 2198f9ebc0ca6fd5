"""The posterior of the power r on the paper's four data sets, beside CV and LOO choices of r.

Data: Sim 1 and Sim 2 (N = 300; ``--large``: 2000), the MNIST digits 1-4
(N = 1000; ``--large``: 3000; 2-D spectral embedding) and Old Faithful (the 172
eruptions not set aside for CV), built exactly as ``python -m pymc_pcrp
reproduce`` builds them (``FULL_PROTOCOL``, base seed 2018, so the same draws
and the same CV samples).

Model: ``r ~ Uniform(0.8, 2)``, ``alpha = 1`` (the paper's value) and the
reproduction's fixed prior ``NIWPrior.from_data(X, scale=0.1)`` (``--prior
learn`` for the package default); ``pm.sample`` assigns ``PCRPHyper`` to ``r``
and ``PCRPGibbs`` (its default moves unless ``--algorithm-1``) to the labels.
The same data are then fitted with ``r`` fixed on a grid that holds 1, the
paper's CV choice where the paper prints one (digits 1.05, Old Faithful 1.11;
the simulations' choices are only drawn in a figure) and ``--loo-grid``; each
fixed-r fit stores the pointwise log-likelihood of docs/loo.md, and the LOO
choice of r is the grid value of largest ``elpd_loo`` (``az.compare`` gives the
differences and their standard errors). ``--cv`` first runs
:func:`pymc_pcrp.model_selection.cross_validate_power` on the reproduction's CV
split of each data set with the reproduction's CV sampler, and adds its choice
to the grid.

Printed per data set: the posterior of ``r`` (mean, sd, 5%/50%/95%,
P(r > 1)), the posterior of ``K`` with ``r`` integrated out and at each fixed
``r``, and R-hat and bulk ESS of ``r`` and ``K``. A figure counts as converged
only when R-hat <= 1.01 and bulk ESS >= 400 (both printed with a verdict).
``--json`` writes everything to a file.

Run from the repository root, for example::

    PYTHONPATH=. python validation/posterior_of_r.py --datasets faithful sim1 \\
        --draws 5000 --mnist PATH/TO/mnist --json out.json
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import time
import warnings

from datetime import datetime, timezone

import arviz as az
import numpy as np
import pymc as pm

from scipy.special import gammaln

import pymc_pcrp as pcrp

from pymc_pcrp.cli.reproduce.data import digits_data_set, old_faithful_data_set, simulation_data_set
from pymc_pcrp.cli.reproduce.moves import ALGORITHM_1, paper_prior
from pymc_pcrp.cli.reproduce.paper_values import K_TRUE, PAPER_SETTINGS
from pymc_pcrp.cli.reproduce.protocol import FULL_PROTOCOL
from pymc_pcrp.datasets import SIM1_PARAMS, SIM2_PARAMS, sim1, sim2
from pymc_pcrp.distributions.normaliser import log_normaliser
from pymc_pcrp.stats.cross_validation import cross_validate_power

BASE_SEED = 2018
"""The reproduce command's default base seed: same data and CV samples as its run."""

RHAT_MAX = 1.01
ESS_MIN = 400.0
DATASETS = ("sim1", "sim2", "faithful", "digits")


def load(key: str, mnist: str | None, large: bool = False):
    """Return ``(name, clustered X, CV train, CV test, paper's r or None)`` for a data set."""
    protocol, seed = FULL_PROTOCOL, BASE_SEED
    if key == "sim1":
        data = simulation_data_set(
            "Sim 1", "sim1", sim1, K_TRUE["Sim 1"], SIM1_PARAMS, protocol, seed
        )
    elif key == "sim2":
        data = simulation_data_set(
            "Sim 2", "sim2", sim2, K_TRUE["Sim 2"], SIM2_PARAMS, protocol, seed
        )
    elif key == "digits":
        data = digits_data_set(protocol, seed, mnist)
    else:
        data, _ = old_faithful_data_set(protocol, seed)
    power = PAPER_SETTINGS[data.name]["power"]
    # the smaller clustered size (300, 1000; Old Faithful has one, 172), or the larger
    sample = data.samples[-1 if large else 0]
    return data.name, sample.X, sample.labels, data.cv_train, data.cv_test, power, data.note


def r_given_partition(labels: np.ndarray, powers=()) -> dict:
    """Exact posterior of ``r ~ Uniform(0.8, 2)`` given a partition (here the true one).

    Given the labels the data drop out: ``log p(r | z) = r T(z) - log Z_N(1, r) + c``
    with ``T = sum_k log Gamma(n_k)``, evaluated on a grid of 1,201 values of ``r``
    with the normaliser's recursion. Also returned: ``log p(z | r) - log p(z | 1)``
    at each of ``powers``.
    """
    sizes = np.unique(labels, return_counts=True)[1]
    n, t = int(sizes.sum()), float(np.sum(gammaln(sizes)))
    grid = np.linspace(0.8, 2.0, 1201)
    log_z = np.array([log_normaliser(n, 1.0, float(r), method="recursion") for r in grid])
    log_p = grid * t - log_z
    weights = np.exp(log_p - log_p.max())
    weights /= weights.sum()
    cdf = np.cumsum(weights)
    mean = float(np.sum(grid * weights))
    ratio = {
        float(p): float(p * t - log_normaliser(n, 1.0, float(p), method="recursion"))
        - float(t - log_normaliser(n, 1.0, 1.0, method="recursion"))
        for p in powers
    }
    return {
        "sizes": sorted((int(m) for m in sizes), reverse=True),
        "T": t,
        "mean": mean,
        "sd": float(np.sqrt(np.sum((grid - mean) ** 2 * weights))),
        "q05": float(grid[np.searchsorted(cdf, 0.05)]),
        "q50": float(grid[np.searchsorted(cdf, 0.5)]),
        "q95": float(grid[np.searchsorted(cdf, 0.95)]),
        "p_above_1": float(weights[grid > 1.0].sum()),
        "log_ratio_to_1": ratio,
    }


def model_fit(x, power, prior, args, seed: int, log_lik: bool = False):
    """``pm.sample`` on the pCRP-NIW model; ``power=None`` makes ``r ~ Uniform(0.8, 2)``."""
    step = dict(ALGORITHM_1) if args.algorithm_1 else {}
    if args.sweeps_per_draw is not None:
        step["sweeps_per_draw"] = args.sweeps_per_draw
    with pm.Model():
        r = pm.Uniform("r", 0.8, 2.0) if power is None else power
        z = pcrp.PowerCRP("z", alpha=1.0, power=r, n=len(x))
        pcrp.NIWMixture("x", z=z, prior=prior, observed=x)
        return pm.sample(
            draws=args.draws if power is None else args.fixed_draws,
            tune=args.tune,
            chains=args.chains,
            cores=1,
            random_seed=seed,
            progressbar=False,
            compute_convergence_checks=False,
            idata_kwargs={"log_likelihood": log_lik},
            pcrp_gibbs=step,
        )


def diag(idata, name: str) -> dict:
    """R-hat, bulk ESS and the convergence verdict of one posterior variable."""
    values = idata.posterior[name].astype(np.float64)
    if np.ptp(values.values) == 0:
        return {"rhat": float("nan"), "ess": float("nan"), "ok": True, "constant": True}
    ds = values.to_dataset(name=name)
    rhat = float(az.rhat(ds)[name])
    ess = float(az.ess(ds, method="bulk")[name])
    return {"rhat": rhat, "ess": ess, "ok": rhat <= RHAT_MAX and ess >= ESS_MIN}


def k_posterior(idata) -> dict:
    """Mean of K and its posterior probabilities (those of at least 1%)."""
    k = idata.posterior["n_clusters"].values.ravel()
    values, counts = np.unique(k, return_counts=True)
    probs = {int(v): c / k.size for v, c in zip(values, counts, strict=True) if c / k.size >= 0.01}
    return {"mean": float(k.mean()), "probs": probs, "diag": diag(idata, "n_clusters")}


def fmt_k(k: dict) -> str:
    probs = ", ".join(f"P(K={v})={p:.3f}" for v, p in k["probs"].items())
    return f"E[K]={k['mean']:.3f}; {probs}; K: {fmt_diag(k['diag'])}"


def fmt_diag(d: dict) -> str:
    if d.get("constant"):
        return "constant over all draws"
    verdict = "converged" if d["ok"] else "NOT converged"
    return f"R-hat {d['rhat']:.4f}, bulk ESS {d['ess']:.0f} ({verdict})"


def random_r(x, prior, args, seed: int) -> dict:
    """Fit with ``r`` random and summarise ``r`` and ``K``."""
    start = time.perf_counter()
    idata = model_fit(x, None, prior, args, seed)
    seconds = time.perf_counter() - start
    r = idata.posterior["r"].values.ravel()
    q05, q50, q95 = np.quantile(r, [0.05, 0.5, 0.95])
    out = {
        "mean": float(r.mean()),
        "sd": float(r.std()),
        "q05": float(q05),
        "q50": float(q50),
        "q95": float(q95),
        "p_above_1": float(np.mean(r > 1.0)),
        "by_chain": [float(m) for m in idata.posterior["r"].mean("draw").values],
        "diag": diag(idata, "r"),
        "k": k_posterior(idata),
        "k_by_chain": [float(m) for m in idata.posterior["n_clusters"].mean("draw").values],
        "seconds": seconds,
        "seed": seed,
    }
    print(
        f"  r ~ Uniform(0.8, 2): mean {out['mean']:.3f}, sd {out['sd']:.3f}, 5%/50%/95% "
        f"{q05:.3f}/{q50:.3f}/{q95:.3f}, P(r > 1) = {out['p_above_1']:.3f}; "
        f"r: {fmt_diag(out['diag'])}; chain means of r "
        + "/".join(f"{m:.3f}" for m in out["by_chain"])
        + f" ({seconds:.0f} s)",
        flush=True,
    )
    print(
        "    "
        + fmt_k(out["k"])
        + "; chain means of K "
        + "/".join(f"{m:.2f}" for m in out["k_by_chain"]),
        flush=True,
    )
    return out


def fixed_grid(x, prior, grid, args, seed: int) -> dict:
    """Fit every fixed ``r`` of ``grid``; K, diagnostics, PSIS-LOO and the LOO choice."""
    fits, rows = {}, {}
    for i, power in enumerate(grid):
        start = time.perf_counter()
        idata = model_fit(x, power, prior, args, seed + i, log_lik=True)
        seconds = time.perf_counter() - start
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            loo = az.loo(idata)
        label = f"r = {power:g}"
        fits[label] = idata
        rows[label] = {
            "power": power,
            "k": k_posterior(idata),
            "elpd_loo": float(loo.elpd_loo),
            "elpd_se": float(loo.se),
            "pareto_k_above_0.7": int(np.sum(loo.pareto_k.values > 0.7)),
            "seconds": seconds,
        }
        print(
            f"  r fixed at {power:g}: {fmt_k(rows[label]['k'])}; elpd_loo "
            f"{loo.elpd_loo:.1f} (SE {loo.se:.1f}, {rows[label]['pareto_k_above_0.7']} "
            f"Pareto k > 0.7) ({seconds:.0f} s)",
            flush=True,
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        table = az.compare(fits)
    best = table.index[0]
    for label in table.index:
        rows[label]["elpd_diff"] = float(table.loc[label, "elpd_diff"])
        rows[label]["dse"] = float(table.loc[label, "dse"])
    within = sorted(
        rows[label]["power"]
        for label in table.index
        if rows[label]["elpd_diff"] <= 2 * rows[label]["dse"]
    )
    print(
        f"  LOO choice: r = {rows[best]['power']:g} (largest elpd_loo); within 2 dse of it: "
        + ", ".join(f"{p:g}" for p in within)
        + "; elpd_diff (dse): "
        + ", ".join(
            f"{rows[label]['power']:g}: {rows[label]['elpd_diff']:.1f} ({rows[label]['dse']:.1f})"
            for label in sorted(rows, key=lambda s: rows[s]["power"])
        ),
        flush=True,
    )
    return {"fits": rows, "loo_choice": rows[best]["power"], "loo_within_2dse": within}


def package_cv(train, test, prior_kind: str, args, seed: int) -> dict:
    """The package's CV choice of r on the reproduction's CV split, with its sampler.

    As ``reproduce`` runs it: Algorithm 1, 2 chains, 5 sweeps per kept draw, the
    fixed prior (unless ``--prior learn``); ``--cv-draws`` kept draws after as many
    tuning draws (1000 in the reproduction), over ``--cv-grid``.
    """
    start = time.perf_counter()
    prior = paper_prior(train) if prior_kind == "paper" else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        cv = cross_validate_power(
            train,
            test,
            args.cv_grid,
            draws=args.cv_draws,
            tune=args.cv_draws,
            chains=FULL_PROTOCOL.cv_chains,
            sweeps_per_draw=FULL_PROTOCOL.cv_sweeps_per_draw,
            random_seed=seed,
            prior=prior,
            fit_kwargs={"pcrp_gibbs": dict(ALGORITHM_1)},
        )
    seconds = time.perf_counter() - start
    curve = ", ".join(
        f"{r:g}: {loss:.3f} (K {k:.1f})"
        for r, loss, k in zip(cv.powers, cv.loss, cv.mean_k, strict=True)
    )
    jumped = "" if cv.jumped else " (no jump: the largest r of the grid)"
    print(
        f"  package CV ({len(train)} train / {len(test)} held out, Algorithm 1, "
        f"{FULL_PROTOCOL.cv_chains} chains x ({args.cv_draws} + {args.cv_draws} tune) draws of "
        f"{FULL_PROTOCOL.cv_sweeps_per_draw} sweeps per r): chosen r = "
        f"{cv.chosen_power:g}{jumped}; loss by r: {curve} ({seconds:.0f} s)",
        flush=True,
    )
    return {
        "chosen": float(cv.chosen_power),
        "jumped": bool(cv.jumped),
        "powers": [float(p) for p in cv.powers],
        "loss": [float(v) for v in cv.loss],
        "mean_k": [float(v) for v in cv.mean_k],
        "seconds": seconds,
        "seed": seed,
    }


def header(args) -> dict:
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    info = {
        "started": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "load": os.getloadavg()[0],
        "commit": commit,
        "args": vars(args),
    }
    print(
        f"posterior_of_r: {info['started']}, load average {info['load']:.1f}, commit "
        f"{commit}; {args.chains} chains, tune {args.tune}, draws {args.draws} (random r) / "
        f"{args.fixed_draws} (fixed r), sweeps_per_draw "
        f"{args.sweeps_per_draw or 'default'}, "
        f"{'Algorithm 1' if args.algorithm_1 else 'default moves'}, prior {args.prior}",
        flush=True,
    )
    return info


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", nargs="+", choices=DATASETS, default=list(DATASETS))
    ap.add_argument("--draws", type=int, default=2000, help="draws per chain, random r")
    ap.add_argument("--fixed-draws", type=int, default=2000, help="draws per chain, fixed r")
    ap.add_argument("--tune", type=int, default=1000)
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument(
        "--sweeps-per-draw",
        type=int,
        default=None,
        help="PCRPGibbs sweeps per draw (one r update per draw); default: the step's",
    )
    ap.add_argument("--algorithm-1", action="store_true", help="split_merge=0, the paper's")
    ap.add_argument("--prior", choices=("paper", "learn"), default="paper")
    ap.add_argument(
        "--loo-grid",
        type=float,
        nargs="*",
        default=[1.0, 1.1, 1.2, 1.35, 1.5],
        help="fixed r values fitted (1, the paper's r and the CV choice are added)",
    )
    ap.add_argument("--no-fixed", action="store_true", help="only the random-r fit")
    ap.add_argument("--no-random", action="store_true", help="only the fixed-r fits")
    ap.add_argument("--cv", action="store_true", help="run cross_validate_power as well")
    ap.add_argument("--cv-grid", type=float, nargs="+", default=list(FULL_PROTOCOL.powers))
    ap.add_argument("--cv-draws", type=int, default=1000, help="draws (and tune) per chain")
    ap.add_argument(
        "--large",
        action="store_true",
        help="the reproduction's larger samples (Sim 1, Sim 2: N = 2000; digits: 3000)",
    )
    ap.add_argument("--mnist", default=None, help="folder with the MNIST IDX files")
    ap.add_argument("--seed", type=int, default=10)
    ap.add_argument("--json", default=None, help="write the results to this file")
    return ap.parse_args()


def main() -> None:
    args = parse_args()
    logging.getLogger("pymc").setLevel(logging.ERROR)
    results = {"run": header(args), "datasets": {}}
    for key in args.datasets:
        name, x, labels, train, test, paper_r, note = load(key, args.mnist, args.large)
        prior = paper_prior(x) if args.prior == "paper" else pcrp.NIWPrior.from_data(x)
        print(f"== {name} (N = {len(x)}; paper's CV r: {paper_r or 'figure only'})", flush=True)
        print(f"  {note}", flush=True)
        entry = {"n": len(x), "paper_r": paper_r}
        seed = args.seed + 100 * DATASETS.index(key)
        exact = r_given_partition(labels, (1.05, 1.1, 1.2, 1.5))
        entry["r_given_true_partition"] = exact
        print(
            f"  r given the true partition (sizes {exact['sizes']}), exact: mean "
            f"{exact['mean']:.3f}, sd {exact['sd']:.3f}, 5%/50%/95% {exact['q05']:.3f}/"
            f"{exact['q50']:.3f}/{exact['q95']:.3f}, P(r > 1) = {exact['p_above_1']:.3f}; "
            "log p(z | r) - log p(z | 1): "
            + ", ".join(f"r = {p:g}: {v:.1f}" for p, v in exact["log_ratio_to_1"].items()),
            flush=True,
        )
        if not args.no_random:
            entry["random_r"] = random_r(x, prior, args, seed)
        extra = [paper_r] if paper_r else []
        if args.cv:
            entry["cv"] = package_cv(train, test, args.prior, args, seed + 50)
            extra.append(entry["cv"]["chosen"])
        if not args.no_fixed:
            grid = sorted({1.0, *args.loo_grid, *extra})
            entry["fixed"] = fixed_grid(x, prior, grid, args, seed + 10)
        results["datasets"][f"{name}, N = {len(x)}"] = entry
        if args.json:
            with open(args.json, "w", encoding="utf-8") as handle:
                json.dump(results, handle, indent=1)


if __name__ == "__main__":
    main()
