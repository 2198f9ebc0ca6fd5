"""Simulation-based calibration of the pCRP collapsed Gibbs step, at a larger scale than CI.

Talts et al. (2018): draw a partition from the prior and data from the
likelihood, run the sampler on those data, and rank the true value of a
statistic among L posterior draws. When the forward samplers, the log density
and the sampler all target the same joint distribution, each rank is uniform
on ``0..L``. The statistics here are the number of clusters K and the log joint
density (a function of labels and data, hence sensitive to *which* partition
is drawn, not only to its number of blocks).

Everything goes through the public objects, as in ``tests/statistical/test_sbc.py``:
labels from ``PowerCRP``'s exact prior sampler and data from ``NIWMixture``'s
forward sampler (``pm.compile`` of both), the log density of the truth from
PyMC (``model.compile_logp``), posterior draws from ``PCRPGibbs.step``. Each
replicate starts its chain from a fresh exact prior partition (``init="prior"``),
discards ``--burn`` draws and keeps ``--draws`` draws ``--thin`` sweeps apart.
Ranks of K are tied often (K is discrete); ties are broken uniformly at random,
exactly as in the test.

``--thin auto`` first measures, per configuration, the integrated
autocorrelation time (sweeps per effective draw, ``n / ESS`` with ArviZ's
``method="mean"`` ESS of the raw values) of K and of the log joint on pilot
chains, and thins by ``--thin-factor`` times its 90th percentile over pilot
data sets (at least 1). The factor (default 3) is a margin: a within-chain ESS
cannot see rare switches between well separated modes.
ArviZ's default *bulk* ESS is not used: it rank-normalises the values, and
when most draws share one value (the posterior often puts 90% of its mass on
one partition, whose log joint then repeats) it reported autocorrelation times
of thousands of sweeps for chains whose raw-value and batch-means estimates
agree on about 1.2.

Run from the repository root::

    PYTHONPATH=. python validation/sbc.py --replicates 2000 --seed 20260101

and it prints one table line per configuration and statistic, and writes the
rank histograms to ``docs/validation/``. ``--mismatch DELTA`` runs a negative
control (the sampler uses the power ``r + DELTA``); ``--config ALPHA R`` and
``--sizes`` select settings. ``docs/calibration.md`` records the runs.
"""

from __future__ import annotations

import argparse
import math
import platform
import sys
import time

from pathlib import Path

import arviz as az
import matplotlib
import numpy as np
import pymc as pm
import scipy.stats

from _sbc_common import rank_with_ties

import pymc_pcrp as pcrp

matplotlib.use("Agg")
import matplotlib.pyplot as plt

#: (alpha, r) configurations and numbers of points.
CONFIGS = ((1.0, 1.0), (1.0, 1.5), (0.5, 2.0))
SIZES = (8, 30)
DIM = 2
#: The NIW prior of the SBC test: cluster means spread sqrt(1/0.2) ~ 2.2 times
#: the cluster scale around the origin, so that clusters overlap to a varying degree.
PRIOR = {"mu0": np.zeros(DIM), "kappa0": 0.2, "nu0": 4.0, "psi0": np.eye(DIM)}


class Replicator:
    """Forward samplers, log density and step of one (N, alpha, r) configuration.

    ``mismatch`` (a negative control) gives the sampler's model the power
    ``r + mismatch`` while the data still come from power ``r``; the log joint
    of the truth is then computed under the sampler's model, so that truth and
    draws are ranked by the same function.
    """

    def __init__(self, n: int, alpha: float, r: float, seed: int, thin: int, mismatch=0.0):
        self.n = n
        prior = pcrp.NIWPrior(**PRIOR)
        models = []
        for power in (r, r + mismatch):
            with pm.Model() as model:
                data = pm.Data("data", np.zeros((n, DIM)))
                z = pcrp.PowerCRP("z", alpha=alpha, power=power, n=n)
                x = pcrp.NIWMixture("x", z=z, prior=prior, observed=data)
            models.append((model, data, z, x))
        _, _, z, x = models[0]
        self.forward = pm.compile([], [z, x], random_seed=seed)
        model, self.data, z, _ = models[1]
        self.other_data = models[0][1]
        with model:
            self.step = pcrp.PCRPGibbs(
                [model.rvs_to_values[z]], sweeps_per_draw=thin, init="prior", rng=seed + 1
            )
        self.logp = model.compile_logp()

    def run(self, rng: np.random.Generator, burn: int, draws: int):
        """One replicate: the true (K, log joint) and the chain's kept draws of both."""
        z_true, x_true = self.forward()
        self.data.set_value(x_true)
        self.other_data.set_value(x_true)
        self.step.set_rng(rng)
        point = {"z": z_true}
        k_draws = np.empty(burn + draws)
        lj_draws = np.empty(burn + draws)
        for t in range(burn + draws):
            point, stats = self.step.step(point)
            k_draws[t] = stats[0]["n_clusters"]
            lj_draws[t] = stats[0]["log_joint"]
        truth = (float(z_true.max() + 1), float(self.logp({"z": z_true})))
        return truth, k_draws[burn:], lj_draws[burn:]


