"""Simulation-based calibration of a pCRP block on latent quantities (a hierarchical model).

``J`` groups; the labels ``z`` come from the pCRP prior, the group means ``theta``
from the latent ``NIWMixture`` given ``z``, and ``n_obs`` observations per group from
``Normal(theta_j, sigma)``. Each replicate draws ``(z, theta, y)`` from that joint
prior (PyMC's forward samplers), fits the model to ``y`` with ``pm.sample`` (NUTS on
``theta``, ``PCRPGibbs`` on ``z``, as a user gets it) and ranks the true value of each
statistic among the kept draws (Talts et al., 2018). When the forward samplers, the
log densities and the two steps target the same joint distribution, every rank is
uniform on ``0..L``. The statistics: the number of clusters K (ties broken at random),
``theta_0``, the mean of ``theta`` and its spread (standard deviation).

Run from the repository root::

    PYTHONPATH=. python validation/sbc_latent.py --replicates 200 --seed 1

It prints, per statistic, a chi-square test of uniformity of the ranks over 10 bins,
and the command, date and machine; ``docs/calibration.md`` records the runs.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import pymc as pm

from _sbc_common import print_header, print_rank_table, rank_with_ties

import pymc_pcrp as pcrp

PRIOR = {"mu0": np.zeros(1), "kappa0": 0.1, "nu0": 3.0, "psi0": np.eye(1)}


def statistics(z: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """(K, theta_0, mean of theta, sd of theta) of one state; the last axis is the group."""
    k = np.array([len(np.unique(row)) for row in np.atleast_2d(z)], dtype=float)
    theta = np.atleast_2d(theta)
    return np.stack([k, theta[:, 0], theta.mean(axis=1), theta.std(axis=1)], axis=1)


NAMES = ("K", "theta_0", "mean theta", "sd theta")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=200)
    parser.add_argument("--groups", type=int, default=20)
    parser.add_argument("--obs", type=int, default=3)
    parser.add_argument("--sigma", type=float, default=1.0)
    parser.add_argument("--alpha", type=float, default=1.0)
    parser.add_argument("--power", type=float, default=1.1)
    parser.add_argument("--draws", type=int, default=500)
    parser.add_argument("--tune", type=int, default=500)
    parser.add_argument("--thin", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)

    j, n_obs = args.groups, args.obs
    prior = pcrp.NIWPrior(**PRIOR)
    with pm.Model() as model:
        y_data = pm.Data("y_data", np.zeros((j, n_obs)))
        z = pcrp.PowerCRP("z", alpha=args.alpha, power=args.power, n=j)
        theta = pcrp.NIWMixture("theta", z=z, prior=prior, shape=(j,))
        y = pm.Normal("y", mu=theta[:, None], sigma=args.sigma, observed=y_data)
    forward = pm.compile([], [z, theta, y], random_seed=args.seed)
    rng = np.random.default_rng(args.seed + 1)
    kept = args.draws // args.thin
    ranks = np.empty((args.replicates, len(NAMES)), dtype=int)
    start = time.time()
    given = sys.argv[1:] if argv is None else argv
    print_header("sbc_latent.py", given)
    for rep in range(args.replicates):
        z_true, theta_true, y_true = forward()
        y_data.set_value(y_true)
        with model:
            idata = pm.sample(
                draws=args.draws,
                tune=args.tune,
                chains=1,
                random_seed=int(rng.integers(2**31)),
                progressbar=False,
                compute_convergence_checks=False,
            )
        post = idata.posterior
        zs = post["z"].values[0, :: args.thin][:kept]
        ths = post["theta"].values[0, :: args.thin][:kept]
        truth = statistics(z_true, theta_true)[0]
        draws = statistics(zs, ths)
        ranks[rep] = [rank_with_ties(rng, truth[s], draws[:, s]) for s in range(len(NAMES))]
        if (rep + 1) % 20 == 0:
            print(f"  {rep + 1} replicates, {time.time() - start:.0f} s", flush=True)
    print(
        f"\n{args.replicates} replicates, L = {kept} kept draws each, J = {j}, "
        f"{n_obs} observations per group, alpha = {args.alpha}, r = {args.power}; "
        f"{time.time() - start:.0f} s"
    )
    print_rank_table(ranks, NAMES, kept)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
