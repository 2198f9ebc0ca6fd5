"""Altered copies of the shipped numba kernels, built for the tests only.

An exactness test must be able to fail, so each one is paired with a deliberately
broken kernel (a wrong acceptance ratio) that it has to catch; a few tests also drive a
kernel in a way the sampler never does (a tiny skipping threshold, one point updated
again and again from a fixed state). None of this is an argument of a shipped kernel.
A variant here is the shipped function's own Python code compiled once more by numba
with some of the global names it reads bound to something else (:func:`recompiled`):
a constant such as ``SKIP_NATS``, or a building block such as ``launch_proposal`` swapped for
one that drops the proposal probability. numba reads globals as compile-time
constants, so the copy is a separate compiled function and the shipped one is
untouched: what a variant changes is exactly the names it rebinds.

A copy takes several seconds to compile, so it is cached on disk like the shipped
kernels, under a name of its own. numba finds a cached function by its source file,
name and bytecode, not by its globals, so a copy under the kernel's own name would
share (and could overwrite) the shipped kernel's entry. :func:`recompiled` therefore
names the copy after a digest of what it rebinds (described value by value), of this
file's source (the replacements live here) and of the package's numba sources
(:func:`pymc_pcrp._runtime.numba_cache.sources_key`): an edit to any of them gives a
new name, so a stale copy is never loaded. The factories below also remember what
they built for the test session.
"""

import functools
import hashlib
import math
import types

from collections.abc import Callable
from pathlib import Path

import numba
import numpy as np

from pymc_pcrp._kernels import allocation, diag_splitmerge, moves, splitmerge, templates
from pymc_pcrp._kernels._config import CACHING
from pymc_pcrp._kernels.diag_sweep import diag_sweeps
from pymc_pcrp._kernels.log_joint import n_blocks
from pymc_pcrp._kernels.pair_moves import grow_by_two, pair_moves
from pymc_pcrp._kernels.partitions import log_add
from pymc_pcrp._kernels.scores import SKIP_NATS
from pymc_pcrp._kernels.sweep import gibbs_sweeps
from pymc_pcrp._kernels.table_sweep import table_sweeps
from pymc_pcrp._runtime.numba_cache import sources_key

__all__ = [
    "diag_split_merge_without_proposal_probability",
    "module_with",
    "pair_moves_with_power",
    "recompiled",
    "split_merge_variant",
    "sweep_variant",
    "template_jump_variant",
    "without_proposal_probability",
]

# The shipped kernels' options (pymc_pcrp._kernels._config). The small replacements
# below are not cached themselves: a cached copy holds their compiled code.
NJIT = {"cache": False, "nogil": True, "fastmath": False}

# What a copy's cache name depends on besides its own rebinding (see the docstring).
_SOURCES = hashlib.sha256(Path(__file__).read_bytes() + sources_key().encode()).hexdigest()


def _describe(value: object) -> str:
    """A text that tells rebound values apart: constants, compiled functions, stand-ins."""
    if value is None or isinstance(value, bool | int | float | str):
        return repr(value)
    if isinstance(value, types.ModuleType):
        overrides = getattr(value, "variant_overrides", {})
        inner = ", ".join(f"{k}={_describe(v)}" for k, v in sorted(overrides.items()))
        return f"{value.__name__}{{{inner}}}"
    source = getattr(value, "py_func", None)
    if source is None:
        raise TypeError(
            f"recompiled: cannot rebind a global to {value!r}; pass a constant, a numba "
            "function or a module_with stand-in"
        )
    cells = ", ".join(_describe(cell.cell_contents) for cell in source.__closure__ or ())
    return f"{source.__module__}.{source.__qualname__}({cells})"


def recompiled(kernel: Callable, **names: object) -> Callable:
    """Compile the Python code of the numba kernel ``kernel`` again, some globals rebound.

    Each keyword names a global the kernel reads (a constant, a numba function, a
    module) and gives the value the copy sees instead. A name the kernel's code does
    not mention is refused, so that a renamed building block cannot leave a variant
    silently identical to the shipped kernel. The copy is cached on disk under a name
    of its own (see the module docstring).
    """
    source = kernel.py_func
    unknown = sorted(set(names) - set(source.__code__.co_names))
    if unknown:
        raise ValueError(
            f"recompiled: {source.__name__} reads no global named {unknown}; "
            f"pass only names its code uses ({sorted(source.__code__.co_names)})"
        )
    scope = dict(source.__globals__)
    scope.update(names)
    copy = types.FunctionType(
        source.__code__, scope, source.__name__, source.__defaults__, source.__closure__
    )
    rebinding = ", ".join(f"{k}={_describe(v)}" for k, v in sorted(names.items()))
    digest = hashlib.sha256(f"{_SOURCES}\0{rebinding}".encode()).hexdigest()[:16]
    copy.__qualname__ = f"{source.__qualname__}_variant_{digest}"
    return numba.njit(**{**NJIT, "cache": CACHING})(copy)


