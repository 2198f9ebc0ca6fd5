"""The exact prior on K, alpha for a target K, and alpha as a random variable.

Run from the repository root (writes docs/prior/prior_k.png)::

    PYTHONPATH=. python examples/prior_and_alpha.py
"""

import logging
import time

import arviz as az
import numpy as np
import pymc as pm

import pymc_pcrp as pcrp

logging.getLogger("pymc").setLevel(logging.ERROR)

n = 2000
print(f"Exact prior on the number of clusters K, N = {n}, alpha = 1")
print("    r   mean K   mode K   P(K <= 5)   99% quantile")
for r in (1.0, 1.05, 1.1, 1.2, 1.5):
    start = time.perf_counter()
    pmf = pcrp.prior.prior_num_clusters(n, 1.0, r)
    cdf = np.cumsum(pmf)
    q99 = int(np.searchsorted(cdf, 0.99))
    print(
        f"{r:5.2f} {pcrp.prior.prior_mean_num_clusters(n, 1.0, r):8.3f} "
        f"{pcrp.prior.prior_mode_num_clusters(n, 1.0, r):8d} {cdf[5]:11.4f} {q99:14d}"
        f"   ({time.perf_counter() - start:.1f} s)"
    )
crp_mean = sum(1.0 / (1.0 + i) for i in range(n))
print(f"check, r = 1: sum_i alpha / (alpha + i - 1) = {crp_mean:.3f}")

print("\nalpha giving a prior mean of K = 3 at N = 300 and N = 2000")
for r in (1.0, 1.1, 1.3):
    row = [pcrp.prior.alpha_for_prior_k(m, r, mean=3.0) for m in (300, 2000)]
    print(f"  r = {r:4.2f}: alpha = {row[0]:.4f} (N = 300), {row[1]:.4f} (N = 2000)")
oracle = [pcrp.prior.crp_oracle_alpha(3, m) for m in (300, 2000)]
print(f"  paper's CRP-Oracle K / log N: {oracle[0]:.4f} (N = 300), {oracle[1]:.4f} (N = 2000)")

fig = pcrp.plots.plot_prior_num_clusters(300, 1.0, [1.0, 1.1, 1.2, 1.5])
fig.savefig("docs/prior/prior_k.png", dpi=110, bbox_inches="tight")
print("\nwrote docs/prior/prior_k.png")

print("\nalpha ~ Gamma(2, 1) on Old Faithful (standardised), r = 1.11, 4 chains x 1000 draws")
X = pcrp.datasets.load_old_faithful(standardize=True)
with pm.Model():
    alpha = pm.Gamma("alpha", 2.0, 1.0)
    z = pcrp.PowerCRP("z", alpha=alpha, power=1.11, n=len(X))
    pcrp.NIWMixture("x", z=z, prior=pcrp.NIWPrior.from_data(X), observed=X)
    idata = pm.sample(draws=1000, tune=1000, chains=4, random_seed=3, progressbar=False)
summary = az.summary(idata, var_names=["alpha", "n_clusters"], kind="all")
print(summary[["mean", "sd", "hdi_3%", "hdi_97%", "r_hat", "ess_bulk"]].to_string())
