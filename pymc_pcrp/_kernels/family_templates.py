"""Template jumps for a family on the generic moves (the table family), in numba.

The move is that of :mod:`pymc_pcrp._kernels.templates` (an independence proposal
from partitions remembered while tuning, accepted with the exact
Metropolis-Hastings ratio): only the proposal's rows and the log joint depend on
the family. Here both come from the family's registered operations
(:mod:`pymc_pcrp._kernels.family_moves`): a row of the proposal is the Gibbs
conditional of a point given the rest of the template,
``r log n_{t,-p} + log m(x_p | X_{t,-p})`` for a cluster ``t`` (the point's own
cluster scored without it, as the sweep does), ``log alpha + log m(x_p)`` for the
cluster it is alone in and for the open column; the log joint of a drawn partition
is computed afresh (:func:`~pymc_pcrp._kernels.family_moves.partition_log_joint`,
chosen in :func:`~pymc_pcrp._kernels.templates.template_jump_chain` by the type of
the parameters).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from pymc_pcrp._kernels import family_moves
from pymc_pcrp._kernels._config import NJIT_KWARGS
from pymc_pcrp._kernels.log_joint import n_blocks
from pymc_pcrp._kernels.templates import TemplateSet

__all__ = ["family_template_log_weights", "pack_family_templates"]


@numba.njit(**NJIT_KWARGS)
def family_template_log_weights(data, labels, params, log_new):
    """Each point's normalised log Gibbs conditional over a template's clusters, ``(N, K + 1)``.

    ``labels`` are the template's canonical labels, ``log_new`` each point's
    ``log alpha + log m(x_p)`` (the family's new-cluster weights at ``params``);
    the last column is the open cluster (see the module).
    """
    n = data.shape[0]
    k = n_blocks(labels)
    state = family_moves.init_state(data, labels, params)  # slot c holds cluster c
    power = params[1]
    out = np.empty((n, k + 1))
    row = np.empty(n + 1)
    for p in range(n):
        own = labels[p]
        family_moves.score_slots(state.sums, state.cache, state.order, k, own, data, p, params, row)
        top = log_new[p]
        out[p, k] = top
        for q in range(k):
            c = state.order[q]
            size = state.counts[c]
            if c != own:
                value = power * math.log(size) + row[q]
            elif size == 1:  # alone: weighed as a new cluster, as in the open column
                value = log_new[p]
            else:
                value = power * math.log(size - 1) + row[q]
            out[p, c] = value
            if value > top:
                top = value
        total = 0.0
        for c in range(k + 1):
            total += math.exp(out[p, c] - top)
        norm = top + math.log(total)
        for c in range(k + 1):
            out[p, c] -= norm
    return out


def pack_family_templates(
    data: np.ndarray, templates: list[np.ndarray], params, log_new: np.ndarray
) -> TemplateSet:
    """Build the :class:`~pymc_pcrp._kernels.templates.TemplateSet` of canonical ``templates``.

    As :func:`~pymc_pcrp._kernels.templates.pack_templates`, with the rows of
    :func:`family_template_log_weights`; the Gaussian moments of the full family's
    templates are empty here (the log joint is computed afresh).
    """
    m = len(templates)
    n = data.shape[0]
    ks = np.array([n_blocks(t) for t in templates], dtype=np.int64)
    columns = ks + 1  # the template's clusters and the open one
    km = int(columns.max()) if m else 0
    log_weights = np.full((m, n, km), -np.inf)
    for i, labels in enumerate(templates):
        log_weights[i, :, : columns[i]] = family_template_log_weights(
            data, np.asarray(labels, dtype=np.int64), params, log_new
        )
    cumulative = np.cumsum(np.exp(log_weights), axis=2)
    labels = np.array(templates, dtype=np.int64).reshape(m, n)
    return TemplateSet(
        log_weights,
        cumulative,
        columns,
        labels,
        np.zeros((m, km), dtype=np.int64),
        np.zeros((m, km, 0)),
        np.zeros((m, km, 0, 0)),
    )