def module_with(module: types.ModuleType, **names: object) -> types.ModuleType:
    """A stand-in for ``module`` with some attributes replaced, for a kernel that reads
    ``module.attribute`` (pass it to :func:`recompiled` under the module's global name)."""
    unknown = sorted(name for name in names if not hasattr(module, name))
    if unknown:
        raise ValueError(f"module_with: {module.__name__} has no attribute {unknown}")
    stand_in = types.ModuleType(f"{module.__name__}_variant")
    stand_in.__dict__.update({k: v for k, v in vars(module).items() if not k.startswith("__")})
    stand_in.__dict__.update(names)
    stand_in.variant_overrides = dict(names)
    return stand_in


# -- The sweep: another skipping threshold, one point from a fixed state ----------------


@numba.njit(**NJIT)
def _first_point_only(n: int) -> np.ndarray:
    return np.zeros(1, dtype=np.int64)


@numba.njit(**NJIT)
def _keep_order(rng: np.random.Generator, perm: np.ndarray) -> None:
    return None


@functools.cache
def sweep_variant(
    family: str = "full", skip_nats: float = SKIP_NATS, first_point_only: bool = False
) -> Callable:
    """The Gibbs sweep of ``family`` (``"full"``, ``"diag"`` or ``"table"``) with other settings.

    ``skip_nats`` replaces :data:`~pymc_pcrp._kernels.scores.SKIP_NATS` (a low value
    takes the rare branch that scores the skipped options far more often). With
    ``first_point_only`` a "sweep" updates point 0 alone, so that one update drawn
    many times from the same state can be compared with the full conditional
    (put the point of interest first in the data).
    """
    kernel = {"full": gibbs_sweeps, "diag": diag_sweeps, "table": table_sweeps}[family]
    names: dict[str, object] = {"SKIP_NATS": float(skip_nats)}
    if first_point_only:
        names.update(sweep_order=_first_point_only, shuffle_in_place=_keep_order)
    return recompiled(kernel, **names)


# -- Split-merge: wrong acceptance ratios, and a pair rule the sampler does not use -----


def without_proposal_probability(launch: Callable) -> Callable:
    """A proposal builder like ``launch`` that reports ``log q = 0``.

    The move then accepts on the posterior ratio alone, as if its proposal were
    symmetric: a wrong ratio. (A merge's early stop still sees the true ``log q``,
    which changes nothing: with ``log q = 0`` the test is ``log u < base``.)
    """

    @numba.njit(**NJIT)
    def launch_without_q(rng, xc, proposal, groups, work):
        _, log_u = launch(rng, xc, proposal, groups, work)
        return 0.0, log_u

    return launch_without_q


def _split_gain_at(power: float) -> Callable:
    """``moves.split_gain`` with the prior ratio at ``power`` whatever the caller passes."""

    @numba.njit(**NJIT)
    def split_gain(params, _power, sizes, stats, d):
        return moves.split_gain(params, power, sizes, stats, d)

    return split_gain


@numba.njit(**NJIT)
def _no_selection_ratio(pair_rule, k, sizes, split):
    return 0.0


@numba.njit(**NJIT)
def _cluster_first_move(rng, state, lists, pairs):
    """The pair of a cluster-first rule: a cluster uniformly among the ``K``, ``i``
    uniform in it, ``j`` uniform among the other ``N - 1`` points (``pairs`` unused)."""
    head, nxt = lists
    n = state.labels.shape[0]
    k = state.k[0]
    slot = state.order[rng.integers(0, k)]
    i = moves.nth_member(head, nxt, slot, rng.integers(0, state.counts[slot]), -1)
    j = rng.integers(0, n - 1)
    if j >= i:
        j += 1
    return i, j, k


