"""Relabel the slots of ``PowerCRP(..., max_clusters=K)`` draws, for per-cluster summaries.

With slot labels, ``lam[s]`` is the rate of whatever cluster sits in slot ``s``
at that draw, and which slot a cluster sits in changes between chains and over
a chain. :func:`relabel_slots` permutes the slots of every draw, the labels and
the per-slot parameters together, so that position ``j`` of the result is the
same cluster in every draw: the cluster matched to cluster ``j`` of a point
estimate of the partition, or the ``j``-th largest cluster of the draw.
"""

from __future__ import annotations

from collections.abc import Sequence

import arviz as az
import numpy as np
import xarray as xr

from scipy.optimize import linear_sum_assignment

__all__ = ["RELABEL_METHODS", "relabel_slots", "slot_permutations"]

#: The orders :func:`relabel_slots` offers.
RELABEL_METHODS = ("point_estimate", "size")


def _size_order(counts: np.ndarray) -> np.ndarray:
    """Slots by decreasing size, ties by slot index."""
    return np.lexsort((np.arange(counts.size), -counts))


def slot_permutations(
    labels: np.ndarray, n_slots: int, reference: np.ndarray | None = None
) -> np.ndarray:
    """Return the slot order of every draw: ``perm[t, j]`` is the slot shown as cluster ``j``.

    Parameters
    ----------
    labels : numpy.ndarray of int, shape (T, N)
        Slot labels of ``T`` draws.
    n_slots : int
        The number of slots ``K``.
    reference : numpy.ndarray of int, shape (N,), optional
        A partition to align with, labelled ``0..C-1`` with ``C <= K``: cluster
        ``j`` of the result is the slot that best overlaps the reference's
        ``j``-th largest cluster (an assignment maximising the total overlap),
        followed by the other slots by decreasing size. Without it, slots are
        ordered by decreasing size in each draw.

    Returns
    -------
    numpy.ndarray of int64, shape (T, K)
        One permutation of ``0..K-1`` per draw.
    """
    labels = np.asarray(labels, dtype=np.int64)
    draws = labels.shape[0]
    perms = np.empty((draws, n_slots), dtype=np.int64)
    if reference is not None:
        reference = np.asarray(reference, dtype=np.int64)
        ref_counts = np.bincount(reference)
        rank = np.empty_like(ref_counts)
        rank[_size_order(ref_counts)] = np.arange(ref_counts.size)
        ref_rank = rank[reference]
    for t in range(draws):
        counts = np.bincount(labels[t], minlength=n_slots)
        by_size = _size_order(counts)
        if reference is None:
            perms[t] = by_size
            continue
        overlap = np.zeros((ref_counts.size, n_slots), dtype=np.int64)
        np.add.at(overlap, (ref_rank, labels[t]), 1)
        rows, cols = linear_sum_assignment(-overlap)
        matched = cols[np.argsort(rows)]
        rest = by_size[~np.isin(by_size, matched)]
        perms[t] = np.concatenate([matched, rest])
    return perms


