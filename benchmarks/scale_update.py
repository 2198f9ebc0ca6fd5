"""Cost of the learned-scale update of ``s`` relative to one plain Gibbs sweep (kernels only).

Run from the repository root: ``PYTHONPATH=. python benchmarks/scale_update.py``.
Two problems: N=2,000, D=2 (two unit Gaussians at -2 and +2) and breast cancer
(N=569, D=30, raw features), each burnt in for 300 draws with the learned scale
from 10 random clusters. Prints (1) the median over interleaved rounds of the
time of ``advance`` (one sweep) and of ``advance_scaled`` (one sweep, then the
exact draw of ``s``), and (2) the parts of the update timed alone, each the
minimum over rounds of the mean per call: the sweep, the grid conditional
(eigenvalues and ``O(G K D)`` sum) and ``set_scale`` (factors and new-cluster
table, only run when ``s`` changes). On a loaded machine (2) is the steadier figure.

The grid remembers each cluster's eigenvalues while its ``B`` is unchanged
(:func:`~pymc_pcrp._kernels.hyper.cluster_eigenvalues`). In (1) a second chain,
the same one but with a grid that remembers nothing, runs interleaved as the
baseline ("sweep + s, no cache"; tests/_kernels/test_hyper.py checks that such a
grid gives the same draws; here the first chain also makes the plain sweeps, so the
two states drift apart, and both are at equilibrium). In (2) the
conditional is timed twice on the same state: "conditional" with every cluster
remembered (what a call costs when no cluster changed) and "conditional fresh"
with every cluster decomposed.
"""

import time

import numpy as np

from sklearn import datasets as skd

import pymc_pcrp as pc

from pymc_pcrp._kernels.chain import advance
from pymc_pcrp._kernels.hyper import (
    advance_scaled,
    make_scale_grid,
    params_at,
    scale_conditional,
    set_scale,
)
from pymc_pcrp._kernels.pair_moves import no_pairs
from pymc_pcrp._kernels.scores import sweep_tables
from pymc_pcrp._kernels.state import init_state, make_params


def setup(x, seed=0):
    """A chain with the learned scale, burnt in for 300 draws from 10 random clusters."""
    prior = pc.NIWPrior.from_data(x)
    xc = np.ascontiguousarray(x - prior.mu0)
    n = len(x)
    params = make_params(1.0, 1.1, prior.kappa0, prior.nu0, prior.psi0)
    grid = make_scale_grid(xc, prior.psi0, *prior.grid_arrays(), prior.nu0)
    tables = sweep_tables(xc, params)
    rng = np.random.default_rng(seed)
    labels = np.unique(rng.integers(0, 10, n), return_inverse=True)[1].astype(np.int64)
    state = init_state(xc, labels, params)
    counts, out = np.empty(4, np.int64), np.empty(n, np.int64)
    for _ in range(300):
        advance_scaled(
            rng, (xc, state, params, tables), grid, (1, 0, 3, 0.0, no_pairs()), (counts, out), None
        )
    return rng, xc, state, params, tables, grid, counts, out


def forgetful(grid):
    """``grid`` without eigenvalue cache slots: every cluster is decomposed at every call."""
    return grid._replace(cached_b=grid.cached_b[:0], cached_eig=grid.cached_eig[:0])


def calls(chain, twin):
    """The functions timed, as closures over one chain and its twin without the cache."""
    rng, xc, state, params, tables, grid, counts, out = chain
    rng2, _, state2, _, tables2, grid2, counts2, out2 = twin
    local = params_at(params, grid)  # plain sweeps at the chain's current s
    logp = np.empty(grid.log_s.size)
    g0 = int(grid.current[0])
    fresh = forgetful(grid)
    return {
        "sweep": lambda: advance(
            rng, (xc, state, local, tables), (1, 0, 3, 0.0, no_pairs()), (counts, out), None
        ),
        "sweep+s": lambda: advance_scaled(
            rng, (xc, state, params, tables), grid, (1, 0, 3, 0.0, no_pairs()), (counts, out), None
        ),
        "sweep+s no cache": lambda: advance_scaled(
            rng2,
            (xc, state2, params, tables2),
            grid2,
            (1, 0, 3, 0.0, no_pairs()),
            (counts2, out2),
            None,
        ),
        "conditional": lambda: scale_conditional(state, params.kappa0, params.nu0, grid, logp),
        "conditional fresh": lambda: scale_conditional(
            state, params.kappa0, params.nu0, fresh, logp
        ),
        "set_scale": lambda: set_scale(g0, grid, state, params, tables),
    }


def main() -> None:
    """Print both measurements for both problems."""
    rng0 = np.random.default_rng(1)
    x2 = np.r_[rng0.normal(size=(1000, 2)) - 2, rng0.normal(size=(1000, 2)) + 2]
    xb = skd.load_breast_cancer(return_X_y=True)[0]
    for name, x, reps in (("N=2000 D=2", x2, 100), ("breast N=569 D=30", xb, 30)):
        chain = setup(x)
        twin = list(setup(x))
        twin[5] = forgetful(twin[5])
        fns = calls(chain, twin)
        rounds = {k: [] for k in fns}
        for _ in range(15):
            for key in ("sweep", "sweep+s", "sweep+s no cache"):
                start = time.perf_counter()
                for _ in range(reps):
                    fns[key]()
                rounds[key].append((time.perf_counter() - start) / reps)
        plain, both = np.array(rounds["sweep"]), np.array(rounds["sweep+s"])
        nocache = np.array(rounds["sweep+s no cache"])
        print(
            f"{name}: K={chain[2].k[0]}  interleaved medians: sweep {np.median(plain) * 1e3:.3f}"
            f" ms, sweep + s update {np.median(both) * 1e3:.3f} ms, "
            f"median ratio {np.median(both / plain):.2f}; without the eigenvalue cache "
            f"{np.median(nocache) * 1e3:.3f} ms, ratio {np.median(nocache / plain):.2f}"
        )
        best = {}
        for _ in range(10):
            for key in ("sweep", "conditional", "conditional fresh", "set_scale"):
                start = time.perf_counter()
                for _ in range(reps):
                    fns[key]()
                best[key] = min(best.get(key, np.inf), (time.perf_counter() - start) / reps)
        update = (best["conditional fresh"] + best["set_scale"]) / best["sweep"]
        print(
            "    parts alone (min of means): "
            + ", ".join(f"{k} {v * 1e3:.3f} ms" for k, v in best.items())
            + f"; (conditional fresh + set_scale) / sweep = {update:.2f}"
        )


if __name__ == "__main__":
    main()
