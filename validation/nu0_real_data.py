"""What the data say about ``nu0``: the evidence given a partition, and the learned posterior.

For each data set of the real-data panel (``benchmarks/real_data.py``'s loaders, every
column standardised), prints two things:

1. ``log p(X | z, nu0)`` with the NIW scale summed over the default grid
   (``NIWPrior.from_data``'s), for ``z`` the true classes, at every value of the
   default ``nu0`` grid (``D - 1 + exp(u)``, ``u`` on 20 points of ``[0.01, 3]``) and
   at ``D + 2`` (the fixed default before the hyperprior): the value that maximises
   it, and how many nats ``D + 2`` and the grid's ends are below that maximum.
2. With ``--fit``: ``pymc_pcrp.fit`` with the package defaults (which learn ``nu0``)
   at ``--power`` (4 chains x 1000 draws after 500 tuning draws, 2 cores, seed
   20261126, as in the panel): the posterior quantiles (5%, 50%, 95%) of the sample
   stat ``niw_nu0``, the share of draws at the lowest grid value, R-hat of K and of the
   log joint, and the point estimate's K and adjusted Rand index.

Usage::

    PYTHONPATH=. python validation/nu0_real_data.py [--datasets wine,iris] [--fit] [--power 1.1]
"""

from __future__ import annotations

import argparse
import sys
import warnings

from pathlib import Path

import arviz as az
import numpy as np

from sklearn.metrics import adjusted_rand_score

import pymc_pcrp as pc

from pymc_pcrp.distributions._niw_numpy import scale_marginal_loglik

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from real_data import load_dataset

PANEL = "iris,wine,breast_cancer,old_faithful,digits,sim2"


def evidence(x: np.ndarray, labels: np.ndarray) -> str:
    """The log marginal of the partition over the nu0 grid, relative to its maximum."""
    prior = pc.NIWPrior.from_data(x)
    d = x.shape[1]
    xc = x - prior.mu0
    _, z = np.unique(labels, return_inverse=True)
    grid, log_w = prior.grid_arrays()

    def loglik(nu0: float) -> float:
        return scale_marginal_loglik(xc, z, prior.kappa0, nu0, prior.psi0, grid, log_w)

    values = np.array([loglik(nu) for nu in prior.nu0_grid])
    top = values.max()
    best = prior.nu0_grid[np.argmax(values)]
    return (
        f"best nu0 {best:.2f} (D {best - d:+.2f}); below it: D + 2 {top - loglik(d + 2.0):.1f}, "
        f"lowest {prior.nu0_grid[0]:.2f} {top - values[0]:.1f}, "
        f"highest {prior.nu0_grid[-1]:.2f} {top - values[-1]:.1f} nats"
    )


def posterior(x: np.ndarray, y: np.ndarray, power: float) -> str:
    """Fit the defaults; summarise the draws of nu0, convergence and the point estimate."""
    prior = pc.NIWPrior.from_data(x)
    idata = pc.fit(
        x, power=power, draws=1000, tune=500, chains=4, cores=2, random_seed=20261126,
        progressbar=False, compute_convergence_checks=False,
    )  # fmt: skip
    stats = idata.sample_stats
    nu0 = stats["niw_nu0"].values
    q = np.quantile(nu0, [0.05, 0.5, 0.95])
    at_low = float(np.mean(nu0 == prior.nu0_grid[0]))
    rhat_k = float(az.rhat(stats["n_clusters"].values.astype(float)))
    rhat_lj = float(az.rhat(stats["log_joint"].values))
    pe = pc.point_estimate(idata, random_seed=20261126)
    ari = adjusted_rand_score(y, np.asarray(pe.labels))
    return (
        f"r = {power}: nu0 5/50/95% {q[0]:.2f}/{q[1]:.2f}/{q[2]:.2f}, at the lowest grid value "
        f"{at_low:.0%}; R-hat K {rhat_k:.3f}, log joint {rhat_lj:.3f}; "
        f"point estimate K {pe.n_clusters}, ARI {ari:.3f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", default=PANEL)
    parser.add_argument("--fit", action="store_true", help="also fit the defaults")
    parser.add_argument("--power", type=float, default=1.1)
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    for name in args.datasets.split(","):
        data = load_dataset(name, None)
        y = np.asarray(data.truth)
        print(f"{name} (N = {data.X.shape[0]}, D = {data.X.shape[1]}), true classes: "
              f"{evidence(data.X, y)}", flush=True)  # fmt: skip
        if args.fit:
            print(f"{name}: {posterior(data.X, y, args.power)}", flush=True)


if __name__ == "__main__":
    main()
