"""Template jumps on the table family against enumeration (N = 5 rows).

As tests/_kernels/test_template_jumps.py does for the full NIW family: exact
posterior draws of a mixed table with missing cells, ONE template-jump proposal
applied to each (the proposal rows and the log joint from the table family's
operations, ``_kernels/family_templates.py``), and the result must again follow
the exact posterior (tests/table_reference.py, by brute force). A move whose
proposal probability is not that of the rows it draws from must be detected.
"""

import numpy as np

from _kernels.test_splitmerge import N_DRAWS, SEED, TV_THRESHOLD
from _kernels.test_template_jumps import tv_after_one_jump
from table_reference import kernel_inputs, mixed_table_5

from pymc_pcrp._kernels import family_moves
from pymc_pcrp._kernels.partitions import canonical_labels
from pymc_pcrp._kernels.table import table_tables
from pymc_pcrp.sampler.families import TABLE

TEMPLATES = (
    np.array([0, 0, 1, 1, 1]),
    np.array([0, 1, 2, 3, 4]),
    np.array([0, 0, 0, 1, 2]),
)


def _problem():
    x, params, (partitions, probs) = kernel_inputs(*mixed_table_5(), 0.9, 1.3)
    return x, params, partitions, probs


def _tv_after_one_jump(pack):
    x, params, partitions, probs = _problem()
    return tv_after_one_jump(x, params, partitions, probs, TEMPLATES, SEED + 13, pack)


def test_one_template_jump_on_a_table_keeps_the_exact_posterior():
    tv, accepted = _tv_after_one_jump(TABLE.pack_templates)
    assert accepted > N_DRAWS // 20, accepted  # the move does move
    assert tv < TV_THRESHOLD, f"TV {tv:.4f} after one template jump"


def test_a_proposal_probability_that_is_not_the_drawn_ones_is_detected():
    def wrong_probabilities(x, templates, params):
        packed = TABLE.pack_templates(x, templates, params)
        # partitions are still drawn from the template rows (``cumulative``), but the
        # ratio reads uniform rows: q(z) is then not the probability of drawing z
        flat = np.full(packed.log_weights.shape, -np.log(packed.log_weights.shape[2]))
        return packed._replace(log_weights=flat)

    tv, _ = _tv_after_one_jump(wrong_probabilities)
    assert tv > 2 * TV_THRESHOLD, f"TV {tv:.4f}"


def test_table_template_rows_are_the_gibbs_conditionals_of_the_template():
    x, params, _, _ = _problem()
    template = np.array([0, 0, 1, 1, 1])
    w = TABLE.pack_templates(x, [template], params).log_weights[0]
    assert w.shape == (5, 3)  # two clusters and the open one
    np.testing.assert_allclose(np.exp(w).sum(axis=1), 1.0, rtol=1e-12)
    log_new = table_tables(x, params)[0]
    assert np.isfinite(log_new).all()
    for p in range(5):
        joint = []
        for c in range(3):  # c = 2: the point alone in a new cluster
            moved = template.copy()
            moved[p] = c
            joint.append(family_moves.partition_log_joint(x, canonical_labels(moved), params))
        joint = np.array(joint)
        np.testing.assert_allclose(w[p] - w[p, 0], joint - joint[0], atol=1e-9)
