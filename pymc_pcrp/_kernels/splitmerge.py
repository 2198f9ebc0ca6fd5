r"""Restricted-Gibbs split-merge moves for the pCRP-NIW mixture, in numba.

The collapsed Gibbs sweep moves one point at a time, so it cannot split a large
cluster in two or merge two large clusters when every intermediate partition is
improbable. The split-merge move of Jain & Neal (2004) proposes such changes in
one step and corrects for the proposal with a Metropolis-Hastings test, so the
move leaves the target of the sweep exactly invariant:

.. math:: p(z \mid X) \propto \alpha^K \prod_k \Gamma(n_k)^r \prod_k m(X_k)

(docs/model.md; ``m`` is the NIW marginal likelihood given there).

One move
--------
1. Two distinct points ``i`` and ``j`` are drawn uniformly (the sampler's
   speck moves draw them among the small clusters instead, and multiply the
   ratio of the pair's probabilities into the test; see
   :func:`run_split_merge`). ``S`` is the set of
   the *other* points of the clusters holding ``i`` and ``j`` (one cluster if
   they share it). Two groups are formed: group 0 is anchored by ``i`` and
   group 1 by ``j``.
2. Launch state: the points of ``S`` are put in a uniformly random order and
   allocated one after another to group 0 or 1, each with probability
   proportional to ``n_g^r`` times the NIW posterior predictive of the point
   given the points already in group ``g`` (the sequential allocation of
   Dahl, 2005); then ``n_restricted_scans`` restricted Gibbs scans visit ``S``
   in the same order. A restricted scan re-seats point ``k`` in group ``g``
   with probability proportional to ``n_{g,-k}^r`` times the predictive of
   ``x_k`` given the rest of the group: the full conditional of the target when
   ``k`` may only join one of the two groups. Both groups always keep their
   anchor, so they never empty. The launch state depends only on ``i``, ``j``,
   ``S``, the data and fresh random numbers, never on how the current state
   divides ``S``; it therefore has the same distribution from the split and
   from the merged state, which is what makes the acceptance ratio below exact
   (the argument of Jain & Neal).

   Jain & Neal start the launch from a uniformly random split instead. Any
   start with the property above is valid. With thousands of points in a
   cluster a random start leaves the two groups statistically identical and a
   few restricted scans cannot separate them: on two well separated clusters
   of 1,000 points started as one, none of 150 split proposals from a random
   start was accepted in 50 sweeps, while the sequential start split them in
   the first sweep.
3. *Split* (``i`` and ``j`` in the same cluster): one more restricted scan from
   the launch state gives the proposal ``z'``; ``q`` is the product of the
   probabilities of the choices that scan made. Then

   .. math:: \log a = \log\alpha + r\,[\log\Gamma(n_0) + \log\Gamma(n_1) - \log\Gamma(n_0+n_1)]
                     + \log m(X_0) + \log m(X_1) - \log m(X_0 \cup X_1) - \log q .

   *Merge* (different clusters ``A`` holding ``i`` and ``B`` holding ``j``):
   the proposal puts ``A`` and ``B`` together, with probability one. The
   reverse split would have to produce exactly ``A, B`` from a launch state
   drawn as in step 2, so ``q`` is the probability that a restricted scan from
   the launch state makes the choices of the current state:

   .. math:: \log a = -\log\alpha + r\,[\log\Gamma(n_A+n_B) - \log\Gamma(n_A) - \log\Gamma(n_B)]
                     + \log m(X_A \cup X_B) - \log m(X_A) - \log m(X_B) + \log q .

4. The proposal is accepted with probability ``min(1, exp(log a))``.

The prior ratio is that of the exchangeable pCRP joint ``alpha^K prod
Gamma(n_k)^r``: there is no sequential-seating factor, and for ``r = 1`` it is
the Dirichlet-process ratio of Jain & Neal.

Work and memory
---------------
Each call builds, in ``O(N)`` integer work, a linked list of the members of
every cluster and allocates its workspace once; the size constants of the
predictive are computed on demand, up to the largest pair of clusters met.
A move then costs ``O((t + 2) |S| D^2 + D^3)`` and nothing proportional to
``N``: sequential allocation, ``t`` intermediate and one final restricted
scan, then one fresh factorisation of each proposed cluster. A restricted scan
scores a point against its own group without taking it out (the determinant
lemma and the Sherman-Morrison formula give the leave-one-out weight from the
in-group distance), so the two rank-one Cholesky updates of a move between
groups are paid only when the point actually changes group. Measured at
N = 2,000 and D = 2, a point visit costs about as much as one point update of
:func:`~pymc_pcrp._kernels.sweep.gibbs_sweeps` with K = 2.

A SAMS merge stops early when it must fail. Its log ratio is
``log q + base``, with ``base`` (the posterior and pair-selection ratios)
known from the two clusters and their union, and ``log q`` only falls as the
current partition's choices are scored. With ``base < 0`` the test's uniform
is always drawn, so the launch draws it right after its shuffle (where the full
computation drew it: scoring draws nothing) and stops once ``log q`` is below
``log u - base``. Decisions and random stream are those of the full
computation; a merge of two well separated clusters then costs one
factorisation (:func:`pymc_pcrp._kernels.allocation.launch_proposal`).

An accepted move writes the proposed clusters' statistics into the
:class:`~pymc_pcrp._kernels.state.SweepState` with freshly computed Cholesky
factors, so the state stays consistent for
:func:`~pymc_pcrp._kernels.sweep.gibbs_sweeps`.

An empty ``psi0`` (shape ``(0, 0)``, data of shape ``(N, 0)``) means no
likelihood: every ``m`` is one and the move targets the pCRP prior.

References
----------
S. Jain and R. M. Neal (2004), "A split-merge Markov chain Monte Carlo procedure
for the Dirichlet process mixture model", Journal of Computational and
Graphical Statistics 13(1), 158-182.

D. B. Dahl (2005), "Sequentially-allocated merge-split sampler for conjugate and
nonconjugate Dirichlet process mixture models", technical report, Texas A&M
University.
"""

