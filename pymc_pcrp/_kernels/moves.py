"""Family-agnostic parts of the split-merge move, in numba.

The split-merge moves of the full family (:mod:`pymc_pcrp._kernels.splitmerge`)
and of the diagonal family (:mod:`pymc_pcrp._kernels.diag_splitmerge`) differ
only in their group statistics and weights. What does not depend on the family
is here: how many proposals follow a sweep, the member lists of the clusters,
the pair of points and the set ``S`` of a move, the posterior ratio of a split
(with each family's marginal likelihood, :func:`block_log_marginal`) and the
Metropolis-Hastings test, and the relabelling that writes an accepted split or
merge into a sweep state. The functions take either state
(:mod:`pymc_pcrp._kernels.slots`); numba compiles one specialisation per type.

A move works on two *groups* held in two-slot arrays laid out like a state's
slots (``gcount``, ``gsum``, ``gsumsq``, then the family's own caches);
:func:`put_group` and :func:`merge_into_group` move the shared statistics
between a state and the groups.
"""

import math

import numba
import numpy as np

from numba.core import types
from numba.extending import overload

from pymc_pcrp._kernels._config import NJIT_KWARGS
from pymc_pcrp._kernels.diag_state import DiagParams, diag_log_marginal
from pymc_pcrp._kernels.niw import log_marginal_from_logdet
from pymc_pcrp._kernels.slots import free_slot, grown, open_slot
from pymc_pcrp._kernels.state import NIWParams

__all__ = [
    "accepts",
    "add_counts",
    "block_log_marginal",
    "block_log_weight",
    "cover_slots",
    "draw_move",
    "draw_n_moves",
    "draw_pair",
    "gather_members",
    "member_lists",
    "merge_accepted",
    "merge_bound",
    "merge_into_group",
    "merge_labels",
    "move_workspace",
    "nth_member",
    "put_group",
    "relist",
    "split_gain",
    "split_labels",
]


@numba.njit(**NJIT_KWARGS)
def draw_n_moves(rng: np.random.Generator, n_split_merge: float) -> int:
    """Draw how many proposals follow a sweep: ``n_split_merge`` on average.

    Its integer part always, and one more with probability its fractional part
    (a draw from ``rng`` that does not look at the state, so each sweep applies
    a fixed mixture of invariant kernels); an integer value draws nothing.
    """
    whole = int(n_split_merge)
    frac = n_split_merge - whole
    n_moves = whole
    if frac > 0.0 and rng.random() < frac:
        n_moves += 1
    return n_moves


@numba.njit(**NJIT_KWARGS)
def add_counts(counts: np.ndarray, found: tuple[int, int, int, int]) -> None:
    """Add a call's ``(split proposed, split accepted, merge proposed, merge accepted)``."""
    for c in range(4):
        counts[c] += found[c]


@numba.njit(**NJIT_KWARGS)
def member_lists(labels: np.ndarray, capacity: int) -> tuple[np.ndarray, np.ndarray]:
    """Linked lists of the members of every slot: ``head[slot] -> nxt[point] -> ... -> -1``.

    Points are listed in increasing index order.
    """
    n = labels.shape[0]
    head = np.full(capacity, -1, dtype=np.int64)
    nxt = np.full(n, -1, dtype=np.int64)
    for p in range(n - 1, -1, -1):
        nxt[p] = head[labels[p]]
        head[labels[p]] = p
    return head, nxt


@numba.njit(**NJIT_KWARGS)
def move_workspace(state) -> tuple:
    """``(head, nxt, members, side, target)`` for the moves of one call.

    The member lists of the state's slots (:func:`member_lists`) and three
    ``int64`` arrays of length ``N`` for a move's ``S``, its groups and the
    current partition's groups (:func:`gather_members`).
    """
    n = state.labels.shape[0]
    head, nxt = member_lists(state.labels, state.counts.shape[0])
    members = np.empty(n, dtype=np.int64)
    side = np.empty(n, dtype=np.int64)
    target = np.empty(n, dtype=np.int64)
    return head, nxt, members, side, target


