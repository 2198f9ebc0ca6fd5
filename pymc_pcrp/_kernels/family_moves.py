r"""The pCRP moves written once, generic over a cluster family's scores, in numba.

A *family* here is any likelihood whose clusters are summarised by a row of
additive statistics and whose predictive and block marginal follow from that
row. It registers (:func:`register_family`) five compiled operations on plain
arrays (``stats`` of shape ``(slots, S)``, ``cache`` of shape ``(slots, T)``):

* ``shift(stats, slot, data, i, sign, params)``: add (``sign = 1``) or take
  out (``sign = -1``) row ``i`` of ``data`` from the statistics of ``slot``;
* ``refresh(stats, cache, slot, params)``: recompute the scoring cache of
  ``slot`` from its statistics;
* ``score(cache, slot, data, i, params)``: the log posterior predictive of row
  ``i`` under the cluster held in ``slot`` (the row not in it);
* ``score_slots(stats, cache, order, k, own, data, i, params, out)``: ``score``
  of row ``i`` under each slot ``order[p]``, ``p < k``, into ``out[p]``, the
  row's own slot ``own`` scored with the row left out (changing neither
  ``stats`` nor ``cache``): the sweep's one call per row;
* ``block_log_marginal(stats, slot, params)``: the log marginal likelihood of
  the rows summarised in ``slot``;

two helpers, ``sizes(params) -> (S, T)`` and ``with_log_alpha(params,
log_alpha)``, and optionally a sweep of its own (``sweeps(rng, chain,
n_sweeps)``, the same conditional written out for speed, as the table family
has; without one, :func:`sweeps` here serves). ``params`` is the family's named
tuple; its first two fields must be ``log_alpha`` and ``power``. The same
operations serve a sweep state's slots and the two-slot groups of a split-merge
proposal, since both are arrays of the same layout.

The module then holds, once for every family, the single-site Gibbs sweep
(:func:`sweeps`) and the split-merge move (:func:`split_merge`, SAMS and
restricted Gibbs scans, Jain & Neal 2004; Dahl 2005); the kernel of one draw
that :class:`~pymc_pcrp.sampler.chain.Chain` calls is
:func:`pymc_pcrp._kernels.family_chain.advance`, and merges aimed at similar
clusters are :mod:`pymc_pcrp._kernels.informed_moves`.
They call the generic stubs :func:`shift`, :func:`refresh`, :func:`score`,
:func:`block_marginal`, :func:`sizes` and :func:`with_log_alpha`, which numba
resolves from the type of ``params`` when it compiles a kernel (``overload``):
one specialisation per family, no indirect call, cached like any kernel (the
package's cache key covers every kernel source, so editing a family's
operations cannot load a kernel compiled with the old ones; a family
registered outside the package must name its parameter type after its
sources for the same reason, as tests/table_reference.py does).

The pCRP side is shared with the Gaussian families: the seating weight
``r log n`` comes from the sweep's ``by_size`` table, ``alpha`` times the
prior predictive from its ``log_new`` table, and the pair rules, member
lists, relabelling, Metropolis-Hastings tests and the early stop of a doomed
merge are those of :mod:`pymc_pcrp._kernels.moves`.

The state (:class:`FamilyState`) keeps the slot fields of
:mod:`pymc_pcrp._kernels.slots` (``labels``, ``counts``, ``sums`` = the
statistics, ``order``, ``where``, ``k``; ``sumsq`` is an empty placeholder) and
the ``cache``. It is allocated with ``N + 1`` slots, which ``N`` rows can never
fill, so it never grows.

A sweep scores a row's own cluster with the row left out (``score_slots``),
every other cluster and a new one exactly, and draws; the state changes only
when the row moves, so a row that stays costs no update and nothing drifts by
rounding then.
"""

from __future__ import annotations

import math

from collections.abc import Callable
from typing import NamedTuple

import numba
import numpy as np

from numba.core import types
from numba.extending import overload

from pymc_pcrp._kernels import moves
from pymc_pcrp._kernels._config import NJIT_KWARGS
from pymc_pcrp._kernels.allocation import choose_group
from pymc_pcrp._kernels.draws import shuffle_in_place, shuffle_pair_prefix, sweep_order
from pymc_pcrp._kernels.slots import free_slot, open_occupied, open_slot

__all__ = [
    "FamilyOps",
    "FamilyState",
    "apply_merge",
    "apply_split",
    "block_marginal",
    "draw_choice",
    "init_state",
    "move_row",
    "partition_log_joint",
    "refresh",
    "register_family",
    "resync",
    "run_sweeps",
    "score",
    "score_slots",
    "shift",
    "sizes",
    "split_merge",
    "sweeps",
    "with_log_alpha",
]


