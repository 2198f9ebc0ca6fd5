"""The powered Chinese restaurant process as a PyMC distribution over label vectors."""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt

from pymc.distributions.dist_math import check_parameters
from pymc.distributions.distribution import Discrete
from pymc.distributions.shape_utils import rv_size_is_none
from pymc.model import modelcontext
from pymc.model.core import Deterministic
from pytensor.gradient import grad_undefined
from pytensor.graph.basic import Apply, Variable
from pytensor.graph.op import Op
from pytensor.tensor.exceptions import NotScalarConstantError
from pytensor.tensor.random.op import RandomVariable
from pytensor.tensor.variable import TensorVariable

from pymc_pcrp._kernels.partitions import count_distinct
from pymc_pcrp._kernels.prior_draws import sample_partitions
from pymc_pcrp._validation import check_positive_scalar, depends_on_random_variable
from pymc_pcrp.distributions.normaliser import (
    PCRPLogNormaliser,
    is_constant,
    is_fixed,
    log_normaliser,
)
from pymc_pcrp.distributions.slots import PowerCRPSlots

__all__ = ["PowerCRP", "PowerCRPRV", "label_dtype", "n_clusters_name", "power_crp"]


def _max_items(dtype) -> int:
    """Longest label vector whose labels ``0..N-1`` all fit in ``dtype``."""
    return int(np.iinfo(np.dtype(dtype)).max) + 1


def _constant_n(n) -> int | None:
    """Value of ``n`` when it is a compile-time constant, else ``None``."""
    if not isinstance(n, Variable):
        return int(np.asarray(n))
    try:
        return int(pt.get_underlying_scalar_constant_value(n))
    except NotScalarConstantError:
        return None


def label_dtype(n) -> str:
    """Return the dtype of the labels of a pCRP over ``n`` items.

    The smallest signed integer type that holds every label ``0..n-1``:
    ``"int16"`` when ``n <= 32768``, ``"int32"`` otherwise, and ``"int32"``
    when ``n`` is a tensor whose value is not a compile-time constant.

    Parameters
    ----------
    n : int or TensorVariable
        Number of items (the length of the label vector).

    Returns
    -------
    str
        ``"int16"`` or ``"int32"``.
    """
    value = _constant_n(n)
    if value is not None and value <= _max_items("int16"):
        return "int16"
    return "int32"


class PowerCRPRV(RandomVariable):
    """Random variable op of the pCRP: ``(alpha, power, n) -> labels`` of length ``n``.

    Draws come from the exact joint of docs/model.md (not from the
    sequential seating process, which is a different distribution when
    ``power != 1``).

    The label dtype is a property of the op, as for any ``RandomVariable``:
    ``PowerCRPRV()`` (and :data:`power_crp`) gives ``int32`` labels, and
    ``PowerCRPRV(dtype="int16")`` (or ``power_crp(..., dtype="int16")``)
    gives ``int16`` ones, which hold ``n <= 32768``. :class:`PowerCRP` picks
    the dtype with :func:`label_dtype`.
    """

    name = "power_crp"
    signature = "(),(),()->(n)"
    # Default of the op; PowerCRP chooses per n (label_dtype): kept label draws
    # take 2 bytes per label for n <= 32768 and 4 bytes above.
    dtype = "int32"
    _print_name = ("PowerCRP", "\\operatorname{PowerCRP}")

    def __init__(self, *args, **kwargs):
        """Create the op; ``dtype`` must be a signed integer type (default ``int32``)."""
        super().__init__(*args, **kwargs)
        if np.dtype(self.dtype).kind != "i":
            raise ValueError(
                f"PowerCRPRV labels need a signed integer dtype, but got {self.dtype!r}."
            )

    def make_node(self, rng, size, alpha, power, n):
        """Build the node, casting ``n`` to an integer scalar that the dtype can label."""
        n = pt.as_tensor_variable(n, dtype="int64")
        value = _constant_n(n)
        if value is not None and value > _max_items(self.dtype):
            raise ValueError(
                f"{self.dtype} labels hold at most {_max_items(self.dtype)} items, but n = "
                f"{value}; use dtype={label_dtype(value)!r}."
            )
        return super().make_node(rng, size, alpha, power, n)

    def _supp_shape_from_params(self, dist_params, param_shapes=None):
        return (dist_params[2].squeeze(),)

    def rng_fn(self, rng, alpha, power, n, size):
        """Exact draws from the pCRP partition distribution (canonical labels of ``self.dtype``)."""
        params = [np.asarray(v) for v in (alpha, power, n)]
        if any(v.size != 1 for v in params):
            raise NotImplementedError(
                "PowerCRP draws need scalar alpha, power and n; batched parameters are not "
                "supported (use size= for several draws)."
            )
        alpha, power, n = float(params[0].item()), float(params[1].item()), int(params[2].item())
        if n > _max_items(self.dtype):
            raise ValueError(f"{self.dtype} labels hold at most {_max_items(self.dtype)} items.")
        shape = () if size is None else tuple(size)
        count = int(np.prod(shape, dtype=np.int64))
        draws = sample_partitions(rng, n, alpha, power, max(count, 1))
        draws = draws.astype(self.dtype)
        return draws[0] if size is None else draws.reshape((*shape, n))


