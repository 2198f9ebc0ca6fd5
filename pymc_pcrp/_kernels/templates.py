"""Template jumps: an independence proposal built from partitions remembered during tuning.

On some data sets the posterior has a few families of states that no local move
crosses (breast cancer at r = 1.3: two divisions of the same three large clusters
that differ on some forty points, docs/mixing.md, "Template jumps"). The tuning
tournament of restarts often meets more than one of them. This module turns such
remembered partitions ("templates") into a fixed proposal that puts a chain
straight into any of the families, and makes the Metropolis-Hastings test exact.

The proposal
------------
A template ``T`` with clusters ``1..K_T`` gives every point ``p`` a categorical
distribution over those clusters and one more, the *open* cluster, empty in the
template: the Gibbs conditional of ``p`` given the other points of ``T``
(:func:`template_log_weights`), i.e. ``n_{t,-p}^r m(x_p | X_{t,-p})`` for a
cluster ``t``, ``alpha m(x_p)`` for the cluster ``p`` is alone in, and
``alpha m(x_p)`` for the open cluster. A proposal picks one of the ``M`` templates
uniformly and draws every point's column independently from its row
(:func:`draw_assignment`). It never looks at the chain's state, so it is an
independence proposal:

    accept z' with probability min(1, pi(z') q(z) / (pi(z) q(z'))),

where ``q`` is the probability of the proposed *partition*: the mean over templates
of the sum, over every one-to-one assignment of the partition's blocks to the
template's columns, of the product of the points' weights (a permanent, computed
by dynamic programming over subsets of the template's columns in
:func:`mixture_log_probability`, so at most :data:`MAX_TEMPLATE_CLUSTERS` clusters
per template). A partition with more blocks than a template has columns has
probability zero under it; from a state no template can produce the move is always
rejected, which keeps detailed balance. The open column is what lets a chain in a
state with one cluster more than the templates (a speck split in two, a medium
cluster divided) jump at all: without it such a state has ``q = 0`` and keeps
the chain until the local moves bring it back (docs/mixing.md, "The open column").

``pi`` is the posterior of the partition given the chain's current hyperparameters
(``alpha``, ``r``, and the NIW scale and ``nu0`` when they are learned): the move
is one more conditional update inside the step, as the sweeps are.

A draw's proposals run in one compiled loop (:func:`template_jump_chain`) over the
templates packed into arrays (:class:`TemplateSet`). A proposal's log joint starts
from its template's cluster statistics and moves only the points drawn elsewhere
(:func:`assignment_log_joint`), so it costs a fraction of one from scratch; the
log marginal of a cluster that no drawn point left or joined is computed once per
draw and remembered for the draw's later proposals.
"""

from __future__ import annotations

import math

from typing import NamedTuple

import numba
import numpy as np

from numba.core import types
from numba.extending import overload

from pymc_pcrp._kernels import family_moves
from pymc_pcrp._kernels._config import NJIT_KWARGS
from pymc_pcrp._kernels.log_joint import (
    block_log_marginal,
    cluster_scatter,
    mean_weight,
    n_blocks,
    partition_log_joint,
)
from pymc_pcrp._kernels.niw import cholesky_lower, log_det_chol, log_multigamma, solve_lower
from pymc_pcrp._kernels.partitions import canonical_labels, log_add
from pymc_pcrp._kernels.state import NIWParams

__all__ = [
    "MAX_TEMPLATE_CLUSTERS",
    "TemplateSet",
    "assignment_log_joint",
    "draw_assignment",
    "labels_log_joint",
    "mixture_log_probability",
    "pack_templates",
    "proposal_log_joint",
    "template_jump_chain",
    "template_log_weights",
]

# The permanent costs O(2^C C) per evaluation for C columns (a template's clusters and the
# open one): templates of more clusters than this are not used.
MAX_TEMPLATE_CLUSTERS = 10
# Partial maps of the permanent this many nats below a complete one are dropped (their
# share of the sum is below a double's rounding, see _log_permanent).
PERMANENT_CUTOFF = 60.0

