r"""Cluster probabilities of new observations for slot labels, ``PowerCRP(..., max_clusters=K)``.

:func:`predict_slots` is the counterpart of :func:`~pymc_pcrp.posterior.prediction.predict`
for a model whose cluster parameters are ordinary PyMC variables indexed by slot
labels (``pm.Poisson("y", lam[z], observed=y)``).

**Within one draw.** Given the draw's slot labels of the ``N`` training points
and its parameters :math:`\theta_1..\theta_K`, a new observation ``y`` joins
occupied slot ``s`` or a new cluster with probabilities

.. math::

    p_t(s \mid y) \propto n_s^r \, p(y \mid \theta_s), \qquad
    p_t(\text{new} \mid y) \propto \alpha \, \frac{1}{K - k}
        \sum_{s \text{ empty}} p(y \mid \theta_s),

``k`` the number of occupied slots. This is the label step's seating rule
for one more point (each empty slot has weight ``alpha / (K - k)``). The
parameters of an empty slot are draws from their prior given the rest of the
draw, so the average of the likelihood over the empty slots is a Monte Carlo
estimate, with ``K - k`` draws, of the prior predictive density of a new
cluster; averaging over draws makes it an unbiased one. It rests on few prior
draws, though: for a value far in the tail of the prior predictive, where they
rarely land, it is usually much too small, and the new-cluster probability of
such an outlier is then underestimated. ``prior_draws`` adds fresh prior draws
of the per-slot parameters at the empty slots, given the draw's other
variables, to the average. A draw that
occupies all ``K`` slots gives a new cluster probability 0, as the truncated
model does.

**From slots to clusters, and over draws.** As in
:func:`~pymc_pcrp.posterior.prediction.predict`, slot ``s`` is translated into
the clusters ``c`` of a point estimate of the training partition by the
overlap fractions :math:`|s \cap c| / |s|`, and the result is averaged over
the draws used.

**The likelihood.** :math:`p(y \mid \theta_s)` comes from the graph of the
model's own observed variable: its elementwise log density with the labels
replaced by a vector of slots and the observed values by the new ones,
compiled once and called once per draw for all ``K x M`` pairs of a slot and
a new row. This needs each row's likelihood to depend on nothing of length
``N`` but its label and its value; a likelihood with covariates, per-point
random effects or several rows per clustered unit is refused.
"""

from __future__ import annotations

import arviz as az
import numpy as np
import pytensor
import pytensor.tensor as pt

from pymc.model.transform.conditioning import remove_value_transforms
from pymc.sampling.forward import compile_forward_sampling_function
from pytensor.graph.traversal import ancestors, toposort
from pytensor.tensor.basic import Alloc
from pytensor.tensor.exceptions import NotScalarConstantError
from pytensor.tensor.shape import SpecifyShape
from scipy.special import logsumexp

from pymc_pcrp._idata import draw_indices
from pymc_pcrp.distributions.slots import PowerCRPSlotsRV
from pymc_pcrp.posterior.prediction import PredictResult, prediction_result, training_partition
from pymc_pcrp.posterior.similarity import PointEstimate, point_estimate
from pymc_pcrp.step_methods._slot_likelihood import depends_on, slot_parameters, unit_index

__all__ = ["SlotPredictor", "predict_slots"]

# Seed of the point-estimate search when predict_slots() computes the point estimate itself.
_POINT_ESTIMATE_SEED = 0


def _refusal(name: str, labels: str, why: str) -> ValueError:
    """Error for an observed variable whose likelihood of new rows cannot be evaluated."""
    return ValueError(
        f"predict_slots cannot evaluate the likelihood of new rows of '{name}': its log "
        f"density {why}. Prediction needs each row's likelihood to depend on nothing but its "
        f"own label and value and the cluster parameters (such as y ~ Poisson(lam[{labels}])), "
        "so that a new row can be scored under every slot."
    )


def _labels_variable(model, labels: str | None):
    """Return the model's ``PowerCRP(..., max_clusters=K)`` variable (named, or the only one)."""
    found = [
        rv for rv in model.free_RVs if isinstance(getattr(rv.owner, "op", None), PowerCRPSlotsRV)
    ]
    if labels is not None:
        chosen = [rv for rv in found if rv.name == labels]
        if not chosen:
            raise ValueError(
                f"Argument 'labels' is {labels!r}, but the model's PowerCRP variables with "
                f"max_clusters are {[rv.name for rv in found]}."
            )
        return chosen[0]
    if len(found) != 1:
        raise ValueError(
            "predict_slots needs a model with one PowerCRP variable built with max_clusters, "
            f"but the model has {[rv.name for rv in found]}; name it with "
            "'labels='."
            if found
            else "predict_slots needs a model with a PowerCRP variable built with max_clusters; "
            "the model has none (for a NIWMixture model use pymc_pcrp.predict)."
        )
    return found[0]


