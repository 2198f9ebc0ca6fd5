"""Sweeps per effective draw of K and of the log joint, one draw per sweep.

Run from the repository root::

    python benchmarks/sweep_autocorrelation.py digits 1.0
    python benchmarks/sweep_autocorrelation.py digits 1.0 --step-kwargs '{"split_merge": 1.0}'

Two chains of ``fit`` on a data set of the real-data panel
(``benchmarks/real_data.py``), standardised as there, with ``sweeps_per_draw=1``
so that every sweep is a stored draw (``--tune`` and ``--draws`` are counted in
sweeps); other step options come from ``--step-kwargs`` (JSON). Printed for K,
the log joint and the learned scale: the bulk ESS over both chains and the
sweeps per effective draw (``2 * draws / ESS``), the number that sets how many
sweeps per draw a fit needs for a given ESS. It depends on the sampler, the data
and the seed, not on the machine; the seconds printed do.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "benchmarks"), str(ROOT)]

import real_data as rd  # noqa: E402

import pymc_pcrp as pcrp  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    """Fit two chains of one sweep per draw and print the sweeps per effective draw."""
    import arviz as az

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", choices=rd.ALL_DATASETS)
    parser.add_argument("power", type=float)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--tune", type=int, default=2000, help="tuning sweeps per chain")
    parser.add_argument("--draws", type=int, default=8000, help="kept sweeps per chain")
    parser.add_argument("--step-kwargs", type=json.loads, default={})
    args = parser.parse_args(argv)
    rd.pcrp_quiet()
    x = rd.load_dataset(args.dataset, None).X
    start = time.perf_counter()
    idata = pcrp.fit(
        x,
        power=args.power,
        draws=args.draws,
        tune=args.tune,
        chains=2,
        cores=2,
        random_seed=args.seed,
        pcrp_gibbs={"sweeps_per_draw": 1, **args.step_kwargs},
        compute_convergence_checks=False,
        progressbar=False,
    )
    seconds = time.perf_counter() - start
    stats = idata.sample_stats
    rate = float(np.mean(stats["split_merge_rate"].values[:, -1]))
    print(
        f"{args.dataset} r = {args.power:g}, seed {args.seed}, step kwargs "
        f"{json.dumps(args.step_kwargs)}: 2 chains x {args.draws} sweeps after {args.tune}; "
        f"split-merge rate after tuning {rate:.2f}; {seconds:.1f} s"
    )
    for name in ("n_clusters", "log_joint", "niw_scale"):
        values = np.asarray(stats[name].values, dtype=np.float64)
        ess = float(az.ess(values, method="bulk"))
        per_draw = values.size / ess
        print(f"  {name:10s} bulk ESS {ess:8.1f}   sweeps per effective draw {per_draw:7.1f}")


if __name__ == "__main__":
    main()