class FamilyState(NamedTuple):
    """Sweep state of a family on the generic moves (see the module docstring)."""

    labels: np.ndarray
    counts: np.ndarray
    sums: np.ndarray  # the statistics, (slots, S)
    sumsq: np.ndarray  # an empty (slots, 0) placeholder for the shared slot helpers
    cache: np.ndarray  # (slots, T)
    order: np.ndarray
    where: np.ndarray
    k: np.ndarray


class FamilyOps(NamedTuple):
    """The compiled operations of a family (see the module docstring)."""

    shift: Callable
    refresh: Callable
    score: Callable
    score_slots: Callable
    block_log_marginal: Callable
    sizes: Callable
    with_log_alpha: Callable
    sweeps: Callable | None = None  # a written-out sweep, else the generic one


@numba.njit(**NJIT_KWARGS)
def draw_choice(rng: np.random.Generator, logw: np.ndarray, m: int) -> int:
    """Index below ``m`` drawn with probability proportional to ``exp(logw[p])``.

    Overwrites ``logw[:m]`` with the running sums of the weights (one
    exponential each).
    """
    top = -math.inf
    for p in range(m):
        if logw[p] > top:
            top = logw[p]
    total = 0.0
    for p in range(m):
        total += math.exp(logw[p] - top)
        logw[p] = total
    target = rng.random() * total
    choice = m - 1
    for p in range(m):
        if target < logw[p]:
            choice = p
            break
    while logw[choice] == (logw[choice - 1] if choice > 0 else 0.0):
        choice -= 1  # never an option of weight zero (rounding at the top end)
    return choice


def shift(stats, slot, data, i, sign, params):
    """Add or take out row ``i`` from ``slot``'s statistics (the family's, by ``params``)."""
    raise NotImplementedError("compiled code only: dispatched on the family's parameters")


def refresh(stats, cache, slot, params):
    """Recompute ``slot``'s scoring cache (the family's, chosen by the type of ``params``)."""
    raise NotImplementedError("compiled code only: dispatched on the family's parameters")


def score(cache, slot, data, i, params):
    """Log predictive of row ``i`` under ``slot`` (the family's, by the type of ``params``)."""
    raise NotImplementedError("compiled code only: dispatched on the family's parameters")


def score_slots(stats, cache, order, k, own, data, i, params, out):
    """Row ``i``'s scores under slots ``order[:k]`` (its own ``own`` without it), into ``out``."""
    raise NotImplementedError("compiled code only: dispatched on the family's parameters")


def block_marginal(stats, slot, params):
    """Log marginal of ``slot``'s rows (the family's, chosen by the type of ``params``)."""
    raise NotImplementedError("compiled code only: dispatched on the family's parameters")


def sizes(params):
    """``(S, T)`` of the family (chosen by the type of ``params``)."""
    raise NotImplementedError("compiled code only: dispatched on the family's parameters")


def with_log_alpha(params, log_alpha):
    """``params`` with another ``log_alpha`` (the family's, by the type of ``params``)."""
    raise NotImplementedError("compiled code only: dispatched on the family's parameters")


def run_sweeps(rng, chain, n_sweeps):
    """Run the family's sweeps (its own, or :func:`sweeps`), chosen by the type of ``params``."""
    raise NotImplementedError("compiled code only: dispatched on the family's parameters")