@numba.njit(**NJIT)
def _cluster_first_selection_ratio(pair_rule, k, sizes, split):
    """The pair's probability back over forth under the cluster-first rule.

    The pair ``(i, j)`` has probability ``1 / (K n_{c(i)} (N - 1))``: a split of
    ``C`` into groups of ``n0`` (holding ``i``) and ``n1`` points gives
    ``K n_C / ((K + 1) n0)``, a merge of ``A`` (holding ``i``) and ``B`` gives
    ``K n_A / ((K - 1) (n_A + n_B))``.
    """
    n0, n1 = sizes
    nc = n0 + n1
    if split:
        return math.log(k * nc) - math.log((k + 1) * n0)
    return math.log(k * n0) - math.log((k - 1) * nc)


@functools.cache
def split_merge_variant(
    *,
    ratio_power: float | None = None,
    proposal_probability: bool = True,
    selection_ratio: bool = True,
    cluster_first: bool = False,
) -> Callable:
    """:func:`~pymc_pcrp._kernels.splitmerge.run_split_merge` with a changed test.

    ``ratio_power``: the power of the prior ratio (``None``: the chain's ``r``);
    ``proposal_probability=False``: the proposal's probability left out
    (:func:`without_proposal_probability`); ``selection_ratio=False``: the ratio of
    the pair's probabilities left out; ``cluster_first``: pairs drawn by the
    cluster-first rule (with its selection ratio unless that is left out). Only
    the defaults are exact.
    """
    overrides: dict[str, object] = {}
    if ratio_power is not None:
        overrides["split_gain"] = _split_gain_at(float(ratio_power))
    if cluster_first:
        overrides["draw_move"] = _cluster_first_move
        overrides["selection_log_ratio"] = _cluster_first_selection_ratio
    if not selection_ratio:
        overrides["selection_log_ratio"] = _no_selection_ratio
    stand_in = module_with(moves, **overrides)
    names: dict[str, object] = {
        "moves": stand_in,
        "_split_log_ratio": recompiled(splitmerge._split_log_ratio, moves=stand_in),
        "_merge_base": recompiled(splitmerge._merge_base, moves=stand_in),
    }
    if not proposal_probability:
        names["launch_proposal"] = without_proposal_probability(allocation.launch_proposal)
    return recompiled(splitmerge.run_split_merge, **names)


@functools.cache
def diag_split_merge_without_proposal_probability() -> Callable:
    """The diagonal family's split-merge move accepting on the posterior ratio alone."""
    launch = without_proposal_probability(diag_splitmerge.launch_proposal)
    return recompiled(diag_splitmerge.diag_split_merge_moves, launch_proposal=launch)


# -- Pair moves: the prior ratio at a wrong power ---------------------------------------


@functools.cache
def pair_moves_with_power(power: float) -> Callable:
    """:func:`~pymc_pcrp._kernels.pair_moves.pair_moves` testing with the prior at ``power``."""

    @numba.njit(**NJIT)
    def grow_at_power(params, _power, n, logdet_n, logdet_grown, d):
        return grow_by_two(params, power, n, logdet_n, logdet_grown, d)

    return recompiled(pair_moves, grow_by_two=grow_at_power)


# -- Template jumps: a wrong proposal probability ---------------------------------------


@numba.njit(**NJIT)
def _one_labelling_log_probability(packed, labels):
    """The proposal probability of the partition's own labelling only (not the permanent)."""
    m = packed.n_columns.shape[0]
    b = n_blocks(labels)
    values = np.full(m, -np.inf)
    for t in range(m):
        if b > packed.n_columns[t]:
            continue
        w = packed.log_weights[t]
        acc = 0.0
        for p in range(labels.shape[0]):
            acc += w[p, labels[p]]
        values[t] = acc
    total = -np.inf
    for t in range(m):
        total = log_add(total, values[t])
    return total - math.log(m)


@numba.njit(**NJIT)
def _no_proposal_log_probability(packed, labels):
    return 0.0


@functools.cache
def template_jump_variant(wrong: str) -> Callable:
    """:func:`~pymc_pcrp._kernels.templates.template_jump_chain` with a wrong ``q``.

    ``wrong`` is ``"one_labelling"`` (the product along the partition's own labels
    instead of the permanent over its labellings) or ``"no_ratio"`` (``q`` left out
    of the ratio, as if the proposal were symmetric). The early rejection, whose
    bound holds for the exact ``q`` only, is switched off (an infinite margin), so
    every proposal makes the plain test with the wrong ``q``.
    """
    q = {"one_labelling": _one_labelling_log_probability, "no_ratio": _no_proposal_log_probability}
    return recompiled(
        templates.template_jump_chain, mixture_log_probability=q[wrong], _BOUND_MARGIN=math.inf
    )