LOG_PI = math.log(math.pi)


@numba.njit(**NJIT_KWARGS)
def _log_ratio(kappa: float, nu: float, logdet_without: float, logdet_with: float, d: int) -> float:
    """``log m(X + x) - log m(X)`` for a block with posterior ``(kappa, nu, Psi)`` without ``x``."""
    return (
        log_multigamma(0.5 * (nu + 1.0), d)
        - log_multigamma(0.5 * nu, d)
        - 0.5 * d * LOG_PI
        + 0.5 * d * math.log(kappa / (kappa + 1.0))
        + 0.5 * nu * logdet_without
        - 0.5 * (nu + 1.0) * logdet_with
    )


@numba.njit(**NJIT_KWARGS)
def template_log_weights(
    xc: np.ndarray,
    labels: np.ndarray,
    log_alpha: float,
    power: float,
    kappa0: float,
    nu0: float,
    psi0: np.ndarray,
    chol0: np.ndarray,
) -> np.ndarray:
    """Each point's normalised log Gibbs conditional over a template's clusters, ``(N, K + 1)``.

    ``labels`` are the template's canonical labels and ``xc`` the data centred at
    the prior mean. Row ``p`` holds ``log q_p(t)``: proportional to
    ``r log n_{t,-p} + log m(x_p | X_{t,-p})`` for a cluster ``t`` with other points
    and ``log alpha + log m(x_p)`` for the cluster that holds ``p`` alone. The last
    column (the "open" cluster) is ``p`` taken out into a new cluster of its own,
    ``log alpha + log m(x_p)``: points drawn there form one more block, so a
    proposal can also add a cluster to the template's. The leave-one-out terms use
    the determinant lemma on the cluster's own factor:
    ``Psi_{-p} = Psi - kappa_n / (kappa_n - 1) v v^T`` with ``v`` the point minus the
    posterior mean. ``O(N K D^2 + K D^3)``.
    """
    n, d = xc.shape
    k = n_blocks(labels)
    columns = k + 1
    sizes, means, w = cluster_scatter(xc, labels, k)
    chols = np.empty((k, d, d))
    logdets = np.empty(k)
    post_means = np.empty((k, d))
    a = np.empty((d, d))
    for c in range(k):
        wt = mean_weight(kappa0, sizes[c])
        for i in range(d):
            for j in range(d):
                a[i, j] = psi0[i, j] + w[c, i, j] + wt * means[c, i] * means[c, j]
        if not cholesky_lower(a, chols[c]):
            raise FloatingPointError("posterior scale matrix is not positive definite")
        logdets[c] = log_det_chol(chols[c])
        for i in range(d):
            post_means[c, i] = sizes[c] * means[c, i] / (kappa0 + sizes[c])
    logdet0 = log_det_chol(chol0)
    out = np.empty((n, columns))
    v = np.empty(d)
    y = np.empty(d)
    for p in range(n):
        own = labels[p]
        # the open column: p alone in a new cluster
        for i in range(d):
            v[i] = xc[p, i]
        q0 = solve_lower(chol0, v, y)
        logdet_with = logdet0 + math.log1p(kappa0 / (kappa0 + 1.0) * q0)
        top = log_alpha + _log_ratio(kappa0, nu0, logdet0, logdet_with, d)
        out[p, k] = top
        for c in range(k):
            kappa_n = kappa0 + sizes[c]
            nu_n = nu0 + sizes[c]
            for i in range(d):
                v[i] = xc[p, i] - post_means[c, i]
            q = solve_lower(chols[c], v, y)
            if c != own:
                logdet_with = logdets[c] + math.log1p(kappa_n / (kappa_n + 1.0) * q)
                value = power * math.log(sizes[c]) + _log_ratio(
                    kappa_n, nu_n, logdets[c], logdet_with, d
                )
            elif sizes[c] == 1:  # alone: weighed as a new cluster, as in the open column
                value = out[p, k]
            else:
                logdet_without = logdets[c] + math.log1p(-kappa_n / (kappa_n - 1.0) * q)
                value = power * math.log(sizes[c] - 1) + _log_ratio(
                    kappa_n - 1.0, nu_n - 1.0, logdet_without, logdets[c], d
                )
            out[p, c] = value
            if value > top:
                top = value
        total = 0.0
        for c in range(columns):
            total += math.exp(out[p, c] - top)
        norm = top + math.log(total)
        for c in range(columns):
            out[p, c] -= norm
    return out


