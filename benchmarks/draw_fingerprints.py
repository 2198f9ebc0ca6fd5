"""Fingerprints of the sampler's draws on a fixed set of configurations.

A refactoring of the sampler that is meant to change nothing must leave every
draw of every chain bit-identical for the same seeds. This script samples a set
of small models that between them exercise every part of the default move set
and of the options (full and diagonal families, fixed and random ``alpha`` and
power, latent values, tempering, restarts, template jumps, Algorithm 1 alone)
and prints, per configuration, a SHA-256 digest of the labels and of every
sample stat, in every chain. Run it before and after a change and compare::

    python benchmarks/draw_fingerprints.py --out before.json
    # ... change the code ...
    python benchmarks/draw_fingerprints.py --out after.json --compare before.json

``--compare`` exits with status 1 and names the configurations whose draws
differ.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import warnings

import numpy as np
import pymc as pm

import pymc_pcrp as pcrp

QUIET = {"progressbar": False, "compute_convergence_checks": False, "cores": 1}


def _data(n: int = 60, d: int = 2, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = np.array([[-4.0] * d, [0.0] * d, [4.0] * d])
    return centres[rng.integers(0, 3, size=n)] + rng.normal(size=(n, d))


def _sample(model: pm.Model, seed: int, draws: int = 30, tune: int = 30, **step) -> object:
    with model:
        return pm.sample(
            draws=draws, tune=tune, chains=2, random_seed=seed, pcrp_gibbs=step, **QUIET
        )


def _full(seed):
    return _sample(pcrp.build_model(_data(), power=1.1), seed)


def _plain(seed):
    return _sample(pcrp.build_model(_data(), power=1.1), seed, split_merge=0)


def _diag(seed):
    return _sample(pcrp.build_model(_data(d=3), power=1.1, covariance="diag"), seed)


def _full_3d(seed):  # pair moves run in three or more dimensions
    return _sample(pcrp.build_model(_data(d=3), power=1.2), seed)


def _random_alpha(seed):
    x = _data()
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 2.0, 1.0)
        z = pcrp.PowerCRP("z", alpha=alpha, power=1.1, n=len(x))
        pcrp.NIWMixture("x", z=z, prior=pcrp.NIWPrior.from_data(x), observed=x)
    return _sample(model, seed)


def _random_power(seed):
    x = _data(n=40)
    with pm.Model() as model:
        power = pm.Uniform("power", 0.8, 1.5)
        z = pcrp.PowerCRP("z", alpha=1.0, power=power, n=len(x))
        pcrp.NIWMixture("x", z=z, prior=pcrp.NIWPrior.from_data(x), observed=x)
    return _sample(model, seed, draws=15, tune=15)


def _latent(seed):
    rng = np.random.default_rng(3)
    y = rng.normal(size=(10, 3)) + np.repeat([-3.0, 3.0], 5)[:, None]
    prior = pcrp.NIWPrior(mu0=np.zeros(1), kappa0=0.1, nu0=3.0, psi0=np.eye(1))
    with pm.Model() as model:
        z = pcrp.PowerCRP("z", alpha=1.0, power=1.1, n=10)
        theta = pcrp.NIWMixture("theta", z=z, prior=prior, shape=(10,))
        pm.Normal("y", mu=theta[:, None], sigma=1.0, observed=y)
    return _sample(model, seed, draws=15, tune=15)


def _tempered(seed):
    x = _data(n=30)
    prior = pcrp.NIWPrior.from_data(x, nu0=x.shape[1] + 2.0)
    return _sample(pcrp.build_model(x, power=1.1, prior=prior), seed, temper=[1.0, 0.5, 0.2])


def _restarts(seed):
    return _sample(pcrp.build_model(_data(), power=1.3), seed, restarts=4, sweeps_per_draw=3)


def _fit(seed):  # fit: shared scouting, templates, template jumps
    idata = pcrp.fit(_data(), power=1.1, draws=30, tune=40, chains=2, random_seed=seed)
    return idata


def _prior_only(seed):
    with pm.Model() as model:
        pcrp.PowerCRP("z", alpha=1.0, power=1.2, n=25)
    return _sample(model, seed)


CONFIGURATIONS = {
    "full": _full,
    "plain_algorithm1": _plain,
    "diag": _diag,
    "full_3d_pairs": _full_3d,
    "random_alpha": _random_alpha,
    "random_power": _random_power,
    "latent": _latent,
    "tempered": _tempered,
    "restarts": _restarts,
    "fit_templates": _fit,
    "prior_only": _prior_only,
}


# NUTS's timing stats differ from run to run by nature
TIMING_STATS = ("perf_counter_diff", "perf_counter_start", "process_time_diff")


def fingerprint(idata) -> dict[str, str]:
    """SHA-256 of the labels and of each sample stat (timings aside), all chains and draws."""
    out = {}
    for group in ("posterior", "sample_stats"):
        ds = getattr(idata, group)
        for name in sorted(set(ds.data_vars) - set(TIMING_STATS)):
            values = np.ascontiguousarray(ds[name].values)
            out[f"{group}/{name}"] = hashlib.sha256(values.tobytes()).hexdigest()[:16]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="write the fingerprints to this JSON file")
    parser.add_argument("--compare", help="JSON file of earlier fingerprints to compare with")
    parser.add_argument("--only", nargs="*", help="run only these configurations")
    parser.add_argument("--seed", type=int, default=20261202)
    args = parser.parse_args(argv)
    names = args.only or list(CONFIGURATIONS)
    result = {}
    warnings.simplefilter("ignore")
    for name in names:
        result[name] = fingerprint(CONFIGURATIONS[name](args.seed))
        print(name, hashlib.sha256(json.dumps(result[name]).encode()).hexdigest()[:16])
        sys.stdout.flush()
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(result, fh, indent=1, sort_keys=True)
    if args.compare:
        with open(args.compare) as fh:
            before = json.load(fh)
        differ = []
        for name in names:
            old, new = before.get(name), result[name]
            if old is None:
                print(f"{name}: not in {args.compare}")
                continue
            keys = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
            if keys:
                differ.append(name)
                print(f"{name}: differs in {', '.join(keys)}")
        print("identical" if not differ else f"{len(differ)} configuration(s) differ")
        return 1 if differ else 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
