"""Point PyMC's end-of-sampling convergence report at label-invariant quantities.

``pm.sample`` finishes by computing R-hat and ESS for every free random
variable. For a pCRP label vector that means one diagnostic per label, which is
meaningless: labels are a coding of a partition, and a well-mixing sampler
moves points between clusters all the time. This module wraps
:func:`pymc.sampling.mcmc.run_convergence_checks` so that, for each
``PowerCRP`` variable, the report uses its ``n_clusters`` deterministic
instead of the labels, and adds the ``log_joint`` sample stat of
:class:`~pymc_pcrp.PCRPGibbs` (or :class:`~pymc_pcrp.PCRPSlotGibbs`). For
slot labels (``max_clusters``) the cluster parameters they index are left out
too: their slots switch between chains. Models without a ``PowerCRP`` variable are
untouched.

The wrapper is defensive, because it leans on how PyMC's function reads the
model: it hands PyMC a stand-in that has only ``free_RVs`` and
``deterministics``. If that ever fails (a PyMC release reads more of the
model), the wrapper warns and returns PyMC's own report on the real model, so
``pm.sample`` still returns its trace. :mod:`pymc_pcrp.pymc_integration` puts
the wrapper in PyMC; this module only defines it.
"""

from __future__ import annotations

import warnings

from types import SimpleNamespace

import arviz as az
import numpy as np
import pymc.sampling.mcmc as _mcmc

from pymc_pcrp.distributions.pcrp import PowerCRPRV, n_clusters_name
from pymc_pcrp.distributions.slots import PowerCRPSlotsRV
from pymc_pcrp.step_methods._slot_likelihood import slot_parameters

__all__ = ["run_convergence_checks"]

ORIGINAL = getattr(_mcmc.run_convergence_checks, "__wrapped__", _mcmc.run_convergence_checks)


def run_convergence_checks(idata, model):
    """PyMC's checks, with each pCRP label vector replaced by label-invariant quantities.

    The labels give way to their ``n_clusters`` deterministic, and the step's
    ``log_joint`` sample stat is checked as well (as ``lp__`` is in Stan). If
    that fails for any reason, a :class:`RuntimeWarning` says so and PyMC's
    own checks of the model are returned instead.
    """
    label_ops = PowerCRPRV | PowerCRPSlotsRV
    blocks = [
        rv for rv in model.free_RVs if rv.owner is not None and isinstance(rv.owner.op, label_ops)
    ]
    if not blocks:
        return ORIGINAL(idata, model)
    try:
        return _label_invariant_checks(idata, model, blocks)
    except Exception as exc:  # never lose a finished run to the report
        warnings.warn(
            f"pymc_pcrp could not run its label-invariant convergence report ({exc!r}); "
            "showing PyMC's own report instead.",
            RuntimeWarning,
            stacklevel=2,
        )
        return ORIGINAL(idata, model)


def _label_invariant_checks(idata, model, blocks):
    """PyMC's checks on a stand-in model whose free variables exclude the labels."""
    deterministics = {var.name: var for var in model.deterministics}
    # the parameters indexed by slot labels (lam in lam[z]) switch slots: left out
    per_slot = {
        id(p) for rv in blocks if isinstance(rv.owner.op, PowerCRPSlotsRV)
        for p in slot_parameters(model, rv)
    }  # fmt: skip
    checked = [rv for rv in model.free_RVs if rv not in blocks and id(rv) not in per_slot]
    for rv in blocks:
        det = deterministics.get(n_clusters_name(model, rv))
        if det is not None:
            checked.append(det)
    stats = idata.get("sample_stats", None)
    posterior = idata["posterior"]
    if stats is not None and "log_joint" in stats and "log_joint" not in posterior:
        posterior = posterior.assign(log_joint=stats["log_joint"])
        idata = az.InferenceData(posterior=posterior, sample_stats=stats)
        checked.append(SimpleNamespace(name="log_joint"))
    proxy = SimpleNamespace(free_RVs=checked, deterministics=model.deterministics)
    # A number of clusters that never changes is a healthy outcome, but ArviZ
    # divides by its zero variance; keep that from printing a RuntimeWarning.
    with np.errstate(invalid="ignore", divide="ignore"):
        return ORIGINAL(idata, proxy)


run_convergence_checks.__wrapped__ = ORIGINAL
