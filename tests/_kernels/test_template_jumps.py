"""Template jumps (an independence proposal from remembered partitions) against enumeration.

As for the other moves: exact posterior draws at N = 5, ONE template-jump proposal
applied to each, and the result must again follow the exact posterior (total
variation below 0.02). The templates are fixed partitions of the five points; one of
them has five clusters, so every partition can be proposed. A test whose proposal
probability counts one labelling of the partition instead of all of them (the
permanent) must be detected, and so must one that leaves the proposal ratio out.
The module's helpers are checked on their own as well: each template row is the
Gibbs conditional of the point given the template's other points, and the proposal
probabilities of all partitions sum to one.
"""

import itertools

import numpy as np
import pytest

from _kernels.test_splitmerge import N_DRAWS, SEED, TV_THRESHOLD, _exact_draws, _problem, _tv
from kernel_variants import template_jump_variant

from pymc_pcrp._kernels.log_joint import partition_log_joint
from pymc_pcrp._kernels.partitions import canonical_labels
from pymc_pcrp._kernels.state import make_params
from pymc_pcrp._kernels.templates import (
    assignment_log_joint,
    draw_assignment,
    mixture_log_probability,
    pack_templates,
    template_jump_chain,
)
from pymc_pcrp.sampler import templates as sampler_templates
from pymc_pcrp.sampler.templates import (
    TemplateJumps,
    distinct_templates,
    points_apart,
)

TEMPLATES = (
    np.array([0, 0, 1, 1, 1]),
    np.array([0, 1, 2, 3, 4]),
    np.array([0, 0, 0, 1, 2]),
)


def _packed(xc, params, *templates):
    return pack_templates(xc, [canonical_labels(t) for t in templates], params)


def _code(labels):
    labels = canonical_labels(np.asarray(labels, dtype=np.int64))
    return int(sum(int(v) * 5**i for i, v in enumerate(labels)))


def tv_after_one_jump(xc, params, partitions, probs, templates, seed, pack=None):
    """TV from the exact posterior after ONE jump from each of ``N_DRAWS`` exact draws.

    ``pack`` builds the proposal (a family's ``pack_templates``; the full NIW one by
    default). Returns the total variation and the number of accepted jumps.
    """
    rng = np.random.default_rng(seed)
    starts = _exact_draws(rng, partitions, probs, N_DRAWS)
    jumps = TemplateJumps(1.0, pack=pack)
    jumps.use(xc, [canonical_labels(t) for t in templates], params)
    codes = np.empty(len(starts), dtype=np.int64)
    accepted = 0
    for s, start in enumerate(starts):
        labels = canonical_labels(start.astype(np.int64))
        new = jumps.run(rng, xc, labels, params)
        accepted += jumps.accepted
        codes[s] = _code(labels if new is None else new)
    return _tv(codes, partitions, probs), accepted


def _tv_after_one_jump(d, alpha, r):
    xc, params, partitions, probs = _problem(d, alpha, r)
    return tv_after_one_jump(xc, params, partitions, probs, TEMPLATES, SEED + 11)


@pytest.mark.parametrize(("d", "alpha", "r"), [(1, 0.5, 1.5), (2, 2.0, 2.0), (2, 1.0, 1.0)])
def test_one_template_jump_keeps_the_exact_posterior(d, alpha, r):
    """Measured 2026-11-28 with the open column (this seed): TV 0.0066, 0.0062, 0.0080 for
    the three cases; 23,175-30,412 of the 60,000 proposals accepted."""
    tv, accepted = _tv_after_one_jump(d, alpha, r)
    assert accepted > N_DRAWS // 20, accepted  # the move does move
    assert tv < TV_THRESHOLD, f"TV {tv:.4f} after one template jump"


@pytest.mark.parametrize("wrong", ["one_labelling", "no_ratio"])
def test_a_wrong_proposal_probability_is_detected(wrong, monkeypatch):
    """Measured 2026-11-28 with the open column (this seed): TV 0.273 (one labelling) and
    0.067 (no ratio).

    A wrong test: the proposal probability of the partition's own labelling only, or
    the posterior ratio alone as if the proposal were symmetric (tests/kernel_variants.py).
    """
    monkeypatch.setattr(sampler_templates, "template_jump_chain", template_jump_variant(wrong))
    tv, _ = _tv_after_one_jump(2, 1.0, 2.0)
    assert tv > 2 * TV_THRESHOLD, f"TV {tv:.4f}"


def test_template_rows_are_the_gibbs_conditionals_of_the_template():
    xc, params, _, _ = _problem(3, 0.7, 1.3)
    rng = np.random.default_rng(SEED)
    xc = np.ascontiguousarray(np.r_[xc, rng.normal(size=(4, 3))])
    template = np.array([0, 0, 1, 1, 2, 2, 2, 3, 1])
    w = _packed(xc, params, template).log_weights[0]
    assert w.shape == (template.size, 5)  # four clusters and the open one
    np.testing.assert_allclose(np.exp(w).sum(axis=1), 1.0, rtol=1e-12)
    for p in range(template.size):
        joint = []
        for c in range(5):  # c = 4: the point alone in a new cluster
            moved = template.copy()
            moved[p] = c
            joint.append(partition_log_joint(xc, canonical_labels(moved), params))
        joint = np.array(joint)
        np.testing.assert_allclose(w[p] - w[p, 0], joint - joint[0], atol=1e-9)


