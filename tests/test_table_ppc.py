"""Replicated tables (``pm.sample_posterior_predictive`` on a TableMixture) against closed forms.

With the partition held fixed in every draw, the replicated cells of a cluster are
draws from the cluster's posterior predictive, whose mean (and, for a Gaussian
column, variance) has a closed form given the cluster's observed cells. PyMC's own
forward draw, which takes the column parameters from their prior, and a copy that
counts a missing cell as an observed 0 must both fail the same comparison.
"""

import arviz as az
import numpy as np
import pandas as pd
import pymc as pm
import pytest

import pymc_pcrp as pcrp

from pymc_pcrp._entry_points import ORIGINAL_PPC
from pymc_pcrp.distributions._table_numpy import column_concentrations
from pymc_pcrp.distributions.table import table_spec
from pymc_pcrp.posterior import table_ppc

N, DRAWS = 40, 3000
Z = (np.arange(N) >= 20).astype(np.int64)  # rows 0-19 in cluster 0, rows 20-39 in cluster 1


def _table():
    rng = np.random.default_rng(5)
    counts = np.where(Z == 0, rng.poisson(1.0, N), rng.poisson(9.0, N))
    frame = pd.DataFrame(
        {
            "yes": pd.array(np.where(Z == 0, rng.random(N) < 0.2, rng.random(N) < 0.9)),
            "kind": pd.Categorical(
                np.where(Z == 0, rng.choice(["a", "b", "c"], N, p=[0.7, 0.2, 0.1]), "c")
            ),
            "size": np.where(Z == 0, rng.normal(-3.0, 1.0, N), rng.normal(10.0, 2.0, N)),
            "visits": counts,
        }
    )
    frame["yes"] = frame["yes"].astype("boolean")
    frame.loc[4, "yes"] = pd.NA
    frame.loc[25, "size"] = np.nan  # a missing Gaussian cell in cluster 1 (values near 10)
    return frame


def _model_and_idata(frame):
    with pm.Model() as model:
        z = pcrp.PowerCRP("z", alpha=1.0, power=1.1, n=N)
        pcrp.TableMixture("x", z=z, observed=frame, columns={"visits": "poisson"})
    labels = np.broadcast_to(Z, (1, DRAWS, N)).copy()
    return model, az.from_dict(posterior={"z": labels})


def _expected(frame):
    """Closed-form predictive means per (cluster, column or level), and Gaussian variances."""
    spec = table_spec(frame, {"visits": "poisson"})
    values, mask = spec.encode(frame)
    concs = column_concentrations(spec.kind, spec.nlev, spec.conc)
    means, variances = {}, {}
    for k in (0, 1):
        for j, kind in enumerate(spec.kind):
            seen = (Z == k) & (mask[:, j] != 0)
            x = values[seen, j]
            n = seen.sum()
            if kind == 0:
                post = concs[j] + np.bincount(x.astype(int), minlength=spec.nlev[j])
                for level, p in enumerate(post / post.sum()):
                    means[(k, j, level)] = p
            elif kind == 1:
                a, b = spec.hyp[j, :2]
                means[(k, j, None)] = (a + x.sum()) / (b + n)
            else:
                kappa0, a0, b0, mu0 = spec.hyp[j]
                kappa_n, a_n = kappa0 + n, a0 + n / 2
                b_n = b0 + 0.5 * ((x - x.mean()) ** 2).sum()
                b_n += 0.5 * kappa0 * n * (x.mean() - mu0) ** 2 / kappa_n
                means[(k, j, None)] = (kappa0 * mu0 + x.sum()) / kappa_n
                variances[(k, j)] = b_n * (kappa_n + 1) / (kappa_n * (a_n - 1))
    return spec, means, variances


def _worst_z(reps, means):
    """The largest |z-score| of the replicated means against the closed forms.

    Each draw's mean over the cluster's rows is one value (the rows of a draw share
    their parameters); its Monte Carlo standard error is that of ``DRAWS`` such values.
    """
    worst = 0.0
    for (k, j, level), expected in means.items():
        cells = reps[:, Z == k, j]
        per_draw = (cells == level).mean(axis=1) if level is not None else cells.mean(axis=1)
        se = per_draw.std(ddof=1) / np.sqrt(DRAWS) + 1e-12
        worst = max(worst, abs(per_draw.mean() - expected) / se)
    return worst


def test_replicated_tables_follow_each_clusters_posterior_predictive():
    frame = _table()
    spec, means, variances = _expected(frame)
    model, idata = _model_and_idata(frame)
    with model:
        pp = pm.sample_posterior_predictive(idata, random_seed=3, progressbar=False)
    reps = pp.posterior_predictive["x"].values[0]
    assert reps.shape == (DRAWS, N, 4)
    assert np.isfinite(reps).all()  # the missing cells are replicated too
    codes = reps[:, :, spec.kind == 0]
    assert set(np.unique(codes)) <= {0.0, 1.0, 2.0}
    counts = reps[:, :, spec.kind == 1]
    assert (counts >= 0).all() and (counts == np.round(counts)).all()
    assert _worst_z(reps, means) < 4.5
    for (k, j), variance in variances.items():
        cell = reps[:, np.flatnonzero(Z == k)[0], j]  # one cell: independent across draws
        assert cell.var(ddof=1) == pytest.approx(variance, rel=0.12)
    again = pcrp.sample_posterior_predictive(idata, model, random_seed=3)
    np.testing.assert_array_equal(again.posterior_predictive["x"].values[0], reps)


def test_prior_draws_and_a_missing_cell_counted_as_zero_fail_the_same_check():
    frame = _table()
    spec, means, _ = _expected(frame)
    model, idata = _model_and_idata(frame)
    with model:
        pymc_own = ORIGINAL_PPC(idata, random_seed=3, progressbar=False)
    assert _worst_z(pymc_own.posterior_predictive["x"].values[0], means) > 10
    values, mask = spec.encode(frame)
    rng = np.random.default_rng(3)
    zeros = np.where(mask != 0, values, 0.0)
    every = np.ones_like(mask)
    wrong = np.stack(
        [
            table_ppc.replicate_table(
                rng, zeros, every, Z, spec.kind, spec.nlev, spec.conc, spec.hyp
            )
            for _ in range(DRAWS)
        ]
    )
    assert _worst_z(wrong, means) > 10
