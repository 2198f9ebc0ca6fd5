"""A random ``alpha`` and a random power through ``pm.sample``, against exact enumeration.

For N = 5 and 6 points every partition is enumerated; the exact joint posterior
of ``(theta, z)`` (``theta`` = ``alpha``, ``r`` or both) is

    p(theta, z | X) ∝ p(theta) alpha^K exp(r T(z)) / Z_N(alpha, r) prod_k m(X_k),

with ``T(z) = sum_k log Gamma(n_k)`` and ``Z_N`` summed by brute force over the
same enumeration (nothing from the package's normaliser). ``theta`` is
integrated numerically on a fine grid (trapezoid rule on the unconstrained
scale). With ``alpha`` random and ``r`` fixed, ``pm.sample`` gives ``alpha`` and the
labels to one :class:`~pymc_pcrp.PCRPGibbs` step, which updates ``alpha`` inside its
kernel call (:mod:`pymc_pcrp.step_methods._alpha_update`); with ``r`` random it gives
``alpha`` and ``r`` to :class:`~pymc_pcrp.PCRPHyper` and the labels to
:class:`~pymc_pcrp.PCRPGibbs`. The tests check which steps ran; the checks of the draws are

* the labels' marginal: total variation against the exact ``p(z | X)``;
* the joint: total variation over the cells (quartile bin of ``theta`` under
  its exact posterior) x (partition);
* the hyper-parameter's marginal: the share of draws in each exact quartile
  bin against its exact mass (about 1/4).

``PYTHONPATH=tests python tests/statistical/test_hyper_enumeration.py`` prints the
discrepancies of every case. Thresholds: 0.02 for the labels (as in
``test_exact_enumeration.py``), 0.04 for the 4 x 203 joint cells and 0.012 per
quartile bin. On 2026-11-26 a short run (4 x 5,000 draws, alpha random, N = 5)
gave 0.014, 0.026 and at most 0.0045; leaving the normaliser out of alpha's
conditional (the bug this guards against) put 88% of the draws in the top quartile
of alpha when both parameters were random.
"""

import logging

import numpy as np
import pymc as pm
import pytest
import scipy.special
import scipy.stats

from enumeration import ENUMERATION_SWEEPS_PER_DRAW, set_partitions
from reference import niw_log_marginal
from step_reference import built_steps

import pymc_pcrp as pcrp

DRAWS = 20_000
CHAINS = 4
GAMMA_SHAPE = 2.0  # alpha ~ Gamma(2, 1)
R_LOW, R_HIGH = 0.8, 2.0  # r ~ Uniform(0.8, 2)


