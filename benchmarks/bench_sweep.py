"""Throughput of the pCRP collapsed Gibbs sweep: pm.sample, raw kernel, NumPy baseline.

Run from the repository root::

    PYTHONPATH=. python benchmarks/bench_sweep.py --n 2000 --d 2 --sweeps 1000 --repeats 3 --seed 0

Everything is measured in one process on one synthetic data set: a mixture of
four well-separated unit-covariance Gaussians (centres at (+-6, +-6) in the
first two coordinates, 0 elsewhere; centres -9, -3, 3, 9 when D = 1) with
labels drawn uniformly at random. The model is ``PowerCRP(alpha=1, power=1.1)``
with ``NIWMixture`` and ``NIWPrior.from_data(X)``.

Every run (each repeat of each method) starts from the same partition: the
true generating labels. The chains are therefore already in the stationary
regime (K about 4) and all methods do comparable work per sweep; K at the end
of each run is printed so this can be checked.

Methods
-------
pm.sample, sweeps_per_draw=1
    ``pm.sample(draws=S, tune=0, chains=1, cores=1, ...)``: S draws = S sweeps.
    Wall-clock of the whole call (including pm.sample's per-call set-up and
    the conversion to InferenceData); the time PyMC itself reports for the
    sampling loop (``sample_stats.attrs["sampling_time"]``) is shown as well.
pm.sample, sweeps_per_draw=10
    Same number of sweeps in S/10 draws: the difference to the row above is
    the per-draw overhead.
numba kernel
    ``gibbs_sweeps(rng, (xc, state, params, sweep_tables(xc, params)), S)`` called directly.
NumPy baseline
    The same collapsed Gibbs sweep in plain NumPy/SciPy
    (``benchmarks/numpy_reference.py``, shared with ``benchmarks/run.py``), with no
    incremental Cholesky: for every point the Student-t posterior predictive of
    every cluster (and the prior predictive for a new one) is recomputed from
    the clusters' sufficient statistics with batched ``np.linalg`` calls
    (vectorised across clusters, looped over points). It is slow, so only a
    few sweeps are timed and the per-sweep median is scaled to 1,000 sweeps.

A warm-up call of each pm.sample configuration and of the kernel is made first
so that numba loading and PyTensor compilation are not timed. Times reported
are medians over ``--repeats`` (min in brackets).
"""

from __future__ import annotations

import argparse
import logging
import os
import platform
import statistics
import sys
import time
import warnings

import numba
import numpy as np
import pymc as pm
import pytensor
import scipy

from numpy_reference import NumpyPCRPGibbs, check_against_kernel

import pymc_pcrp as pcrp

from pymc_pcrp._kernels.partitions import canonical_labels
from pymc_pcrp._kernels.sweep import (
    gibbs_sweeps,
    init_state,
    make_params,
    sweep_tables,
)

ALPHA = 1.0
POWER = 1.1


# ---------------------------------------------------------------------------
# data


