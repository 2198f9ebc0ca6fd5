"""Command line: ``python -m pymc_pcrp demo``, ``cluster`` and ``reproduce``.

The same commands are installed as the ``pymc-pcrp`` script.
"""

from __future__ import annotations

import argparse
import sys
import time

from collections.abc import Sequence

from pymc_pcrp.cluster_command import add_cluster_parser, run_cluster

__all__ = ["main", "run_demo"]


def run_demo(
    *,
    alpha: float = 1.0,
    power: float = 1.11,
    draws: int = 2000,
    tune: int = 1000,
    chains: int = 4,
    cores: int = 1,
    sweeps_per_draw: int = 2,
    seed: int = 1,
    out=None,
) -> dict[str, object]:
    """Cluster the bundled Old Faithful data with the CRP and the pCRP; print the posterior of K.

    The default ``power = 1.11`` is the value Lu, Li & Dunson (2018) chose by
    cross-validation for this data set. Both runs use ``alpha = 1`` and the
    data-based NIW prior :meth:`~pymc_pcrp.NIWPrior.from_data`.

    Returns
    -------
    dict
        ``{"CRP": idata, "pCRP": idata}``.
    """
    import arviz as az
    import numpy as np
    import pymc as pm

    out = sys.stdout if out is None else out

    from pymc_pcrp import NIWMixture, NIWPrior, PowerCRP
    from pymc_pcrp.datasets import load_old_faithful

    x = load_old_faithful()
    prior = NIWPrior.from_data(x)
    print(
        f"Old Faithful: N = {x.shape[0]} eruptions, D = {x.shape[1]} (duration, waiting time)\n"
        f"alpha = {alpha}; {chains} chains x {draws} draws ({sweeps_per_draw} sweeps each) "
        f"after {tune} tuning draws; seed {seed}\n",
        file=out,
    )
    results = {}
    rows = []
    for label, r in (("CRP", 1.0), ("pCRP", power)):
        start = time.perf_counter()
        with pm.Model():
            z = PowerCRP("z", alpha=alpha, power=r, n=x.shape[0])
            NIWMixture("x", z=z, prior=prior, observed=x)
            idata = pm.sample(
                draws=draws,
                tune=tune,
                chains=chains,
                cores=cores,
                random_seed=seed,
                progressbar=False,
                pcrp_gibbs={"sweeps_per_draw": sweeps_per_draw},
            )
        seconds = time.perf_counter() - start
        k = idata.posterior["n_clusters"].values.ravel()
        summary = az.summary(idata, var_names=["n_clusters"], kind="all")
        lj = az.summary(idata, group="sample_stats", var_names=["log_joint"], kind="diagnostics")
        rows.append((label, r, k, summary.loc["n_clusters"], lj.loc["log_joint"], seconds))
        results[label] = idata
    k_max = max(int(row[2].max()) for row in rows)
    ks = list(range(1, k_max + 1))
    header = f"{'':<14}" + "".join(f"{'K=' + str(k):>8}" for k in ks)
    print("Posterior probability of the number of clusters K", file=out)
    print(header, file=out)
    for label, r, k, *_ in rows:
        freq = np.bincount(k, minlength=k_max + 1)[1:] / k.size
        name = f"{label} (r={r:g})"
        print(f"{name:<14}" + "".join(f"{p:>8.3f}" for p in freq), file=out)
    print("\nn_clusters: mean, sd, R-hat, bulk ESS; log joint: R-hat, bulk ESS; time", file=out)
    for label, r, _, s, lj, seconds in rows:
        name = f"{label} (r={r:g})"
        print(
            f"{name:<14} K {s['mean']:.2f} +- {s['sd']:.2f}  r_hat {s['r_hat']:.2f}  "
            f"ess {s['ess_bulk']:>5.0f} | log joint r_hat {lj['r_hat']:.2f}  "
            f"ess {lj['ess_bulk']:>5.0f} | {seconds:.1f} s",
            file=out,
        )
    return results


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m pymc_pcrp``."""
    parser = argparse.ArgumentParser(
        prog="python -m pymc_pcrp",
        description="The powered Chinese restaurant process (pCRP) for PyMC.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser(
        "demo",
        help="cluster the bundled Old Faithful data with CRP and pCRP; print the posterior of K",
    )
    demo.add_argument("--alpha", type=float, default=1.0, help="concentration (default 1)")
    demo.add_argument(
        "--power",
        type=float,
        default=1.11,
        help="pCRP power r (default 1.11, the paper's cross-validated choice)",
    )
    demo.add_argument("--draws", type=int, default=2000, help="draws per chain (default 2000)")
    demo.add_argument("--tune", type=int, default=1000, help="burn-in draws (default 1000)")
    demo.add_argument(
        "--sweeps-per-draw", type=int, default=2, help="Gibbs sweeps per stored draw (default 2)"
    )
    demo.add_argument("--chains", type=int, default=4, help="number of chains (default 4)")
    demo.add_argument("--cores", type=int, default=1, help="processes for the chains (default 1)")
    demo.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    reproduce = sub.add_parser(
        "reproduce",
        help="re-run the paper's experiments; write DIR/tables.md and the figures",
        description=(
            "Run CRP-Oracle, CRP and pCRP (r by cross-validation) on Sim 1, Sim 2, digits 1-4 "
            "and Old Faithful with the paper's protocol (20,000 sweeps, 10,000 burn-in, every "
            "5th kept, 2 chains), and write DIR/tables.md (the paper's values beside ours) "
            "and every figure as PNG."
        ),
    )
    reproduce.add_argument("--out", required=True, help="output folder (created if needed)")
    reproduce.add_argument(
        "--quick",
        action="store_true",
        help="same pipeline on small data with few sweeps (a smoke test, a few minutes)",
    )
    reproduce.add_argument(
        "--mnist",
        default=None,
        metavar="DIR",
        help="folder with the four MNIST IDX files; without it the digits experiment uses "
        "scikit-learn's 8x8 digits as a stand-in",
    )
    reproduce.add_argument("--seed", type=int, default=2018, help="base seed (default 2018)")
    reproduce.add_argument(
        "--n-jobs",
        type=int,
        default=None,
        help="cross-validation grid points fitted in parallel (default: 2, quick: 1)",
    )
    add_cluster_parser(sub)
    args = parser.parse_args(argv)
    if args.command == "cluster":
        return run_cluster(args)
    if args.command == "reproduce":
        from pymc_pcrp.reproduce import run_reproduction

        words = list(sys.argv[1:] if argv is None else argv)
        run_reproduction(
            args.out,
            quick=args.quick,
            mnist=args.mnist,
            seed=args.seed,
            n_jobs=args.n_jobs,
            command="python -m pymc_pcrp " + " ".join(words),
        )
    elif args.command == "demo":
        run_demo(
            alpha=args.alpha,
            power=args.power,
            draws=args.draws,
            tune=args.tune,
            chains=args.chains,
            cores=args.cores,
            sweeps_per_draw=args.sweeps_per_draw,
            seed=args.seed,
        )
    return 0