@numba.njit(**NJIT_KWARGS)
def _log_permanent(block: np.ndarray) -> float:
    """``log sum`` over one-to-one maps of ``B`` rows into ``K`` columns of ``prod exp(block)``.

    ``block[b, c]`` is the log weight of block ``b`` going to cluster ``c``. Dynamic
    programming over the subsets of columns already used (``O(2^K K)`` at most).
    Partial maps that cannot reach within :data:`PERMANENT_CUTOFF` nats of one
    complete map (the greedy one), even if every remaining block took its best
    column, are dropped: together they hold less than ``K! e^-60`` of the sum, below
    the rounding of a double for the ``K <= 11`` columns used (``11! e^-60 = 3.5e-19``).
    """
    b, k = block.shape
    # a lower bound on the sum: the greedy complete map
    taken = 0
    lower = 0.0
    for row in range(b):
        best = -np.inf
        chosen = 0
        for c in range(k):
            if not (taken >> c) & 1 and block[row, c] > best:
                best = block[row, c]
                chosen = c
        taken |= 1 << chosen
        lower += best
    # an upper bound on what blocks row.. can still add
    rest = np.zeros(b + 1)
    for row in range(b - 1, -1, -1):
        top = -np.inf
        for c in range(k):
            top = max(top, block[row, c])
        rest[row] = rest[row + 1] + top
    floor = lower - PERMANENT_CUTOFF
    size = 1 << k
    f = np.full(size, -np.inf)
    f[0] = 0.0
    result = -np.inf
    for subset in range(size):
        value = f[subset]
        if value == -np.inf:
            continue
        used = 0
        bits = subset
        while bits:
            used += bits & 1
            bits >>= 1
        if used == b:
            result = log_add(result, value)
            continue
        for c in range(k):
            if not (subset >> c) & 1:
                step = value + block[used, c]
                if step + rest[used + 1] < floor:
                    continue
                nxt = subset | (1 << c)
                f[nxt] = log_add(f[nxt], step)
    return result


@numba.njit(**NJIT_KWARGS)
def _block_log_weights(log_weights: np.ndarray, k: int, labels: np.ndarray, b: int) -> np.ndarray:
    """``(B, K)``: each block's summed log weights for each of the first ``k`` clusters."""
    block = np.zeros((b, k))
    for p in range(labels.shape[0]):
        for c in range(k):
            block[labels[p], c] += log_weights[p, c]
    return block


class TemplateSet(NamedTuple):
    """A chain's templates packed into arrays for :func:`template_jump_chain`.

    ``M`` templates over ``N`` points; template ``m`` has ``n_columns[m]`` columns,
    its clusters and then the open cluster (empty in the template), padded to
    ``KM`` (the most any has). ``cumulative[m, p]`` is the running sum of
    ``exp(log_weights[m, p])`` (the template's proposal for point ``p``; ``1`` in
    the padding); ``sizes``, ``centres`` and ``scatter`` are each column's size,
    mean and scatter about its mean (of the centred data; zero for the open
    column), from which a proposal's statistics follow by moving only the points
    drawn into another column than their template cluster.
    """

    log_weights: np.ndarray  # (M, N, KM), -inf in the padding
    cumulative: np.ndarray  # (M, N, KM)
    n_columns: np.ndarray  # (M,)
    labels: np.ndarray  # (M, N), canonical
    sizes: np.ndarray  # (M, KM)
    centres: np.ndarray  # (M, KM, D)
    scatter: np.ndarray  # (M, KM, D, D)