def varies(values: np.ndarray) -> bool:
    """Whether a chain takes more than one value, up to the tie tolerance of the ranks.

    The log joint of one partition, reached along different paths, can differ
    in the last bits; such a chain is constant and has no defined ESS.
    """
    return bool(np.ptp(values) > 1e-9 * max(1.0, float(np.max(np.abs(values)))))


def sweeps_per_effective_draw(values: np.ndarray) -> float:
    """``n / ESS`` (mean ESS of one chain); 1 for a constant chain (nothing to mix)."""
    if not varies(values):
        return 1.0
    ess = float(az.ess(values[None, :], method="mean"))
    return len(values) / ess


def pilot_thin(n, alpha, r, seed, pilots, length, factor, quantile=0.9):
    """Measure sweeps per effective draw of K and log joint; return (thin, summary)."""
    rep = Replicator(n, alpha, r, seed, thin=1)
    rng = np.random.default_rng(seed + 2)
    taus_k, taus_lj = [], []
    for _ in range(pilots):
        _, k, lj = rep.run(rng, burn=100, draws=length)
        taus_k.append(sweeps_per_effective_draw(k))
        taus_lj.append(sweeps_per_effective_draw(lj))
    taus_k, taus_lj = np.array(taus_k), np.array(taus_lj)
    q = max(np.quantile(taus_k, quantile), np.quantile(taus_lj, quantile))
    summary = {
        "tau_k_median": float(np.median(taus_k)),
        "tau_k_q": float(np.quantile(taus_k, quantile)),
        "tau_lj_median": float(np.median(taus_lj)),
        "tau_lj_q": float(np.quantile(taus_lj, quantile)),
    }
    return max(1, math.ceil(factor * q)), summary


