"""Parallel tempering on real data: does ``PCRPGibbs(temper=...)`` make the chains agree?

Run from the repository root (``PYTHONPATH=.`` when the package is not installed)::

    python benchmarks/tempering.py                                   # breast cancer, no tempering
    python benchmarks/tempering.py --temper 6 --powers 1,1.1,1.3
    python benchmarks/tempering.py --temper '[1, 0.6, 0.35, 0.2, 0.1]' --dataset wine

For each power ``r`` it fits the data set (scikit-learn's, each column standardised
to mean 0 and sd 1, ``ddof=0``) with ``pymc_pcrp.fit(X, power=r, draws, tune,
chains, cores, random_seed, pcrp_gibbs=...)`` and prints one markdown row: R-hat
and bulk ESS (ArviZ, rank-normalised) of ``sample_stats.n_clusters`` and of
``sample_stats.log_joint``, the mean K of each chain, the mean log joint of each
chain, the wall seconds of the fit (after an untimed warm-up fit that compiles the
kernels), and the swap acceptance rate of each adjacent pair of replicas (pooled
over chains and draws; the coldest pair first) when tempering is on.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import arviz as az  # noqa: E402
import numpy as np  # noqa: E402
import sklearn.datasets as skd  # noqa: E402

import pymc_pcrp as pcrp  # noqa: E402


def load(name: str) -> np.ndarray:
    """A scikit-learn data set, each column standardised (``ddof=0``)."""
    x = getattr(skd, f"load_{name}")().data.astype(np.float64)
    return (x - x.mean(axis=0)) / x.std(axis=0)


def run(x: np.ndarray, r: float, args, step: dict) -> dict:
    """One fit and its diagnostics."""
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = pcrp.fit(
            x,
            power=r,
            # nu0 fixed at D + 2, as in the recorded runs: tempering does not learn nu0
            prior=pcrp.NIWPrior.from_data(x, nu0=x.shape[1] + 2.0),
            draws=args.draws,
            tune=args.tune,
            chains=args.chains,
            cores=args.cores,
            random_seed=args.seed,
            compute_convergence_checks=False,
            pcrp_gibbs=step,
        )
    seconds = time.perf_counter() - start
    stats = idata.sample_stats
    k = stats["n_clusters"].values
    lj = stats["log_joint"].values
    out = {
        "r": r,
        "rhat_k": float(az.rhat(k)),
        "ess_k": float(az.ess(k)),
        "rhat_lj": float(az.rhat(lj)),
        "ess_lj": float(az.ess(lj)),
        "chain_k": [round(float(v), 2) for v in k.mean(axis=1)],
        "chain_lj": [round(float(v), 1) for v in lj.mean(axis=1)],
        "seconds": seconds,
    }
    proposed = int(stats["swap_proposed"].sum())
    out["swap_rate"] = float(stats["swap_accepted"].sum()) / proposed if proposed else None
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="breast_cancer")
    parser.add_argument("--powers", default="1,1.1,1.3")
    parser.add_argument("--temper", default=None, help="an integer M or a JSON list of betas")
    parser.add_argument("--sweeps-per-draw", type=int, default=None)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--tune", type=int, default=500)
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--seed", type=int, default=20261126)
    args = parser.parse_args()
    logging.getLogger("pymc").setLevel(logging.ERROR)
    step: dict = {}
    if args.temper is not None:
        step["temper"] = json.loads(args.temper)
    if args.sweeps_per_draw is not None:
        step["sweeps_per_draw"] = args.sweeps_per_draw
    x = load(args.dataset)
    with warnings.catch_warnings():  # warm-up: compile or load the kernels, untimed
        warnings.simplefilter("ignore")
        prior = pcrp.NIWPrior.from_data(x, nu0=x.shape[1] + 2.0)
        pcrp.fit(x, prior=prior, draws=5, tune=5, chains=1, cores=1, random_seed=0, pcrp_gibbs=step)
    print(f"{args.dataset} {x.shape}, pcrp_gibbs={step}, load {os.getloadavg()[0]:.1f}")
    print(
        "| r | R-hat K | ESS K | R-hat log joint | ESS log joint | chain mean K "
        "| chain mean log joint | s | swap rate |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r in (float(v) for v in args.powers.split(",")):
        o = run(x, r, args, step)
        rate = "-" if o["swap_rate"] is None else f"{o['swap_rate']:.3f}"
        print(
            f"| {r} | {o['rhat_k']:.3f} | {o['ess_k']:.0f} | {o['rhat_lj']:.3f} | "
            f"{o['ess_lj']:.0f} | {o['chain_k']} | {o['chain_lj']} | {o['seconds']:.0f} | {rate} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