# int32 labels, for any n; PowerCRP uses an int16 copy (same op class) when n <= 32768.
power_crp = PowerCRPRV()


def n_clusters_name(model, rv) -> str:
    """Name of the ``n_clusters`` deterministic that belongs to a pCRP variable."""
    return getattr(rv.tag, "n_clusters_name", model.name_for("n_clusters"))


def _cluster_counts(value: TensorVariable, n) -> TensorVariable:
    """Cluster sizes ``counts[k] = #{i: value[i] == k}`` for labels in ``0..n-1``."""
    safe = pt.clip(value, 0, n - 1)
    return pt.zeros((n,), dtype="int64")[safe].inc(1)


class NumDistinct(Op):
    """Number of distinct values along the last axis of an integer tensor.

    ``n_clusters`` is recorded at every draw, so it is counted by a small numba
    loop rather than by a PyTensor scatter-add, which was a large part of a
    one-sweep draw at ``N = 2,000``.
    """

    __props__ = ()

    def make_node(self, x):
        """Build the node: integer tensor of at least one dimension -> int64 counts."""
        x = pt.as_tensor_variable(x)
        if x.ndim < 1 or not x.dtype.startswith(("int", "uint")):
            raise TypeError(f"NumDistinct needs an integer tensor of rank >= 1, got {x.type}.")
        out = pt.tensor(dtype="int64", shape=x.type.shape[:-1])
        return Apply(self, [x], [out])

    def perform(self, node, inputs, output_storage):
        """Count distinct values of each row (last axis)."""
        (x,) = inputs
        if x.ndim == 1:  # the deterministic of every draw: keep it cheap
            output_storage[0][0] = np.asarray(count_distinct(x), dtype=np.int64)
            return
        rows = x.reshape(-1, x.shape[-1])
        out = np.empty(rows.shape[0], dtype=np.int64)
        for j, row in enumerate(rows):
            out[j] = count_distinct(row)
        output_storage[0][0] = out.reshape(x.shape[:-1])

    def infer_shape(self, fgraph, node, shapes):
        """Shape of the batch dimensions of the input."""
        return [shapes[0][:-1]]

    def grad(self, inputs, output_grads):
        """Integer output: the gradient is zero."""
        return [inputs[0].zeros_like(dtype="floatX")]


num_distinct = NumDistinct()