def pack_templates(xc: np.ndarray, templates: list[np.ndarray], params) -> TemplateSet:
    """Build the :class:`TemplateSet` of canonical label arrays at kernel ``params``.

    The proposal rows are :func:`template_log_weights` at ``params`` (fixed from then
    on: the proposal need not follow the chain's hyperparameters to be exact).
    """
    m = len(templates)
    n, d = xc.shape
    ks = np.array([n_blocks(t) for t in templates], dtype=np.int64)
    columns = ks + 1  # the template's clusters and the open one
    km = int(columns.max()) if m else 0
    log_weights = np.full((m, n, km), -np.inf)
    sizes = np.zeros((m, km), dtype=np.int64)
    centres = np.zeros((m, km, d))
    scatter = np.zeros((m, km, d, d))
    for i, labels in enumerate(templates):
        k = int(ks[i])
        log_weights[i, :, : columns[i]] = template_log_weights(
            xc,
            labels,
            params.log_alpha,
            params.power,
            params.kappa0,
            params.nu0,
            params.psi0,
            params.chol0,
        )
        sizes[i, :k], centres[i, :k], scatter[i, :k] = cluster_scatter(xc, labels, k)
    cumulative = np.cumsum(np.exp(log_weights), axis=2)
    labels = np.array(templates, dtype=np.int64).reshape(m, n)
    return TemplateSet(log_weights, cumulative, columns, labels, sizes, centres, scatter)


def proposal_log_joint(xc, templates, t, assign, params, memo):
    """Log joint of the partition ``assign`` drawn from template ``t`` (by the family)."""
    raise NotImplementedError("compiled code only: dispatched on the family's parameters")


def labels_log_joint(xc, labels, params):
    """Log joint of canonical ``labels`` (by the family of ``params``)."""
    raise NotImplementedError("compiled code only: dispatched on the family's parameters")


def _is_niw(params) -> bool:
    return isinstance(params, types.BaseNamedTuple) and params.instance_class is NIWParams


@overload(proposal_log_joint, jit_options=NJIT_KWARGS)
def _proposal_log_joint(xc, templates, t, assign, params, memo):
    # the full NIW family moves the drawn points from the template's statistics; a family
    # on the generic moves computes the log joint afresh (its templates carry no moments)
    if _is_niw(params):
        return lambda xc, templates, t, assign, params, memo: _assignment_log_joint(
            xc, templates, t, assign, params, memo
        )
    return lambda xc, templates, t, assign, params, memo: family_moves.partition_log_joint(
        xc, canonical_labels(assign), params
    )


@overload(labels_log_joint, jit_options=NJIT_KWARGS)
def _labels_log_joint(xc, labels, params):
    if _is_niw(params):
        return lambda xc, labels, params: partition_log_joint(xc, labels, params)
    return lambda xc, labels, params: family_moves.partition_log_joint(xc, labels, params)


# template_jump_chain widens its bound on the log ratio by _BOUND_MARGIN * (1 + |w|) nats
# against rounding, w the drawn labelling's log weight: the permanent adds the same N log
# weights (all <= 0) in another order, which can differ by about N * 1e-16 * |w|.
_BOUND_MARGIN = 1e-6


@numba.njit(**NJIT_KWARGS)
def mixture_log_probability(templates: TemplateSet, labels: np.ndarray) -> float:
    """Log probability of the canonical partition ``labels`` under the equal mixture.

    Under each template, the permanent of the module docstring: the sum over the
    one-to-one assignments of the partition's blocks to the template's columns.
    """
    m = templates.n_columns.shape[0]
    b = n_blocks(labels)
    values = np.full(m, -np.inf)
    for t in range(m):
        k = templates.n_columns[t]
        if b > k:
            continue
        w = templates.log_weights[t]
        values[t] = _log_permanent(_block_log_weights(w, k, labels, b))
    total = -np.inf
    for t in range(m):
        total = log_add(total, values[t])
    return total - math.log(m)


