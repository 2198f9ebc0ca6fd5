"""What a chain hands its kernels besides the state, and the caches it keeps between draws.

* :class:`SweepInputs`: the arrays the kernel needs besides the state (centred
  data, parameters, sweep tables, the learned-scale grid);
* :class:`InputCache`, :class:`KeptState`, :class:`CompiledAdvance`: what the
  step remembers between draws so that a draw with unchanged inputs rebuilds
  nothing, and calls the compiled kernel without numba retyping its arguments;
* :func:`call_compiled`: a kernel call that skips numba's retyping of its
  arguments while they keep their types; :func:`compiled_for`, the compiled
  function it calls;
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numba
import numpy as np

from pymc_pcrp._kernels.hyper import ScaleGrid
from pymc_pcrp._kernels.state import NIWParams, SweepState

# Draws after which cached statistics are recomputed from scratch (the owned alpha's
# new-cluster weights here; the step uses the same period for its kept sweep state).
REFRESH_EVERY = 1000

__all__ = [
    "REFRESH_EVERY",
    "CompiledAdvance",
    "InputCache",
    "KeptState",
    "SweepInputs",
    "call_compiled",
    "compiled_for",
    "same_argument_types",
    "same_objects",
]


class SweepInputs(NamedTuple):
    """What a step hands the kernel besides the state: centred data, parameters, tables."""

    xc: np.ndarray
    params: NIWParams
    tables: tuple
    scale: ScaleGrid | None = None  # the grid of a learned NIW scale and the chain's current s
    fixed_scale: tuple = (1.0, 0.0)  # (s, log weight) of a one-point grid: Psi_0 = s psi0


class InputCache(NamedTuple):
    """The last :class:`SweepInputs` built, and what it was built from.

    ``values`` are the numbers ``(alpha, power[, kappa0, nu0])``; ``sources`` the
    data, ``mu0`` and ``psi0`` objects, compared by identity (``pm.set_data``
    installs a new array, and the cache holds references, so an identity cannot
    be recycled); ``raw`` every object read from the model at the last step,
    for the fast path of a fixed ``alpha`` (all the same objects: nothing to do).
    """

    values: tuple
    sources: tuple
    raw: tuple
    inputs: SweepInputs
    log_new_base: np.ndarray | None = None  # tables[0] without log alpha (see _with_prior)


class KeptState(NamedTuple):
    """The sweep state after the last step, reused if the next point has its labels."""

    xc: np.ndarray  # the centred data it was built on (compared by identity)
    state: SweepState
    labels: np.ndarray  # the labels the step returned
    age: int  # draws since the state was built from labels (rank-one drift control)


class CompiledAdvance(NamedTuple):
    """The compiled ``advance`` for one set of argument types, and what fixes those types."""

    inputs: SweepInputs  # the same objects give the same types
    label_dtypes: tuple  # dtypes of the state's labels and of the labels written out
    call: Callable
    kernel: Callable  # advance or advance_scaled


def same_objects(a: tuple, b: tuple) -> bool:
    """Whether two tuples hold the very same objects, position by position."""
    return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))


def same_argument_types(a: SweepInputs, b: SweepInputs) -> bool:
    """Whether two inputs hold the same arrays: the same objects, or params changed by floats.

    :meth:`PCRPGibbs._with_prior` replaces only the float fields ``log_alpha``
    and ``power`` of the parameters, which cannot change numba's argument types.
    The other fields (after those two, in either family's parameters) must be the
    same arrays and equal numbers.
    """
    if same_objects(a, b):
        return True
    pa, pb = a.params, b.params
    return (
        same_objects(
            (a.xc, a.tables, a.scale, a.fixed_scale), (b.xc, b.tables, b.scale, b.fixed_scale)
        )
        and type(pa) is type(pb)
        and all(
            x is y if isinstance(x, np.ndarray) else x == y
            for x, y in zip(pa[2:], pb[2:], strict=True)
        )
    )


def call_compiled(
    compiled: CompiledAdvance | None,
    inputs: SweepInputs,
    args: tuple,
    kernel: Callable,
) -> tuple[float, CompiledAdvance | None]:
    """Call an advance kernel without numba retyping its arguments; return the result and cache.

    ``pm.sample`` calls the step thousands of times with arguments of the
    same types. numba's dispatcher types every argument in Python on every
    call; the ``numpy.random.Generator`` and the named tuples of arrays cost
    several microseconds, a visible share of a one-sweep draw at
    ``N = 2,000``. So the first call goes through the dispatcher (which
    compiles or loads the kernel), and numba's public
    ``Dispatcher.compile(signature)``, which returns the compiled function
    of that signature, gives the function later calls use directly while
    the arguments that fix the types are the same objects (data,
    parameters, tables) with the same label dtypes. If that lookup fails,
    the dispatcher serves every call: it is an optimisation only.

    Parameters
    ----------
    compiled : CompiledAdvance or None
        What the previous call returned (``None`` at first).
    inputs : SweepInputs
        The inputs ``args`` were built from.
    args : tuple
        The kernel's arguments; ``args[1]`` is the chain ``(xc, state, params, tables)``
        and ``args[-2]`` the outputs ``(counts, labels_out)``.
    kernel : numba dispatcher
        One of the ``advance`` kernels.

    Returns
    -------
    result : float
        What the kernel returned (the draw's log density).
    compiled : CompiledAdvance or None
        The cache to pass to the next call.
    """
    label_dtypes = (args[1][1].labels.dtype, args[-2][1].dtype)  # the state's, the output's
    if (
        compiled is not None
        and compiled.kernel is kernel
        and same_argument_types(compiled.inputs, inputs)
        and compiled.label_dtypes == label_dtypes
    ):
        return compiled.call(*args), compiled
    result = kernel(*args)
    call = compiled_for(kernel, args)
    if call is kernel:
        return result, None
    return result, CompiledAdvance(inputs, label_dtypes, call, kernel)


def compiled_for(kernel: Callable, args: tuple) -> Callable:
    """Return the compiled function of a numba kernel for the types of ``args``, or the kernel.

    numba's public ``Dispatcher.compile(signature)`` returns the compiled function
    of one signature, compiling it or loading it from the cache first if need be
    (the same copy a call through the dispatcher uses). Calling it skips the
    dispatcher's typing of the arguments, which numba does in Python for a tuple
    that holds a sweep state, such as a chain ``(xc, state, params, tables)``:
    about 0.1 ms per call, more than a one-sweep draw of a small replica costs.
    The compiled function does not check its arguments: the caller must pass
    arguments of the types of ``args`` only. If the lookup fails, the kernel
    itself is returned (an optimisation only).
    """
    try:
        call = kernel.compile(tuple(numba.typeof(a) for a in args))
    except Exception:
        return kernel
    return call if callable(call) else kernel