def _is_canonical(value: TensorVariable, n) -> TensorVariable:
    """Whether labels are ``0..K-1`` numbered in order of first appearance.

    A stable argsort puts each label's first occurrence at the start of its run;
    the labels must then be ``0, 1, ..., K-1`` and their first occurrences
    increasing.
    """
    idx = pt.argsort(value, kind="stable")
    srt = value[idx]
    starts = pt.concatenate([pt.ones((1,), dtype="bool"), pt.neq(srt[1:], srt[:-1])])
    labels = srt[starts.nonzero()]
    first = idx[starts.nonzero()]
    contiguous = pt.all(pt.eq(labels, pt.arange(labels.shape[0])))
    ordered = pt.all(pt.gt(first[1:], first[:-1]))
    in_range = pt.all(pt.ge(value, 0)) & pt.all(pt.lt(value, n))
    return contiguous & ordered & in_range


class _LogNormaliserOfN(Op):
    """``log Z_n(alpha, r)`` with ``n`` an input: for ``n=X.shape[0]`` of a ``pm.Data`` ``X``.

    Only for ``alpha`` and ``power`` that are data (``PowerCRP`` refuses a random
    one with such an ``n``), so no gradient is needed.
    """

    __props__ = ()

    def make_node(self, alpha, power, n):
        """Build the node: float scalars ``alpha``, ``power``, integer scalar ``n``."""
        inputs = [
            pt.cast(pt.as_tensor_variable(alpha), "float64"),
            pt.cast(pt.as_tensor_variable(power), "float64"),
            pt.as_tensor_variable(n, dtype="int64"),
        ]
        return Apply(self, inputs, [pt.dscalar()])

    def perform(self, node, inputs, output_storage):
        """Evaluate :func:`~pymc_pcrp.distributions.normaliser.log_normaliser` (cached rows)."""
        alpha, power, n = inputs
        value = log_normaliser(int(n), float(alpha), float(power), "row")
        output_storage[0][0] = np.asarray(value, dtype=np.float64)

    def grad(self, inputs, output_grads):
        """Not differentiable: its inputs are data, never sampled."""
        return [grad_undefined(self, i, v) for i, v in enumerate(inputs)]


_log_normaliser_of_n = _LogNormaliserOfN()


