"""Simulation-based calibration of slot labels on a mixture of Poisson regressions.

A model without a conjugate form: ``N`` units with a covariate ``x``, clustered by
``PowerCRP(..., max_clusters=K)``, each cluster with its own intercept and slope::

    z ~ PowerCRP(alpha=1, power=1.2, n=N, max_clusters=K)
    a ~ Normal(1, 1), b ~ Normal(0, 0.5)         (shape K each)
    y_i ~ Poisson(exp(a[z_i] + b[z_i] x_i))

Each replicate draws ``(z, a, b, y)`` from the prior (``z`` by ``pm.draw``, the rest
with NumPy), fits the model with ``pm.sample`` (``PCRPSlotGibbs`` for ``z``, NUTS for
``a`` and ``b``, one chain, thinned to ``--kept`` draws) and ranks the true value of
three label-invariant statistics among the draws: the number of clusters ``K``, the
mean rate ``mean_i exp(a[z_i] + b[z_i] x_i)`` and the mean slope ``mean_i b[z_i]``.
A calibrated sampler gives uniform ranks; the table reports a chi-square test of
uniformity over ten bins per statistic. Run::

    python validation/sbc_slots.py --replicates 100
"""

from __future__ import annotations

import argparse
import sys
import warnings

import numpy as np
import pymc as pm

from _sbc_common import print_header, print_rank_table, rank_with_ties

import pymc_pcrp as pcrp

NAMES = ("n_clusters", "mean_rate", "mean_slope")


def statistics(z: np.ndarray, a: np.ndarray, b: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The three label-invariant statistics of one draw (or of the truth)."""
    rate = np.exp(a[z] + b[z] * x)
    return np.array([len(np.unique(z)), rate.mean(), b[z].mean()])


def replicate(seed: int, n: int, k_max: int, kept: int, thin: int) -> np.ndarray:
    """Ranks of the three statistics for one prior draw and its posterior draws."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    z = pm.draw(pcrp.PowerCRP.dist(1.0, 1.2, n, max_clusters=k_max), random_seed=rng)
    a = rng.normal(1.0, 1.0, size=k_max)
    b = rng.normal(0.0, 0.5, size=k_max)
    y = rng.poisson(np.exp(a[z] + b[z] * x))
    with pm.Model():
        zz = pcrp.PowerCRP("z", alpha=1.0, power=1.2, n=n, max_clusters=k_max)
        aa = pm.Normal("a", 1.0, 1.0, shape=k_max)
        bb = pm.Normal("b", 0.0, 0.5, shape=k_max)
        pm.Poisson("y", pm.math.exp(aa[zz] + bb[zz] * x), observed=y)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            idata = pm.sample(
                draws=kept * thin,
                tune=500,
                chains=1,
                random_seed=rng,
                progressbar=False,
                compute_convergence_checks=False,
            )
    post = idata.posterior
    zs = post["z"].values[0, ::thin]
    as_, bs = post["a"].values[0, ::thin], post["b"].values[0, ::thin]
    draws = np.array([statistics(zs[t], as_[t], bs[t], x) for t in range(kept)])
    truth = statistics(z, a, b, x)
    return np.array([rank_with_ties(rng, truth[s], draws[:, s]) for s in range(len(NAMES))])


def main(argv=None) -> int:
    """Run the replicates and print the table of rank uniformity."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=100)
    parser.add_argument("--n", type=int, default=30, help="number of units (default 30)")
    parser.add_argument("--max-clusters", type=int, default=8)
    parser.add_argument("--kept", type=int, default=99, help="draws ranked against (default 99)")
    parser.add_argument("--thin", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print_header("sbc_slots.py", sys.argv[1:] if argv is None else list(argv))
    ranks = []
    for r in range(args.replicates):
        ranks.append(replicate(args.seed + r, args.n, args.max_clusters, args.kept, args.thin))
        print(f"replicate {r}: ranks {ranks[-1].tolist()}", flush=True)
    ranks = np.array(ranks)
    print(f"{args.replicates} replicates, N={args.n}, max_clusters={args.max_clusters}")
    print_rank_table(ranks, NAMES, args.kept)
    return 0


if __name__ == "__main__":
    sys.exit(main())