def _rebuild(outputs, replace: dict, value_shape: tuple, rows):
    """Rebuild ``outputs`` with ``replace`` applied, for a new number of rows.

    Nodes are made again by their ops, so that static shapes (the ``N`` of the
    training data) are inferred anew from the replacements. ``SpecifyShape``
    checks are dropped, and an ``Alloc`` to the fixed shape of the training
    values, or its leading part (PyMC broadcasts a log density to its value's
    shape), allocates ``len(rows)`` rows instead.
    """
    memo = dict(replace)
    for node in toposort(outputs):
        inputs = [memo.get(i, i) for i in node.inputs]
        if all(new is old for new, old in zip(inputs, node.inputs, strict=True)):
            continue
        if isinstance(node.op, SpecifyShape):
            memo[node.outputs[0]] = inputs[0]
            continue
        if isinstance(node.op, Alloc) and all(
            new is old for new, old in zip(inputs[1:], node.inputs[1:], strict=True)
        ):
            try:
                shape = tuple(int(pt.get_underlying_scalar_constant_value(d)) for d in inputs[1:])
            except NotScalarConstantError:
                shape = None
            if shape and shape == value_shape[: len(shape)]:
                memo[node.outputs[0]] = pt.alloc(inputs[0], rows.shape[0], *inputs[2:])
                continue
        new_node = node.op.make_node(*inputs)
        memo.update(zip(node.outputs, new_node.outputs, strict=True))
    return [memo.get(o, o) for o in outputs]