def register_family(params_class: type, ops: FamilyOps) -> None:
    """Make the generic kernels dispatch to ``ops`` when ``params`` is a ``params_class``.

    Each operation is a numba ``overload`` of the generic stub above for that
    parameter type (the idiom of :func:`pymc_pcrp._kernels.moves.block_log_marginal`):
    numba picks the family when it compiles a kernel, and the kernels, defined
    once at module scope, are cached like any other.
    """

    def mine(params) -> bool:
        return isinstance(params, types.BaseNamedTuple) and params.instance_class is params_class

    op_shift, op_refresh, op_score = ops.shift, ops.refresh, ops.score
    op_slots = ops.score_slots
    op_marginal, op_sizes, op_alpha = ops.block_log_marginal, ops.sizes, ops.with_log_alpha

    @overload(shift, jit_options=NJIT_KWARGS)
    def _shift(stats, slot, data, i, sign, params):
        if mine(params):
            return lambda stats, slot, data, i, sign, params: op_shift(
                stats, slot, data, i, sign, params
            )
        return None

    @overload(refresh, jit_options=NJIT_KWARGS)
    def _refresh(stats, cache, slot, params):
        if mine(params):
            return lambda stats, cache, slot, params: op_refresh(stats, cache, slot, params)
        return None

    @overload(score, jit_options=NJIT_KWARGS)
    def _score(cache, slot, data, i, params):
        if mine(params):
            return lambda cache, slot, data, i, params: op_score(cache, slot, data, i, params)
        return None

    @overload(score_slots, jit_options=NJIT_KWARGS)
    def _score_slots(stats, cache, order, k, own, data, i, params, out):
        if mine(params):
            return lambda stats, cache, order, k, own, data, i, params, out: op_slots(
                stats, cache, order, k, own, data, i, params, out
            )
        return None

    @overload(block_marginal, jit_options=NJIT_KWARGS)
    def _marginal(stats, slot, params):
        if mine(params):
            return lambda stats, slot, params: op_marginal(stats, slot, params)
        return None

    @overload(run_sweeps, jit_options=NJIT_KWARGS)
    def _run_sweeps(rng, chain, n_sweeps):
        if isinstance(chain, types.BaseTuple) and len(chain) == 4 and mine(chain.types[2]):
            if ops.sweeps is None:
                return lambda rng, chain, n_sweeps: sweeps(rng, chain, n_sweeps)
            op_sweeps = ops.sweeps
            return lambda rng, chain, n_sweeps: op_sweeps(rng, chain, n_sweeps)
        return None

    @overload(sizes, jit_options=NJIT_KWARGS)
    def _sizes(params):
        if mine(params):
            return lambda params: op_sizes(params)
        return None

    @overload(with_log_alpha, jit_options=NJIT_KWARGS)
    def _alpha(params, log_alpha):
        if mine(params):
            return lambda params, log_alpha: op_alpha(params, log_alpha)
        return None


@numba.njit(**NJIT_KWARGS)
def init_state(data, labels, params):
    """Return a fresh state of ``N + 1`` slots from labels ``0..K-1`` (``K <= N``)."""
    n = data.shape[0]
    n_stats, n_cache = sizes(params)
    cap = n + 1
    state = FamilyState(
        labels.astype(np.int64),
        np.zeros(cap, dtype=np.int64),
        np.zeros((cap, n_stats)),
        np.zeros((cap, 0)),
        np.zeros((cap, n_cache)),
        np.arange(cap),
        np.arange(cap),
        np.zeros(1, dtype=np.int64),
    )
    for i in range(n):
        slot = state.labels[i]
        state.counts[slot] += 1
        shift(state.sums, slot, data, i, 1.0, params)
    open_occupied(state)
    for p in range(state.k[0]):
        refresh(state.sums, state.cache, state.order[p], params)
    return state


@numba.njit(**NJIT_KWARGS)
def resync(data, state, params):
    """Rebuild the occupied slots' statistics and caches from ``state.labels``."""
    for p in range(state.k[0]):
        slot = state.order[p]
        state.counts[slot] = 0
        state.sums[slot] = 0.0
    for i in range(data.shape[0]):
        slot = state.labels[i]
        state.counts[slot] += 1
        shift(state.sums, slot, data, i, 1.0, params)
    for p in range(state.k[0]):
        refresh(state.sums, state.cache, state.order[p], params)


@numba.njit(**NJIT_KWARGS)
def block_weight(stats, slot, n, params, power):
    """``log alpha + r log Gamma(n) + log m`` of one block; 0 for ``n = 0``."""
    if n == 0:
        return 0.0
    return params[0] + power * math.lgamma(n) + block_marginal(stats, slot, params)


@numba.njit(**NJIT_KWARGS)
def state_log_joint(state, params):
    """``sum_k`` of the blocks' weights from the state's running statistics."""
    total = 0.0
    for p in range(state.k[0]):
        slot = state.order[p]
        total += block_weight(state.sums, slot, state.counts[slot], params, params[1])
    return total


@numba.njit(**NJIT_KWARGS)
def partition_log_joint(data, labels, params):
    """``K log alpha + r sum_k log Gamma(n_k) + sum_k log m(X_k)`` afresh.

    ``labels`` must be canonical; each block's statistics are summed over its
    rows in index order, so the same partition gives the same value bit for bit.
    """
    n = data.shape[0]
    k = 0
    for i in range(n):
        k = max(k, labels[i] + 1)
    n_stats, _ = sizes(params)
    stats = np.zeros((k, n_stats))
    counts = np.zeros(k, dtype=np.int64)
    for i in range(n):
        counts[labels[i]] += 1
        shift(stats, labels[i], data, i, 1.0, params)
    total = 0.0
    for c in range(k):
        total += block_weight(stats, c, counts[c], params, params[1])
    return total