def relabel_slots(
    idata: az.InferenceData,
    var_names: str | Sequence[str],
    *,
    by: str = "point_estimate",
    labels: str = "z",
    reference: np.ndarray | None = None,
    random_seed=None,
) -> az.InferenceData:
    """Reorder the slots of every draw so that cluster ``j`` is the same cluster throughout.

    Parameters
    ----------
    idata : arviz.InferenceData
        Output of ``pm.sample`` for a model with ``PowerCRP(..., max_clusters=K)``.
    var_names : str or sequence of str
        The per-slot variables to relabel (``"lam"``); the first dimension after
        ``(chain, draw)`` of each must have length ``K``.
    by : {"point_estimate", "size"}, default="point_estimate"
        ``"point_estimate"``: cluster ``j`` is the slot that best overlaps the
        ``j``-th largest cluster of a point estimate of the partition
        (``reference``, or :func:`~pymc_pcrp.point_estimate` of ``idata``),
        then the other slots by size. ``"size"``: cluster ``j`` is the
        ``j``-th largest cluster of each draw (clusters of similar sizes can
        then swap places).
    labels : str, default="z"
        Name of the label variable in ``idata.posterior``.
    reference : numpy.ndarray of int, shape (N,), optional
        The partition to align with for ``by="point_estimate"``.
    random_seed : int or numpy.random.Generator, optional
        Seed of the point estimate's search.

    Returns
    -------
    arviz.InferenceData
        A copy of ``idata`` whose posterior holds the relabelled labels, the
        relabelled variables (their slot dimension renamed ``cluster``) and
        ``cluster_size`` (``(chain, draw, cluster)``, the number of points of each
        cluster), so that ``az.summary(out, var_names=["lam"])`` is per cluster.

    Examples
    --------
    .. code-block:: python

        idata = pm.sample()  # z = PowerCRP(..., max_clusters=20), lam of shape 20
        relabelled = pcrp.relabel_slots(idata, "lam")
        az.summary(relabelled, var_names=["lam", "cluster_size"])
    """
    if by not in RELABEL_METHODS:
        raise ValueError(f"Argument 'by' must be one of {RELABEL_METHODS}, but got {by!r}.")
    names = [var_names] if isinstance(var_names, str) else list(var_names)
    post = idata.posterior
    for name in [labels, *names]:
        if name not in post:
            raise ValueError(
                f"'{name}' is not a posterior variable; the posterior has {sorted(post.data_vars)}."
            )
    z = post[labels]
    n_chains, n_draws, n = z.shape
    slot_dims = {}
    for name in names:
        var = post[name]
        if var.ndim < 3:
            raise ValueError(
                f"'{name}' has no dimension after (chain, draw) to hold the slots of '{labels}'."
            )
        slot_dims[name] = var.dims[2]
    sizes = {post[name].shape[2] for name in names}
    if len(sizes) != 1:
        raise ValueError(f"The variables {names} have different numbers of slots: {sorted(sizes)}.")
    (k_max,) = sizes
    flat = z.values.reshape(-1, n).astype(np.int64)
    if flat.min() < 0 or flat.max() >= k_max:
        raise ValueError(
            f"The labels of '{labels}' go up to {int(flat.max())}, but the variables have "
            f"{k_max} slots: pass the per-slot parameters of this label variable."
        )
    if by == "point_estimate" and reference is None:
        from pymc_pcrp.posterior.similarity import point_estimate

        reference = point_estimate(idata, var_name=labels, random_seed=random_seed).labels
    perms = slot_permutations(flat, k_max, reference if by == "point_estimate" else None)
    inverse = np.argsort(perms, axis=1)
    new = {}
    relabelled = np.take_along_axis(inverse, flat, axis=1).reshape(z.shape).astype(z.dtype)
    new[labels] = z.copy(data=relabelled)
    cluster = np.arange(k_max)
    for name in names:
        var = post[name]
        values = var.values.reshape(n_chains * n_draws, k_max, *var.shape[3:])
        index = perms.reshape(perms.shape + (1,) * (values.ndim - 2))
        out = np.take_along_axis(values, index, axis=1).reshape(var.shape)
        dims = ("chain", "draw", "cluster", *var.dims[3:])
        coords = {d: var.coords[d] for d in var.dims[3:] if d in var.coords}
        new[name] = xr.DataArray(out, dims=dims, coords={"cluster": cluster, **coords})
    counts = np.stack([np.bincount(row, minlength=k_max) for row in relabelled.reshape(-1, n)])
    new["cluster_size"] = xr.DataArray(
        counts.reshape(n_chains, n_draws, k_max),
        dims=("chain", "draw", "cluster"),
        coords={"cluster": cluster},
    )
    dataset = post.drop_vars([labels, *names])
    used = {d for var in dataset.data_vars.values() for d in var.dims}
    unused = set(dataset.dims) - used
    dataset = dataset.drop_dims([d for d in set(slot_dims.values()) if d in unused])
    dataset = dataset.assign(new)
    groups = {g: idata[g] for g in idata.groups() if g != "posterior"}
    return az.InferenceData(posterior=dataset, **groups)
