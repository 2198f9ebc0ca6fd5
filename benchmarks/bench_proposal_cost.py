"""CPU cost of one split-merge proposal, per proposal and per point visited.

Run from the repository root::

    PYTHONPATH=. python benchmarks/bench_proposal_cost.py [D]

Data: the fixed-seed three-cluster mixture of ``benchmarks/common.py`` at N = 2,000
(sizes 1029 / 593 / 378 at D = 2), state at the true clusters. For each setting of
``split_merge_scans`` (-1: sequential allocation alone, SAMS; 0: allocation then one
final restricted scan; 1: one intermediate scan more) it times 2,000 proposals in
one kernel call and divides by the expected number of point visits: ``|S|``, the
other members of the one or two clusters of the uniformly drawn pair, times the
passes over them (1 for SAMS, ``2 + scans`` otherwise). Nearly all proposals are
rejected there, so the state stays at the true clusters. Since a SAMS merge that must
fail stops scoring early (docs/mixing.md, "Merges that must fail stop early"), the
merges of these well separated clusters visit almost none of those points, so for
``split_merge_scans=-1`` the second figure is the time per proposal spread over the
visits a full score would make ("nominal"), not the cost of one visit.
"""

import sys
import time

import numpy as np

from common import ALPHA, POWER, mixture_data

import pymc_pcrp as pcrp

from pymc_pcrp._kernels.splitmerge import split_merge_moves
from pymc_pcrp._kernels.sweep import init_state, make_params


def main() -> None:
    n = 2000
    d = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    x, z = mixture_data(n, d)
    prior = pcrp.NIWPrior.from_data(x)
    xc = np.ascontiguousarray(x - prior.mu0)
    params = make_params(ALPHA, POWER, prior.kappa0, prior.nu0, prior.psi0)
    sizes = np.bincount(z)
    p = sizes / n
    k = len(sizes)
    expected_s = sum(p[a] ** 2 * sizes[a] for a in range(k)) + sum(
        p[a] * p[b] * (sizes[a] + sizes[b]) for a in range(k) for b in range(k) if a != b
    )
    print(f"N={n} D={d}, cluster sizes {sizes.tolist()}, E|S| = {expected_s:.0f}")
    for scans in (-1, 0, 1):
        rng = np.random.default_rng(0)
        split_merge_moves(rng, xc, init_state(xc, z, params), params, 5, scans)  # compile/load
        state = init_state(xc, z, params)
        t0 = time.thread_time()
        counts = split_merge_moves(rng, xc, state, params, 2000, scans)
        dt = (time.thread_time() - t0) / 2000
        visits = expected_s * (1 if scans < 0 else 2 + scans)
        print(
            f"split_merge_scans={scans:2d}: {1e3 * dt:.3f} ms per proposal, "
            f"{1e9 * dt / visits:.0f} ns per nominal point visit; counts {counts}"
        )


if __name__ == "__main__":
    main()
