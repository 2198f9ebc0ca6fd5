"""Cluster Old Faithful with the CRP and the pCRP, and save trace plots of K.

Run from anywhere after ``pip install .``::

    python examples/old_faithful.py --out old_faithful_k.png

It samples both models (4 chains each), prints ``az.summary`` of the number of
clusters and of the log joint density, replicates the data from the pCRP
posterior, and writes one figure: the trace of K for both models and a
posterior predictive scatter.
"""

import argparse

import arviz as az
import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pymc as pm

import pymc_pcrp as pcrp


def fit(x, power, seed, draws, tune):
    with pm.Model():
        z = pcrp.PowerCRP("z", alpha=1.0, power=power, n=len(x))
        pcrp.NIWMixture("x", z=z, prior=pcrp.NIWPrior.from_data(x), observed=x)
        idata = pm.sample(
            draws=draws,
            tune=tune,
            chains=4,
            random_seed=seed,
            progressbar=False,
            pcrp_gibbs={"sweeps_per_draw": 2},
        )
        pcrp.sample_posterior_predictive(idata, random_seed=seed, extend_inferencedata=True)
    return idata


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="old_faithful_k.png")
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--tune", type=int, default=500)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    matplotlib.use("Agg")
    x = pcrp.datasets.load_old_faithful()
    runs = {"CRP (r=1)": fit(x, 1.0, args.seed, args.draws, args.tune)}
    runs["pCRP (r=1.11)"] = fit(x, 1.11, args.seed, args.draws, args.tune)
    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    for ax, (label, idata) in zip(axes[:2], runs.items(), strict=True):
        print(label)
        print(az.summary(idata, var_names=["n_clusters"]))
        print(az.summary(idata, group="sample_stats", var_names=["log_joint"]))
        k = idata.posterior["n_clusters"].values
        for chain in range(k.shape[0]):
            ax.plot(k[chain], lw=0.6, label=f"chain {chain}")
        ax.set(title=f"{label}: number of clusters", xlabel="draw", ylabel="K")
        ax.legend(fontsize="small")
    reps = runs["pCRP (r=1.11)"].posterior_predictive["x"].values
    last = reps[0, -1]
    axes[2].scatter(x[:, 0], x[:, 1], s=8, label="data")
    axes[2].scatter(last[:, 0], last[:, 1], s=8, alpha=0.6, label="one pCRP replicate")
    axes[2].set(title="Posterior predictive", xlabel="eruptions (min)", ylabel="waiting (min)")
    axes[2].legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)
    print(
        f"figure written to {args.out}; mean K:",
        {label: float(np.mean(idata.posterior["n_clusters"])) for label, idata in runs.items()},
    )


if __name__ == "__main__":
    main()
