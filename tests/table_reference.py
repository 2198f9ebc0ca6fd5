"""Independent references and deliberately broken variants for the table family's tests.

The references compute a block's marginal likelihood by other routes than the
package: a categorical column by the Polya-urn chain rule, a count column by
numerical integration over the Poisson rate, a Gaussian column with the NIW
marginal of tests/reference.py. The broken variants are built here, never in
the package: :class:`BrokenParams` registers the table family's operations
with a wrong predictive score for the generic moves.
"""

import hashlib
import math

from functools import cache
from pathlib import Path
from typing import NamedTuple

import numba
import numpy as np
import scipy.integrate
import scipy.special

from enumeration import log_pcrp_prior_unnorm, set_partitions
from reference import niw_log_marginal

from pymc_pcrp._kernels import table
from pymc_pcrp._kernels.family_moves import FamilyOps, register_family


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


# The generic kernels compiled for the broken parameters land in the package's numba
# cache, whose key covers the package's sources but not this file: the class is named
# after this file's digest, so that an edit here cannot load kernels compiled before it.
_NAME = "BrokenParams_" + hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:12]
#: :class:`pymc_pcrp._kernels.table.TableParams` whose kernels score rows wrongly.
BrokenParams = NamedTuple(_NAME, list(table.TableParams.__annotations__.items()))
globals()[_NAME] = BrokenParams


@numba.njit(cache=True)
def _broken_score(cache, slot, data, i, params):
    """The table score with every categorical and count cell counted twice."""
    total = 0.0
    for j in range(data.shape[1]):
        x = data[i, j]
        if math.isnan(x):
            continue
        c = params.coff[j]
        if params.kind[j] == table.CATEGORICAL:
            total += 2.0 * (cache[slot, c + 1 + int(x)] - cache[slot, c])
        elif params.kind[j] == table.POISSON:
            total += 2.0 * (
                math.lgamma(cache[slot, c] + x)
                - cache[slot, c + 1]
                + cache[slot, c + 2]
                - x * cache[slot, c + 3]
                - math.lgamma(x + 1.0)
            )
        else:
            t = x - cache[slot, c + 1]
            total += cache[slot, c] - cache[slot, c + 3] * math.log1p(cache[slot, c + 2] * t * t)
    return total


@numba.njit(cache=True)
def _broken_with_log_alpha(params, log_alpha):
    return BrokenParams(
        log_alpha, params.power, params.kind, params.soff, params.coff, params.nlev,
        params.conc, params.hyp, params.n_stats, params.n_cache,
    )  # fmt: skip


register_family(
    BrokenParams,
    FamilyOps(
        table.shift,
        table.refresh,
        _broken_score,
        table.block_log_marginal,
        table.sizes,
        _broken_with_log_alpha,
    ),
)
