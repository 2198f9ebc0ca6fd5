"""Scouting: tournaments of restarts run by a chain before its own, whose starts become templates.

A chain's own tournament of restarts (:mod:`pymc_pcrp.sampler.restarts`) meets only
some of the families of states of nearly the same log joint that a posterior may
have; the template jumps (:mod:`pymc_pcrp.sampler.templates`) can only propose the
families some start met. So at its first tuning draw a chain runs
:data:`~pymc_pcrp.sampler.templates.SCOUT_TOURNAMENTS` larger tournaments (each of
:data:`~pymc_pcrp.sampler.templates.SCOUT_STARTS` times its own starts) and adds
their best starts to the partitions its template jumps choose from.

The scouting tournaments are seeded by the data and the model's numbers, not by the
chain's generator: every chain of a model scouts the same starts, so all the chains
of ``pm.sample`` or :func:`~pymc_pcrp.fit` share what any of them scouted, without
passing anything between processes. Chains in one process scout once (the result is
cached by that seed). The templates are fixed before the first kept draw, so the
kept draws still come from one fixed mixture of exact kernels; the chain's own
generator is not touched by the scouting.

Scouting is skipped when the chain makes no template jumps or runs no tournament,
when templates are given, and above ``N D =``
:data:`~pymc_pcrp.sampler.templates.SCOUT_MAX_WORK` (its cost grows with the data).
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib

from collections import OrderedDict
from collections.abc import Callable

import numpy as np

from pymc_pcrp.sampler.inputs import SweepInputs
from pymc_pcrp.sampler.options import MovePlan
from pymc_pcrp.sampler.restarts import segment_draws, tournament_draws
from pymc_pcrp.sampler.templates import (
    SCOUT_MAX_WORK,
    SCOUT_STARTS,
    SCOUT_TOURNAMENTS,
    TEMPLATE_WINDOW,
)

__all__ = ["scout", "scouting_plan", "scouting_seed"]

# Scouted templates of the last few models, by scouting seed (chains of one process).
_CACHE: OrderedDict[bytes, list[np.ndarray]] = OrderedDict()
_CACHE_SIZE = 4


def scouting_plan(plan: MovePlan, n: int, d: int) -> MovePlan | None:
    """Return the plan of a scouting chain, or ``None`` when this chain does not scout."""
    if plan.template_jumps == 0 or plan.restarts <= 1 or plan.templates is not None:
        return None
    if n * max(d, 1) > SCOUT_MAX_WORK:
        return None
    return dataclasses.replace(plan, restarts=SCOUT_STARTS * plan.restarts, template_jumps=0.0)


def scouting_seed(inputs: SweepInputs, plan: MovePlan, family: str) -> bytes:
    """Return a digest of what the scouting depends on: data, parameters, plan and family."""
    digest = hashlib.sha256()
    digest.update(family.encode())
    digest.update(np.ascontiguousarray(inputs.xc).tobytes())
    for value in inputs.params:
        digest.update(np.ascontiguousarray(np.asarray(value)).tobytes())
    digest.update(repr(inputs.fixed_scale).encode())
    if inputs.scale is not None:
        digest.update(np.ascontiguousarray(inputs.scale.log_s).tobytes())
    fields = dataclasses.asdict(plan)
    fields["temper"] = None if plan.temper is None else tuple(np.asarray(plan.temper))
    digest.update(repr(sorted(fields.items())).encode())
    return digest.digest()


def scout(
    plan: MovePlan,
    make_chain: Callable[[MovePlan, np.random.Generator], object],
    inputs: SweepInputs,
    family: str,
    owned_log_alpha: float | None = None,
) -> list[np.ndarray]:
    """Run the scouting tournaments of a chain with plan ``plan``; return their best starts.

    ``make_chain(plan, rng)`` builds a :class:`~pymc_pcrp.sampler.chain.Chain` of
    the same family and data. Each tournament runs on its own copy of ``inputs``
    (the kernel's tables hold a chain's current scale), from a generator seeded by
    :func:`scouting_seed`. Returns the starts whose tournament score is within
    :data:`~pymc_pcrp.sampler.templates.TEMPLATE_WINDOW` of the best (``[]`` when
    this chain does not scout).
    """
    first = np.asarray(inputs.xc)
    scout_plan = scouting_plan(plan, first.shape[0], first.shape[1] if first.ndim == 2 else 0)
    if scout_plan is None:
        return []
    key = scouting_seed(inputs, scout_plan, family)
    if key in _CACHE:
        _CACHE.move_to_end(key)
        return [labels.copy() for labels in _CACHE[key]]
    root = np.random.SeedSequence(int.from_bytes(key[:16], "little"))
    draws = tournament_draws(scout_plan.restarts, segment_draws(scout_plan.sweeps_per_draw))
    starts: list[tuple[float, np.ndarray]] = []
    for child in root.spawn(SCOUT_TOURNAMENTS):
        chain = make_chain(scout_plan, np.random.default_rng(child))
        own = copy.deepcopy(inputs)
        current = np.zeros(first.shape[0], dtype=np.int64)
        for _ in range(draws):
            start = chain.begin()
            if start is not None:
                current = start
            drawn = chain.draw(current, own, owned_log_alpha)
            current = drawn.labels
            chain.record(drawn.labels, drawn.log_density)
        chain.stop_tuning()
        starts.extend(chain.tournament.candidates)
    best = max(score for score, _ in starts)
    found = [labels.copy() for score, labels in starts if score >= best - TEMPLATE_WINDOW]
    _CACHE[key] = found
    while len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    return [labels.copy() for labels in found]