class SlotPredictor:
    """The log-likelihood of new rows under every slot, from the model's observed variable.

    Parameters
    ----------
    model : pymc.Model
        A model with a ``PowerCRP(..., max_clusters=K)`` label variable and one
        observed variable whose likelihood depends on the labels.
    labels : str, optional
        Name of the label variable, if the model has several.

    Attributes
    ----------
    observed : str
        Name of the observed variable.
    labels : str
        Name of the label variable.
    inputs : list of str
        The model variables (constrained values) the likelihood reads.
    n_points, n_slots : int
        ``N`` and ``K``.

    Raises
    ------
    ValueError
        If the model has no such label variable, if no observed variable or
        several depend on the labels, or if a ``pm.Potential`` or an
        unobserved variable does, or if the observed variable's likelihood has
        several rows per clustered unit or is one number for all rows.
    """

    def __init__(self, model, labels: str | None = None):
        labels_rv = _labels_variable(model, labels)
        self.labels = labels_rv.name
        alpha, power, n, max_clusters = labels_rv.owner.op.dist_params(labels_rv.owner)
        self.n_points = int(pt.get_underlying_scalar_constant_value(n))
        self.n_slots = int(pt.get_underlying_scalar_constant_value(max_clusters))
        self._prior = pytensor.function([], [alpha, power])
        plain = remove_value_transforms(model)
        z_value = plain.rvs_to_values[plain[self.labels]]
        for pot, graph in zip(
            plain.potentials, plain.replace_rvs_by_values(plain.potentials), strict=True
        ):
            if depends_on(graph, z_value):
                raise ValueError(
                    f"predict_slots cannot predict new rows: the pm.Potential '{pot.name}' "
                    f"depends on the labels '{self.labels}', and what it would add for a new "
                    "row is not defined. Write the terms of the labels as observed variables."
                )
        hits = []
        for rv in plain.basic_RVs:
            if rv.name == self.labels:
                continue
            (term,) = plain.logp(vars=[rv], jacobian=False, sum=False)
            if depends_on(term, z_value):
                hits.append((rv, term))
        unobserved = [rv.name for rv, _ in hits if rv not in plain.observed_RVs]
        if unobserved:
            raise ValueError(
                f"predict_slots cannot predict new rows: the unobserved variable(s) {unobserved} "
                f"depend on the labels '{self.labels}', so the likelihood of a new row would "
                "need their values for it. Only a model whose labels enter observed variables "
                "alone can be used."
            )
        if len(hits) != 1:
            raise ValueError(
                f"predict_slots needs exactly one observed variable that depends on the labels "
                f"'{self.labels}', but the model has {[rv.name for rv, _ in hits]}."
            )
        ((y_rv, term),) = hits
        self.observed = y_rv.name
        y_value = plain.rvs_to_values[y_rv]
        if term.ndim == 0:
            raise _refusal(self.observed, self.labels, "is one number for all rows")
        if unit_index(term, z_value) is not None:
            raise _refusal(
                self.observed,
                self.labels,
                f"reads the labels as {self.labels}[unit] (several rows per clustered unit)",
            )
        self._value_shape = tuple(np.shape(y_value.eval()))
        self._value_dtype = np.dtype(y_value.dtype)
        self._training_y = np.asarray(y_value.eval())
        self._slots_dtype = np.dtype(z_value.dtype)
        slots = pt.vector("slots", dtype=z_value.dtype)
        rows = pt.tensor("rows", dtype=y_value.dtype, shape=(None, *y_value.type.shape[1:]))
        (new_term,) = _rebuild([term], {z_value: slots, y_value: rows}, self._value_shape, rows)
        if new_term.ndim > 1:
            new_term = pt.sum(new_term, axis=tuple(range(1, new_term.ndim)))
        others = [
            v
            for v in plain.value_vars
            if v is not z_value and any(a is v for a in ancestors([new_term]))
        ]
        self.inputs = [v.name for v in others]
        self._fn = pytensor.function(
            [slots, rows, *others], new_term, on_unused_input="ignore", allow_input_downcast=True
        )

    def prior(self) -> tuple[float, float]:
        """Return the concentration ``alpha`` and the power ``r`` of the labels' prior."""
        alpha, power = self._prior()
        return float(alpha), float(power)

    def check_rows(self, y_new) -> np.ndarray:
        """``y_new`` as an array of shape ``(M, ...)``, the trailing shape of the observed data."""
        arr = np.asarray(y_new)
        trailing = self._value_shape[1:]
        if arr.ndim == len(trailing):
            arr = arr[None] if trailing else arr.reshape(-1)
        if arr.ndim != len(self._value_shape) or arr.shape[1:] != trailing:
            raise ValueError(
                f"Argument 'y_new' must have shape (M, {', '.join(map(str, trailing))}) like the "
                f"observed '{self.observed}' of shape {self._value_shape}, but got {arr.shape}."
                if trailing
                else f"Argument 'y_new' must be a vector of new values of '{self.observed}' (shape "
                f"(M,)), but got shape {arr.shape}."
            )
        if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
            raise ValueError("Argument 'y_new' contains NaN or infinite values.")
        cast = arr.astype(self._value_dtype)
        if arr.dtype.kind == "f" and self._value_dtype.kind in "iu" and np.any(cast != arr):
            raise ValueError(
                f"Argument 'y_new' holds non-integer values, but '{self.observed}' is "
                f"{self._value_dtype} data."
            )
        return cast

    def loglik(self, params: dict, y_new: np.ndarray) -> np.ndarray:
        """``loglik[s, j]``: the log-likelihood of new row ``j`` in slot ``s`` (one call)."""
        m = y_new.shape[0]
        slots = np.repeat(np.arange(self.n_slots), m)
        rows = np.tile(y_new, (self.n_slots,) + (1,) * (y_new.ndim - 1))
        out = np.asarray(self._call(slots, rows, params), dtype=np.float64)
        return out.reshape(self.n_slots, m)

    def _call(self, slots: np.ndarray, rows: np.ndarray, params: dict) -> np.ndarray:
        return self._fn(slots.astype(self._slots_dtype), rows, *(params[k] for k in self.inputs))

    def check_new_rows(self, params: dict) -> None:
        """Refuse a likelihood whose new rows do not each get their own entry.

        The likelihood is evaluated at ``N + 1`` and ``N + 2`` rows (training
        values, random slots): a term that combines the rows with other
        length-``N`` arrays (covariates, per-point variables) then fails or
        gives the wrong number of entries, and one that mixes rows gives
        different values to the common rows.
        """
        rng = np.random.default_rng(0)
        n = self.n_points
        pick = rng.integers(0, n, size=n + 2)
        values = self._training_y[pick]
        slots = rng.integers(0, self.n_slots, size=n + 2)
        got = []
        for size in (n + 1, n + 2):
            try:
                out = np.asarray(self._call(slots[:size], values[:size], params))
            except Exception as err:  # any failure: the rows cannot be scored one by one
                raise _refusal(
                    self.observed,
                    self.labels,
                    "depends on other length-N inputs (covariates, per-point variables or "
                    f"several rows per unit): scoring {size} new rows failed with "
                    f"{type(err).__name__}: {str(err).splitlines()[0]}",
                ) from None
            if out.shape != (size,):
                raise _refusal(
                    self.observed,
                    self.labels,
                    f"gives {out.shape} entries for {size} new rows, not one per row (it depends "
                    "on other length-N inputs such as covariates)",
                )
            got.append(out)
        if not np.allclose(got[0], got[1][: n + 1], equal_nan=True):
            raise _refusal(self.observed, self.labels, "depends on the other rows")


