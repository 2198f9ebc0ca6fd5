"""How much posterior mass do the states that chains settle in hold? Breast cancer, r = 1.1.

On scikit-learn's breast cancer data (N = 569, D = 30, standardised as in
``benchmarks/real_data.py``) four chains of the default sampler end in
different states and stay there (docs/mixing.md, "Not done"). An annealed
warm-up (Gibbs sweeps of ``p(z) p(s) p(X | z, s)^beta`` with ``beta`` rising
geometrically from ``--beta0`` to 1) makes every chain reach the same state
family, whose clustering is closer to the true classes. This script asks
which of the two families the posterior prefers.

For a state family ("mode") ``A`` the script estimates

    log Z_A = log sum_{(z, s) in A} p(z) p(s) p(X | z, s)

by thermodynamic integration over ``beta >= 1`` inside the mode: with
``Z_A(beta) = sum_A p(z) p(s) p(X | z, s)^beta``, ``L = log p(X | z, s)`` and
``(z*, s*)`` the state of largest ``L`` reached,

    log Z_A(1) = log p(z*) + L* + integral_1^B (L* - E_beta[L]) dbeta,

where the chain is held at each ``beta`` of ``--betas`` in turn (colder and
colder, so it stays in its mode) and ``Z_A(B)`` is taken to be the single
state ``z*`` (the printed gap at the largest ``beta`` says how true that is).
``log p(z)`` is the pCRP prior without its normaliser and ``p(s)`` the flat
grid prior: both constants cancel between modes. The integral is the mode's
entropy at ``beta = 1``; ``log Z_A >= E_1[log joint]`` always.

Printed per start: how it was reached, the mean log joint at ``beta = 1``,
``L*``, ``log p(z*)``, the integral, ``log Z_A`` (up to the common constant),
the cluster sizes and the ARI to the true classes.

The script reaches into the step's private state (``PCRPGibbs._arrays`` and
``_sweep_state``) to run the tempered kernel of
:mod:`pymc_pcrp._kernels.tempering` on it; it is a research check, not API.
Run from the repository root::

    PYTHONPATH=. python validation/mode_masses.py [--power 1.1] [--anneal 1000]
"""

from __future__ import annotations

import argparse
import logging
import time
import warnings

from datetime import datetime, timezone

import numpy as np

from scipy.special import gammaln
from sklearn.datasets import load_breast_cancer
from sklearn.metrics import adjusted_rand_score

import pymc_pcrp as pcrp

from pymc_pcrp._kernels.hyper import REBUILT
from pymc_pcrp._kernels.partitions import canonical_labels
from pymc_pcrp._kernels.tempering import advance_hot_scaled


def standardised_breast_cancer() -> tuple[np.ndarray, np.ndarray]:
    """The data as ``benchmarks/real_data.py`` uses them (columns centred, sd with ddof=0)."""
    data = load_breast_cancer()
    x = np.asarray(data.data, dtype=np.float64)
    return np.ascontiguousarray((x - x.mean(0)) / x.std(0)), np.asarray(data.target)


class Chain:
    """One PCRPGibbs step on the model, with its sweep state exposed to the tempered kernel."""

    def __init__(self, model, seed: int, labels: np.ndarray | None = None):
        with model:
            self.step = pcrp.PCRPGibbs()
        self.step.set_rng(np.random.default_rng(seed))
        point = model.initial_point()
        if labels is not None:  # rebuild the state from given labels
            self.step.fresh_chain = False
            point["z"] = labels.astype(point["z"].dtype)
        self.inputs = self.step._arrays(point)
        self.state, _ = self.step._sweep_state(point, self.inputs, self.inputs.params)
        if labels is not None:
            self.inputs.scale.current[1] = REBUILT

    def tempered(self, beta: float, sweeps: int = 1) -> float:
        """``sweeps`` sweeps at ``beta`` (each followed by a draw of s); returns ``L``."""
        inputs = self.inputs
        chain = (inputs.xc, self.state, inputs.params, inputs.tables)
        return advance_hot_scaled(self.step.rng, chain, inputs.scale, beta, sweeps)

    def labels(self) -> np.ndarray:
        return canonical_labels(np.asarray(self.state.labels))


def log_prior(labels: np.ndarray, alpha: float, power: float) -> float:
    """``K log alpha + r sum_k log Gamma(n_k)``: the pCRP prior without its normaliser."""
    n = np.bincount(labels)
    n = n[n > 0]
    return n.size * np.log(alpha) + power * gammaln(n).sum()