def uniformity(ranks: np.ndarray, n_ranks: int, bins: int, rng: np.random.Generator):
    """Chi-square test on ``bins`` equal bins of the ranks, and KS test of jittered ranks.

    Ranks take ``n_ranks`` values; jittering ``(rank + U(0, 1)) / n_ranks`` makes
    them continuous uniform on (0, 1) under the null, so the KS test is exact.
    """
    counts = np.bincount(ranks * bins // n_ranks, minlength=bins)
    chi = scipy.stats.chisquare(counts)
    u = (ranks + rng.random(len(ranks))) / n_ranks
    ks = scipy.stats.kstest(u, "uniform")
    return counts, float(chi.statistic), float(chi.pvalue), float(ks.statistic), float(ks.pvalue)


def band(replicates: int, bins: int, level: float = 0.99) -> tuple[float, float]:
    """Pointwise ``level`` interval of a bin count under uniform ranks (Binomial)."""
    lo = scipy.stats.binom.ppf((1 - level) / 2, replicates, 1 / bins)
    hi = scipy.stats.binom.ppf(1 - (1 - level) / 2, replicates, 1 / bins)
    return float(lo), float(hi)


def plot(results, replicates, bins, path: Path) -> None:
    """Rank histograms: one row per configuration, K and log joint side by side."""
    fig, axes = plt.subplots(
        len(results), 2, figsize=(8, 1.7 * len(results)), sharex=True, squeeze=False
    )
    lo, hi = band(replicates, bins)
    for row, res in zip(axes, results, strict=True):
        for ax, name in zip(row, ("K", "log joint"), strict=True):
            counts = res["counts"][name]
            ax.axhspan(lo, hi, color="0.85", label="99% band")
            ax.axhline(replicates / bins, color="0.5", lw=0.8)
            ax.bar(np.arange(bins), counts, width=0.9, color="C0" if name == "K" else "C1")
            ax.set_title(
                f"N={res['n']}, alpha={res['alpha']:g}, r={res['r']:g}: {name}"
                f"  (chi2 p={res['chi_p'][name]:.3f})",
                fontsize=8,
            )
            ax.tick_params(labelsize=7)
    for ax in axes[-1]:
        ax.set_xlabel(f"rank bin ({bins} bins)", fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None) -> int:
    """Command-line entry point."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--replicates", type=int, default=1000)
    ap.add_argument("--draws", type=int, default=99, help="kept draws; ranks take draws+1 values")
    ap.add_argument("--burn", type=int, default=10, help="discarded draws per replicate")
    ap.add_argument("--thin", default="auto", help="sweeps per draw, or 'auto' (pilot ESS)")
    ap.add_argument("--thin-factor", type=float, default=3.0, help="margin on the pilot")
    ap.add_argument("--pilots", type=int, default=40, help="pilot data sets for --thin auto")
    ap.add_argument("--pilot-length", type=int, default=2000, help="sweeps per pilot chain")
    ap.add_argument("--bins", type=int, default=20)
    ap.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    ap.add_argument(
        "--config",
        type=float,
        nargs=2,
        action="append",
        metavar=("ALPHA", "R"),
        help="an (alpha, r) pair to run (repeatable); default: the three of the docs",
    )
    ap.add_argument("--seed", type=int, default=20260101)
    ap.add_argument(
        "--mismatch",
        type=float,
        default=0.0,
        help="negative control: the sampler uses power r + MISMATCH (data from r)",
    )
    ap.add_argument("--out", default="docs/validation/sbc_ranks.png")
    args = ap.parse_args(argv)
    configs = [tuple(c) for c in args.config] if args.config else list(CONFIGS)
    n_ranks = args.draws + 1
    if n_ranks % args.bins:
        ap.error("--draws + 1 must be a multiple of --bins")

    print(
        f"SBC: {args.replicates} replicates, {args.draws} draws (+{args.burn} burn), "
        f"D={DIM}, NIW prior kappa0={PRIOR['kappa0']}, nu0={PRIOR['nu0']}, psi0=I, "
        f"thin={args.thin} (factor {args.thin_factor}), seed={args.seed}"
        + (f", NEGATIVE CONTROL: sampler power r{args.mismatch:+g}" if args.mismatch else "")
    )
    print(f"python {platform.python_version()}, pymc {pm.__version__}, {platform.platform()}")
    seeds = np.random.SeedSequence(args.seed).generate_state(2 * len(args.sizes) * len(configs))
    results = []
    header = (
        f"{'N':>3} {'alpha':>5} {'r':>4} {'thin':>4} {'stat':>9} "
        f"{'chi2':>7} {'df':>3} {'p_chi2':>7} {'KS_D':>6} {'p_KS':>6} "
        f"{'min':>4} {'max':>4} {'ESS/L':>5} {'q10':>5} {'time_s':>7}"
    )
    lines = []
    idx = 0
    for n in args.sizes:
        for alpha, r in configs:
            seed = int(seeds[idx]) % 2**31
            idx += 1
            t0 = time.perf_counter()
            if args.thin == "auto":
                thin, pilot = pilot_thin(
                    n, alpha, r, seed, args.pilots, args.pilot_length, args.thin_factor
                )
                print(
                    f"pilot N={n} alpha={alpha:g} r={r:g}: sweeps per effective draw "
                    f"K median {pilot['tau_k_median']:.2f} q90 {pilot['tau_k_q']:.2f}; "
                    f"log joint median {pilot['tau_lj_median']:.2f} q90 {pilot['tau_lj_q']:.2f}"
                    f" -> thin {thin}",
                    flush=True,
                )
            else:
                thin = int(args.thin)
            rep = Replicator(n, alpha, r, seed, thin, mismatch=args.mismatch)
            rng = np.random.default_rng(seed + 3)
            ranks = {"K": [], "log joint": []}
            ess_ratio = {"K": [], "log joint": []}
            for _ in range(args.replicates):
                (k_true, lj_true), k, lj = rep.run(rng, args.burn, args.draws)
                ranks["K"].append(rank_with_ties(rng, k_true, k))
                ranks["log joint"].append(rank_with_ties(rng, lj_true, lj))
                for name, v in (("K", k), ("log joint", lj)):
                    if varies(v):
                        ess_ratio[name].append(float(az.ess(v[None, :], method="mean")) / len(v))
            elapsed = time.perf_counter() - t0
            res = {"n": n, "alpha": alpha, "r": r, "counts": {}, "chi_p": {}}
            for name in ("K", "log joint"):
                rk = np.array(ranks[name])
                counts, chi2, p_chi, ks_d, p_ks = uniformity(rk, n_ranks, args.bins, rng)
                res["counts"][name] = counts
                res["chi_p"][name] = p_chi
                e = np.array(ess_ratio[name]) if ess_ratio[name] else np.full(1, np.nan)
                ess_med, ess_q10 = np.nanmedian(e), np.nanquantile(e, 0.1)
                line = (
                    f"{n:>3} {alpha:>5g} {r:>4g} {thin:>4} {name:>9} "
                    f"{chi2:>7.2f} {args.bins - 1:>3} {p_chi:>7.3f} {ks_d:>6.3f} {p_ks:>6.3f} "
                    f"{counts.min():>4} {counts.max():>4} {ess_med:>5.2f} {ess_q10:>5.2f} "
                    f"{elapsed:>7.1f}"
                )
                lines.append(line)
            results.append(res)
            print(f"done N={n} alpha={alpha:g} r={r:g} in {elapsed:.1f} s", flush=True)
    lo, hi = band(args.replicates, args.bins)
    print()
    print(
        f"Uniformity of ranks ({args.replicates} replicates, {n_ranks} rank values in "
        f"{args.bins} bins; 99% band per bin {lo:.0f}..{hi:.0f}; ESS/L = median (q10: 10% "
        "quantile) over replicates of ESS / kept draws, non-constant chains only)"
    )
    print(header)
    for line in lines:
        print(line)
    plot(results, args.replicates, args.bins, Path(args.out))
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
