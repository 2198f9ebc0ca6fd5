"""The learned NIW scale against the fixed ``scale=0.1`` prior on wine, iris and breast cancer.

For each data set (scikit-learn's copies, raw features) and each prior
(``NIWPrior.from_data(X)``, the learned scale, and ``NIWPrior.from_data(X, scale=0.1)``,
the former default), runs ``pymc_pcrp.fit`` with 4 chains of 1000 tuning and 1000 kept
draws (random_seed=1, the step's move set unless ``--split-merge`` is given) and prints
one JSON line: E[K] and its per-chain means, R-hat of K and of the log joint, the
posterior quantiles (5%, 50%, 95%) of ``c = s / nu0`` (the typical within-cluster
variance as a fraction of the data variance), the sizes of the point estimate
(``point_estimate``, VI loss) and its adjusted Rand index against the known classes.

Usage::

    PYTHONPATH=. python validation/scale_real_data.py --power 1.1 [--split-merge 1]
"""

import argparse
import json
import logging
import time
import warnings

import arviz as az
import numpy as np

from sklearn import datasets as skd
from sklearn.metrics import adjusted_rand_score

import pymc_pcrp as pc

LOADERS = {"wine": skd.load_wine, "iris": skd.load_iris, "breast": skd.load_breast_cancer}


def run(name: str, scale, power: float, split_merge: int) -> dict:
    """Fit one data set with one prior and summarise the posterior."""
    x, y = LOADERS[name](return_X_y=True)
    prior = pc.NIWPrior.from_data(x, scale=scale)
    start = time.time()
    idata = pc.fit(
        x, power=power, prior=prior, draws=1000, tune=1000, chains=4, random_seed=1,
        compute_convergence_checks=False, pcrp_gibbs={"split_merge": split_merge},
    )  # fmt: skip
    k = idata.sample_stats["n_clusters"].values
    lj = idata.sample_stats["log_joint"].values
    c = idata.sample_stats["niw_scale"].values / prior.nu0
    pe = pc.point_estimate(idata, random_seed=0)
    return {
        "data": name,
        "D": x.shape[1],
        "r": power,
        "split_merge": split_merge,
        "scale": scale,
        "secs": round(time.time() - start, 1),
        "EK": round(float(k.mean()), 2),
        "K_chains": [round(float(v), 1) for v in k.mean(axis=1)],
        "rhat_K": round(float(az.rhat(k.astype(float))), 3) if k.std() > 0 else None,
        "rhat_LJ": round(float(az.rhat(lj)), 3),
        "c_q05_q50_q95": (
            [float(f"{v:.3g}") for v in np.quantile(c, [0.05, 0.5, 0.95])]
            if scale == "learn"
            else None
        ),
        "pe_sizes": sorted(np.bincount(pe.labels).tolist(), reverse=True)[:10],
        "ARI": round(adjusted_rand_score(y, pe.labels), 3),
    }


def main() -> None:
    """Parse the options and print one JSON line per (data set, prior)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--power", type=float, default=1.1)
    parser.add_argument("--split-merge", type=int, default=0)
    parser.add_argument("--data", default="wine,iris,breast")
    args = parser.parse_args()
    logging.getLogger("pymc").setLevel(logging.ERROR)
    warnings.simplefilter("ignore")
    for name in args.data.split(","):
        for scale in ("learn", 0.1):
            print(json.dumps(run(name, scale, args.power, args.split_merge)), flush=True)


if __name__ == "__main__":
    main()