def test_partition_probabilities_sum_to_one_and_match_draws():
    xc, params, _, _ = _problem(2, 1.0, 1.5)
    packed = _packed(xc, params, np.array([0, 0, 1, 2, 2]))
    seen = {}
    for labels in itertools.product(range(4), repeat=5):  # three clusters and the open one
        labels = canonical_labels(np.array(labels))
        seen.setdefault(_code(labels), mixture_log_probability(packed, labels))
    assert np.isclose(np.exp(list(seen.values())).sum(), 1.0, rtol=1e-12)
    # four blocks (one more than the template's clusters) can be drawn, five cannot
    assert mixture_log_probability(packed, np.array([0, 1, 2, 3, 3])) > -np.inf
    assert mixture_log_probability(packed, np.arange(5)) == -np.inf
    rng = np.random.default_rng(SEED)
    out = np.empty(5, dtype=np.int64)
    counts: dict[int, int] = {}
    n = 40_000
    for _ in range(n):
        draw_assignment(rng, packed, 0, out)
        key = _code(out)
        counts[key] = counts.get(key, 0) + 1
    tv = 0.5 * sum(abs(counts.get(k, 0) / n - np.exp(v)) for k, v in seen.items())
    assert tv < TV_THRESHOLD, f"TV {tv:.4f}"


def test_a_proposal_log_joint_from_the_template_statistics_is_the_log_joint():
    """Moving only the points drawn away from their template cluster gives the log joint
    computed from scratch, including clusters the draw empties."""
    xc, params, _, _ = _problem(3, 0.7, 1.3)
    rng = np.random.default_rng(SEED)
    xc = np.ascontiguousarray(np.r_[xc, 3.0 + rng.normal(size=(25, 3))])
    template = rng.integers(0, 4, size=xc.shape[0])
    packed = _packed(xc, params, template)
    own = packed.labels[0]
    assign = np.empty(xc.shape[0], dtype=np.int64)
    for moved in (0, 1, 5, xc.shape[0]):
        assign[:] = own
        assign[:moved] = rng.integers(0, 5, size=moved)  # 4: the open column
        if moved == xc.shape[0]:
            assign[:] = np.where(own == 2, 1, own)  # empty one cluster
        fresh = partition_log_joint(xc, canonical_labels(assign), params)
        assert np.isclose(assignment_log_joint(xc, packed, 0, assign, params), fresh, rtol=1e-11)


def test_remembered_untouched_clusters_give_the_same_bits():
    """A draw's proposals share a memo of the log marginals of clusters no point left or
    joined; with it every proposal's log joint is the one computed without it, bit for
    bit, and the memo is really read (a wrong entry shows up in the result)."""
    from pymc_pcrp._kernels.templates import _assignment_log_joint

    xc, params, _, _ = _problem(3, 0.7, 1.3)
    rng = np.random.default_rng(SEED + 5)
    xc = np.ascontiguousarray(np.r_[xc, 3.0 + rng.normal(size=(40, 3))])
    templates = [rng.integers(0, 4, size=xc.shape[0]), rng.integers(0, 3, size=xc.shape[0])]
    packed = _packed(xc, params, *templates)
    memo = np.full(packed.sizes.shape, np.nan)
    assign = np.empty(xc.shape[0], dtype=np.int64)
    for trial in range(40):
        t = trial % 2
        own = packed.labels[t]
        assign[:] = own
        moved = rng.choice(xc.shape[0], size=trial % 4, replace=False)
        assign[moved] = rng.integers(0, packed.n_columns[t], size=moved.size)
        plain = assignment_log_joint(xc, packed, t, assign, params)
        assert _assignment_log_joint(xc, packed, t, assign, params, memo) == plain
    assert np.isfinite(memo).sum() >= 4  # untouched clusters of both templates
    t, c = np.argwhere(np.isfinite(memo))[0]
    memo[t, c] += 1.0
    assign[:] = packed.labels[t]  # nothing moved: every cluster read from the memo
    plain = assignment_log_joint(xc, packed, t, assign, params)
    poisoned = _assignment_log_joint(xc, packed, t, assign, params, memo)
    assert poisoned != plain
    assert poisoned == pytest.approx(plain + 1.0, abs=1e-9)


def test_distinct_templates_keep_families_within_the_window():
    base = np.repeat([0, 1, 2], 50)
    variant = base.copy()
    variant[:2] = 1  # 2 points apart: the same family
    other = base.copy()
    other[:20] = 1  # 20 points apart: another family
    far = base.copy()
    far[:40] = 2
    candidates = [(10.0, base), (9.0, variant), (8.0, other), (-30.0, far)]
    kept = distinct_templates(candidates)
    assert len(kept) == 2
    assert points_apart(kept[0], base) == 0 and points_apart(kept[1], other) == 0
    assert points_apart(base, canonical_labels((base + 1) % 3)) == 0  # relabelling is free
    assert distinct_templates([]) == []