@numba.njit(**NJIT_KWARGS)
def relist(head: np.ndarray, nxt: np.ndarray, slot: int, labels: np.ndarray, points, m: int):
    """Rebuild the member list of ``slot`` from the first ``m`` entries of ``points``.

    Only the points whose label is ``slot`` are listed.
    """
    head[slot] = -1
    for t in range(m):
        p = points[t]
        if labels[p] == slot:
            nxt[p] = head[slot]
            head[slot] = p


@numba.njit(**NJIT_KWARGS)
def gather_members(
    head: np.ndarray,
    nxt: np.ndarray,
    si: int,
    sj: int,
    i: int,
    j: int,
    members: np.ndarray,
    target: np.ndarray,
) -> int:
    """Write ``S``, the other members of the clusters ``sj`` and ``si``, into ``members``.

    ``target`` receives the group each belongs to in the current state (1 for
    ``sj``, 0 for ``si``; used by a merge). ``si == sj`` for a split. Returns ``|S|``.
    """
    m = 0
    p = head[sj]
    while p >= 0:
        if p != i and p != j:
            members[m] = p
            target[m] = 1
            m += 1
        p = nxt[p]
    if si != sj:
        p = head[si]
        while p >= 0:
            if p != i:
                members[m] = p
                target[m] = 0
                m += 1
            p = nxt[p]
    return m


# Pair rules of a split-merge move (the ``pair_rule`` of :func:`draw_pair`).
UNIFORM_PAIRS = 0  # i and j uniform among the points
SMALL_PAIRS = 3  # two clusters of at most `small` points uniformly (with replacement), i and j
# uniform in them; with `small` >= N every cluster counts (pairs of clusters drawn uniformly)

# Largest cluster that the sampler's SMALL_PAIRS moves draw ("a speck"); such a move
# visits at most this many points, so it costs a small fraction of a sweep.
SMALL_SIZE = 8


@numba.njit(**NJIT_KWARGS)
def n_small(state, small: int) -> int:
    """Count the occupied clusters of at most ``small`` points."""
    count = 0
    for p in range(state.k[0]):
        if state.counts[state.order[p]] <= small:
            count += 1
    return count


@numba.njit(**NJIT_KWARGS)
def _small_slot(state, small: int, t: int) -> int:
    """Return the slot of the ``t``-th occupied cluster of at most ``small`` points."""
    for p in range(state.k[0]):
        slot = state.order[p]
        if state.counts[slot] <= small:
            if t == 0:
                return slot
            t -= 1
    return -1


@numba.njit(**NJIT_KWARGS)
def nth_member(head: np.ndarray, nxt: np.ndarray, slot: int, t: int, skip: int) -> int:
    """Return the ``t``-th member of ``slot`` in its list, not counting the point ``skip``."""
    p = head[slot]
    if p == skip:
        p = nxt[p]
    for _step in range(t):
        p = nxt[p]
        if p == skip:
            p = nxt[p]
    return p


@numba.njit(**NJIT_KWARGS)
def draw_pair(
    rng: np.random.Generator,
    state,
    lists: tuple,
    pairs: tuple,
    k: int,
) -> tuple[int, int]:
    """Draw the ordered pair ``(i, j)`` of distinct points of a move.

    ``lists`` is ``(head, nxt)`` (:func:`member_lists`), ``pairs`` is
    ``(pair_rule, small)`` (``small`` matters to ``SMALL_PAIRS`` only) and ``k``
    the number of clusters the rule draws from (all, or those of at most
    ``small`` points; :func:`draw_move` counts them).

    ``UNIFORM_PAIRS``: ``i`` uniform among the ``N`` points, ``j`` uniform among
    the other ``N - 1``. ``SMALL_PAIRS``: two clusters drawn uniformly and independently
    among those of at most ``small`` points, ``i`` uniform in the first and
    ``j`` uniform among the second's members other than ``i``; when both draws
    give the same singleton there is no such ``j`` and ``j = -1`` is returned
    (the move then does nothing), and ``i = j = -1`` when there is no such cluster.
    """
    head, nxt = lists
    n = state.labels.shape[0]
    pair_rule, small = pairs
    if pair_rule == UNIFORM_PAIRS:
        i = rng.integers(0, n)
    else:
        if k == 0:
            return -1, -1
        slot = _small_slot(state, small, rng.integers(0, k))
        i = nth_member(head, nxt, slot, rng.integers(0, state.counts[slot]), -1)
        slot_j = _small_slot(state, small, rng.integers(0, k))
        size = state.counts[slot_j] - (1 if slot_j == state.labels[i] else 0)
        if size == 0:
            return i, -1
        return i, nth_member(head, nxt, slot_j, rng.integers(0, size), i)
    j = rng.integers(0, n - 1)
    if j >= i:
        j += 1
    return i, j