@numba.njit(inline="always", **NJIT_KWARGS)
def move_row(state, data, i, old, slot, params):
    """Move row ``i`` from slot ``old`` to ``slot``, freeing or opening slots as needed.

    ``slot`` differs from ``old``; an empty ``slot`` is opened, and ``old`` is
    freed when the row was its only member.
    """
    counts, stats, cache = state.counts, state.sums, state.cache
    if counts[old] == 1:
        free_slot(state, old)
    else:
        counts[old] -= 1
        shift(stats, old, data, i, -1.0, params)
        refresh(stats, cache, old, params)
    if counts[slot] == 0:
        open_slot(state, slot)
    counts[slot] += 1
    shift(stats, slot, data, i, 1.0, params)
    refresh(stats, cache, slot, params)
    state.labels[i] = slot


@numba.njit(**NJIT_KWARGS)
def sweeps(rng, chain, n_sweeps):
    """Run ``n_sweeps`` Gibbs sweeps in place; return how many rows changed cluster.

    ``chain`` is ``(data, state, params, tables)`` with ``tables = (log_new,
    pred_const, by_size)``: each row's ``log alpha + log prior predictive``,
    unused size constants and ``by_size[n, 0] = r log n``. Each sweep visits
    the rows in a fresh uniformly random order and draws each row's cluster
    from its full conditional given the others.
    """
    data, state, params, tables = chain
    n = data.shape[0]
    log_new, _, by_size = tables
    labels, counts, stats, cache = state.labels, state.counts, state.sums, state.cache
    order, where, k_arr = state.order, state.where, state.k
    logw = np.empty(n + 1)
    perm = sweep_order(n)
    moved = 0
    for _ in range(n_sweeps):
        shuffle_in_place(rng, perm)
        for i in perm:
            old = labels[i]
            single = counts[old] == 1
            k = k_arr[0]
            score_slots(stats, cache, order, k, old, data, i, params, logw)
            for p in range(k):
                slot = order[p]
                logw[p] += by_size[counts[slot] - (slot == old), 0]  # sizes without the row
            if single:
                logw[where[old]] = -math.inf
            logw[k] = log_new[i]
            choice = draw_choice(rng, logw, k + 1)
            if choice == where[old] or (choice == k and single):
                continue  # stays (a singleton drawing a new cluster stays where it is)
            # ``order[choice]`` is read before freeing a slot reorders ``order``
            move_row(state, data, i, old, order[choice], params)
            moved += 1
    return moved


@numba.njit(**NJIT_KWARGS)
def seat(rng, data, seats, forced, groups, work, scan, floor):
    """Seat ``S`` in the two groups; return the log probability of the choices made.

    As :func:`pymc_pcrp._kernels.diag_splitmerge._seat`: sequential
    allocation (stopping once the log probability is below ``floor``), or
    with ``scan`` one restricted Gibbs scan (a row's own group scored with
    the row taken out); ``forced`` scores the given ``target`` groups.
    """
    members, m, side, target = seats
    params, seat_w = work
    gcount, gstats, gcache = groups
    log_q = 0.0
    for t in range(m):
        p = members[t]
        forced_g = target[t] if forced else -1
        if scan:
            g = side[t]
            gcount[g] -= 1
            shift(gstats, g, data, p, -1.0, params)
            refresh(gstats, gcache, g, params)
        w0 = seat_w[gcount[0]] + score(gcache, 0, data, p, params)
        w1 = seat_w[gcount[1]] + score(gcache, 1, data, p, params)
        new, log_p = choose_group(rng, w0, w1, forced_g)
        log_q += log_p
        if not scan and log_q < floor:
            return log_q
        side[t] = new
        gcount[new] += 1
        shift(gstats, new, data, p, 1.0, params)
        refresh(gstats, gcache, new, params)
    return log_q


@numba.njit(**NJIT_KWARGS)
def launch(rng, data, proposal, groups, work):
    """Build one proposal; return its log probability and a merge's early uniform."""
    i, j, seats, forced, n_scans, bound = proposal
    members, m, _, target = seats
    gcount, gstats, _ = groups
    params = work[0]
    shuffle_pair_prefix(rng, members, target, m)
    gcount[:] = 0
    gstats[:, :] = 0.0
    for g, p in ((0, i), (1, j)):
        gcount[g] = 1
        shift(gstats, g, data, p, 1.0, params)
        refresh(gstats, groups[2], g, params)
    sams = n_scans < 0
    log_u, floor = moves.merge_bound(rng, forced and sams, bound)
    log_q = seat(rng, data, seats, forced and sams, groups, work, False, floor)
    for t in range(n_scans + 1):
        log_q = seat(rng, data, seats, forced and t == n_scans, groups, work, True, -math.inf)
    return log_q, log_u


