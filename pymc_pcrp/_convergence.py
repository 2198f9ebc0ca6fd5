"""Point PyMC's end-of-sampling convergence report at label-invariant quantities.

``pm.sample`` finishes by computing R-hat and ESS for every free random
variable. For a pCRP label vector that means one diagnostic per label, which is
meaningless: labels are a coding of a partition, and a well-mixing sampler
moves points between clusters all the time. This module wraps
:func:`pymc.sampling.mcmc.run_convergence_checks` so that, for each
``PowerCRP`` variable, the report uses its ``n_clusters`` deterministic
instead of the labels, and adds the ``log_joint`` sample stat of
:class:`~pymc_pcrp.PCRPGibbs`. Models without a ``PowerCRP`` variable are
untouched.
"""

from __future__ import annotations

from types import SimpleNamespace

import arviz as az
import numpy as np
import pymc.sampling.mcmc as _mcmc

from pymc_pcrp.distributions.pcrp import PowerCRPRV, n_clusters_name

__all__ = ["install", "run_convergence_checks"]

_original = getattr(_mcmc.run_convergence_checks, "__wrapped__", _mcmc.run_convergence_checks)


def run_convergence_checks(idata, model):
    """PyMC's checks, with each pCRP label vector replaced by label-invariant quantities.

    The labels give way to their ``n_clusters`` deterministic, and the step's
    ``log_joint`` sample stat is checked as well (as ``lp__`` is in Stan).
    """
    blocks = [
        rv for rv in model.free_RVs if rv.owner is not None and isinstance(rv.owner.op, PowerCRPRV)
    ]
    if not blocks:
        return _original(idata, model)
    deterministics = {var.name: var for var in model.deterministics}
    checked = [rv for rv in model.free_RVs if rv not in blocks]
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
        return _original(idata, proxy)


run_convergence_checks.__wrapped__ = _original


def install() -> None:
    """Replace PyMC's report function by :func:`run_convergence_checks` (idempotent)."""
    _mcmc.run_convergence_checks = run_convergence_checks