@numba.njit(**NJIT_KWARGS)
def nothing_to_pair(state, pairs: tuple) -> bool:
    """Whether every move under ``pairs`` would be no move: ``SMALL_PAIRS`` without a small cluster.

    Such a move draws no random number either, so a caller may skip a whole
    batch (and the ``O(N)`` member lists it would build) without changing the chain.
    """
    pair_rule, small = pairs
    return pair_rule == SMALL_PAIRS and n_small(state, small) == 0


@numba.njit(**NJIT_KWARGS)
def draw_move(rng: np.random.Generator, state, lists: tuple, pairs: tuple) -> tuple[int, int, int]:
    """Draw the pair ``(i, j)`` of the next move; return it with the ``k`` of its ratio.

    :func:`draw_pair` under ``pairs = (pair_rule, small)``, and ``k`` for
    :func:`selection_log_ratio`: the number of clusters, or for ``SMALL_PAIRS``
    the number of clusters of at most ``small`` points (counted once here).
    ``j = -1`` means no move: the same singleton drawn twice, no small cluster,
    or a ``SMALL_PAIRS`` merge whose union has more than ``small`` points (the
    rule could not draw the reverse split, so that merge has acceptance 0).
    """
    pair_rule, small = pairs
    k = n_small(state, small) if pair_rule == SMALL_PAIRS else state.k[0]
    i, j = draw_pair(rng, state, lists, pairs, k)
    if j >= 0 and pair_rule == SMALL_PAIRS:
        si, sj = state.labels[i], state.labels[j]
        if si != sj and state.counts[si] + state.counts[sj] > small:
            return i, -1, k
    return i, j, k


@numba.njit(**NJIT_KWARGS)
def selection_log_ratio(pair_rule: int, k: int, sizes: tuple, split: bool) -> float:
    """Log ratio of the probabilities of drawing the pair ``(i, j)`` back and forth.

    The pair's probability from the proposed state over that from the current
    one (a move's reverse uses the same ordered pair), for the rules of
    :func:`draw_pair`; ``k`` is the current number of clusters the rule draws
    from (:func:`draw_move`). A split: ``sizes = (n0, n1)`` are the groups of
    ``i`` and ``j``; a merge: the clusters of ``i`` and ``j``. ``UNIFORM_PAIRS``
    gives 0. Under ``SMALL_PAIRS`` a split of a small cluster adds one small
    cluster and a merge whose union has at most ``small`` points removes one (a
    larger union cannot be split back by the rule, and the caller rejects that
    merge).
    """
    n0, n1 = sizes
    nc = n0 + n1
    if pair_rule == SMALL_PAIRS:
        if split:
            return (
                2.0 * math.log(k / (k + 1.0))
                + math.log(nc)
                + math.log(nc - 1.0)
                - math.log(n0)
                - math.log(n1)
            )
        return (
            2.0 * math.log(k / (k - 1.0))
            + math.log(n0)
            + math.log(n1)
            - math.log(nc)
            - math.log(nc - 1.0)
        )
    return 0.0