@numba.njit(**NJIT_KWARGS)
def put_group(state, slot, groups, g):
    gcount, gstats, gcache = groups
    state.counts[slot] = gcount[g]
    state.sums[slot] = gstats[g]
    state.cache[slot] = gcache[g]


@numba.njit(**NJIT_KWARGS)
def union_into_group(state, si, sj, groups, params):
    gcount, gstats, gcache = groups
    gcount[0] = state.counts[si] + state.counts[sj]
    gstats[0] = state.sums[si] + state.sums[sj]
    refresh(gstats, gcache, 0, params)


@numba.njit(**NJIT_KWARGS)
def apply_merge(state, si, sj, i, j, seats, lists, groups, params):
    """Write an accepted merge of slots ``si`` and ``sj`` into ``state`` (the union in ``sj``)."""
    members, m, _, _ = seats
    head, nxt = lists
    union_into_group(state, si, sj, groups, params)
    put_group(state, sj, groups, 0)
    moves.merge_labels(state, si, sj, i, j, members, m, head, nxt)


@numba.njit(**NJIT_KWARGS)
def apply_split(state, sj, i, j, seats, lists, groups):
    """Write an accepted split of slot ``sj`` into ``state`` (group 0 to a new slot)."""
    members, m, side, _ = seats
    head, nxt = lists
    new = moves.split_labels(state, sj, i, j, members, m, side, head, nxt)
    put_group(state, new, groups, 0)
    put_group(state, sj, groups, 1)


@numba.njit(**NJIT_KWARGS)
def split_merge(rng, chain, n_moves, n_scans, pairs):
    """Run ``n_moves`` split-merge proposals in place; return the four counts.

    ``chain`` is as for the sweep; ``pairs = (pair_rule, small)`` as in
    :func:`pymc_pcrp._kernels.moves.draw_move`.
    """
    data, state, params, tables = chain
    power = params[1]
    n = data.shape[0]
    if n < 2 or n_moves <= 0 or moves.nothing_to_pair(state, pairs):
        return 0, 0, 0, 0
    seat_w = np.ascontiguousarray(tables[2][:, 0])
    labels = state.labels
    head, nxt, members, side, target = moves.move_workspace(state)
    n_stats, n_cache = sizes(params)
    groups = (np.zeros(2, dtype=np.int64), np.zeros((2, n_stats)), np.zeros((2, n_cache)))
    gcount, gstats, _ = groups
    work = (params, seat_w)
    n_split = n_split_acc = n_merge = n_merge_acc = 0
    for _ in range(n_moves):
        i, j, k_now = moves.draw_move(rng, state, (head, nxt), pairs)
        if j < 0:
            continue
        si = labels[i]
        sj = labels[j]
        m = moves.gather_members(head, nxt, si, sj, i, j, members, target)
        merge = si != sj
        seats = (members, m, side, target)
        base = 0.0
        if merge:
            sizes_ = (state.counts[si], state.counts[sj])
            union_into_group(state, si, sj, groups, params)
            base = (
                block_weight(gstats, 0, gcount[0], params, power)
                - block_weight(state.sums, si, sizes_[0], params, power)
                - block_weight(state.sums, sj, sizes_[1], params, power)
            )
            base += moves.selection_log_ratio(pairs[0], k_now, sizes_, False)
        bound = (base, 1.0 if merge else 0.0)
        log_q, log_u = launch(rng, data, (i, j, seats, merge, n_scans, bound), groups, work)
        if not merge:
            n_split += 1
            sizes_ = (gcount[0], gcount[1])
            gain = (
                block_weight(gstats, 0, gcount[0], params, power)
                + block_weight(gstats, 1, gcount[1], params, power)
                - block_weight(state.sums, sj, state.counts[sj], params, power)
            )
            gain += moves.selection_log_ratio(pairs[0], k_now, sizes_, True)
            if moves.accepts(rng, gain - log_q):
                n_split_acc += 1
                apply_split(state, sj, i, j, seats, (head, nxt), groups)
        else:
            n_merge += 1
            if moves.merge_accepted(rng, log_q, log_u, base, 1.0):
                n_merge_acc += 1
                apply_merge(state, si, sj, i, j, seats, (head, nxt), groups, params)
    return n_split, n_split_acc, n_merge, n_merge_acc
