"""Simulation-based calibration of a random pCRP power ``r`` (and the partition with it).

The model: ``r ~ Uniform(0.8, 2)``, labels ``z ~ pCRP(alpha, r)`` of ``N`` points,
data ``x ~ NIWMixture(z)`` in two dimensions. Each replicate draws ``(r, z, x)`` from
that joint prior with PyMC's forward samplers, fits the model to ``x`` with
``pm.sample`` (one chain; ``PCRPHyper`` on ``r`` and ``PCRPGibbs`` on ``z``, as a user
gets them, or NUTS on ``r`` with ``--nuts``) and ranks the true value of each
statistic among the kept draws (Talts et al., 2018). When the forward samplers, the
log density (with ``log Z_N(alpha, r)``, which now varies) and the steps target the
same joint distribution, every rank is uniform on ``0..L``. The statistics: ``r``,
the number of clusters ``K`` and ``T = sum_k log Gamma(n_k)`` (the statistic through
which the partition informs ``r``); ties are broken at random.

``--shift D`` is a negative control: the fitted model's prior on ``r`` is
``Uniform(0.8 + D, 2 + D)`` while the data still come from ``Uniform(0.8, 2)``, so
the ranks of ``r`` should pile up on one side.

Run from the repository root::

    PYTHONPATH=. python validation/sbc_power.py --replicates 200 --seed 1

It prints, per statistic, a chi-square test of uniformity of the ranks over 10 bins,
and the command, date and machine; ``docs/calibration.md`` records the runs.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import pymc as pm
import scipy.special
import scipy.stats

from _sbc_common import print_header, print_rank_table, rank_with_ties

import pymc_pcrp as pcrp

DIM = 2
#: The NIW prior of validation/sbc.py: cluster means spread about 2.2 cluster scales.
PRIOR = {"mu0": np.zeros(DIM), "kappa0": 0.2, "nu0": 4.0, "psi0": np.eye(DIM)}
R_LOW, R_HIGH = 0.8, 2.0
NAMES = ("r", "K", "T")


def statistics(r: np.ndarray, z: np.ndarray) -> np.ndarray:
    """(r, K, T) of each state; ``z`` holds one label vector per row."""
    z = np.atleast_2d(z)
    out = np.empty((z.shape[0], len(NAMES)))
    for i, row in enumerate(z):
        sizes = np.bincount(row)
        sizes = sizes[sizes > 0]
        out[i] = (np.atleast_1d(r)[i], sizes.size, scipy.special.gammaln(sizes).sum())
    return out


def build(n: int, alpha: float, shift: float, seed: int):
    """The model to fit (its data a ``pm.Data``) and the forward sampler of the truth."""
    prior = pcrp.NIWPrior(**PRIOR)
    with pm.Model():
        r = pm.Uniform("r", R_LOW, R_HIGH)
        z = pcrp.PowerCRP("z", alpha=alpha, power=r, n=n)
        x = pcrp.NIWMixture("x", z=z, prior=prior)
    forward = pm.compile([], [r, z, x], random_seed=seed)
    with pm.Model() as model:
        data = pm.Data("data", np.zeros((n, DIM)))
        r = pm.Uniform("r", R_LOW + shift, R_HIGH + shift)
        z = pcrp.PowerCRP("z", alpha=alpha, power=r, n=n)
        pcrp.NIWMixture("x", z=z, prior=prior, observed=data)
    return model, data, forward


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=200)
    parser.add_argument("--n", type=int, default=40, help="number of points")
    parser.add_argument("--alpha", type=float, default=1.0)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--tune", type=int, default=300)
    parser.add_argument("--thin", type=int, default=10)
    parser.add_argument("--nuts", action="store_true", help="NUTS on r instead of PCRPHyper")
    parser.add_argument("--shift", type=float, default=0.0, help="negative control (see above)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)

    model, data, forward = build(args.n, args.alpha, args.shift, args.seed)
    rng = np.random.default_rng(args.seed + 1)
    kept = args.draws // args.thin
    ranks = np.empty((args.replicates, len(NAMES)), dtype=int)
    start = time.time()
    given = sys.argv[1:] if argv is None else argv
    print_header("sbc_power.py", given)
    steps_seen = set()
    for rep in range(args.replicates):
        r_true, z_true, x_true = forward()
        data.set_value(x_true)
        with model:
            step = [pm.NUTS([model["r"]])] if args.nuts else None
            idata = pm.sample(
                draws=args.draws,
                tune=args.tune,
                chains=1,
                step=step,
                random_seed=int(rng.integers(2**31)),
                progressbar=False,
                compute_convergence_checks=False,
            )
        stats = idata.sample_stats
        steps_seen.add("NUTS" if "step_size" in stats else "PCRPHyper")
        post = idata.posterior
        rs = post["r"].values[0, :: args.thin][:kept]
        zs = post["z"].values[0, :: args.thin][:kept]
        truth = statistics(np.array([r_true]), z_true)[0]
        draws = statistics(rs, zs)
        ranks[rep] = [rank_with_ties(rng, truth[s], draws[:, s]) for s in range(len(NAMES))]
        if (rep + 1) % 20 == 0:
            print(f"  {rep + 1} replicates, {time.time() - start:.0f} s", flush=True)
    print(
        f"\n{args.replicates} replicates, L = {kept} kept draws each, N = {args.n}, D = {DIM}, "
        f"alpha = {args.alpha}, r ~ Uniform({R_LOW}, {R_HIGH}) "
        f"(fitted prior shifted by {args.shift}); step on r: {', '.join(sorted(steps_seen))}; "
        f"{time.time() - start:.0f} s"
    )
    print_rank_table(ranks, NAMES, kept)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
