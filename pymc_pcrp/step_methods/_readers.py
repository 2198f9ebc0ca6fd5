"""Cheap readers of model quantities for the steps: from a point, a constant or ``pm.Data``."""

from __future__ import annotations

import numpy as np
import pytensor

from pymc.pytensorf import compile as pm_compile
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.graph.basic import Constant
from pytensor.graph.traversal import graph_inputs

__all__ = ["point_reader", "value_reader"]


def point_reader(model, value, compile_kwargs=None):
    """Return ``point -> value`` compiled on the value variables it needs only.

    A random ``alpha`` or ``power`` is read at every draw: a function of all the
    model's value variables (the labels among them) spent most of its time
    checking inputs it does not use.
    """
    needed = set(graph_inputs([value]))
    inputs = [v for v in model.value_vars if v in needed]
    fn = pm_compile(inputs, value, on_unused_input="ignore", **(compile_kwargs or {}))
    fn.trust_input = True
    names = [(v.name, np.dtype(v.dtype)) for v in inputs]

    def read(point):
        return fn(*[np.asarray(point[name], dtype=dtype) for name, dtype in names])

    return read


def value_reader(var):
    """Return a cheap reader of the current value of a constant, shared or derived tensor.

    Constants and ``pm.Data`` are read directly (a shared value keeps its identity
    until ``pm.set_data`` replaces it, which lets the step cache its arrays);
    anything else is compiled once.
    """
    if isinstance(var, Constant):
        return lambda: var.data
    if isinstance(var, SharedVariable):
        return lambda: var.get_value(borrow=True)
    fn = pytensor.function([], var, on_unused_input="ignore")
    return fn
