"""The naive PyMC route to a Bayesian Gaussian mixture, timed per sweep.

What a PyMC user would write without ``pymc_pcrp``: a finite mixture truncated
at ``K_max`` components, with explicit labels::

    w     ~ Dirichlet(alpha / K_max, ..., alpha / K_max)   (a truncated DP)
    mu_k  ~ Normal(0, 10)           (K_max, D)
    sig_k ~ HalfNormal(5)           (K_max, D)   diagonal covariances
    z_i   ~ Categorical(w)          (N,)
    x_i   ~ Normal(mu_{z_i}, sig_{z_i})

sampled by ``pm.CategoricalGibbsMetropolis`` for the labels (its default
"proportional" proposal, a Metropolised Gibbs update of every label in turn)
and NUTS for ``w``, ``mu``, ``sig``. One draw of this compound step updates
every label once, like one sweep of the collapsed sampler; it is the same
amount of label work, not the same model (the component parameters are sampled,
not integrated out, and the covariances are diagonal, which makes this route
cheaper than a full-covariance one). The data are standardised first so the
priors above are weakly informative.

The cost per sweep is dominated by the labels: every label tries every one
of the ``K_max`` components, and each try evaluates the whole model's log
density, so a sweep costs ``O(N^2 K_max)``.

The time per draw is read from ``pm.sample``'s ``callback`` (a timestamp at
every draw); the median over the non-tuning draws is reported. Tuning is kept
short because only the cost per sweep is measured, not the quality of the fit.

Run on its own::

    PYTHONPATH=. python benchmarks/naive_pymc.py --n 2000 --d 2
"""

from __future__ import annotations

import argparse
import logging
import statistics
import time
import warnings

import numpy as np

K_MAX = 10


def naive_model(x: np.ndarray, k_max: int = K_MAX, alpha: float = 1.0):
    """The truncated mixture above as a PyMC model; returns ``(model, labels, continuous)``."""
    import pymc as pm

    x = (x - x.mean(axis=0)) / x.std(axis=0)
    n, d = x.shape
    with pm.Model() as model:
        w = pm.Dirichlet("w", a=np.full(k_max, alpha / k_max))
        mu = pm.Normal("mu", 0.0, 10.0, shape=(k_max, d))
        sig = pm.HalfNormal("sig", 5.0, shape=(k_max, d))
        z = pm.Categorical("z", p=w, shape=n)
        pm.Normal("x", mu[z], sig[z], observed=x)
    return model, z, [w, mu, sig]


def time_naive(
    x: np.ndarray, draws: int = 4, tune: int = 3, seed: int = 0, k_max: int = K_MAX
) -> dict:
    """Seconds per sweep of the naive route on data ``x`` (median over ``draws``).

    Returns a dict with ``per_sweep`` (median seconds per non-tuning draw),
    ``all`` (every non-tuning draw's seconds) and ``wall`` (the whole call).
    """
    import pymc as pm

    logging.getLogger("pymc").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore")
    model, z, cont = naive_model(x, k_max)
    stamps: list[tuple[float, bool]] = []

    def callback(trace, draw):
        stamps.append((time.perf_counter(), bool(draw.tuning)))

    t0 = time.perf_counter()
    with model:
        steps = [pm.CategoricalGibbsMetropolis([z]), pm.NUTS(cont)]
        pm.sample(
            draws=draws,
            tune=tune,
            chains=1,
            cores=1,
            step=steps,
            progressbar=False,
            quiet=True,
            compute_convergence_checks=False,
            random_seed=seed,
            callback=callback,
        )
    wall = time.perf_counter() - t0
    times = np.array([t for t, _ in stamps])
    tuning = np.array([tu for _, tu in stamps])
    per_draw = np.diff(times)[~tuning[1:]]  # draw j's time = stamp j - stamp j-1
    return {
        "per_sweep": float(statistics.median(per_draw)),
        "all": per_draw.tolist(),
        "wall": wall,
    }


def main() -> None:
    from common import mixture_data

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--d", type=int, default=2)
    ap.add_argument("--draws", type=int, default=4)
    ap.add_argument("--tune", type=int, default=3)
    args = ap.parse_args()
    x, _ = mixture_data(args.n, args.d)
    res = time_naive(x, draws=args.draws, tune=args.tune)
    print(
        f"naive PyMC (K_max={K_MAX}), N={args.n} D={args.d}: "
        f"{res['per_sweep']:.3f} s per sweep (median of {len(res['all'])} draws; "
        f"{[round(v, 3) for v in res['all']]}), whole call {res['wall']:.1f} s"
    )


if __name__ == "__main__":
    main()
