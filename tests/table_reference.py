"""Independent references and deliberately broken variants for the table family's tests.

The references compute a block's marginal likelihood by other routes than the
package: a categorical column by the Polya-urn chain rule, a count column by
numerical integration over the Poisson rate, a Gaussian column with the NIW
marginal of tests/reference.py. The broken variants change what the step hands
the kernels (:func:`cells_counted_twice`, :func:`missing_counted`), never the
package: a broken variant must not define a new parameter type, since the
generic kernels compiled for it would enter the package's numba cache, whose
index other processes then could not read.
"""

import math

from functools import cache

import numpy as np
import pandas as pd
import scipy.integrate
import scipy.special

from enumeration import log_pcrp_prior_unnorm, set_partitions
from reference import niw_log_marginal

from pymc_pcrp.sampler.families import TableFamily


def categorical_log_marginal(levels, conc):
    """Log marginal of categorical cells by the chain rule (Polya urn)."""
    counts = np.zeros(len(conc))
    total = 0.0
    for t, level in enumerate(levels):
        total += math.log((counts[level] + conc[level]) / (t + sum(conc)))
        counts[level] += 1
    return total


def poisson_log_marginal(counts, a, b):
    """Log marginal of counts under Gamma(a, rate b)-Poisson, by quadrature over the rate."""
    counts = np.asarray(counts, dtype=float)
    if counts.size == 0:
        return 0.0

    def integrand(lam):
        log_lik = np.sum(counts * math.log(lam) - lam - scipy.special.gammaln(counts + 1.0))
        log_prior = a * math.log(b) - scipy.special.gammaln(a) + (a - 1) * math.log(lam) - b * lam
        return math.exp(log_lik + log_prior)

    value, _ = scipy.integrate.quad(integrand, 0.0, np.inf, epsabs=0.0, epsrel=1e-12, limit=200)
    return math.log(value)


def gaussian_log_marginal(values, kappa0, a0, b0, mu0):
    """Log marginal of Gaussian cells: the 1-D NIW marginal with nu0 = 2 a0, psi0 = 2 b0."""
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        return 0.0
    return niw_log_marginal(values[:, None], [mu0], kappa0, 2.0 * a0, [[2.0 * b0]])


def exact_table_posterior(values, mask, spec, alpha, r):
    """Exact ``p(z | X)`` over all partitions of the rows, each block's marginal afresh."""
    n, d = values.shape
    starts = np.concatenate([[0], np.cumsum(np.where(spec.kind == 0, spec.nlev, 0))])

    @cache
    def block(rows):
        total = 0.0
        for j in range(d):
            cells = [values[i, j] for i in rows if mask[i, j]]
            if spec.kind[j] == 0:
                conc = spec.conc[starts[j] : starts[j] + spec.nlev[j]]
                total += categorical_log_marginal([int(c) for c in cells], conc)
            elif spec.kind[j] == 1:
                total += poisson_log_marginal(cells, spec.hyp[j, 0], spec.hyp[j, 1])
            else:
                total += gaussian_log_marginal(cells, *spec.hyp[j])
        return total

    parts, log_p = [], []
    for z in set_partitions(n):
        value = log_pcrp_prior_unnorm(z, alpha, r)
        for k in range(z.max() + 1):
            value += block(tuple(np.flatnonzero(z == k)))
        parts.append(tuple(int(v) for v in z))
        log_p.append(value)
    log_p = np.array(log_p)
    return parts, np.exp(log_p - scipy.special.logsumexp(log_p))


def cells_counted_twice(monkeypatch):
    """Make the step's kernels see every column twice (each cell counted twice)."""
    build = TableFamily.build_inputs

    def broken(self, xc, numbers, arrays, kept_scale):
        kind, nlev, conc, hyp = (np.asarray(a) for a in arrays)
        doubled = (
            np.concatenate([kind, kind]),
            np.concatenate([nlev, nlev]),
            np.concatenate([conc, conc]),
            np.vstack([hyp, hyp]),
        )
        return build(self, np.ascontiguousarray(np.hstack([xc, xc])), numbers, doubled, None)

    monkeypatch.setattr(TableFamily, "build_inputs", broken)


def missing_counted(monkeypatch):
    """Make the step see every missing cell as observed (a level-0 or zero-valued cell)."""
    build = TableFamily.build_inputs

    def broken(self, xc, numbers, arrays, kept_scale):
        return build(self, np.nan_to_num(xc), numbers, arrays, kept_scale)

    monkeypatch.setattr(TableFamily, "build_inputs", broken)


def mixed_table_5():
    """Five rows of every kind of column, with missing cells, and the column spec."""
    df = pd.DataFrame(
        {
            "flag": pd.array([True, True, None, False, False], dtype="boolean"),
            "kind": pd.Categorical(["x", "x", "y", "y", "y"]),
            "n": [1, 0, 12, 7, 9],
            "g": [0.3, np.nan, -0.2, 2.1, 2.6],
        }
    )
    return df, {"n": "poisson"}


def categorical_table_5():
    """Five rows of two categorical columns (three levels each)."""
    return pd.DataFrame(
        {"u": ["x", "x", "y", "z", "z"], "v": ["p", "q", "q", "r", "r"]}, dtype="category"
    )


def kernel_inputs(df, columns, alpha, r):
    """The kernels' data and parameters for a table, and its exact posterior."""
    from pymc_pcrp._kernels.table import make_table_params
    from pymc_pcrp.distributions.table import table_spec

    spec = table_spec(df, columns)
    values, mask = spec.encode(df)
    x = values.copy()
    gaussian = spec.kind == 2
    x[:, gaussian] -= spec.hyp[gaussian, 3]
    x[~mask] = np.nan
    params = make_table_params(alpha, r, spec.kind, spec.nlev, spec.conc, spec.hyp, len(df))
    return x, params, exact_table_posterior(values, mask, spec, alpha, r)


def table_posterior(df, columns, alpha, r):
    """The exact posterior ``(partitions, probabilities)`` of a table's rows."""
    from pymc_pcrp.distributions.table import table_spec

    spec = table_spec(df, columns)
    values, mask = spec.encode(df)
    return exact_table_posterior(values, mask, spec, alpha, r)


def partition_tv(idata, partitions, probs):
    """Total variation between the partitions of ``idata``'s draws of ``z`` and ``probs``."""
    n = idata.posterior["z"].shape[-1]
    labels = idata.posterior["z"].values.reshape(-1, n)
    keys, counts = np.unique(labels, axis=0, return_counts=True)
    freq = {
        tuple(int(v) for v in k): c / labels.shape[0] for k, c in zip(keys, counts, strict=True)
    }
    assert set(freq) <= set(partitions), "the sampler produced a non-canonical label vector"
    return 0.5 * np.abs(np.array([freq.get(p, 0.0) for p in partitions]) - probs).sum()