class _FreshSlots:
    """Draws of the per-slot parameters from their prior, given a posterior draw of the rest."""

    def __init__(self, model, labels: str, inputs: list[str], random_seed):
        slot_rvs = [rv for rv in slot_parameters(model, model[labels]) if rv.name in inputs]
        self.names = [rv.name for rv in slot_rvs]
        if not slot_rvs:
            self._fn = None
            self.reads = []
            return
        in_trace = [rv for rv in model.free_RVs if all(rv is not s for s in slot_rvs)]
        self._fn, _ = compile_forward_sampling_function(
            outputs=slot_rvs,
            vars_in_trace=in_trace,
            basic_rvs=model.basic_RVs,
            random_seed=random_seed,
            allow_input_downcast=True,
        )
        self.reads = [i.variable.name for i in self._fn.maker.inputs if not i.shared]

    def __call__(self, values: dict) -> dict:
        """One draw of every per-slot parameter, ``name -> (K, ...)``."""
        if self._fn is None:
            return {}
        out = self._fn(**{k: values[k] for k in self.reads})
        out = out if isinstance(out, list | tuple) else [out]
        return dict(zip(self.names, (np.asarray(o) for o in out), strict=True))


def _posterior_params(
    idata: az.InferenceData, predictor: SlotPredictor, labels: str, extra: list[str]
):
    """Return the label draws ``(T, N)`` and the parameters the likelihood reads (``(T, ...)``)."""
    post = idata.posterior
    for name in [labels, *predictor.inputs]:
        if name not in post:
            raise ValueError(
                f"'{name}' is not a posterior variable of idata, but the likelihood of "
                f"'{predictor.observed}' reads it; the posterior has {sorted(post.data_vars)}."
            )
    z = np.asarray(post[labels].values)
    if z.shape[-1] != predictor.n_points:
        raise ValueError(
            f"The label draws of '{labels}' cover {z.shape[-1]} points, but the model has "
            f"n={predictor.n_points}: pass the model the posterior was sampled from."
        )
    n_chains, n_draws = z.shape[:2]
    for name in extra:
        if name not in post:
            raise ValueError(
                f"'{name}' is not a posterior variable of idata, but the prior of the slot "
                f"parameters reads it (for prior_draws); the posterior has "
                f"{sorted(post.data_vars)}."
            )
    params = {
        name: np.asarray(post[name].values).reshape(n_chains * n_draws, *post[name].shape[2:])
        for name in dict.fromkeys([*predictor.inputs, *extra])
    }
    return z.reshape(n_chains * n_draws, -1).astype(np.int64), params, (n_chains, n_draws)


