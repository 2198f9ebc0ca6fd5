"""How many other clusters a sweep scores per point, with each log-free bound.

Run from the repository root::

    python benchmarks/skip_bound.py breast_cancer 1.1
    python benchmarks/skip_bound.py digits 1.0

One chain of the package's defaults (300 tuning draws, 20 kept, ``--seed``)
reaches a state of the panel's data set (``benchmarks/real_data.py``); at its
last draw (labels, learned scale ``s`` and ``nu0``) every point is scored
against every other occupied cluster, as the sweep would, without moving it.
A cluster is *scored* (a logarithm and an exponential, and at ``D > 4`` a
triangular solve to the end) when its bound on the log weight is within
``SKIP_NATS`` of the sweep's reference (the larger of the new cluster's log
weight and the lower bound on the point's own cluster's). Printed per point:
the clusters scored with the bound ``log(1 + t) >= t / (1 + t)`` (used until
2026-11-28), with ``log1p_lower_bound`` (the sweep's bound now), and with the
exact logarithm (the fewest any bound can give). The counts depend on the
state only, not on the machine.
"""

from __future__ import annotations

import argparse
import math
import sys

from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "benchmarks"), str(ROOT)]

import real_data as rd  # noqa: E402

import pymc_pcrp as pcrp  # noqa: E402

from pymc_pcrp._kernels.scores import (  # noqa: E402
    SKIP_NATS,
    forward_norm2,
    log1p_lower_bound,
    loo_lower_bound,
    sync_slot,
)
from pymc_pcrp._kernels.sweep import init_state, make_params, sweep_tables  # noqa: E402


def last_state(name: str, power: float, seed: int):
    """Centred data, kernel parameters and labels of one chain's last draw."""
    x = rd.load_dataset(name, None).X
    idata = pcrp.fit(
        x, power=power, draws=20, tune=300, chains=1, cores=1, random_seed=seed,
        progressbar=False, compute_convergence_checks=False,
    )  # fmt: skip
    stats = idata.sample_stats
    s = float(stats["niw_scale"].values[0, -1])
    nu0 = float(stats["niw_nu0"].values[0, -1])
    labels = idata.posterior["z"].values[0, -1].astype(np.int64)
    prior = pcrp.NIWPrior.from_data(x)
    xc = np.ascontiguousarray(x - prior.mu0)
    params = make_params(1.0, power, prior.kappa0, nu0, np.asarray(prior.psi0) * s)
    return xc, params, labels


def scored_per_point(xc: np.ndarray, params, labels: np.ndarray) -> tuple[int, dict]:
    """Clusters scored per point under each bound; also the number of clusters."""
    log_new, _, by_size = sweep_tables(xc, params)
    state = init_state(xc, labels, params)
    n, d = xc.shape
    cap = state.counts.shape[0]
    caches = (np.empty((cap, d)), np.empty((cap, d)), np.empty(cap), np.empty((cap, 2)))
    mean, inv_diag, const, _ = caches
    slots = [int(state.order[p]) for p in range(state.k[0])]
    for slot in slots:
        sync_slot(state, slot, by_size, caches)
    y = np.empty(d)
    bounds = {
        "t / (1 + t)": lambda t: t / (1.0 + t),
        "log1p_lower_bound": log1p_lower_bound,
        "exact log": lambda t: math.log(1.0 + t),
    }
    counts = dict.fromkeys(bounds, 0)
    for i in range(n):
        old = int(state.labels[i])
        m = state.counts[old]
        low_own = -math.inf
        if m > 1:
            c = (params.kappa0 + m) * by_size[m - 1, 3]
            a = by_size[m - 1, 0] - 0.5 * state.logdet[old]
            u = forward_norm2(state.chol, old, xc, i, mean, inv_diag, y)
            low_own = loo_lower_bound(a, by_size[m - 1, 1], by_size[m - 1, 2], c, u, u)
        cut = max(low_own, log_new[i]) - SKIP_NATS
        for slot in slots:
            if slot == old:
                continue
            size = state.counts[slot]
            t = forward_norm2(state.chol, slot, xc, i, mean, inv_diag, y) * by_size[size, 2]
            for key, lower in bounds.items():
                if const[slot] + by_size[size, 1] * lower(t) >= cut:
                    counts[key] += 1
    return len(slots), {key: value / n for key, value in counts.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", help="a data set of benchmarks/real_data.py")
    parser.add_argument("power", type=float)
    parser.add_argument("--seed", type=int, default=5)
    args = parser.parse_args()
    rd.pcrp_quiet()
    xc, params, labels = last_state(args.dataset, args.power, args.seed)
    k, per_point = scored_per_point(xc, params, labels)
    n, d = xc.shape
    print(f"{args.dataset} (N = {n}, D = {d}), r = {args.power}, seed {args.seed}: K = {k}")
    for key, value in per_point.items():
        print(f"  other clusters scored per point, {key:18s} {value:5.2f}")


if __name__ == "__main__":
    main()
