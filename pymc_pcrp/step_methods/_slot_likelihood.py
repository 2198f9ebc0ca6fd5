"""Every point's log-likelihood under every slot, from the model's own graph, in one call.

:class:`SlotLikelihood` finds the model terms whose log density depends on the
slot labels ``z`` of a ``PowerCRP(..., max_clusters=K)`` (observed variables,
and any other random variable built from ``z``), replaces ``z`` in their
elementwise log densities by the ``(K, N)`` matrix whose row ``s`` is slot ``s``
for every point (:func:`pytensor.graph.replace.vectorize_graph`), and compiles
the sum of the results into one function of the other variables. Row ``s``,
column ``i`` is then the log-likelihood of point ``i`` in slot ``s``, which is
exact only when point ``i``'s terms depend on the labels through ``z[i]`` alone:
:meth:`SlotLikelihood.check_independence` tests that at construction and refuses
a model where it fails, naming the variable.
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt

from pytensor.graph.replace import vectorize_graph
from pytensor.graph.traversal import ancestors
from pytensor.tensor.random.op import RandomVariable
from pytensor.tensor.subtensor import AdvancedSubtensor, AdvancedSubtensor1

from pymc_pcrp.distributions.normaliser import is_fixed

__all__ = ["SlotLikelihood", "depends_on", "slot_parameters", "unit_index"]


def depends_on(var, target) -> bool:
    """Whether ``target`` is an ancestor of ``var``."""
    return any(a is target for a in ancestors([var]))


def slot_parameters(model, labels_rv) -> list:
    """Return the free random variables that the slot labels index (``lam`` in ``lam[z]``).

    A variable counts when it is reached, without passing through another
    random variable, from a tensor indexed by an index built from the labels.
    Their values are per slot, so their R-hat and summaries mean something only
    after relabelling (:func:`pymc_pcrp.relabel_slots`).

    Parameters
    ----------
    model : pymc.Model
        The model.
    labels_rv : TensorVariable
        A ``PowerCRP(..., max_clusters=K)`` random variable of the model.

    Returns
    -------
    list
        The free random variables, in the model's order.
    """
    free = [rv for rv in model.free_RVs if rv is not labels_rv]
    hit: set[int] = set()
    for var in ancestors(model.basic_RVs + model.deterministics + model.potentials):
        owner = var.owner
        if owner is None or not isinstance(owner.op, AdvancedSubtensor | AdvancedSubtensor1):
            continue
        source, *indices = owner.inputs
        if not any(depends_on(i, labels_rv) for i in indices):
            continue
        stack, seen = [source], set()
        while stack:
            node = stack.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            if any(node is rv for rv in free):
                hit.add(id(node))
            elif node.owner is not None and not isinstance(node.owner.op, RandomVariable):
                stack.extend(node.owner.inputs)
    return [rv for rv in free if id(rv) in hit]


def unit_index(term, value):
    """Return ``unit`` if the labels enter ``term`` only as ``value[unit]`` (fixed), else None.

    That is the pattern of several rows per clustered point (``lam[z[unit]]``,
    ``unit[j]`` the point that owns row ``j``): the rows of point ``i`` are then
    summed into its entry.
    """
    users = {
        id(var.owner): var.owner
        for var in ancestors([term])
        if var.owner is not None and any(inp is value for inp in var.owner.inputs)
    }
    if not users:
        return None
    for node in users.values():
        if not (
            isinstance(node.op, AdvancedSubtensor | AdvancedSubtensor1)
            and len(node.inputs) == 2
            and node.inputs[0] is value
            and node.inputs[1].ndim == 1
            and node.inputs[1].dtype.startswith(("int", "uint"))
            and is_fixed(node.inputs[1])
        ):
            return None
    (node, *rest) = users.values()
    if any(other.inputs[1] is not node.inputs[1] for other in rest):
        return None
    return node.inputs[1]


def _refusal(name: str, labels: str, why: str) -> ValueError:
    """Error for a term whose points are not conditionally independent given the labels."""
    return ValueError(
        f"PCRPSlotGibbs cannot update '{labels}': the log density of '{name}' {why}. The label "
        f"step needs each point's terms to depend on '{labels}' only through its own label "
        f"(such as y ~ Poisson(lam[{labels}]), elementwise, one entry per point), so that the "
        "points are conditionally independent given the labels and the cluster parameters."
    )


class SlotLikelihood:
    """The ``(K, N)`` log-likelihood matrix of a slot label vector, compiled once.

    Parameters
    ----------
    model : pymc.Model
        The model.
    labels_rv : TensorVariable
        The ``PowerCRP(..., max_clusters=K)`` random variable.
    n_points, n_slots : int
        ``N`` and ``K``.
    compile_kwargs : dict, optional
        Passed to :meth:`pymc.Model.compile_fn`.

    Raises
    ------
    ValueError
        If a ``pm.Potential`` depends on the labels, or a term's elementwise log
        density does not have one entry per point along its first axis. A
        model with no term that depends on the labels gives a matrix of zeros
        (the labels then follow their prior).
    """

    def __init__(self, model, labels_rv, n_points: int, n_slots: int, compile_kwargs=None):
        self.labels_value = model.rvs_to_values[labels_rv]
        self.labels_name = labels_rv.name
        self.n_points, self.n_slots = int(n_points), int(n_slots)
        compile_kwargs = dict(compile_kwargs or {})
        value = self.labels_value
        for pot, graph in zip(
            model.potentials, model.replace_rvs_by_values(model.potentials), strict=True
        ):
            if depends_on(graph, value):
                raise _refusal(pot.name, self.labels_name, "is a pm.Potential built from them")
        names, terms = [], []
        for rv in model.basic_RVs:
            if rv is labels_rv:
                continue
            (term,) = model.logp(vars=[rv], jacobian=False, sum=False)
            if not depends_on(term, value):
                continue
            if term.ndim == 0:
                raise _refusal(rv.name, self.labels_name, "is one number for all points")
            unit = unit_index(term, value)
            static = term.type.shape[0]
            if unit is None and static is not None and static != self.n_points:
                raise _refusal(
                    rv.name,
                    self.labels_name,
                    f"has {static} entries, not one per point (for several rows per point, "
                    f"index the labels by a fixed array of row owners: lam[{self.labels_name}"
                    "[unit]])",
                )
            names.append(rv.name)
            terms.append((term, unit))
        self.term_names = names
        if not terms:  # no likelihood: the labels follow their prior
            self._matrices = self._per_point_fn = None
            return
        slots = pt.arange(self.n_slots, dtype=value.dtype)[:, None]
        grid = pt.broadcast_to(slots, (self.n_slots, self.n_points))
        per_point = [self._per_point(t, unit) for t, unit in terms]
        batched = vectorize_graph(per_point, replace={value: grid})
        self._others = [v.name for v in model.value_vars if v is not value]
        self._all = [v.name for v in model.value_vars]
        self._matrices = model.compile_fn(
            batched,
            inputs=[v for v in model.value_vars if v is not value],
            point_fn=False,
            on_unused_input="ignore",
            **compile_kwargs,
        )
        self._per_point_fn = model.compile_fn(
            per_point,
            inputs=model.value_vars,
            point_fn=False,
            on_unused_input="ignore",
            **compile_kwargs,
        )

    def _per_point(self, term, unit):
        """Sum a term's elementwise log density over all axes but the first (and rows by unit)."""
        rows = term if term.ndim == 1 else pt.sum(term, axis=tuple(range(1, term.ndim)))
        if unit is None:
            return rows
        return pt.zeros((self.n_points,), dtype=rows.dtype)[unit].inc(rows)

    def matrices(self, point: dict) -> list[np.ndarray]:
        """Each term's ``(K, N)`` matrix at ``point`` (the labels are not read)."""
        if self._matrices is None:
            return [np.zeros((self.n_slots, self.n_points))]
        out = self._matrices(*(point[k] for k in self._others))
        for name, mat in zip(self.term_names, out, strict=True):
            if mat.shape != (self.n_slots, self.n_points):
                raise _refusal(
                    name, self.labels_name, f"has shape {mat.shape[1:]} per slot, not one per point"
                )
        return out

    def matrix(self, point: dict) -> np.ndarray:
        """``loglik[s, i]``: the log-likelihood of point ``i`` in slot ``s`` at ``point``."""
        mats = self.matrices(point)
        total = np.asarray(mats[0], dtype=np.float64)
        for mat in mats[1:]:
            total = total + mat
        return np.ascontiguousarray(total)

    def check_independence(self, point: dict, rng: np.random.Generator, probes: int = 2) -> None:
        """Refuse a model whose points depend on other points' labels.

        At ``probes`` random label vectors, with the continuous parameters of
        ``point`` moved by uniform noise on ``(-1, 1)`` (so that slots differ),
        each term's log density per point must equal its entry of the matrix at
        the point's own slot.

        Raises
        ------
        ValueError
            Naming the first variable for which they differ.
        """
        if self._matrices is None:
            return
        name = self.labels_value.name
        base = dict(point)
        for key, val in point.items():
            arr = np.asarray(val)
            if key != name and arr.dtype.kind == "f":
                base[key] = arr + rng.uniform(-1.0, 1.0, size=arr.shape)
        mats = self.matrices(base)
        cols = np.arange(self.n_points)
        dtype = np.asarray(point[name]).dtype
        for _ in range(probes):
            labels = rng.integers(0, self.n_slots, size=self.n_points).astype(dtype)
            point = {**base, name: labels}
            direct = self._per_point_fn(*(point[k] for k in self._all))
            for term, mat, got in zip(self.term_names, mats, direct, strict=True):
                got = np.asarray(got)
                if got.shape != (self.n_points,):
                    why = f"has {got.shape} entries, not one per point"
                    raise _refusal(term, self.labels_name, why)
                want = mat[labels, cols]
                if not np.allclose(got, want, rtol=1e-8, atol=1e-8, equal_nan=True):
                    raise _refusal(term, self.labels_name, "depends on the labels of other points")