def make_data(n: int, d: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Four well-separated unit-covariance Gaussians; returns (X, canonical true labels)."""
    rng = np.random.default_rng(seed)
    centres = np.zeros((4, d))
    if d == 1:
        centres[:, 0] = [-9.0, -3.0, 3.0, 9.0]
    else:
        centres[:, :2] = [[-6.0, -6.0], [-6.0, 6.0], [6.0, -6.0], [6.0, 6.0]]
    z = rng.integers(0, 4, size=n)
    x = centres[z] + rng.standard_normal((n, d))
    return np.ascontiguousarray(x), canonical_labels(z.astype(np.int64))


# ---------------------------------------------------------------------------
# plain NumPy/SciPy baseline of the same sweep


def check_baseline(xc, labels, params, prior, n_points: int = 20) -> float:
    """Max |difference| between baseline and kernel conditional log weights."""
    points = np.linspace(0, xc.shape[0] - 1, n_points).astype(int)
    return check_against_kernel(xc, labels, params, ALPHA, POWER, prior, points)


# ---------------------------------------------------------------------------
# timing


def time_pm_sample(model, z0, draws, spd, seed):
    t0 = time.perf_counter()
    with model:
        idata = pm.sample(
            draws=draws,
            tune=0,
            chains=1,
            cores=1,
            progressbar=False,
            compute_convergence_checks=False,
            random_seed=seed,
            initvals={"z": z0},
            pcrp_gibbs={"sweeps_per_draw": spd, "init": "point"},
        )
    wall = time.perf_counter() - t0
    loop = float(idata.sample_stats.attrs["sampling_time"])
    k_end = int(idata.sample_stats["n_clusters"].values[0, -1])
    return wall, loop, k_end


def time_kernel(xc, z0, params, sweeps, seed):
    state = init_state(xc, z0, params)
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    gibbs_sweeps(rng, (xc, state, params, sweep_tables(xc, params)), sweeps)
    return time.perf_counter() - t0, int(state.k[0])


def _fmt(values) -> list[str]:
    return [f"{v:.3f}" for v in values]


def machine_info() -> list[str]:
    load = " ".join(f"{v:.2f}" for v in os.getloadavg())
    return [
        f"python   {platform.python_version()} ({platform.python_implementation()})",
        f"numpy    {np.__version__}",
        f"scipy    {scipy.__version__}",
        f"numba    {numba.__version__}",
        f"pymc     {pm.__version__}",
        f"pytensor {pytensor.__version__}",
        f"platform {platform.platform()}",
        f"cpu      {platform.processor() or platform.machine()}, os.cpu_count() = {os.cpu_count()}",
        f"loadavg  {load} (1/5/15 min, at start)",
    ]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=2000, help="number of points")
    ap.add_argument("--d", type=int, default=2, help="dimension")
    ap.add_argument(
        "--sweeps",
        type=int,
        default=1000,
        help="sweeps per timed pm.sample / kernel run (multiple of 10)",
    )
    ap.add_argument("--repeats", type=int, default=3, help="timed repeats per method")
    ap.add_argument(
        "--baseline-sweeps",
        type=int,
        default=3,
        help="sweeps of the NumPy baseline to time (each timed separately)",
    )
    ap.add_argument("--seed", type=int, default=0, help="seed of the data and of the chains")
    args = ap.parse_args(argv)
    if args.sweeps % 10 or args.sweeps < 10:
        ap.error("--sweeps must be a positive multiple of 10")

    logging.getLogger("pymc").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore")
    info = machine_info()
    t_start = time.perf_counter()

    x, z0 = make_data(args.n, args.d, args.seed)
    prior = pcrp.NIWPrior.from_data(x)
    xc = np.ascontiguousarray(x - prior.mu0)
    params = make_params(ALPHA, POWER, prior.kappa0, prior.nu0, prior.psi0)
    k0 = int(z0.max()) + 1
    print(
        f"data: N={args.n} D={args.d} seed={args.seed}, 4 Gaussians; "
        f"start partition = true labels (K0={k0}, sizes {np.bincount(z0).tolist()})"
    )
    print(
        f"model: PowerCRP(alpha={ALPHA}, power={POWER}), NIWPrior.from_data(X) "
        f"(kappa0={prior.kappa0}, nu0={prior.nu0})"
    )

    err = check_baseline(xc, z0, params, prior)
    print(f"check: baseline vs kernel conditional log weights, max |diff| = {err:.2e}")

    with pm.Model() as model:
        z = pcrp.PowerCRP("z", alpha=ALPHA, power=POWER, n=args.n)
        pcrp.NIWMixture("x", z=z, prior=prior, observed=x)

    seeds = [args.seed + 1 + r for r in range(args.repeats)]
    per_k = 1000.0 / args.sweeps
    rows = []  # (method, wall s/1k list, loop s/1k list or None, K list)

    # warm-up: numba cache loading, PyTensor compilation, first-call costs
    for spd in (1, 10):
        time_pm_sample(model, z0, 5, spd, args.seed)
    time_kernel(xc, z0, params, 2, args.seed)

    for spd in (1, 10):
        walls, loops, ks = [], [], []
        for s in seeds:
            wall, loop, k_end = time_pm_sample(model, z0, args.sweeps // spd, spd, s)
            walls.append(wall * per_k)
            loops.append(loop * per_k)
            ks.append(k_end)
        rows.append(
            (f"pm.sample sweeps_per_draw={spd} ({args.sweeps // spd} draws)", walls, loops, ks)
        )
        print(f"  done: pm.sample spd={spd}: wall s/1k sweeps {_fmt(walls)}, K {ks}")

    walls, ks = [], []
    for s in seeds:
        t, k_end = time_kernel(xc, z0, params, args.sweeps, s)
        walls.append(t * per_k)
        ks.append(k_end)
    rows.append((f"numba kernel gibbs_sweeps ({args.sweeps} sweeps)", walls, None, ks))
    print(f"  done: kernel: s/1k sweeps {_fmt(walls)}, K {ks}")

    base = NumpyPCRPGibbs(
        xc,
        z0,
        ALPHA,
        POWER,
        prior.kappa0,
        prior.nu0,
        prior.psi0,
        np.random.default_rng(args.seed + 1),
    )
    base_t = []
    for _ in range(args.baseline_sweeps):
        t0 = time.perf_counter()
        base.sweep()
        base_t.append((time.perf_counter() - t0) * 1000.0)
    rows.append(
        (f"NumPy baseline ({args.baseline_sweeps} sweeps, scaled)", base_t, None, [base.n_clusters])
    )
    print(f"  done: baseline: s/sweep {_fmt([v / 1000 for v in base_t])}, K {base.n_clusters}")

    baseline = statistics.median(base_t)
    print()
    print("machine")
    for line in info:
        print("  " + line)
    print(f"  loadavg  {' '.join(f'{v:.2f}' for v in os.getloadavg())} (1/5/15 min, at end)")
    print()
    print(
        f"seconds per 1,000 sweeps, N={args.n}, D={args.d}; median of {args.repeats} "
        f"repeats [min]; speedup = baseline median / method median"
    )
    head = f"{'method':<48} {'wall s/1k':>18} {'in-loop s/1k':>13} {'speedup':>9}  K at end"
    print(head)
    print("-" * len(head))
    for name, walls, loops, ks in rows:
        med = statistics.median(walls)
        wall = f"{med:.3f} [{min(walls):.3f}]" if len(walls) > 1 else f"{med:.3f}"
        loop = f"{statistics.median(loops):.3f}" if loops else "-"
        print(f"{name:<48} {wall:>18} {loop:>13} {baseline / med:>8.1f}x  {','.join(map(str, ks))}")
    print()
    print(
        "wall = time of the whole pm.sample / gibbs_sweeps call; in-loop = PyMC's own "
        "sampling_time (excludes pm.sample set-up and InferenceData conversion)."
    )
    print(f"total benchmark time {time.perf_counter() - t_start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