class PowerCRP(Discrete):
    r"""Powered Chinese restaurant process prior on cluster labels.

    A partition of ``n`` items into ``K`` blocks of sizes ``n_1..n_K`` has

    .. math::

        p(z \mid \alpha, r) = \frac{\alpha^K \prod_{k=1}^K \Gamma(n_k)^r}{Z_n(\alpha, r)} .

    Its full conditionals are the pCRP seating rule of Lu, Li & Dunson (2018):
    item ``i`` joins an occupied cluster with weight :math:`n_{k,-i}^r` and a new
    one with weight :math:`\alpha`. ``power = 1`` is the ordinary CRP (the
    Dirichlet process partition), ``power > 1`` starves small clusters.

    The value is a label vector in canonical form: clusters numbered
    ``0, 1, ..., K-1`` in order of first appearance, so each partition has exactly
    one label vector; the log density is ``-inf`` for a label vector that is not
    canonical.

    ``alpha`` and ``power`` may each be a number, ``pm.Data``, or a random
    variable (any positive tensor that depends on random variables, such as
    ``pm.Gamma("alpha", 2, 1)`` or ``pm.Uniform("r", 0.8, 2.0)``).

    * When both are numbers (or built from numbers only), the log density is
      the log of the numerator above: the normalising constant
      :math:`-\log Z_n(\alpha, r)` is left out, because it is a constant of
      the model. The log density of the labels plus the data then equals the
      ``log_joint`` sample stat of :class:`~pymc_pcrp.PCRPGibbs`.
    * When either can change (``pm.Data`` or another shared variable, which
      ``pm.set_data`` changes, or a random variable), the normaliser is
      included, so that the model's log density is right for every value.
      For ``pm.Data`` it is computed from a cached Stirling row per
      ``(n, power)``, also when ``n`` is the length of a ``pm.Data`` array.
    * When either is random, the normaliser depends on it and is included
      exactly (:mod:`pymc_pcrp.distributions.normaliser`: generalised Stirling
      numbers, computed once per ``(n, power)``, for a fixed power; an
      ``O(n^2)`` recursion per evaluation for a random one). ``pm.sample``
      then draws the random variables that ``alpha`` and ``power`` are built
      from exactly from their conditional given the labels, at a cost that does
      not depend on the data's dimension (the labels enter only through ``K``
      and :math:`\sum_k \log\Gamma(n_k)`): ``alpha`` itself, with a fixed
      power, inside :class:`~pymc_pcrp.PCRPGibbs`'s own step; anything else
      with :class:`~pymc_pcrp.PCRPHyper`. The gradient in ``alpha``,
      :math:`\partial \log Z_n / \partial \alpha = E[K \mid \alpha] / \alpha`,
      is also available, for NUTS if a user assigns it; the derivative in
      ``power`` is not.

    ========  ===================================================
    Support   canonical label vectors of length ``n``
    Dtype     ``int16`` when ``n <= 32768``, ``int32`` otherwise
    ========  ===================================================

    The labels are stored compactly: their dtype is the smallest signed integer
    type that holds every label ``0..n-1`` (:func:`label_dtype`), so label draws
    kept by ``pm.sample`` or ``pm.sample_prior_predictive`` take 2 bytes per
    label up to 32,768 items and 4 bytes above.

    Inside a model the distribution also adds a deterministic ``n_clusters``
    (``"<name>_n_clusters"`` for the second and later pCRP variables of a model): the
    label-invariant number of clusters, which is what R-hat and ESS should be
    computed on.

    Parameters
    ----------
    alpha : float or TensorVariable
        Concentration, ``> 0``: the weight of a new cluster. May be a random
        variable (see above).
    power : float or TensorVariable
        Power ``r > 0`` applied to cluster sizes; ``1`` gives the CRP. May be a
        random variable (see above).
    n : int or TensorVariable
        Number of items (data points). Also sets the label dtype: ``int16`` for
        ``n <= 32768``, ``int32`` otherwise. With a fixed ``alpha`` it may be the
        length of a ``pm.Data`` array, ``n=X.shape[0]``: ``pm.set_data`` can then
        give ``X`` another number of rows and the labels follow (``int32`` labels);
        docs/entry_points.md shows the pattern.
    max_clusters : int, optional
        At most this many clusters ``K >= 1``, with labels that are *slots*
        ``0..K-1`` rather than canonical labels: cluster parameters of shape
        ``(K, ...)`` are then ordinary PyMC variables indexed by the labels, for
        any likelihood, and ``pm.sample`` updates the labels with
        :class:`~pymc_pcrp.PCRPSlotGibbs`. The prior is the pCRP restricted to
        at most ``K`` clusters, each partition's ``K! / (K - k)!`` assignments of
        its ``k`` blocks to slots equally likely
        (:mod:`pymc_pcrp.distributions.slots`); its log density includes the
        exact normaliser. Needs a fixed ``alpha`` and ``power`` and an integer
        ``n``. docs/any_likelihood.md shows the pattern.

    Examples
    --------
    .. code-block:: python

        with pm.Model():
            z = pcrp.PowerCRP("z", alpha=1.0, power=1.5, n=len(X))
            pcrp.NIWMixture("x", z=z, prior=pcrp.NIWPrior.from_data(X), observed=X)
            idata = pm.sample()

        # alpha and r with priors: pm.sample uses PCRPHyper for them, PCRPGibbs for z
        # (alpha with a fixed power: PCRPGibbs updates alpha and z together)
        with pm.Model():
            alpha = pm.Gamma("alpha", 2.0, 1.0)
            r = pm.Uniform("r", 0.8, 2.0)
            z = pcrp.PowerCRP("z", alpha=alpha, power=r, n=len(X))
            pcrp.NIWMixture("x", z=z, prior=pcrp.NIWPrior.from_data(X), observed=X)
            idata = pm.sample()

        # any likelihood: at most 20 clusters, cluster rates as ordinary variables
        with pm.Model():
            z = pcrp.PowerCRP("z", alpha=1.0, power=1.2, n=len(y), max_clusters=20)
            lam = pm.Gamma("lam", 2.0, 0.5, shape=20)
            pm.Poisson("y", lam[z], observed=y)
            idata = pm.sample()

    References
    ----------
    .. [1] Lu, J., Li, M. and Dunson, D. (2018). "Reducing over-clustering via the
       powered Chinese restaurant process". arXiv:1802.05392 (ICML 2018).
    """

    rv_type = PowerCRPRV

    @classmethod
    def rv_op(cls, alpha, power, n, *, size=None, rng=None):
        """Create the random variable with the label dtype of ``n`` (:func:`label_dtype`)."""
        return power_crp(alpha, power, n, size=size, rng=rng, dtype=label_dtype(n))

    def __new__(cls, name, *args, **kwargs):
        """Register the variable and its ``n_clusters`` deterministic in the current model."""
        rv = super().__new__(cls, name, *args, **kwargs)
        _register_n_clusters(rv)
        if isinstance(rv.owner.op, PowerCRPRV):  # with max_clusters, alpha and power are fixed
            _mark_hyperparameters(rv)
        return rv

    @classmethod
    def dist(cls, alpha, power, n, max_clusters=None, **kwargs):
        """Create the distribution outside a model (see the class docstring)."""
        if max_clusters is not None:
            return PowerCRPSlots.dist(alpha, power, n, max_clusters, **kwargs)
        for arg, arg_name in ((alpha, "alpha"), (power, "power")):
            if not isinstance(arg, TensorVariable):
                check_positive_scalar(arg, arg_name)
        if isinstance(n, TensorVariable):
            n = _tensor_n(n, alpha, power)
        else:
            if int(np.asarray(n)) != np.asarray(n) or int(np.asarray(n)) < 1:
                raise ValueError(
                    f"Argument 'n' of PowerCRP must be a positive integer, but got {n!r}."
                )
            n = int(np.asarray(n))
        alpha = pt.as_tensor_variable(alpha, dtype="float64")
        power = pt.as_tensor_variable(power, dtype="float64")
        if alpha.ndim != 0 or power.ndim != 0:
            raise ValueError("Arguments 'alpha' and 'power' of PowerCRP must be scalars.")
        return super().dist([alpha, power, n], **kwargs)

    @staticmethod
    def support_point(rv, size, alpha, power, n):
        """All items in one cluster: a canonical label vector of zeros."""
        zeros = pt.zeros((n,), dtype=rv.dtype)
        if not rv_size_is_none(size):
            zeros = pt.full((*size, n), 0, dtype=rv.dtype)
        return zeros

    @staticmethod
    def logp(value, alpha, power, n):
        """``K log(alpha) + power * sum_k log Gamma(n_k)``, minus ``log Z_n`` if a parameter varies.

        The normaliser is included exactly when ``alpha`` or ``power`` is not
        built from constants only (a ``pm.Data``, shared or random one can
        change); ``-inf`` off the support.
        """
        counts = _cluster_counts(value, n)
        occupied = pt.gt(counts, 0)
        n_blocks = pt.sum(occupied)
        log_gamma = pt.switch(occupied, pt.gammaln(pt.maximum(counts, 1)), 0.0)
        res = n_blocks * pt.log(alpha) + power * pt.sum(log_gamma)
        if not (is_constant(alpha) and is_constant(power)):
            # a fixed power: Stirling rows (cheap for many alphas); a random one: the
            # O(n^2) recursion, which keeps nothing per power
            method = "row" if is_fixed(power) else "recursion"
            n_items = _constant_n(n)
            if n_items is None:  # n=X.shape[0] of a pm.Data X; alpha and power are data too
                res = res - _log_normaliser_of_n(alpha, power, n)
            else:
                res = res - PCRPLogNormaliser(n_items, method)(alpha, power)
        res = pt.switch(_is_canonical(value, n), res, -np.inf)
        return check_parameters(res, alpha > 0, power > 0, msg="alpha > 0, power > 0")