def block_log_marginal(params, n: int, stat: float, d: int) -> float:
    """Log marginal likelihood of a block of ``n`` points in ``d`` dimensions, either family.

    ``stat`` is the block's statistic that the family's marginal needs:
    ``log|Psi_n|`` with :class:`~pymc_pcrp._kernels.state.NIWParams` (full
    covariances, :func:`~pymc_pcrp._kernels.niw.log_marginal_from_logdet`) and
    ``sum_j log b_nj`` with :class:`~pymc_pcrp._kernels.diag_state.DiagParams`
    (diagonal, :func:`~pymc_pcrp._kernels.diag_state.diag_log_marginal`). In
    compiled code numba picks the family from the type of ``params`` when it
    compiles the caller (an ``overload``), so the split-merge ratio below is
    written once for both families and costs no branch.
    """
    if isinstance(params, DiagParams):
        return diag_log_marginal(n, stat, d, params.kappa0, params.a0, params.logb0)
    return log_marginal_from_logdet(n, stat, d, params.kappa0, params.nu0, params.logdet0)


def _is_params(typ: types.Type, cls: type) -> bool:
    """Whether a numba type is that of a named tuple of class ``cls``."""
    return isinstance(typ, types.BaseNamedTuple) and typ.instance_class is cls


@overload(block_log_marginal, jit_options=NJIT_KWARGS)
def _block_log_marginal(params, n, stat, d):
    if _is_params(params, DiagParams):

        def diag(params, n, stat, d):
            return diag_log_marginal(n, stat, d, params.kappa0, params.a0, params.logb0)

        return diag
    if _is_params(params, NIWParams):

        def full(params, n, stat, d):
            return log_marginal_from_logdet(n, stat, d, params.kappa0, params.nu0, params.logdet0)

        return full
    return None


@numba.njit(**NJIT_KWARGS)
def block_log_weight(params, power: float, n: int, stat: float, d: int) -> float:
    """``log alpha + r log Gamma(n) + log m`` of one block of ``n`` points; 0 for ``n = 0``.

    A partition's log posterior is the sum of its blocks' weights (pCRP prior,
    docs/model.md, times the marginal likelihood, :func:`block_log_marginal`),
    so every move's ratio is a sum of such terms. ``power`` is ``r``.
    """
    if n == 0:
        return 0.0
    return params.log_alpha + power * math.lgamma(n) + block_log_marginal(params, n, stat, d)


@numba.njit(**NJIT_KWARGS)
def split_gain(params, power: float, sizes: tuple, stats: tuple, d: int) -> float:
    """Log posterior ratio of two blocks against their union, for either family.

    ``log alpha + r [log Gamma(n0) + log Gamma(n1) - log Gamma(n0 + n1)]
    + log m_0 + log m_1 - log m_01`` (:func:`block_log_weight` of each block, the
    union's subtracted) for blocks of ``sizes = (n0, n1)`` points; ``stats`` holds
    the three blocks' statistics in that order. A split of the union into the
    two blocks is accepted with log ratio ``gain - q_term`` and a merge of the
    two blocks with ``q_term - gain``, where ``q_term`` is the weighted log
    probability of the split's proposal.
    """
    n0, n1 = sizes
    return (
        block_log_weight(params, power, n0, stats[0], d)
        + block_log_weight(params, power, n1, stats[1], d)
        - block_log_weight(params, power, n0 + n1, stats[2], d)
    )


@numba.njit(**NJIT_KWARGS)
def accepts(rng: np.random.Generator, log_a: float) -> bool:
    """Metropolis-Hastings test: accept with probability ``min(1, exp(log_a))``.

    Draws a uniform only when ``log_a < 0``.
    """
    return log_a >= 0.0 or math.log(rng.random()) < log_a


