"""Cost of one label update of ``PCRPSlotGibbs`` against a collapsed Gamma-Poisson sweep.

On ``N`` counts from four Poisson clusters (rates 2, 15, 40, 90) and the model of
docs/any_likelihood.md with ``max_clusters=K``, times, as the median of
``--repeats`` calls:

* ``matrix``: the one compiled call that gives the ``K x N`` log-likelihood matrix;
* ``sweep``: the numba Gibbs sweep over slots given the matrix;
* ``step``: a whole ``PCRPSlotGibbs.step`` (matrix, sweep and the log joint);
* ``table``: one sweep of the package's collapsed Gamma-Poisson family (the table
  family of :class:`~pymc_pcrp.TableMixture` with one count column and the same
  Gamma(2, 0.5) prior), the baseline of issue's speed criterion;
* ``collapsed``: a second baseline written here, one sweep of collapsed Gibbs for the
  same pCRP with the Gamma rates integrated out (per-cluster count and sum kept, the
  negative-binomial predictive of each point, the weight of a new cluster on the
  first free place of 64), in numba.

and prints each with its ratio to ``table`` and to ``collapsed``. Run::

    python benchmarks/slot_label_cost.py --n 10000 --k 20
"""

from __future__ import annotations

import argparse
import math
import time

import numba
import numpy as np
import pandas as pd
import pymc as pm

import pymc_pcrp as pcrp

from pymc_pcrp._kernels import family_moves
from pymc_pcrp._kernels.partitions import canonical_labels
from pymc_pcrp._kernels.slot_gibbs import slot_gibbs_sweep
from pymc_pcrp._kernels.table import make_table_params, table_tables

RATES = np.array([2.0, 15.0, 40.0, 90.0])
A, B = 2.0, 0.5


@numba.njit(cache=True)
def collapsed_sweep(rng, labels, y, counts, sums, log_alpha, power, a, b):
    """One collapsed Gibbs sweep of a pCRP Gamma(a, b)-Poisson mixture, in place."""
    n = y.size
    k_cap = counts.size
    log_w = np.empty(k_cap)
    lgy = np.empty(n)
    for i in range(n):
        lgy[i] = math.lgamma(y[i] + 1.0)
    for i in rng.permutation(n):
        old = labels[i]
        counts[old] -= 1
        sums[old] -= y[i]
        top = -np.inf
        empty = -1
        for k in range(k_cap):
            c, s = counts[k], sums[k]
            if c == 0:
                if empty >= 0:
                    log_w[k] = -np.inf
                    continue
                empty = k
                prior = log_alpha
            else:
                prior = power * math.log(c)
            sa, sb = a + s, b + c
            log_w[k] = (
                prior
                + math.lgamma(sa + y[i])
                - math.lgamma(sa)
                + sa * math.log(sb)
                - (sa + y[i]) * math.log(sb + 1.0)
                - lgy[i]
            )
            top = max(top, log_w[k])
        total = 0.0
        for k in range(k_cap):
            log_w[k] = math.exp(log_w[k] - top)
            total += log_w[k]
        u = rng.random() * total
        new = k_cap - 1
        for k in range(k_cap):
            u -= log_w[k]
            if u < 0.0:
                new = k
                break
        labels[i] = new
        counts[new] += 1
        sums[new] += y[i]


def _median_seconds(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def main(argv=None) -> None:
    """Time the parts and print them with their ratios to the two collapsed sweeps."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--k", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    truth = rng.integers(0, RATES.size, size=args.n)
    y = rng.poisson(RATES[truth])
    with pm.Model() as model:
        z = pcrp.PowerCRP("z", alpha=1.0, power=1.2, n=args.n, max_clusters=args.k)
        lam = pm.Gamma("lam", A, B, shape=args.k)
        pm.Poisson("y", lam[z], observed=y)
        step = pcrp.PCRPSlotGibbs([z], rng=1)
    point = model.initial_point()
    point["z"] = truth.astype(point["z"].dtype)
    point["lam_log__"] = np.log(np.r_[RATES, np.full(args.k - RATES.size, 4.0)])
    loglik = step.likelihood.matrix(point)
    labels = truth.astype(np.int64)

    def sweep():
        slot_gibbs_sweep(rng, labels, loglik, 0.0, 1.2, rng.permutation(args.n))

    c_labels = truth.astype(np.int64)
    # 64 cluster places: the chain stays near 4-6 clusters, so one is always free
    counts = np.bincount(c_labels, minlength=64).astype(np.int64)
    sums = np.bincount(c_labels, weights=y, minlength=64)
    yf = y.astype(np.float64)

    def collapsed():
        collapsed_sweep(rng, c_labels, yf, counts, sums, 0.0, 1.2, A, B)

    column = pcrp.TableColumn("poisson", prior={"a": A, "b": B})
    spec = pcrp.table_spec(pd.DataFrame({"y": y}), {"y": column})
    values, _ = spec.encode(pd.DataFrame({"y": y}))
    params = make_table_params(1.0, 1.2, spec.kind, spec.nlev, spec.conc, spec.hyp, args.n)
    state = family_moves.init_state(values, canonical_labels(truth.astype(np.int64)), params)
    chain = (values, state, params, table_tables(values, params))

    def table():
        family_moves.sweeps(rng, chain, np.int64(1))

    sweep()
    collapsed()
    table()
    step.step(point)
    results = {
        "matrix": _median_seconds(lambda: step.likelihood.matrix(point), args.repeats),
        "sweep": _median_seconds(sweep, args.repeats),
        "step": _median_seconds(lambda: step.step(point), args.repeats),
        "table": _median_seconds(table, args.repeats),
        "collapsed": _median_seconds(collapsed, args.repeats),
    }
    print(f"N={args.n} K={args.k} (median of {args.repeats} calls)")
    for name, seconds in results.items():
        print(
            f"{name:>9}: {1e3 * seconds:8.2f} ms  {seconds / results['table']:6.2f}x table  "
            f"{seconds / results['collapsed']:6.2f}x collapsed"
        )


if __name__ == "__main__":
    main()