def _mark_hyperparameters(rv: TensorVariable) -> None:
    """Tag the free random variables that ``alpha`` and ``power`` are built from.

    A free random variable of the model reached from ``alpha`` or ``power``
    without passing through another random variable (``alpha`` itself, or
    ``log_alpha`` in ``alpha=pt.exp(log_alpha)``, but not the parameters of
    ``alpha``'s own prior) gets ``tag.pcrp_hyperparameter = True``, so that
    :class:`~pymc_pcrp.PCRPHyper` can claim it in ``pm.sample``'s step
    assignment, whose competence test sees the variable but not the model.
    ``alpha`` itself, when free and the power is fixed, also gets
    ``tag.pcrp_gibbs_alpha = True``: :class:`~pymc_pcrp.PCRPGibbs` then claims
    it, to update it inside its own step.
    """
    model = modelcontext(None)
    free = set(model.free_RVs)
    alpha, power, _ = rv.owner.op.dist_params(rv.owner)
    if alpha in free:
        # ``alpha`` itself free, free labels and a fixed power: PCRPGibbs may update
        # alpha in its own step (pymc_pcrp.step_methods._alpha_update checks the whole
        # model when sampling starts); a second PowerCRP with the same alpha withdraws it.
        before = getattr(alpha.tag, "pcrp_gibbs_alpha", None)
        alpha.tag.pcrp_gibbs_alpha = before is None and rv in free and is_fixed(power)
    stack = [alpha, power]
    seen: set[int] = set()
    while stack:
        var = stack.pop()
        if id(var) in seen:
            continue
        seen.add(id(var))
        if var in free:
            var.tag.pcrp_hyperparameter = True
        elif var.owner is not None and not isinstance(var.owner.op, RandomVariable):
            stack.extend(var.owner.inputs)