@numba.njit(**NJIT_KWARGS)
def draw_assignment(rng, templates: TemplateSet, t: int, out: np.ndarray) -> float:
    """Draw every point's column of template ``t`` (a cluster, or the open one) into ``out``.

    Returns the log probability of the drawn columns under template ``t``, the sum
    of the points' log weights: one term of the permanent that gives the partition's
    probability under ``t`` (see :func:`template_jump_chain`).
    """
    k = templates.n_columns[t]
    cumulative = templates.cumulative[t]
    log_weights = templates.log_weights[t]
    acc = 0.0
    for p in range(out.shape[0]):
        u = rng.random()
        chosen = k - 1
        for c in range(k - 1):
            if u < cumulative[p, c]:
                chosen = c
                break
        out[p] = chosen
        acc += log_weights[p, chosen]
    return acc


@numba.njit(**NJIT_KWARGS)
def _shift(first, second, c: int, x: np.ndarray, centre: np.ndarray, sign: float, v) -> None:
    d = x.shape[0]
    for i in range(d):
        v[i] = x[i] - centre[i]
        first[c, i] += sign * v[i]
    for i in range(d):
        for j in range(i + 1):
            second[c, i, j] += sign * v[i] * v[j]


@numba.njit(**NJIT_KWARGS)
def assignment_log_joint(
    xc: np.ndarray, templates: TemplateSet, t: int, assign: np.ndarray, params: NIWParams
) -> float:
    """Return the log joint of the partition made by ``assign`` (clusters of template ``t``).

    Starts from the template's cluster statistics and moves only the points whose
    drawn cluster is not their template cluster, each cluster's moments kept about
    the template cluster's mean: ``O(N + moved D^2 + K D^3)`` instead of the
    ``O(N D^2)`` of :func:`~pymc_pcrp._kernels.log_joint.partition_log_joint`,
    which it equals up to rounding.
    """
    memo = np.full(templates.sizes.shape, np.nan)
    return _assignment_log_joint(xc, templates, t, assign, params, memo)


@numba.njit(**NJIT_KWARGS)
def _assignment_log_joint(
    xc: np.ndarray,
    templates: TemplateSet,
    t: int,
    assign: np.ndarray,
    params: NIWParams,
    memo: np.ndarray,
) -> float:
    """:func:`assignment_log_joint` that remembers the log marginals of untouched clusters.

    A cluster of template ``t`` that no drawn point leaves or joins has the
    template's statistics exactly, and its log marginal is computed by the same
    operations every time; ``memo[t, c]`` (NaN until then) keeps it for the later
    proposals of the same call, which must share ``params``. The result is the
    same, bit for bit, as without the memo.
    """
    n, d = xc.shape
    k = templates.n_columns[t]
    own = templates.labels[t]
    centres = templates.centres[t]
    sizes = templates.sizes[t, :k].copy()
    touched = np.zeros(k, dtype=np.bool_)
    for p in range(n):
        if assign[p] != own[p]:
            touched[assign[p]] = True
            touched[own[p]] = True
    first = np.zeros((k, d))
    second = np.empty((k, d, d))
    for c in range(k):
        if touched[c]:
            second[c] = templates.scatter[t, c]
    v = np.empty(d)
    for p in range(n):
        a = assign[p]
        b = own[p]
        if a != b:
            sizes[b] -= 1
            sizes[a] += 1
            _shift(first, second, b, xc[p], centres[b], -1.0, v)
            _shift(first, second, a, xc[p], centres[a], 1.0, v)
    acc = 0.0
    scatter = np.empty((d, d))
    a = np.empty((d, d))
    chol = np.empty((d, d))
    y = np.empty(d)
    for c in range(k):
        size = sizes[c]
        if size == 0:
            continue
        acc += params.log_alpha + params.power * math.lgamma(size)
        if not touched[c] and not math.isnan(memo[t, c]):
            acc += memo[t, c]
            continue
        block = second[c] if touched[c] else templates.scatter[t, c]
        for i in range(d):
            v[i] = first[c, i] / size  # the block's mean minus the template cluster's
        for i in range(d):
            for j in range(i + 1):
                scatter[i, j] = block[i, j] - size * v[i] * v[j]
                scatter[j, i] = scatter[i, j]
        for i in range(d):
            v[i] += centres[c, i]
        value = block_log_marginal(size, scatter, v, params, a, chol, y)
        if not touched[c]:
            memo[t, c] = value
        acc += value
    return acc


