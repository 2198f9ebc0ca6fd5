r"""The pCRP restricted to at most ``K`` clusters, with labels that are slots ``0..K-1``.

``PowerCRP(name, alpha, power, n, max_clusters=K)`` builds the variable of this
module. Its value is a label vector whose entries are *labelled slots*: cluster
parameters of shape ``(K, ...)`` can then be ordinary PyMC variables indexed by
the labels (``lam[z]``), for any likelihood.

A partition of ``n`` items into ``k <= K`` blocks of sizes ``n_1..n_k`` has the
truncated pCRP probability

.. math::

    p_K(\pi) = \frac{\alpha^k \prod_j \Gamma(n_j)^r}{Z_n^{(K)}(\alpha, r)}, \qquad
    Z_n^{(K)}(\alpha, r) = \sum_{k=1}^{K} \alpha^k S_r(n, k),

and each of its ``K! / (K - k)!`` assignments of blocks to distinct slots is
equally likely, so that a label vector ``z`` has

.. math::

    p(z) = p_K(\pi(z)) \, \frac{(K - k)!}{K!} .

Its full conditionals are the seating rule over slots: item ``i`` joins an
occupied slot with weight :math:`n_{k,-i}^r` and each empty slot with weight
:math:`\alpha / (K - K_{-i})`, ``K_{-i}`` the number of slots the other items
occupy.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pytensor.tensor as pt

from pymc.distributions.dist_math import check_parameters
from pymc.distributions.distribution import Discrete
from pymc.distributions.shape_utils import rv_size_is_none
from pytensor.gradient import grad_undefined
from pytensor.graph.basic import Apply, Variable
from pytensor.graph.op import Op
from pytensor.tensor.random.op import RandomVariable
from pytensor.tensor.variable import TensorVariable

from pymc_pcrp._kernels.partitions import check_prior_args, normalise_log, table_and_log_weights
from pymc_pcrp._kernels.prior_draws import sample_partitions_from_table
from pymc_pcrp._validation import check_positive_scalar, depends_on_random_variable
from pymc_pcrp.distributions.normaliser import is_constant, is_fixed

__all__ = [
    "PowerCRPSlots",
    "PowerCRPSlotsRV",
    "check_max_clusters",
    "power_crp_slots",
    "slot_labels_dtype",
    "truncated_log_normaliser",
    "truncated_log_prior_k",
]


def check_max_clusters(max_clusters) -> int:
    """Return ``max_clusters`` as an ``int``, requiring an integer ``>= 1``.

    Parameters
    ----------
    max_clusters : int
        The number of slots ``K``.

    Returns
    -------
    int
        ``K``.

    Raises
    ------
    ValueError
        If ``max_clusters`` is not an integer number ``>= 1`` (a tensor, a
        float with a fractional part, a bool or a string are refused).
    """
    if isinstance(max_clusters, Variable | str | bytes | bool | np.bool_) or max_clusters is None:
        raise ValueError(
            "Argument 'max_clusters' of PowerCRP must be an integer >= 1 (a Python or NumPy "
            f"number, not a tensor), but got {max_clusters!r}."
        )
    value = np.asarray(max_clusters)
    if value.ndim != 0 or not np.isfinite(value) or float(value) != int(value) or int(value) < 1:
        raise ValueError(
            "Argument 'max_clusters' of PowerCRP must be an integer >= 1, but got "
            f"{max_clusters!r}."
        )
    return int(value)


def slot_labels_dtype(max_clusters: int) -> str:
    """Return the label dtype of a pCRP with ``max_clusters`` slots.

    ``"int16"`` when every slot ``0..K-1`` fits in it (``K <= 32768``), else ``"int32"``.
    """
    return "int16" if max_clusters <= int(np.iinfo(np.int16).max) + 1 else "int32"


@functools.lru_cache(maxsize=32)
def _truncated_table(
    n: int, alpha: float, r: float, max_clusters: int
) -> tuple[np.ndarray, np.ndarray]:
    """Return the Stirling table of columns ``k <= min(K, n)`` and the log prior on ``k``."""
    table, log_w = table_and_log_weights(n, alpha, r, min(max_clusters, n))
    table.flags.writeable = False
    log_pk = normalise_log(log_w)
    log_pk.flags.writeable = False
    return table, log_pk


def truncated_log_prior_k(n: int, alpha: float, r: float, max_clusters: int) -> np.ndarray:
    """Exact prior on the number of clusters of the pCRP restricted to ``K`` clusters.

    Parameters
    ----------
    n : int
        Number of items, ``n >= 1``.
    alpha : float
        Concentration, ``> 0``.
    r : float
        Power of the pCRP.
    max_clusters : int
        The largest number of clusters ``K >= 1``.

    Returns
    -------
    numpy.ndarray
        ``log p(k)`` for ``k = 0..min(K, n)`` (``-inf`` at ``k = 0``):
        ``alpha**k S_r(n, k)`` normalised over ``k <= K``.
    """
    n, alpha, r = check_prior_args(n, alpha, r)
    return _truncated_table(n, alpha, r, check_max_clusters(max_clusters))[1].copy()


@functools.lru_cache(maxsize=64)
def truncated_log_normaliser(n: int, alpha: float, r: float, max_clusters: int) -> float:
    """``log Z_n^(K)(alpha, r) = log sum_{k <= K} alpha**k S_r(n, k)``.

    Computed from ``min(K, n)`` columns of the generalised Stirling table,
    ``O(n**2 K)`` operations, cached per ``(n, alpha, r, K)``.

    Parameters
    ----------
    n, alpha, r, max_clusters
        As in :func:`truncated_log_prior_k`.

    Returns
    -------
    float
        The log normaliser; for ``K >= n`` it is the untruncated ``log Z_n``.
    """
    n, alpha, r = check_prior_args(n, alpha, r)
    max_clusters = check_max_clusters(max_clusters)
    _, log_w = table_and_log_weights(n, alpha, r, min(max_clusters, n))
    top = float(np.max(log_w))
    return top + math.log(float(np.sum(np.exp(log_w - top))))


class PowerCRPSlotsRV(RandomVariable):
    """Random variable op: ``(alpha, power, n, max_clusters) -> slot labels`` of length ``n``.

    Draws are exact: the number of clusters ``k`` from the truncated prior,
    the partition given ``k`` from the generalised Stirling table, and then an
    assignment of its blocks to ``k`` distinct slots of ``0..K-1``, uniformly
    among the ``K! / (K - k)!`` of them.
    """

    name = "power_crp_slots"
    signature = "(),(),(),()->(n)"
    dtype = "int32"
    _print_name = ("PowerCRP", "\\operatorname{PowerCRP}")

    def make_node(self, rng, size, alpha, power, n, max_clusters):
        """Build the node with integer scalars ``n`` and ``max_clusters``."""
        n = pt.as_tensor_variable(n, dtype="int64")
        max_clusters = pt.as_tensor_variable(max_clusters, dtype="int64")
        return super().make_node(rng, size, alpha, power, n, max_clusters)

    def _supp_shape_from_params(self, dist_params, param_shapes=None):
        return (dist_params[2].squeeze(),)

    def rng_fn(self, rng, alpha, power, n, max_clusters, size):
        """Exact draws of slot label vectors (see the class docstring)."""
        params = [np.asarray(v) for v in (alpha, power, n, max_clusters)]
        if any(v.size != 1 for v in params):
            raise NotImplementedError(
                "PowerCRP draws need scalar alpha, power, n and max_clusters; batched "
                "parameters are not supported (use size= for several draws)."
            )
        alpha, power = float(params[0].item()), float(params[1].item())
        n, max_clusters = int(params[2].item()), int(params[3].item())
        shape = () if size is None else tuple(size)
        count = max(int(np.prod(shape, dtype=np.int64)), 1)
        table, log_pk = _truncated_table(*check_prior_args(n, alpha, power), max_clusters)
        blocks = sample_partitions_from_table(rng, table, log_pk, power, count)
        draws = np.empty_like(blocks)
        for s in range(count):
            k = int(blocks[s].max()) + 1 if n else 0
            slots = rng.permutation(max_clusters)[:k]
            draws[s] = slots[blocks[s]]
        draws = draws.astype(self.dtype)
        return draws[0] if size is None else draws.reshape((*shape, n))


#: int32 slot labels; :class:`PowerCRPSlots` uses an int16 copy when ``K <= 32768``.
power_crp_slots = PowerCRPSlotsRV()


class _TruncatedLogNormaliser(Op):
    """``log Z_n^(K)(alpha, r)`` for ``alpha`` and ``power`` given as ``pm.Data`` (no gradient)."""

    __props__ = ("n", "max_clusters")

    def __init__(self, n: int, max_clusters: int):
        self.n = int(n)
        self.max_clusters = int(max_clusters)

    def make_node(self, alpha, power):
        """Build the node: float64 scalars ``alpha`` and ``power``."""
        inputs = [pt.cast(pt.as_tensor_variable(v), "float64") for v in (alpha, power)]
        return Apply(self, inputs, [pt.dscalar()])

    def perform(self, node, inputs, output_storage):
        """Evaluate :func:`truncated_log_normaliser`."""
        alpha, power = (float(v) for v in inputs)
        value = truncated_log_normaliser(self.n, alpha, power, self.max_clusters)
        output_storage[0][0] = np.asarray(value, dtype=np.float64)

    def grad(self, inputs, output_grads):
        """Not differentiable: ``alpha`` and ``power`` are data here, never sampled."""
        return [grad_undefined(self, i, v) for i, v in enumerate(inputs)]


def _constant_int(value: TensorVariable) -> int:
    """Return the integer value of a constant integer tensor."""
    return int(pt.get_underlying_scalar_constant_value(value))


class PowerCRPSlots(Discrete):
    r"""The pCRP over slot labels ``0..K-1``: what ``PowerCRP(..., max_clusters=K)`` builds.

    Use it through :class:`~pymc_pcrp.PowerCRP` with ``max_clusters``; the
    module docstring of :mod:`pymc_pcrp.distributions.slots` gives the
    probability of a label vector. ``alpha`` and ``power`` must be fixed
    (numbers or ``pm.Data``) and ``n`` an integer.

    ========  ===================================================
    Support   label vectors of length ``n`` with entries in ``0..K-1``
    Dtype     ``int16`` when ``K <= 32768``, ``int32`` otherwise
    ========  ===================================================
    """

    rv_type = PowerCRPSlotsRV

    @classmethod
    def rv_op(cls, alpha, power, n, max_clusters, *, size=None, rng=None):
        """Create the random variable with the label dtype of ``max_clusters``."""
        k = _constant_int(pt.as_tensor_variable(max_clusters))
        return power_crp_slots(
            alpha, power, n, max_clusters, size=size, rng=rng, dtype=slot_labels_dtype(k)
        )

    @classmethod
    def dist(cls, alpha, power, n, max_clusters, **kwargs):
        """Create the distribution outside a model; checks every argument (see the class)."""
        max_clusters = check_max_clusters(max_clusters)
        for arg, arg_name in ((alpha, "alpha"), (power, "power")):
            if isinstance(arg, Variable):
                if depends_on_random_variable(arg) or not is_fixed(arg):
                    raise ValueError(
                        f"PowerCRP with max_clusters needs a fixed '{arg_name}' (a number or "
                        f"pm.Data), but '{arg_name}' depends on a random variable; give it a "
                        "value, or drop max_clusters to use the collapsed PCRPGibbs step."
                    )
            else:
                check_positive_scalar(arg, arg_name)
        if isinstance(n, Variable):
            try:
                n = _constant_int(n)
            except Exception as exc:
                raise ValueError(
                    "Argument 'n' of PowerCRP with max_clusters must be an integer (such as "
                    f"len(y)), not a tensor whose value can change; got {n.type}."
                ) from exc
        if int(np.asarray(n)) != np.asarray(n) or int(np.asarray(n)) < 1:
            raise ValueError(f"Argument 'n' of PowerCRP must be a positive integer, but got {n!r}.")
        n = int(np.asarray(n))
        alpha = pt.as_tensor_variable(alpha, dtype="float64")
        power = pt.as_tensor_variable(power, dtype="float64")
        if alpha.ndim != 0 or power.ndim != 0:
            raise ValueError("Arguments 'alpha' and 'power' of PowerCRP must be scalars.")
        return super().dist([alpha, power, n, max_clusters], **kwargs)

    @staticmethod
    def support_point(rv, size, alpha, power, n, max_clusters):
        """All items in slot 0."""
        if rv_size_is_none(size):
            return pt.zeros((n,), dtype=rv.dtype)
        return pt.full((*size, n), 0, dtype=rv.dtype)

    @staticmethod
    def logp(value, alpha, power, n, max_clusters):
        """Log probability of a slot label vector; ``-inf`` for a label outside ``0..K-1``."""
        k_max = _constant_int(max_clusters)
        n_items = _constant_int(n)
        counts = pt.zeros((k_max,), dtype="int64")[pt.clip(value, 0, k_max - 1)].inc(1)
        occupied = pt.gt(counts, 0)
        k = pt.sum(occupied)
        log_gamma = pt.switch(occupied, pt.gammaln(pt.maximum(counts, 1)), 0.0)
        # log K!/(K-k)!, in float64 (a float literal would make gammaln run in float32)
        free = pt.cast(k_max - k + 1, "float64")
        labellings = np.float64(math.lgamma(k_max + 1.0)) - pt.gammaln(free)
        res = k * pt.log(alpha) + power * pt.sum(log_gamma) - labellings
        if is_constant(alpha) and is_constant(power):
            a, r = float(alpha.eval()), float(power.eval())
            if a > 0 and r > 0:
                res = res - pt.constant(np.float64(truncated_log_normaliser(n_items, a, r, k_max)))
        else:
            res = res - _TruncatedLogNormaliser(n_items, k_max)(alpha, power)
        in_range = pt.all(pt.ge(value, 0)) & pt.all(pt.lt(value, k_max))
        res = pt.switch(in_range, res, -np.inf)
        return check_parameters(res, alpha > 0, power > 0, msg="alpha > 0, power > 0")