import numba
import numpy as np

from pymc_pcrp._kernels import moves
from pymc_pcrp._kernels._config import NJIT_KWARGS
from pymc_pcrp._kernels.allocation import launch_proposal, seat_constants
from pymc_pcrp._kernels.state import NIWParams, SweepState, factorise, grow_if_full

__all__ = ["split_merge_moves"]


@numba.njit(**NJIT_KWARGS)
def _put_group(state: SweepState, slot: int, groups: tuple, g: int) -> None:
    """Write group ``g`` (statistics and factor) into ``slot`` of ``state``."""
    gcount, gsum, gsumsq, gchol, glogdet = groups
    moves.put_group(state, slot, g, gcount, gsum, gsumsq)
    state.chol[slot] = gchol[g]
    state.logdet[slot] = glogdet[g]


@numba.njit(**NJIT_KWARGS)
def _put_split(state: SweepState, new: int, sj: int, groups: tuple) -> None:
    """Write an accepted split's groups into ``new`` and ``sj``; grow the state if full."""
    _put_group(state, new, groups, 0)
    _put_group(state, sj, groups, 1)
    # A split that took the last free slot doubles the capacity.
    grow_if_full(state)


@numba.njit(**NJIT_KWARGS)
def group_workspace(d: int) -> tuple:
    """Allocate the two-slot group arrays of a move (``gcount, gsum, gsumsq, gchol, glogdet``)."""
    return (
        np.zeros(2, dtype=np.int64),
        np.zeros((2, d)),
        np.zeros((2, d, d)),
        np.zeros((2, d, d)),
        np.zeros(2),
    )


@numba.njit(**NJIT_KWARGS)
def _split_log_ratio(
    state: SweepState,
    params: NIWParams,
    sj: int,
    k_now: int,
    log_q: float,
    groups: tuple,
    buf: np.ndarray,
    pairs: tuple,
) -> float:
    """Log acceptance ratio of the split of ``sj`` into the proposed groups.

    The groups' factors are recomputed from their statistics first (an exact
    ratio, no drift from the rank-one updates); an accepted split copies them.
    ``pairs`` is ``(pair_rule, small)``, whose pair-selection ratio enters the test.
    """
    gcount, gsum, gsumsq, gchol, glogdet = groups
    d = gsum.shape[1]
    n0, n1 = gcount[0], gcount[1]
    for g in range(2):
        glogdet[g] = factorise(gcount[g], gsum[g], gsumsq[g], params, buf, gchol[g])
    stats = (glogdet[0], glogdet[1], state.logdet[sj])
    log_a = moves.split_gain(params, params.power, (n0, n1), stats, d) - log_q
    return log_a + moves.selection_log_ratio(pairs[0], k_now, (n0, n1), True)


