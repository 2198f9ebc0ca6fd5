"""The posterior of the power r on Sim 2 and Old Faithful, with r integrated out.

Model: ``r ~ Uniform(0.8, 2)``, ``alpha = 1`` (the paper's value), the NIW prior of
``NIWPrior.from_data``; ``pm.sample`` assigns ``PCRPHyper`` to ``r`` and
``PCRPGibbs`` to the labels. For comparison the same data are fitted with ``r``
fixed at 1 (the CRP) and at the posterior median of ``r``. Printed: the posterior
of ``r`` (mean, sd, 5%/50%/95%), the posterior of ``K`` for each fit, and R-hat and
bulk ESS of ``r`` and ``n_clusters`` (a figure is quoted in the docs only if its
R-hat is at most 1.01).

Run from the repository root::

    PYTHONPATH=. python validation/posterior_of_r.py [--draws 2000] [--chains 4]
"""

from __future__ import annotations

import argparse
import logging

import arviz as az
import numpy as np
import pymc as pm

import pymc_pcrp as pcrp


def fit(x: np.ndarray, power, draws: int, chains: int, seed: int):
    """``pm.sample`` on the pCRP-NIW model with ``alpha = 1`` and the given power."""
    with pm.Model():
        r = pm.Uniform("r", 0.8, 2.0) if power is None else power
        z = pcrp.PowerCRP("z", alpha=1.0, power=r, n=len(x))
        pcrp.NIWMixture("x", z=z, prior=pcrp.NIWPrior.from_data(x), observed=x)
        return pm.sample(
            draws=draws,
            tune=500,
            chains=chains,
            cores=1,
            random_seed=seed,
            progressbar=False,
            compute_convergence_checks=False,
        )


def k_summary(idata) -> str:
    """Mean of K and its posterior probabilities above 1%."""
    k = idata.posterior["n_clusters"].values.ravel()
    values, counts = np.unique(k, return_counts=True)
    probs = ", ".join(
        f"P(K={v})={c / k.size:.3f}"
        for v, c in zip(values, counts, strict=True)
        if c / k.size >= 0.01
    )
    return f"E[K]={k.mean():.3f}; {probs}"


def diagnostics(idata, names) -> str:
    """R-hat and bulk ESS of the named variables."""
    out = []
    for name in names:
        rhat = float(az.rhat(idata, var_names=[name])[name])
        ess = float(az.ess(idata, var_names=[name])[name])
        out.append(f"{name}: R-hat {rhat:.4f}, ESS {ess:.0f}")
    return "; ".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--draws", type=int, default=2000)
    ap.add_argument("--chains", type=int, default=4)
    args = ap.parse_args()
    logging.getLogger("pymc").setLevel(logging.ERROR)
    sim2, _ = pcrp.datasets.sim2(300, seed=0)
    data = {
        "Sim 2 (N=300, seed 0)": sim2,
        "Old Faithful (standardised, N=272)": pcrp.datasets.load_old_faithful(standardize=True),
    }
    for j, (name, x) in enumerate(data.items()):
        print(f"== {name}")
        idata = fit(x, None, args.draws, args.chains, 10 + j)
        r = idata.posterior["r"].values.ravel()
        q05, q50, q95 = np.quantile(r, [0.05, 0.5, 0.95])
        print(
            f"  r ~ Uniform(0.8, 2): posterior mean {r.mean():.3f}, sd {r.std():.3f}, "
            f"5%/50%/95% {q05:.3f}/{q50:.3f}/{q95:.3f}"
        )
        print(f"    {k_summary(idata)}")
        print(f"    {diagnostics(idata, ['r', 'n_clusters'])}")
        for power in (1.0, round(float(q50), 2)):
            fixed = fit(x, power, args.draws, args.chains, 20 + j)
            print(f"  r fixed at {power}: {k_summary(fixed)}")
            print(f"    {diagnostics(fixed, ['n_clusters'])}")


if __name__ == "__main__":
    main()