def test_a_state_no_template_can_make_is_kept_without_drawing():
    """From a partition with more blocks than every template has columns (its clusters
    and the open one), every
    proposal would be rejected (q of the current state is zero): none is drawn."""
    xc, params, _, _ = _problem(2, 1.0, 1.5)
    packed = _packed(xc, params, np.array([0, 0, 1, 1, 1]), np.array([0, 0, 0, 1, 2]))
    rng = np.random.default_rng(SEED)
    state = rng.bit_generator.state
    labels = np.arange(5, dtype=np.int64)
    new, accepted = template_jump_chain(rng, xc, labels, packed, params, 5)
    assert accepted == 0 and (new == labels).all()
    assert rng.bit_generator.state == state
    new, accepted = template_jump_chain(rng, xc, np.zeros(5, dtype=np.int64), packed, params, 50)
    assert accepted > 0 and rng.bit_generator.state != state
    # one block more than the larger template has clusters: the open column can make it
    four = np.array([0, 1, 2, 3, 3], dtype=np.int64)
    assert np.isfinite(mixture_log_probability(packed, four))
    new, accepted = template_jump_chain(rng, xc, four, packed, params, 50)
    assert accepted > 0


@pytest.mark.parametrize("spread", [1.0, 30.0, 300.0])
def test_the_permanent_equals_the_sum_over_all_one_to_one_maps(spread):
    """The dynamic programme, with its dropped partial maps (far below a complete one),
    against the sum over every one-to-one map of blocks to clusters."""
    from scipy.special import logsumexp

    from pymc_pcrp._kernels.templates import _log_permanent

    rng = np.random.default_rng(SEED)
    for b, k in [(1, 3), (3, 3), (4, 6), (6, 7)]:
        block = -spread * rng.random((b, k))
        terms = [
            sum(block[row, c] for row, c in enumerate(cols))
            for cols in itertools.permutations(range(k), b)
        ]
        assert _log_permanent(block) == pytest.approx(logsumexp(terms), rel=1e-13, abs=1e-12)


def _plain_jump_chain(rng, xc, labels, packed, params, count):
    """The Metropolis-Hastings test written out, ``q`` of every proposal computed."""
    m = packed.n_columns.shape[0]
    current = labels.copy()
    current_log_q = mixture_log_probability(packed, current)
    current_log_pi = partition_log_joint(xc, current, params)
    assign = np.empty(labels.shape[0], dtype=np.int64)
    accepted = 0
    for _ in range(count):
        t = min(int(rng.random() * m), m - 1)
        draw_assignment(rng, packed, t, assign)
        log_pi = assignment_log_joint(xc, packed, t, assign, params)
        candidate = canonical_labels(assign)
        log_q = mixture_log_probability(packed, candidate)
        log_ratio = log_pi - current_log_pi + current_log_q - log_q
        if log_ratio >= 0.0 or np.log(rng.random()) < log_ratio:
            accepted += 1
            current, current_log_pi, current_log_q = candidate, log_pi, log_q
    return current, accepted


def test_rejections_decided_from_the_drawn_labelling_are_those_of_the_plain_test():
    """The kernel rejects most proposals from a bound on the ratio (the drawn labelling
    is one term of q) before computing q; its decisions and its use of the generator must
    be those of the plain test. Two groups of 30 points in 2-D and three templates (the
    right one, a mixed one, a split one), so that proposals are accepted and rejected by
    wide and by narrow margins."""
    rng = np.random.default_rng(SEED)
    xc = np.ascontiguousarray(np.r_[rng.normal(size=(30, 2)), 2.5 + rng.normal(size=(30, 2))])
    params = make_params(1.0, 1.2, 0.5, 3.0, 0.5 * np.eye(2))
    right = np.repeat([0, 1], 30)
    mixed = right.copy()
    mixed[::4] = 1 - mixed[::4]
    split = np.where(np.arange(60) % 3 == 0, 2, right)
    packed = _packed(xc, params, right, mixed, split)
    drawn = np.empty(60, dtype=np.int64)
    log_w = draw_assignment(np.random.default_rng(1), packed, 1, drawn)
    assert np.isclose(log_w, packed.log_weights[1][np.arange(60), drawn].sum(), rtol=1e-13)
    total = 0
    for seed, start in enumerate((right, mixed, split, np.zeros(60, dtype=np.int64))):
        start = canonical_labels(start)
        kernel_rng, plain_rng = np.random.default_rng(seed), np.random.default_rng(seed)
        new, accepted = template_jump_chain(kernel_rng, xc, start, packed, params, 300)
        ref_new, ref_accepted = _plain_jump_chain(plain_rng, xc, start, packed, params, 300)
        assert accepted == ref_accepted and (new == ref_new).all()
        assert kernel_rng.bit_generator.state == plain_rng.bit_generator.state
        total += accepted
    assert 0 < total < 4 * 300  # both outcomes occur
