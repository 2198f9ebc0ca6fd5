"""The conditional target of one pCRP hyper-parameter, shared by the two steps that update one.

:class:`~pymc_pcrp.PCRPHyper` (a step of its own) and the ``alpha`` move that
:class:`~pymc_pcrp.PCRPGibbs` owns (``_alpha_update.AlphaUpdate``) sample the
same conditional of a scalar variable ``theta`` given the labels. What they
share is built here, once, as a :class:`HyperTarget`: which pCRP terms
``theta`` feeds (:func:`dependent_terms`), a compiled PyTensor function of its
exact prior term (log density plus Jacobian, and every other term that depends
on it) with the ``alpha`` and power of those terms, and, when the model allows
the numba fast path, the prior term tabulated on a grid of the unconstrained
value (:class:`Surrogate`).
"""

from __future__ import annotations

import math

from typing import NamedTuple

import numpy as np
import pytensor.tensor as pt

from pymc.logprob.transforms import IntervalTransform, LogTransform
from pymc.pytensorf import compile as pm_compile
from pytensor.graph.traversal import graph_inputs
from pytensor.tensor.exceptions import NotScalarConstantError

from pymc_pcrp._kernels import hyperprior as hp
from pymc_pcrp.distributions.normaliser import is_fixed
from pymc_pcrp.distributions.pcrp import PowerCRPRV

__all__ = ["HyperTarget", "PCRPTerm", "Surrogate", "dependent_terms", "transform_code"]

# The tabulated surrogate of the prior term: this many points over +- this half-width
# (unconstrained units) around the initial value, linear beyond.
Q_POINTS = 1201
Q_HALF_WIDTH = 30.0


class Surrogate(NamedTuple):
    """What the numba slice kernel needs besides the labels (the fast path)."""

    code: int  # transform code of pymc_pcrp._kernels.hyperprior
    lower: float
    upper: float
    q_lo: float  # the tabulated prior term q: grid start, step and values
    q_step: float
    q_values: np.ndarray
    is_power: bool  # the variable is the term's power (else its alpha)


class PCRPTerm(NamedTuple):
    """A pCRP whose ``alpha`` or ``power`` depends on the updated variable."""

    labels: str  # name of the labels' value variable in the point
    n: int
    method: str  # log_normaliser method: "row" (fixed power) or "recursion"


def dependent_terms(model, rv) -> tuple[list[PCRPTerm], list, list]:
    """Return the pCRP terms fed by ``rv``, their ``(alpha, power)`` and other dependent terms."""
    terms: list[PCRPTerm] = []
    params: list = []
    others: list = []
    stop = set(model.basic_RVs)
    for term in [v for v in model.basic_RVs if v is not rv] + list(model.potentials):
        inputs = term.owner.inputs if term in model.basic_RVs else [term]
        if not _uses(inputs, rv, stop):
            continue
        if isinstance(term.owner.op, PowerCRPRV) and term in model.free_RVs:
            alpha, power, n = term.owner.op.dist_params(term.owner)
            if not _uses([alpha, power], rv, stop):
                others.append(term)  # rv enters through n or the size: keep it general
                continue
            power_value = model.replace_rvs_by_values([power])[0]
            method = "row" if is_fixed(power_value) else "recursion"
            value_name = model.rvs_to_values[term].name
            terms.append(PCRPTerm(value_name, int(n.eval()), method))
            params.extend([alpha, power])
        else:
            others.append(term)
    return terms, params, others


