"""The Poisson mixture of docs/any_likelihood.md, run as written with ``pm.sample()`` defaults.

Simulates ``N`` counts from 4 clusters (rates 2, 15, 40 and 90, equal
shares), fits::

    with pm.Model():
        z = pcrp.PowerCRP("z", alpha=1.0, power=1.2, n=len(y), max_clusters=20)
        lam = pm.Gamma("lam", 2.0, 0.5, shape=20)
        pm.Poisson("y", lam[z], observed=y)
        idata = pm.sample()

and prints, per seed, the adjusted Rand index of the point estimate
(:func:`pymc_pcrp.point_estimate`) against the true clusters, R-hat and bulk
ESS of the number of clusters and of the log joint, the posterior mean of the
number of clusters, the divergences and the wall time. Run::

    python validation/any_likelihood_poisson.py --seeds 1 2 3
"""

from __future__ import annotations

import argparse
import time
import warnings

import arviz as az
import numpy as np
import pymc as pm

from sklearn.metrics import adjusted_rand_score

import pymc_pcrp as pcrp

RATES = np.array([2.0, 15.0, 40.0, 90.0])


def simulate(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Counts from the 4-cluster Poisson mixture and their true clusters."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, RATES.size, size=n)
    return rng.poisson(RATES[truth]), truth


def run(n: int, seed: int, chains: int | None) -> dict[str, float]:
    """Fit the model of the module docstring to one simulated data set; return the scores."""
    y, truth = simulate(n, seed)
    start = time.perf_counter()
    with pm.Model():
        z = pcrp.PowerCRP("z", alpha=1.0, power=1.2, n=len(y), max_clusters=20)
        lam = pm.Gamma("lam", 2.0, 0.5, shape=20)
        pm.Poisson("y", lam[z], observed=y)
        extra = {} if chains is None else {"chains": chains}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            idata = pm.sample(random_seed=seed, progressbar=False, **extra)
    seconds = time.perf_counter() - start
    best = pcrp.point_estimate(idata, random_seed=seed)
    stats = idata.sample_stats
    summary = az.summary(stats, var_names=["n_clusters", "log_joint"], kind="diagnostics")
    return {
        "ari": adjusted_rand_score(truth, best.labels),
        "k_point": int(best.labels.max()) + 1,
        "mean_k": float(stats["n_clusters"].mean()),
        "rhat_k": float(summary.loc["n_clusters", "r_hat"]),
        "rhat_log_joint": float(summary.loc["log_joint", "r_hat"]),
        "ess_k": float(summary.loc["n_clusters", "ess_bulk"]),
        "ess_log_joint": float(summary.loc["log_joint", "ess_bulk"]),
        "divergences": int(stats["diverging"].sum()),
        "seconds": seconds,
    }


def main(argv=None) -> None:
    """Run the seeds given on the command line and print one line per seed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000, help="number of counts (default 1000)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1], help="data and chain seeds")
    parser.add_argument("--chains", type=int, default=None, help="default: pm.sample's")
    args = parser.parse_args(argv)
    for seed in args.seeds:
        scores = run(args.n, seed, args.chains)
        text = " ".join(
            f"{k}={v:.3f}" if k.startswith(("rhat", "ari")) else f"{k}={v:.4g}"
            for k, v in scores.items()
        )
        print(f"seed={seed} {text}", flush=True)


if __name__ == "__main__":
    main()