@numba.njit(**NJIT_KWARGS)
def _merged_into_group(state: SweepState, params: NIWParams, si: int, sj: int, groups: tuple, buf):
    """Write clusters ``si`` and ``sj`` together (statistics and factor) into group 0."""
    gcount, gsum, gsumsq, gchol, glogdet = groups
    moves.merge_into_group(state, si, sj, gcount, gsum, gsumsq)
    glogdet[0] = factorise(gcount[0], gsum[0], gsumsq[0], params, buf, gchol[0])


@numba.njit(**NJIT_KWARGS)
def _merge_base(
    state: SweepState,
    params: NIWParams,
    si: int,
    sj: int,
    k_now: int,
    groups: tuple,
    buf: np.ndarray,
    pairs: tuple,
) -> float:
    """Return the merge's log acceptance ratio without its proposal term.

    A merge of ``si`` into ``sj`` is accepted with log ratio
    ``log_q + base``; ``base`` (the posterior ratio and the
    pair-selection ratio) needs only the two clusters and their union, so it is
    known before the launch scores ``log_q``. Uses group 0 as scratch for the
    union (the launch then resets the groups).
    """
    d = groups[1].shape[1]
    ni, nj = state.counts[si], state.counts[sj]
    _merged_into_group(state, params, si, sj, groups, buf)
    stats = (state.logdet[si], state.logdet[sj], groups[4][0])
    base = -moves.split_gain(params, params.power, (ni, nj), stats, d)
    return base + moves.selection_log_ratio(pairs[0], k_now, (ni, nj), False)


@numba.njit(**NJIT_KWARGS)
def run_split_merge(
    rng: np.random.Generator, chain: tuple, plan: tuple, seat_const: np.ndarray, pairs: tuple
) -> tuple[int, int, int, int]:
    """Run :func:`split_merge_moves` with a size table and a pair rule.

    ``chain`` is ``(xc, state, params)`` and ``plan`` is
    ``(n_moves, n_restricted_scans)``, as in :func:`split_merge_moves`;
    ``pairs`` is ``(pair_rule, small)``, which the sampler passes as
    ``(pair_rule, np.int64(SMALL_SIZE))``.

    ``seat_const`` is :func:`seat_constants` up to some size (it is regrown
    when a move needs larger sizes); the sweep's own table (column 0 of
    ``by_size`` of :func:`~pymc_pcrp._kernels.scores.sweep_tables`, sizes up to
    ``N``) is the same thing, so :func:`~pymc_pcrp._kernels.chain.advance`
    passes it and a call computes no per-size constant.

    ``pair_rule`` says how the ordered pair ``(i, j)`` is drawn
    (:func:`~pymc_pcrp._kernels.moves.draw_pair`): ``UNIFORM_PAIRS`` (two points
    uniformly, the rule of Jain & Neal) or ``SMALL_PAIRS`` (two clusters of at most
    ``small`` points uniformly and independently, ``i`` and ``j`` uniformly in
    them, so that two small clusters ("specks") are paired far more often than
    by uniform points; a merge whose union would be larger is not made, since the
    rule could not draw its reverse; with ``small >= N`` every cluster counts).
    Under the second the pair's probability depends on the state, and the
    test multiplies in the ratio of the pair's probability from the proposed
    state to that from the current one (the reverse move uses the same ordered
    pair; :func:`~pymc_pcrp._kernels.moves.selection_log_ratio`). For
    ``SMALL_PAIRS`` the pair has probability ``1 / (S^2 n_{c(i)} n')``, with
    ``S`` the number of small clusters and ``n'`` the size of ``j``'s cluster
    without ``i``; the ratio is ``S^2 n_C (n_C - 1) / ((S + 1)^2 n_0 n_1)`` for a
    split of ``C`` into groups of ``n_0`` and ``n_1`` points and ``S^2 n_A n_B /
    ((S - 1)^2 (n_A + n_B)(n_A + n_B - 1))`` for a merge of ``A`` and ``B``.
    """
    xc, state, params = chain
    n_moves, n_restricted_scans = plan
    n, d = xc.shape
    if n < 2 or n_moves <= 0 or moves.nothing_to_pair(state, pairs):
        return 0, 0, 0, 0
    labels = state.labels
    head, nxt, members, side, target = moves.move_workspace(state)

    # Group workspace, allocated once per call. The size-dependent predictive
    # constants are computed on demand up to the largest union of clusters seen
    # so far (doubling), so that a call costs nothing in proportion to N beyond
    # the member lists.
    groups = group_workspace(d)
    v = np.empty(d)
    y = np.empty(d)
    buf = np.empty((d, d))

    n_split = 0
    n_split_acc = 0
    n_merge = 0
    n_merge_acc = 0
    for _ in range(n_moves):
        i, j, k_now = moves.draw_move(rng, state, (head, nxt), pairs)
        if j < 0:
            continue  # no move (see draw_move)
        si = labels[i]
        sj = labels[j]
        is_split = si == sj

        m = moves.gather_members(head, nxt, si, sj, i, j, members, target)
        if m + 2 >= seat_const.shape[0]:
            size = min(n, max(m + 2, 2 * seat_const.shape[0]))
            seat_const = seat_constants(size, d, params.power, params.kappa0, params.nu0)

        # The proposal draws the split, or (merge) scores the current one; a merge
        # passes the rest of its ratio so that the launch can stop once it must fail.
        work = (params, seat_const, v, y, buf)
        merge = not is_split
        seats = (members, m, side, target)
        base = 0.0
        if merge:
            base = _merge_base(state, params, si, sj, k_now, groups, buf, pairs)
        bound = (base, 1.0 if merge else 0.0)
        proposal = (i, j, seats, merge, n_restricted_scans, bound)
        log_q, log_u = launch_proposal(rng, xc, proposal, groups, work)

        if is_split:
            n_split += 1
            log_a = _split_log_ratio(state, params, sj, k_now, log_q, groups, buf, pairs)
            if moves.accepts(rng, log_a):
                n_split_acc += 1
                new = moves.split_labels(state, sj, i, j, members, m, side, head, nxt)
                _put_split(state, new, sj, groups)
                head = moves.cover_slots(head, state)
        else:
            n_merge += 1
            if moves.merge_accepted(rng, log_q, log_u, base, 1.0):
                n_merge_acc += 1
                _merged_into_group(state, params, si, sj, groups, buf)
                _put_group(state, sj, groups, 0)
                moves.merge_labels(state, si, sj, i, j, members, m, head, nxt)
    return n_split, n_split_acc, n_merge, n_merge_acc