def predict_slots(
    idata: az.InferenceData,
    model,
    y_new,
    *,
    labels: str | None = None,
    point: PointEstimate | np.ndarray | None = None,
    max_draws: int | None = None,
    prior_draws: int = 0,
    random_seed=None,
) -> PredictResult:
    """Posterior probability that each new observation joins each training cluster or a new one.

    For slot labels (``PowerCRP(..., max_clusters=K)``) and any elementwise
    likelihood of parameters indexed by the labels. In every draw used, a new
    row ``y`` joins occupied slot ``s`` with weight ``n_s^r p(y | theta_s)`` and
    a new cluster with weight ``alpha`` times the mean of ``p(y | theta_s)``
    over the empty slots (whose parameters are prior draws); the slots are
    translated into the clusters of the training partition ``point`` by the
    overlap of their members, and the result is averaged over draws (see the
    module docstring, also for the limits of the new-cluster estimate).

    Parameters
    ----------
    idata : arviz.InferenceData
        Output of ``pm.sample`` on ``model``.
    model : pymc.Model
        The model the posterior was sampled from. Its observed variable that
        depends on the labels gives the likelihood of the new rows; it must
        depend on nothing of length ``N`` but the labels and the observed
        values (no covariates, per-point variables or several rows per unit).
    y_new : array_like, shape (M, ...)
        New values of that observed variable; the trailing shape is that of
        the observed data (``(M,)`` for a vector).
    labels : str, optional
        Name of the label variable, needed only if the model has several.
    point : PointEstimate or array_like of int, shape (N,), optional
        The partition of the training points whose clusters the columns refer
        to. Defaults to ``point_estimate(idata, var_name=labels, random_seed=0)``.
        Labels must be ``>= 0``.
    max_draws : int, optional
        Use at most this many draws, evenly spaced through the chains
        (concatenated); all draws by default. The cost is one compiled call of
        ``K * M`` rows per draw.
    prior_draws : int, default=0
        Fresh draws of the per-slot parameters from their prior (given each
        posterior draw of the other variables, with PyMC's forward sampler) to
        add to the empty slots' values in the new-cluster estimate: each adds
        ``K - k`` prior draws per posterior draw (their values at the draw's
        empty slots), at the cost of one more compiled call. Raise it when an
        outlier's new-cluster probability matters (see the module docstring).
        The per-slot parameters' prior must not depend on the labels.
    random_seed : int or numpy.random.Generator, optional
        Seed of the ``prior_draws``.

    Returns
    -------
    PredictResult
        ``probabilities`` of shape ``(M, C + 1)``, the ``C`` clusters of
        ``point`` and, last, a new cluster; ``labels``, the most probable
        option per row (``-1`` for a new cluster).

    Raises
    ------
    ValueError
        If the model has no slot labels, if the likelihood of new rows cannot
        be evaluated (naming the variable and the reason), if ``y_new`` has the
        wrong shape or values, or ``idata`` lacks a variable the likelihood
        reads.

    Examples
    --------
    .. code-block:: python

        with pm.Model() as model:
            z = pcrp.PowerCRP("z", alpha=1.0, power=1.2, n=len(y), max_clusters=20)
            lam = pm.Gamma("lam", 2.0, 0.5, shape=20)
            pm.Poisson("y", lam[z], observed=y)
            idata = pm.sample()
        result = pcrp.predict_slots(idata, model, [3, 41, 95])
        result.probabilities  # (3, C + 1); the last column is "a new cluster"
    """
    predictor = SlotPredictor(model, labels)
    name = predictor.labels
    rows = predictor.check_rows(y_new)
    if int(prior_draws) != prior_draws or prior_draws < 0:
        raise ValueError(
            f"Argument 'prior_draws' must be an integer >= 0, but got {prior_draws!r}."
        )
    fresh = _FreshSlots(model, name, predictor.inputs, random_seed) if prior_draws else None
    extra = [k for k in fresh.reads if k != name] if fresh is not None else []
    draws, params, shape = _posterior_params(idata, predictor, name, extra)
    n = predictor.n_points
    if draws.size and (draws.min() < 0 or draws.max() >= predictor.n_slots):
        raise ValueError(
            f"The label draws of '{name}' go outside the slots 0..{predictor.n_slots - 1}: pass "
            "the model the posterior was sampled from."
        )
    chosen = draw_indices(shape[0], shape[1], max_draws)
    predictor.check_new_rows({k: v[chosen[0]] for k, v in params.items()})
    if point is None:
        point = point_estimate(idata, var_name=name, random_seed=_POINT_ESTIMATE_SEED)
    training = training_partition(point, idata, n)
    cluster_labels, training_index = np.unique(training, return_inverse=True)
    n_clusters = cluster_labels.size
    alpha, power = predictor.prior()
    k_slots = predictor.n_slots
    total = np.zeros((rows.shape[0], n_clusters + 1))
    for index in chosen:
        z = draws[index]
        values = {k: v[index] for k, v in params.items()}
        loglik = predictor.loglik(values, rows)
        counts = np.bincount(z, minlength=k_slots)
        occupied = counts > 0
        log_score = np.full((k_slots + 1, rows.shape[0]), -np.inf)
        log_score[:k_slots][occupied] = power * np.log(counts[occupied])[:, None] + loglik[occupied]
        if not occupied.all():
            empty = [loglik[~occupied]]
            for _ in range(int(prior_draws)):
                redrawn = predictor.loglik({**values, **fresh({**values, name: z})}, rows)
                empty.append(redrawn[~occupied])
            empty = np.concatenate(empty)
            log_score[-1] = np.log(alpha) + logsumexp(empty, axis=0) - np.log(empty.shape[0])
        rule = np.exp(log_score - logsumexp(log_score, axis=0, keepdims=True))
        overlap = np.zeros((k_slots, n_clusters))
        np.add.at(overlap, (z, training_index), 1.0)
        overlap[occupied] /= counts[occupied][:, None]
        total[:, :-1] += rule[:-1].T @ overlap
        total[:, -1] += rule[-1]
    return prediction_result(total, chosen.size, cluster_labels, training)