def _data(n, d, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    x[: n // 2] += 2.5
    return x[:, 0] if d == 1 else x


def _prior(d):
    return pcrp.NIWPrior(mu0=np.zeros(d), kappa0=0.5, nu0=d + 1.0, psi0=0.5 * np.eye(d))


def _grids(alpha, r):
    """Grids of the unconstrained values of the random hyper-parameters.

    Returns ``(alpha values, log prior + log Jacobian)`` and the same for ``r``
    (a single point of log weight 0 for a fixed parameter).
    """
    if alpha is None:
        u = np.linspace(-14.0, 5.5, 2001)
        a = np.exp(u)
        a_grid = (a, scipy.stats.gamma(GAMMA_SHAPE).logpdf(a) + u, u)
    else:
        a_grid = (np.array([alpha]), np.zeros(1), None)
    if r is None:
        v = np.linspace(R_LOW, R_HIGH, 1201)
        r_grid = (v, np.full(v.size, -np.log(R_HIGH - R_LOW)), v)
    else:
        r_grid = (np.array([r]), np.zeros(1), None)
    return a_grid, r_grid


def _trapezoid_weights(u):
    if u is None:
        return np.ones(1)
    w = np.empty(u.size)
    h = np.diff(u)
    w[0], w[-1] = h[0] / 2, h[-1] / 2
    w[1:-1] = (h[:-1] + h[1:]) / 2
    return w


def exact_joint(x, prior, alpha=None, r=None):
    """Exact posterior marginals on the grids, with quadrature weights folded in.

    ``alpha=None`` or ``r=None`` make that parameter random (Gamma(2, 1) and
    Uniform(0.8, 2) priors). Returns ``(partitions, a_values, r_values, by_a,
    by_r)``: ``by_a[i, j]`` is the posterior mass of (alpha grid cell ``i``,
    partition ``j``), ``by_r`` the same for ``r``; each sums to one.

    The prior terms ``K log alpha + r T(z) - log Z_N(alpha, r)`` depend on the
    partition only through ``(K, T)``, i.e. through its multiset of block sizes
    (11 classes for N = 6, against 203 partitions), so the sums over the grid
    of the other parameter are done once per class; only the marginal
    likelihoods ``prod_k m(X_k)`` are per partition.
    """
    x = np.asarray(x, dtype=float).reshape(len(x), -1)
    (a, log_pa, ua), (rv, log_pr, ur) = _grids(alpha, r)
    parts, ks, ts, log_m = [], [], [], []
    for z in set_partitions(len(x)):
        sizes = np.bincount(z)
        parts.append(tuple(int(v) for v in z))
        ks.append(sizes.size)
        ts.append(float(np.sum(scipy.special.gammaln(sizes))))
        log_m.append(
            sum(
                niw_log_marginal(x[z == k], prior.mu0, prior.kappa0, prior.nu0, prior.psi0)
                for k in range(sizes.size)
            )
        )
    ks, ts, log_m = np.array(ks), np.array(ts), np.array(log_m)
    # classes of equal (K, T): the partitions' block-size multisets
    keys, cls, mult = np.unique(np.stack([ks, ts]), axis=1, return_inverse=True, return_counts=True)
    cls = cls.ravel()
    k_c, t_c = keys[0], keys[1]
    log_wa = log_pa + np.log(_trapezoid_weights(ua))
    log_wr = log_pr + np.log(_trapezoid_weights(ur))

    def class_terms(c):  # K log alpha + r T of class c on the (alpha grid, r grid) product
        return k_c[c] * np.log(a)[:, None] + t_c[c] * rv[None, :]

    # Z_N(alpha, r) by brute force over the enumeration: mult[c] partitions per class
    log_z = np.full((a.size, rv.size), -np.inf)
    for c in range(k_c.size):
        log_z = np.logaddexp(log_z, np.log(mult[c]) + class_terms(c))
    by_a_c = np.empty((a.size, k_c.size))
    by_r_c = np.empty((rv.size, k_c.size))
    for c in range(k_c.size):
        log_q = class_terms(c) - log_z + log_wa[:, None] + log_wr[None, :]
        by_a_c[:, c] = scipy.special.logsumexp(log_q, axis=1)
        by_r_c[:, c] = scipy.special.logsumexp(log_q, axis=0)
    by_a = by_a_c[:, cls] + log_m[None, :]
    by_r = by_r_c[:, cls] + log_m[None, :]
    total = scipy.special.logsumexp(by_a)
    return parts, a, rv, np.exp(by_a - total), np.exp(by_r - total)


def sample(x, prior, alpha=None, r=None, seed=0, nuts=False, draws=DRAWS):
    """Draws of ``pm.sample`` for the model with the random parameters of :func:`exact_joint`.

    ``nuts=True`` assigns :class:`pymc.NUTS` to the random power explicitly (through
    the gradient of ``log Z_N`` in ``r``) instead of letting ``pm.sample`` pick
    :class:`~pymc_pcrp.PCRPHyper`.
    """
    with pm.Model() as model:
        a = pm.Gamma("alpha", GAMMA_SHAPE, 1.0) if alpha is None else alpha
        power = pm.Uniform("r", R_LOW, R_HIGH) if r is None else r
        z = pcrp.PowerCRP("z", alpha=a, power=power, n=len(x))
        pcrp.NIWMixture("x", z=z, prior=prior, observed=x)
        idata = pm.sample(
            step=[pm.NUTS([power])] if nuts else None,
            draws=draws,
            tune=500,
            chains=CHAINS,
            # One process: the same draws as cores=2 (per-chain seeds), but without the
            # per-draw traffic between processes, which made cores=2 2-3 times slower here
            # (20,000 short draws per chain; measured 2026-11-26 on 2 cores)
            cores=1,
            random_seed=seed,
            progressbar=False,
            compute_convergence_checks=False,
            pcrp_gibbs={"sweeps_per_draw": ENUMERATION_SWEEPS_PER_DRAW},
        )
    post = idata.posterior
    labels = post["z"].values.reshape(-1, len(x))
    out = {"z": labels, "steps": built_steps(model)}
    if nuts:  # the steps given, not pm.sample's own choice: read them from the stats
        stats = idata.sample_stats
        out["steps"] = {
            "NUTS" if "step_size" in stats else "?",
            "PCRPGibbs" if "log_joint" in stats else "?",
        }
        out["divergences"] = int(stats["diverging"].sum())
    for name in ("alpha", "r"):
        if name in post:
            out[name] = post[name].values.ravel()
    return out


def _quartile_edges(values, probs):
    """Edges splitting a discretised distribution into four bins of about equal mass."""
    cdf = np.cumsum(probs)
    return np.interp([0.25, 0.5, 0.75], cdf, values)


def _compare(x, prior, alpha, r, seed, nuts=False, draws=DRAWS):
    """Return the three discrepancies and their iid expectations (see the module docstring)."""
    parts, a, rv, by_a, by_r = exact_joint(x, prior, alpha, r)
    draws = sample(x, prior, alpha, r, seed, nuts, draws)
    index = {p: j for j, p in enumerate(parts)}
    z_index = np.array([index[tuple(int(v) for v in row)] for row in draws["z"]])
    m = z_index.size
    p_z = by_a.sum(axis=0)
    tv_z = 0.5 * np.abs(np.bincount(z_index, minlength=len(parts)) / m - p_z).sum()
    result = {"tv_z": tv_z, "steps": draws["steps"], "divergences": draws.get("divergences", 0)}
    for name, values, by_value in (("alpha", a, by_a), ("r", rv, by_r)):
        if name not in draws:
            continue
        marginal = by_value.sum(axis=1)
        edges = _quartile_edges(values, marginal)
        exact_bins = np.add.reduceat(marginal, np.searchsorted(values, np.r_[-np.inf, edges]))
        cell_exact = np.zeros((4, len(parts)))
        starts = np.searchsorted(values, np.r_[-np.inf, edges])
        for b in range(4):
            stop = starts[b + 1] if b < 3 else values.size
            cell_exact[b] = by_value[starts[b] : stop].sum(axis=0)
        bins = np.searchsorted(edges, draws[name])
        cells = np.zeros((4, len(parts)))
        np.add.at(cells, (bins, z_index), 1.0 / m)
        result[f"tv_joint_{name}"] = 0.5 * np.abs(cells - cell_exact).sum()
        result[f"bins_{name}"] = np.bincount(bins, minlength=4) / m
        result[f"exact_bins_{name}"] = exact_bins
    return result


CASES = {
    # (n, d, alpha, r): None marks a random parameter
    "alpha-n5-d1-r1.5": (5, 1, None, 1.5),
    "alpha-n6-d2-r1": (6, 2, None, 1.0),
    "r-n5-d2-alpha1": (5, 2, 1.0, None),
    "r-n6-d1-alpha0.5": (6, 1, 0.5, None),
    "both-n6-d2": (6, 2, None, None),
}

# random r updated by NUTS through d log Z_N / d r = E[T] (assigned explicitly); a NUTS
# draw costs several gradient evaluations of the whole model, and its draws of r are
# nearly independent, so fewer draws suffice
NUTS_CASES = {"r-nuts-n5-d2-alpha1": (5, 2, 1.0, None)}
NUTS_DRAWS = 6_000


@pytest.mark.parametrize("case", list(CASES))
def test_random_hyperparameters_match_exact_enumeration(case):
    """Labels, joint cells and hyper-parameter quartiles match the exact posterior."""
    n, d, alpha, r = CASES[case]
    seed = 4242 + 100 * n + 10 * d
    res = _compare(_data(n, d, seed), _prior(d), alpha, r, seed)
    if r is not None:  # alpha random, r fixed: one PCRPGibbs step owns alpha and the labels
        assert res["steps"] == {("PCRPGibbs", ("alpha_log__", "z"))}, res["steps"]
    else:
        hyper = {("PCRPHyper", ("r_interval__",))}
        if alpha is None:
            hyper.add(("PCRPHyper", ("alpha_log__",)))
        assert res["steps"] == {("PCRPGibbs", ("z",)), *hyper}, res["steps"]
    assert res["tv_z"] < 0.02, res
    for name in ("alpha", "r"):
        if f"bins_{name}" in res:
            assert res[f"tv_joint_{name}"] < 0.04, res
            # exact bins hold about 1/4 each (up to the grid's resolution)
            assert np.allclose(res[f"exact_bins_{name}"], 0.25, atol=0.01), res
            assert np.all(np.abs(res[f"bins_{name}"] - res[f"exact_bins_{name}"]) < 0.012), res


@pytest.mark.parametrize("case", list(NUTS_CASES))
def test_power_by_nuts_matches_exact_enumeration(case):
    """NUTS on ``r``, with the normaliser's gradient in ``r``, reaches the exact joint posterior."""
    n, d, alpha, r = NUTS_CASES[case]
    seed = 5151 + 100 * n + 10 * d
    res = _compare(_data(n, d, seed), _prior(d), alpha, r, seed, nuts=True, draws=NUTS_DRAWS)
    assert res["steps"] == {"NUTS", "PCRPGibbs"}, res["steps"]
    assert res["divergences"] == 0, res
    assert res["tv_z"] < 0.02, res
    assert res["tv_joint_r"] < 0.04, res
    assert np.all(np.abs(res["bins_r"] - res["exact_bins_r"]) < 0.012), res


if __name__ == "__main__":
    logging.getLogger("pymc").setLevel(logging.ERROR)
    rng = np.random.default_rng(0)
    for case, (n, d, alpha, r) in CASES.items():
        seed = 4242 + 100 * n + 10 * d
        res = _compare(_data(n, d, seed), _prior(d), alpha, r, seed)
        print(case, {k: v for k, v in res.items() if k != "steps"})
    for case, (n, d, alpha, r) in NUTS_CASES.items():
        seed = 5151 + 100 * n + 10 * d
        res = _compare(_data(n, d, seed), _prior(d), alpha, r, seed, True, NUTS_DRAWS)
        print(case, {k: v for k, v in res.items() if k != "steps"})
