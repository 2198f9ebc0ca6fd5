"""relabel_slots: per-cluster parameters of slot labels; which variables are per slot."""

import arviz as az
import numpy as np
import pymc as pm
import pytest

import pymc_pcrp as pcrp

from pymc_pcrp.posterior.relabel import slot_permutations
from pymc_pcrp.step_methods import _convergence
from pymc_pcrp.step_methods._slot_likelihood import slot_parameters


def _switched_idata():
    """Two chains that hold the same two clusters in swapped slots (of 3)."""
    base = np.array([0, 0, 0, 1, 1])
    z = np.stack([np.tile(base, (4, 1)), np.tile(np.where(base == 0, 2, 0), (4, 1))])
    lam = np.empty((2, 4, 3))
    lam[0] = [1.0, 10.0, 99.0]  # chain 0: cluster of 3 in slot 0, cluster of 2 in slot 1
    lam[1] = [10.0, 99.0, 1.0]  # chain 1: cluster of 3 in slot 2, cluster of 2 in slot 0
    return az.from_dict(posterior={"z": z, "lam": lam}, dims={"lam": ["lam_dim_0"]})


@pytest.mark.parametrize("by", ["point_estimate", "size"])
def test_swapped_slots_give_the_same_clusters_in_both_chains(by):
    out = pcrp.relabel_slots(_switched_idata(), "lam", by=by, random_seed=0)
    lam = out.posterior["lam"]
    assert lam.dims == ("chain", "draw", "cluster")
    assert np.all(lam.values[..., 0] == 1.0) and np.all(lam.values[..., 1] == 10.0)
    assert np.array_equal(out.posterior["cluster_size"].values[0, 0], [3, 2, 0])
    assert np.array_equal(out.posterior["z"].values[1, 0], [0, 0, 0, 1, 1])


def test_point_estimate_order_follows_the_reference_not_the_draw_sizes():
    labels = np.array([[0, 0, 1, 1, 1], [1, 1, 0, 0, 0]])
    reference = np.array([0, 0, 1, 1, 1])  # its largest cluster is {2, 3, 4}
    perms = slot_permutations(labels, 3, reference)
    assert np.array_equal(perms, [[1, 0, 2], [0, 1, 2]])


def test_unknown_variable_and_method_are_refused():
    idata = _switched_idata()
    with pytest.raises(ValueError, match="'mu' is not a posterior variable"):
        pcrp.relabel_slots(idata, "mu")
    with pytest.raises(ValueError, match="Argument 'by' must be one of"):
        pcrp.relabel_slots(idata, "lam", by="mean")


def _model():
    with pm.Model() as model:
        z = pcrp.PowerCRP("z", alpha=1.0, power=1.2, n=5, max_clusters=4)
        lam = pm.Gamma("lam", 2.0, 0.5, shape=4)
        s = pm.HalfNormal("s")
        mu = pm.Normal("mu", 0.0, 5.0, shape=(4, 2))
        pm.Normal("y", lam[z] + mu[z, 0], s, observed=np.arange(5.0))
    return model, z


def test_slot_parameters_are_those_the_labels_index():
    model, z = _model()
    assert [v.name for v in slot_parameters(model, z)] == ["lam", "mu"]


def test_convergence_report_leaves_out_labels_and_per_slot_parameters(monkeypatch):
    model, _ = _model()
    seen = {}

    def capture(idata, proxy):
        seen["names"] = [v.name for v in proxy.free_RVs]
        return []

    monkeypatch.setattr(_convergence, "ORIGINAL", capture)
    draws = {"z": np.zeros((2, 3, 5), dtype=int), "n_clusters": np.ones((2, 3))}
    idata = az.from_dict(posterior=draws, sample_stats={"log_joint": np.zeros((2, 3))})
    _convergence.run_convergence_checks(idata, model)
    assert seen["names"] == ["s", "n_clusters", "log_joint"]