class HyperTarget:
    """The conditional of the scalar value variable ``value_var`` given the labels.

    Parameters
    ----------
    model : pm.Model
    value_var : TensorVariable
        A scalar continuous value variable of ``model``.
    initial_point : dict
        Where the surrogate is centred.
    compile_kwargs : dict, optional
        Passed to PyMC's ``compile``.

    Attributes
    ----------
    name : str
        The value variable's name in a point.
    dtype : numpy.dtype
    terms : list of PCRPTerm
        The pCRP terms whose ``alpha`` or power depends on the variable.
    inputs : list of TensorVariable
        The value variables the compiled function reads, in its argument order.
    position : int or None
        Where the variable is among ``inputs`` (``None`` when no term reads it).
    fn : callable
        ``fn(*values of inputs)`` returns the prior term followed by ``(alpha,
        power)`` of each term in ``terms``.
    surrogate : Surrogate or None
        The tabulated prior term, when the numba fast path applies (one pCRP
        term whose ``alpha`` or power is the variable itself, no other dependent
        term, a transform of known form); ``None`` otherwise.
    """

    def __init__(self, model, value_var, initial_point, compile_kwargs=None):
        rv = model.values_to_rvs[value_var]
        self.name = value_var.name
        self.dtype = np.dtype(value_var.dtype)
        terms, params, others = dependent_terms(model, rv)
        self.terms = terms
        logp_other = model.logp(vars=[rv, *others], jacobian=True, sum=True)
        outputs = [logp_other, *model.replace_rvs_by_values(params)]
        needed = set(graph_inputs(outputs))
        self.inputs = [v for v in model.value_vars if v in needed]
        self.position = self.inputs.index(value_var) if value_var in needed else None
        fn = pm_compile(self.inputs, outputs, on_unused_input="ignore", **(compile_kwargs or {}))
        fn.trust_input = True
        self.fn = fn
        self.surrogate = self._tabulate(model, rv, params, others, initial_point)

    def exact(self, args: list, u: float) -> tuple:
        """Return ``fn``'s outputs (prior term, alpha, power) with the variable at ``u``.

        ``args`` holds the values of ``inputs``; its entry at ``position`` is replaced.
        """
        args[self.position] = np.asarray(u, dtype=self.dtype)
        return tuple(float(v) for v in self.fn(*args))

    def _tabulate(self, model, rv, params, others, initial_point) -> Surrogate | None:
        """Tabulate the prior term for the numba kernel when the model allows it, else ``None``.

        The prior term (log density plus Jacobian) is tabulated once on a grid of
        the unconstrained value around the initial point: the kernel
        slice-samples the pCRP term plus that piecewise-linear surrogate, and the
        step corrects the surrogate by a Metropolis-Hastings test with the exact
        prior term.
        """
        if len(self.terms) != 1 or others or self.position is None:
            return None
        alpha, power = params
        if (alpha is rv) == (power is rv):
            return None
        known = transform_code(model, rv)
        if known is None:
            return None
        code, lower, upper = known
        center = float(initial_point[self.name])
        grid = center + np.linspace(-Q_HALF_WIDTH, Q_HALF_WIDTH, Q_POINTS)
        args = [np.asarray(initial_point[v.name]) for v in self.inputs]
        values = np.empty(grid.size)
        for j, u in enumerate(grid):
            args[self.position] = np.asarray(u, dtype=self.dtype)
            values[j] = float(self.fn(*args)[0])
        finite = np.isfinite(values)
        if not finite.any():
            return None
        # outside the support the exact target is zero anyway: any finite value will do
        values[~finite] = values[finite].min() - 50.0
        step = float(grid[1] - grid[0])
        return Surrogate(code, lower, upper, float(grid[0]), step, values, power is rv)


def transform_code(model, rv) -> tuple[int, float, float] | None:
    """``(code, lower, upper)`` of ``rv``'s transform for the numba kernel, or ``None``.

    Known are no transform, the log transform and an interval transform with
    constant bounds (both finite, or a finite lower bound alone); see the
    transform codes of :mod:`pymc_pcrp._kernels.hyperprior`.
    """
    transform = model.rvs_to_transforms.get(rv)
    if transform is None:
        return hp.IDENTITY, 0.0, 0.0
    if isinstance(transform, LogTransform):
        return hp.LOG, 0.0, 0.0
    if not isinstance(transform, IntervalTransform):
        return None
    a, b, has_a, has_b = transform.get_a_and_b(rv.owner.inputs)
    try:
        a = float(pt.get_underlying_scalar_constant_value(a)) if has_a else -math.inf
        b = float(pt.get_underlying_scalar_constant_value(b)) if has_b else math.inf
    except NotScalarConstantError:
        return None
    if math.isfinite(a) and math.isfinite(b):
        return hp.INTERVAL, a, b
    if math.isfinite(a):
        return hp.LOWER, a, 0.0
    return None


def _uses(outputs, rv, stop: set) -> bool:
    """Whether ``rv`` enters the log density of ``outputs`` directly.

    The search does not pass through other random variables (``stop``): in the
    model's log density they are replaced by their values, so a term that sees
    ``rv`` only through another variable (the data term, through the labels) does
    not depend on it.
    """
    stack = list(outputs)
    seen: set[int] = set()
    while stack:
        var = stack.pop()
        if var is rv:
            return True
        if id(var) in seen or var.owner is None or var in stop:
            continue
        seen.add(id(var))
        stack.extend(var.owner.inputs)
    return False