@numba.njit(**NJIT_KWARGS)
def template_jump_chain(
    rng,
    xc: np.ndarray,
    labels: np.ndarray,
    templates: TemplateSet,
    params,
    count: int,
) -> tuple[np.ndarray, int]:
    """Make ``count`` template-jump proposals from canonical ``labels``.

    Each picks a template uniformly, draws a partition from it and accepts it with
    probability ``min(1, pi(z') q(z) / (pi(z) q(z')))`` (``pi`` at ``params``, the
    full NIW family's :class:`~pymc_pcrp._kernels.state.NIWParams` or those of a
    family on the generic moves, :mod:`pymc_pcrp._kernels.family_templates`;
    ``q`` from :func:`mixture_log_probability`). Returns the final canonical labels
    and the number of proposals accepted.

    Most proposals are rejected, and most of those are decided before ``q(z')`` is
    computed (the permanents, about two fifths of a proposal's cost at D = 30). ``q(z')`` is
    at least ``exp(w) / M``, with ``w`` the log probability of the columns that were
    drawn (:func:`draw_assignment`): that labelling is one term of the drawn
    template's permanent, and ``M`` templates are mixed equally. So the log ratio is
    at most ``bound = log pi(z') - log pi(z) + log q(z) - w + log M``. When ``bound``
    is negative the ratio is too, the uniform of the test is drawn as it would be
    anyway, and the proposal is rejected at once if ``log u >= bound``; only
    otherwise is ``q(z')`` computed and the usual test made with the same ``u``. The
    decisions and the random stream are those of the plain test (a margin of
    ``1e-6 (1 + |w|)`` nats covers rounding in the permanent); only the work differs.
    """
    m = templates.n_columns.shape[0]
    current = labels.copy()
    if count == 0:
        return current, 0
    current_log_q = mixture_log_probability(templates, current)
    if current_log_q == -np.inf:
        # no template can make the current partition (it has more blocks than any has
        # columns): every proposal would be rejected, so none is drawn
        return current, 0
    current_log_pi = labels_log_joint(xc, current, params)
    assign = np.empty(labels.shape[0], dtype=np.int64)
    memo = np.full(templates.sizes.shape, np.nan)  # untouched clusters' log marginals
    accepted = 0
    log_m = math.log(m)
    for _ in range(count):
        t = min(int(rng.random() * m), m - 1)
        drawn = draw_assignment(rng, templates, t, assign)
        log_pi = proposal_log_joint(xc, templates, t, assign, params, memo)
        bound = log_pi - current_log_pi + current_log_q - drawn + log_m
        margin = _BOUND_MARGIN * (1.0 + abs(drawn))
        if bound < -margin:
            # the ratio is below one: the plain test would draw its uniform now
            log_u = math.log(rng.random())
            if log_u >= bound + margin:
                continue
            candidate = canonical_labels(assign)
            log_q = mixture_log_probability(templates, candidate)
            accept = log_u < log_pi - current_log_pi + current_log_q - log_q
        else:
            candidate = canonical_labels(assign)
            log_q = mixture_log_probability(templates, candidate)
            log_ratio = log_pi - current_log_pi + current_log_q - log_q
            accept = log_ratio >= 0.0 or math.log(rng.random()) < log_ratio
        if accept:
            accepted += 1
            current = candidate
            current_log_pi = log_pi
            current_log_q = log_q
    return current, accepted