@numba.njit(**NJIT_KWARGS)
def merge_bound(rng: np.random.Generator, active: bool, bound: tuple) -> tuple[float, float]:
    """Draw a merge's test uniform early; return ``(log_u, floor)``.

    A merge is accepted when ``log_u < weight * log_q + base`` (``bound = (base,
    weight)``), and ``log_q``, the log probability that the reverse split's
    sequential allocation makes the current partition's choices, only falls as
    they are scored. With ``base < 0`` and ``weight > 0`` the test draws its
    uniform whatever ``log_q`` turns out to be, so the launch of an ``active``
    merge (a SAMS merge, whose scoring draws no random number) draws it right
    after its shuffle, where the full computation would have: the random stream
    is unchanged, and scoring may stop once ``log_q < floor = (log_u - base) /
    weight``, since the merge can no longer pass. Otherwise returns ``(nan,
    -inf)``: nothing drawn, no stop.
    """
    base, weight = bound
    if active and weight > 0.0 and base < 0.0:
        log_u = math.log(rng.random())
        return log_u, (log_u - base) / weight
    return math.nan, -math.inf


@numba.njit(**NJIT_KWARGS)
def merge_accepted(
    rng: np.random.Generator, log_q: float, log_u: float, base: float, weight: float
) -> bool:
    """Run a merge's Metropolis-Hastings test, ``log_a = weight * log_q + base``.

    With ``log_u`` drawn by :func:`merge_bound` (not ``nan``) the test uses it,
    and a launch that stopped (``log_q`` below the floor) has failed; otherwise
    :func:`accepts` draws the uniform as usual.
    """
    log_a = weight * log_q + base
    if math.isnan(log_u):
        return accepts(rng, log_a)
    return log_q >= (log_u - base) / weight and log_u < log_a


@numba.njit(**NJIT_KWARGS)
def put_group(
    state, slot: int, g: int, gcount: np.ndarray, gsum: np.ndarray, gsumsq: np.ndarray
) -> None:
    """Copy the size and sums of group ``g`` into ``slot`` of ``state``."""
    state.counts[slot] = gcount[g]
    state.sums[slot] = gsum[g]
    state.sumsq[slot] = gsumsq[g]


@numba.njit(**NJIT_KWARGS)
def merge_into_group(
    state, si: int, sj: int, gcount: np.ndarray, gsum: np.ndarray, gsumsq: np.ndarray
) -> None:
    """Write the size and sums of clusters ``si`` and ``sj`` together into group 0."""
    gcount[0] = state.counts[si] + state.counts[sj]
    gsum[0] = state.sums[si] + state.sums[sj]
    gsumsq[0] = state.sumsq[si] + state.sumsq[sj]


@numba.njit(**NJIT_KWARGS)
def split_labels(
    state,
    sj: int,
    i: int,
    j: int,
    members: np.ndarray,
    m: int,
    side: np.ndarray,
    head: np.ndarray,
    nxt: np.ndarray,
) -> int:
    """Relabel an accepted split of ``sj``: group 0 (``i`` and ``side == 0``) opens a new slot.

    Returns the new slot; the caller writes both groups' statistics (group 1
    keeps ``sj``), grows the state if it is full and then the member lists
    (:func:`cover_slots`).
    """
    labels = state.labels
    new = state.order[state.k[0]]
    open_slot(state, new)
    labels[i] = new
    for t in range(m):
        if side[t] == 0:
            labels[members[t]] = new
    members[m] = i
    members[m + 1] = j
    relist(head, nxt, new, labels, members, m + 2)
    relist(head, nxt, sj, labels, members, m + 2)
    return new


@numba.njit(**NJIT_KWARGS)
def merge_labels(
    state,
    si: int,
    sj: int,
    i: int,
    j: int,
    members: np.ndarray,
    m: int,
    head: np.ndarray,
    nxt: np.ndarray,
) -> None:
    """Relabel an accepted merge into ``sj`` (whose statistics are written) and free ``si``."""
    labels = state.labels
    free_slot(state, si)
    labels[i] = sj
    for t in range(m):
        labels[members[t]] = sj
    members[m] = i
    members[m + 1] = j
    relist(head, nxt, sj, labels, members, m + 2)
    head[si] = -1


@numba.njit(**NJIT_KWARGS)
def cover_slots(head: np.ndarray, state) -> np.ndarray:
    """``head`` extended (with empty lists) to the state's capacity, after a growth."""
    if head.shape[0] < state.counts.shape[0]:
        return grown(head, state.counts.shape[0], -1)
    return head
