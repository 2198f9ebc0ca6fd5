"""Mixing with and without split-merge moves, where single-site Gibbs is stuck.

Run from the repository root::

    PYTHONPATH=. python benchmarks/bench_split_merge.py --n 2000 --draws 500 --chains 4 --seed 0

``--moves`` takes expected proposals per sweep (``PCRPGibbs(split_merge=...)``, a
fraction is allowed) and ``--scans`` the values of ``split_merge_scans`` to try
(``-1``: sequential allocation alone, the default); every rate above zero is run
with every scan setting.

Data: N points in 2-D, two equal unit-covariance Gaussian clusters whose means are
5 apart (first coordinate 0 and 5), fixed seed. Model: ``pcrp.build_model(X,
power=1.1)`` (alpha = 1, ``NIWPrior.from_data``). Every chain starts with all points
in one cluster (``init="one"``), no tuning, so the first draws show the escape from
the merged state.

For each configuration the script prints the wall time of ``pm.sample`` (chains run
one after the other on one core), bulk ESS and R-hat of ``n_clusters`` and of the
``log_joint`` sample stat (ArviZ), ESS per second, the mean log joint over the
second half of the draws against the log joint of the true partition, the share of
draws with the two true clusters found (a cluster holding >= 90% of each true
group), and the split/merge acceptance counts. The same data and seed are used for
every configuration, in the same process.
"""

from __future__ import annotations

import argparse
import logging
import time
import warnings

import arviz as az
import numpy as np
import pymc as pm

import pymc_pcrp as pcrp

from pymc_pcrp._kernels.sweep import init_state, log_joint, make_params


def data(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    truth = np.repeat([0, 1], [n - n // 2, n // 2])
    x = rng.normal(size=(n, 2))
    x[truth == 1, 0] += 5.0
    return x, truth


def true_log_joint(x: np.ndarray, truth: np.ndarray) -> float:
    prior = pcrp.NIWPrior.from_data(x)
    params = make_params(1.0, 1.1, prior.kappa0, prior.nu0, prior.psi0)
    xc = np.ascontiguousarray(x - prior.mu0)
    return float(log_joint(init_state(xc, truth.astype(np.int64), params), params, 2))


def found_truth(z: np.ndarray, truth: np.ndarray) -> bool:
    for g in (0, 1):
        members = z[truth == g]
        if np.bincount(members).max() < 0.9 * members.size:
            return False
    top = [np.bincount(z[truth == g]).argmax() for g in (0, 1)]
    return top[0] != top[1]


def run(x, truth, split_merge: float, args, scans: int = -1) -> dict:
    start = time.perf_counter()
    with pcrp.build_model(x, power=1.1):
        idata = pm.sample(
            draws=args.draws,
            tune=0,
            chains=args.chains,
            cores=1,
            random_seed=args.seed,
            progressbar=False,
            compute_convergence_checks=False,
            pcrp_gibbs={"init": "one", "split_merge": split_merge, "split_merge_scans": scans},
        )
    wall = time.perf_counter() - start
    k = idata.posterior["n_clusters"]
    lj = idata.sample_stats["log_joint"]
    ess_k = float(az.ess(k.to_dataset())["n_clusters"])
    ess_lj = float(az.ess(lj.to_dataset())["log_joint"])
    rhat_k = float(az.rhat(k.to_dataset())["n_clusters"])
    rhat_lj = float(az.rhat(lj.to_dataset())["log_joint"])
    z = idata.posterior["z"].values.reshape(-1, x.shape[0])
    half = lj.values[:, args.draws // 2 :]
    st = idata.sample_stats
    return {
        "wall": wall,
        "ess_k": ess_k,
        "ess_lj": ess_lj,
        "rhat_k": rhat_k,
        "rhat_lj": rhat_lj,
        "lj_mean": float(half.mean()),
        "found": float(np.mean([found_truth(zz, truth) for zz in z])),
        "k_mean": float(k.values.mean()),
        "split": (int(st["split_accepted"].sum()), int(st["split_proposed"].sum())),
        "merge": (int(st["merge_accepted"].sum()), int(st["merge_proposed"].sum())),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--draws", type=int, default=500)
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--moves", type=float, nargs="+", default=[0, 0.1, 1])
    parser.add_argument("--scans", type=int, nargs="+", default=[-1, 0])
    args = parser.parse_args()
    logging.getLogger("pymc").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore")
    x, truth = data(args.n, args.seed)
    print(
        f"N={args.n}, two clusters 5 sd apart, r=1.1, alpha=1; {args.chains} chains x "
        f"{args.draws} draws (1 sweep each), all started in one cluster, seed {args.seed}"
    )
    print(f"log joint of the true partition: {true_log_joint(x, truth):.1f}")
    run(x[::40], truth[::40], 1, argparse.Namespace(**{**vars(args), "draws": 5, "chains": 1}))
    header = (
        f"{'split_merge':>11} {'scans':>5} {'wall s':>7} {'ESS K':>7} {'ESS/s K':>8} "
        f"{'R-hat K':>8} "
        f"{'ESS lj':>7} {'ESS/s lj':>9} {'R-hat lj':>9} {'mean lj (2nd half)':>19} "
        f"{'found':>6} {'mean K':>7} {'splits acc/prop':>16} {'merges acc/prop':>16}"
    )
    print(header)
    print("-" * len(header))
    configs = [(m, s) for m in args.moves for s in (args.scans if m > 0 else args.scans[:1])]
    for moves, scans in configs:
        r = run(x, truth, moves, args, scans)
        print(
            f"{moves:>11g} {scans if moves > 0 else '-':>5} {r['wall']:>7.1f} "
            f"{r['ess_k']:>7.1f} {r['ess_k'] / r['wall']:>8.2f} "
            f"{r['rhat_k']:>8.2f} {r['ess_lj']:>7.1f} {r['ess_lj'] / r['wall']:>9.2f} "
            f"{r['rhat_lj']:>9.2f} {r['lj_mean']:>19.1f} {r['found']:>6.2f} {r['k_mean']:>7.2f} "
            f"{'{}/{}'.format(*r['split']):>16} {'{}/{}'.format(*r['merge']):>16}"
        )
    print("ESS/R-hat: ArviZ bulk ESS and rank-normalised R-hat over all chains; 'found' = share")
    print("of draws where each true group sits >= 90% in its own cluster.")


if __name__ == "__main__":
    main()