def _tensor_n(n: TensorVariable, alpha, power) -> TensorVariable | int:
    """Check a tensor ``n`` (such as ``X.shape[0]`` of a ``pm.Data`` ``X``); return it.

    A constant tensor gives its integer value. A varying ``n`` lets ``pm.set_data``
    change the number of points (the labels follow), but only with a fixed
    ``alpha`` and ``power``: a random one needs the normaliser ``log Z_n`` for one ``n``.
    """
    if n.ndim != 0 or not n.dtype.startswith(("int", "uint")):
        raise ValueError(
            "Argument 'n' of PowerCRP must be a positive integer or an integer scalar tensor "
            f"(such as X.shape[0] of a pm.Data X), but got {n.type}."
        )
    if depends_on_random_variable(n):
        raise ValueError("Argument 'n' of PowerCRP must not depend on a random variable.")
    value = _constant_n(n)
    if value is not None:
        if value < 1:
            raise ValueError(f"Argument 'n' of PowerCRP must be positive, but got {value}.")
        return value
    for arg, arg_name in ((alpha, "alpha"), (power, "power")):
        if isinstance(arg, TensorVariable) and depends_on_random_variable(arg):
            raise ValueError(
                f"A PowerCRP with a random '{arg_name}' needs a fixed number of items: pass "
                "n=len(X) (an integer), and build a new model for data of another length. Only "
                "a fixed alpha and power allow n=X.shape[0] with X a pm.Data that pm.set_data "
                "may resize."
            )
    return n


def _register_n_clusters(rv: TensorVariable) -> None:
    """Add the label-invariant ``n_clusters`` deterministic for a new pCRP variable.

    The first pCRP variable of a model gets ``n_clusters``; every later one gets
    ``<name>_n_clusters``. An existing variable is never renamed: a name, once
    given, is what the user's code and the stored traces refer to.
    :func:`n_clusters_name` gives the name for any pCRP variable.
    """
    model = modelcontext(None)
    plain = model.name_for("n_clusters")
    short = rv.name.split("::")[-1]
    base = "n_clusters" if plain not in model.named_vars else f"{short}_n_clusters"
    det = Deterministic(base, num_distinct(rv))
    rv.tag.n_clusters_name = det.name