def mode_mass(chain: Chain, betas, burn: int, keep: int, alpha: float, power: float) -> dict:
    """Thermodynamic integration over ``betas`` (ascending from 1) inside the chain's mode."""
    means, best, best_labels = [], -np.inf, None
    joint_at_one = []
    for b in betas:
        kept = []
        for t in range(burn + keep):
            loglik = chain.tempered(b)
            if t >= burn:
                kept.append(loglik)
                if b == 1.0:
                    joint_at_one.append(loglik + log_prior(chain.labels(), alpha, power))
                if loglik > best:
                    best, best_labels = loglik, chain.labels()
        means.append(float(np.mean(kept)))
    gaps = best - np.asarray(means)
    entropy = float(np.sum(np.diff(betas) * (gaps[1:] + gaps[:-1]) / 2))
    lp = log_prior(best_labels, alpha, power)
    return {
        "mean_joint_at_1": float(np.mean(joint_at_one)),
        "best_loglik": best,
        "log_prior_best": lp,
        "entropy": entropy,
        "log_mass": best + lp + entropy,
        "gaps": gaps,
    }


def sizes(labels: np.ndarray, shown: int = 6) -> str:
    n = np.sort(np.bincount(labels))[::-1]
    n = n[n > 0]
    text = ",".join(str(v) for v in n[:shown])
    return text + (f",+{n.size - shown}" if n.size > shown else "")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--power", type=float, default=1.1)
    parser.add_argument("--anneal", type=int, default=1000, help="annealing sweeps")
    parser.add_argument("--beta0", type=float, default=0.05, help="first beta of the annealing")
    parser.add_argument("--anneal-seeds", default="11,12,13", help="seeds of annealed starts")
    parser.add_argument("--sample-seed", type=int, default=1, help="pm.sample's random_seed")
    parser.add_argument("--tune", type=int, default=500)
    parser.add_argument("--draws", type=int, default=300)
    parser.add_argument("--betas", default="1,1.1,1.25,1.5,1.75,2,2.5,3,4,6,10")
    parser.add_argument("--burn", type=int, default=100, help="sweeps dropped at each beta")
    parser.add_argument("--keep", type=int, default=300, help="sweeps kept at each beta")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    logging.getLogger("pymc").setLevel(logging.ERROR)

    betas = np.array([float(b) for b in args.betas.split(",")])
    if betas[0] != 1.0 or np.any(np.diff(betas) <= 0):
        parser.error("--betas must start at 1 and increase")
    x, truth = standardised_breast_cancer()
    power, alpha = args.power, 1.0
    # nu0 fixed at D + 2 (the model of the recorded run): the tempered kernel does not learn it
    prior = pcrp.NIWPrior.from_data(x, nu0=x.shape[1] + 2.0)
    model = pcrp.build_model(x, power=power, alpha=alpha, prior=prior)
    start = time.time()
    print(f"# mode masses, breast cancer (N={x.shape[0]}, D={x.shape[1]}), r = {power}")
    print(f"- date: {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC")
    print(f"- options: {vars(args)}")
    print()

    starts = []
    for seed in (int(s) for s in args.anneal_seeds.split(",")):
        chain = Chain(model, seed)
        for t in range(args.anneal):
            chain.tempered(args.beta0 ** (1 - t / max(args.anneal - 1, 1)))
        starts.append((f"annealed, seed {seed}", chain))
    idata = pcrp.fit(
        x,
        power=power,
        alpha=alpha,
        prior=prior,
        draws=args.draws,
        tune=args.tune,
        chains=4,
        cores=2,
        random_seed=args.sample_seed,
        progressbar=False,
        compute_convergence_checks=False,
    )
    last = idata.posterior["z"].values[:, -1]
    for c in range(last.shape[0]):
        chain = Chain(model, 1000 + c, labels=last[c])
        starts.append((f"pm.sample chain {c} (seed {args.sample_seed})", chain))

    print(
        "| start | mean log p(z) + L at beta=1 | L* | log p(z*) | entropy | log mass | "
        "sizes | ARI | gap at largest beta |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for name, chain in starts:
        m = mode_mass(chain, betas, args.burn, args.keep, alpha, power)
        z = chain.labels()
        print(
            f"| {name} | {m['mean_joint_at_1']:.1f} | {m['best_loglik']:.1f} | "
            f"{m['log_prior_best']:.1f} | {m['entropy']:.1f} | {m['log_mass']:.1f} | "
            f"{sizes(z)} | {adjusted_rand_score(truth, z):.3f} | {m['gaps'][-1]:.2f} |",
            flush=True,
        )
    print(f"\n{time.time() - start:.0f} s in all")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