@numba.njit(**NJIT_KWARGS)
def split_merge_moves(
    rng: np.random.Generator,
    xc: np.ndarray,
    state: SweepState,
    params: NIWParams,
    n_moves: int,
    n_restricted_scans: int,
) -> tuple[int, int, int, int]:
    """Run ``n_moves`` restricted-Gibbs split-merge moves (Jain & Neal, 2004) in place.

    Each move draws two distinct points uniformly; if they share a cluster it
    proposes to split that cluster, otherwise to merge their two clusters, with
    the proposal built by restricted Gibbs scans over the other members of the
    cluster(s) involved. The Metropolis-Hastings test uses the exact pCRP prior
    ratio, the NIW marginal likelihood ratio and the restricted-Gibbs proposal
    probability (see the module docstring), so the move leaves
    ``p(z | X) ∝ alpha^K prod Gamma(n_k)^r prod m(X_k)`` invariant.

    Parameters
    ----------
    rng : numpy.random.Generator
        Source of randomness.
    xc : numpy.ndarray
        Data centred at the prior mean, shape ``(N, D)``; ``D`` may be zero
        (no likelihood, the pCRP prior is targeted).
    state : SweepState
        Current partition and cluster statistics, updated in place; it remains
        valid for :func:`~pymc_pcrp._kernels.sweep.gibbs_sweeps`.
    params : NIWParams
        Prior parameters, from :func:`~pymc_pcrp._kernels.state.make_params`.
    n_moves : int
        Number of moves to attempt.
    n_restricted_scans : int
        Intermediate restricted Gibbs scans that build the launch state of a
        move (``t`` of Jain & Neal; a few, e.g. 3 to 5, is typical). Zero is
        allowed: the launch state is then the random initial split.

    Returns
    -------
    tuple of int
        ``(n_split_proposed, n_split_accepted, n_merge_proposed,
        n_merge_accepted)``.
    """
    d = xc.shape[1]
    seat_const = seat_constants(min(xc.shape[0], 16), d, params.power, params.kappa0, params.nu0)
    plan = (n_moves, n_restricted_scans)
    pairs = (np.int64(moves.UNIFORM_PAIRS), np.int64(0))  # as the sampler's (chain.run_moves)
    return run_split_merge(rng, (xc, state, params), plan, seat_const, pairs)
