"""Posterior summaries of the clustering: co-clustering probabilities and a point estimate.

* :func:`posterior_similarity` gives the posterior similarity matrix (PSM), the
  probability that two points share a cluster.
* :func:`point_estimate` finds one clustering that minimises the posterior
  expected variation of information (Wade & Ghahramani, 2018) or Binder's loss,
  by a randomised greedy search in the spirit of SALSO (Dahl, Johnson & Müller,
  2022); :func:`expected_loss` scores any clustering with the same losses.
* :func:`~pymc_pcrp.plots.plot_similarity` shows the PSM with points grouped by a
  clustering.

All of them accept either an :class:`arviz.InferenceData` (the labels are read
with :func:`~pymc_pcrp._idata.label_draws`) or an integer array of label draws whose
last axis runs over the ``N`` points. Label values are arbitrary: only which
points share a value matters.

References
----------
Wade, S. and Ghahramani, Z. (2018). Bayesian cluster analysis: point estimation
and credible balls. *Bayesian Analysis* 13(2), 559-626.

Dahl, D. B., Johnson, D. J. and Müller, P. (2022). Search algorithms and loss
functions for Bayesian clustering. *Journal of Computational and Graphical
Statistics* 31(4), 1189-1201.

Binder, D. A. (1978). Bayesian cluster analysis. *Biometrika* 65(1), 31-38.
"""

from __future__ import annotations

import numbers

from dataclasses import dataclass, field

import arviz as az
import numpy as np

from scipy.linalg import blas

from pymc_pcrp._idata import label_draws
from pymc_pcrp.posterior import _salso as salso

__all__ = [
    "PointEstimate",
    "expected_loss",
    "point_estimate",
    "posterior_similarity",
]

_LOSSES = ("vi", "binder")
# float32 holds every integer up to 2**24 exactly, so counts accumulated in it are exact.
_FLOAT32_EXACT = 2**24
_BLAS_SPEEDUP = 30
_BLAS_MIN_N = 512


def flat_draws(idata_or_draws, var_name: str | None) -> np.ndarray:
    """Return the label draws as a C-contiguous int64 array of shape ``(S, N)``."""
    if isinstance(idata_or_draws, az.InferenceData):
        draws = label_draws(idata_or_draws, var_name)
    else:
        if var_name is not None:
            raise ValueError(
                "Argument 'var_name' applies only to InferenceData input; drop it when "
                "passing an array of label draws."
            )
        draws = np.asarray(idata_or_draws)
        if not np.issubdtype(draws.dtype, np.integer):
            raise ValueError(
                "Label draws must be an integer array whose last axis runs over the points, "
                f"but got dtype {draws.dtype}. Pass pymc_pcrp.posterior.label_draws(idata) or the "
                "InferenceData itself."
            )
    if draws.ndim == 0 or draws.shape[-1] == 0 or draws.size == 0:
        raise ValueError(
            f"Label draws must have shape (..., N) with N >= 1 and at least one draw, but "
            f"got shape {draws.shape}."
        )
    n = draws.shape[-1]
    return np.ascontiguousarray(draws.reshape(-1, n), dtype=np.int64)


def _thin(draws: np.ndarray, max_draws: int | None) -> np.ndarray:
    """Keep at most ``max_draws`` rows, evenly spaced and always including the first."""
    if max_draws is None or draws.shape[0] <= max_draws:
        return draws
    keep = np.linspace(0, draws.shape[0] - 1, max_draws).round().astype(np.int64)
    return np.ascontiguousarray(draws[keep])


def _check_int(value, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"Argument '{name}' must be an integer >= {minimum}, but got {value!r}.")
    return int(value)


def _check_loss(loss: str, a: float) -> tuple[str, float]:
    if loss not in _LOSSES:
        raise ValueError(f"Argument 'loss' must be one of {_LOSSES}, but got {loss!r}.")
    a = float(a)
    if not 0.0 < a < 2.0:
        raise ValueError(
            f"Argument 'a' must lie in (0, 2) (the two Binder costs are a and 2 - a), got {a}."
        )
    return loss, a


def _coclustering(
    dense: np.ndarray, n_blocks: np.ndarray, dtype, block_size: int = 64
) -> np.ndarray:
    """Co-clustering frequencies of dense label draws (see :func:`posterior_similarity`)."""
    n_draws, n = dense.shape
    out = np.zeros((n, n), dtype=dtype)
    # A draw with K clusters costs about sum_k n_k^2 / 2 scattered additions one pair at a
    # time, or K N^2 / 2 multiply-adds in a BLAS rank-K update, which runs far faster per
    # operation once N is large enough; the constants are conservative, from timings on a
    # 2-core machine (where multithreaded BLAS on small matrices was slower than the loop).
    by_blas = (n >= _BLAS_MIN_N) & (
        n_blocks * (n * n) <= _BLAS_SPEEDUP * salso.sum_squared_block_sizes(dense, n_blocks)
    )
    pairwise = np.flatnonzero(~by_blas)
    if pairwise.size:
        salso.accumulate_coclustering(dense[pairwise], n_blocks[pairwise], out)
    syrk = blas.ssyrk if out.dtype == np.float32 else blas.dsyrk
    upper = out.T  # Fortran view: its lower triangle is the upper triangle of ``out``
    rank_k = np.flatnonzero(by_blas)
    for start in range(0, rank_k.size, block_size):
        chunk = rank_k[start : start + block_size]
        onehot = np.zeros((int(n_blocks[chunk].sum()), n), dtype=out.dtype)
        salso.one_hot_rows(dense[chunk], n_blocks[chunk], onehot)
        result = syrk(1.0, onehot.T, beta=1.0, c=upper, trans=0, lower=1, overwrite_c=1)
        if not np.shares_memory(result, out):  # pragma: no cover - BLAS wrapper copied
            upper[...] = result
    salso.finish_similarity(out, out.dtype.type(1.0 / n_draws))
    return out


def posterior_similarity(
    idata_or_draws,
    *,
    var_name: str | None = None,
    dtype: type | np.dtype | str = np.float64,
    block_size: int = 64,
) -> np.ndarray:
    """Posterior similarity matrix: the share of draws in which two points are clustered together.

    Parameters
    ----------
    idata_or_draws : arviz.InferenceData or array_like of int
        Posterior with a label variable, or label draws of shape ``(..., N)``
        (for example ``(chain, draw, N)``); every leading index is one draw.
    var_name : str, optional
        Name of the label variable in ``idata.posterior``; see
        :func:`~pymc_pcrp.posterior.label_draws`. Only for InferenceData input.
    dtype : {numpy.float64, numpy.float32}, default=numpy.float64
        Dtype of the result. ``float32`` halves the memory; its entries are then
        within about ``6e-8`` of the exact fraction.
    block_size : int, default=64
        Number of draws whose cluster indicators are added in one BLAS call (see
        Notes); it bounds the scratch memory and does not change the result.

    Returns
    -------
    numpy.ndarray, shape (N, N)
        Symmetric, with ones on the diagonal; entry ``(i, j)`` is the fraction of
        draws in which ``i`` and ``j`` share a label.

    Notes
    -----
    Memory is dominated by the result, ``N**2 * itemsize`` bytes (800 MB for
    ``N = 10_000`` in ``float64``, 400 MB in ``float32``); no second ``N x N``
    array is made. The co-clustering counts are added straight into the output,
    one draw at a time, in one of two ways chosen per draw for speed: a compiled
    loop over the pairs inside each cluster (``sum_k n_k**2 / 2`` additions,
    best for many small clusters or small ``N``), or, for draws with few large
    clusters and ``N >= 512``, a BLAS rank-k update ``out += A A^T`` with ``A``
    the ``N x K`` cluster indicator matrix of each draw in a block of
    ``block_size`` draws. The scratch for the latter is ``N * K_block * itemsize``
    bytes, with ``K_block`` the number of clusters summed over the block (about
    4 MB for ``N = 2000``, 64 draws of 4 clusters, ``float64``). Both ways add
    exact integer counts,
    which are divided by the number of draws at the end.

    Examples
    --------
    >>> import numpy as np
    >>> from pymc_pcrp import posterior_similarity
    >>> posterior_similarity(np.array([[0, 0, 1], [5, 7, 7]]))
    array([[1. , 0.5, 0. ],
           [0.5, 1. , 0.5],
           [0. , 0.5, 1. ]])
    """
    block_size = _check_int(block_size, "block_size", 1)
    dtype = np.dtype(dtype)
    if dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise ValueError(f"Argument 'dtype' must be float32 or float64, but got {dtype}.")
    draws = flat_draws(idata_or_draws, var_name)
    if dtype == np.float32 and draws.shape[0] > _FLOAT32_EXACT:
        raise ValueError(
            f"{draws.shape[0]} draws exceed what float32 counts exactly (2**24); use float64."
        )
    dense, n_blocks = salso.dense_labels(draws)
    return _coclustering(dense, n_blocks, dtype, block_size)


@dataclass(frozen=True)
class PointEstimate:
    """Result of :func:`point_estimate`.

    Attributes
    ----------
    labels : numpy.ndarray of int64, shape (N,)
        The clustering, numbered ``0, 1, ...`` by order of first appearance.
    expected_loss : float
        Its posterior expected loss (bits for ``"vi"``; a sum over the
        ``N (N - 1) / 2`` pairs for ``"binder"``), as in :func:`expected_loss`.
    loss : str
        ``"vi"`` or ``"binder"``.
    n_draws : int
        Number of label draws the loss was computed from (after thinning); ``0``
        when a similarity matrix was given instead of draws.
    run_losses : numpy.ndarray of float64, shape (n_runs,)
        Expected loss reached by each run of the search; how many runs reached
        the minimum is a rough check that the search is not stuck.
    """

    labels: np.ndarray
    expected_loss: float
    loss: str
    n_draws: int
    run_losses: np.ndarray = field(repr=False)

    @property
    def sizes(self) -> np.ndarray:
        """Cluster sizes, indexed by label."""
        return np.bincount(self.labels)

    @property
    def n_clusters(self) -> int:
        """Number of clusters."""
        return int(self.labels.max()) + 1


class _VIObjective:
    """Search state for the expected VI computed exactly from (thinned) draws."""

    def __init__(self, dense: np.ndarray, n_blocks: np.ndarray, kcap: int):
        n_draws, n = dense.shape
        offsets = np.concatenate(([0], np.cumsum(n_blocks)[:-1]))
        total = int(n_blocks.sum())
        index_dtype = np.int32 if total < 2**31 else np.int64
        self.col = np.ascontiguousarray((dense + offsets[:, None]).T, dtype=index_dtype)
        self.f = salso.xlog2x_table(n)
        self.df = np.diff(self.f)
        self.n = n
        self.n_draws = n_draws
        self.c = np.full(n, -1, dtype=np.int64)
        self.sizes = np.zeros(kcap, dtype=np.int64)
        self.cnt = np.zeros((kcap, total), dtype=np.int32)
        block_sizes = np.bincount(self.col.ravel(), minlength=self.cnt.shape[1])
        self.draws_term = float(self.f[block_sizes].sum()) / n_draws

    def reset(self, c: np.ndarray) -> None:
        self.c[:] = c
        salso.vi_fill(self.c, self.sizes, self.cnt, self.col)

    def place(self, order: np.ndarray) -> int:
        return salso.vi_place(order, self.c, self.sizes, self.cnt, self.col, self.df)

    def remove(self, points: np.ndarray) -> None:
        salso.vi_remove(points, self.c, self.sizes, self.cnt, self.col)

    def loss(self) -> float:
        return salso.vi_loss(self.sizes, self.cnt, self.f, self.n_draws, self.draws_term, self.n)


class _BinderObjective:
    """Search state for the expected Binder loss computed from the similarity matrix."""

    def __init__(self, psm: np.ndarray, a: float, kcap: int):
        self.psm = psm
        self.a = a
        self.c = np.full(psm.shape[0], -1, dtype=np.int64)
        self.sizes = np.zeros(kcap, dtype=np.int64)

    def reset(self, c: np.ndarray) -> None:
        self.c[:] = c
        self.sizes[:] = np.bincount(c[c >= 0], minlength=self.sizes.shape[0])

    def place(self, order: np.ndarray) -> int:
        return salso.binder_place(order, self.c, self.sizes, self.psm, self.a)

    def remove(self, points: np.ndarray) -> None:
        np.subtract.at(self.sizes, self.c[points], 1)
        self.c[points] = -1

    def loss(self) -> float:
        return salso.binder_loss(self.c, self.psm, self.a)


def first_appearance_labels(c: np.ndarray) -> np.ndarray:
    """Renumber a label vector ``0, 1, ...`` by order of first appearance."""
    _, first, inverse = np.unique(c, return_index=True, return_inverse=True)
    rank = np.empty(first.shape[0], dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(first.shape[0])
    return rank[inverse.reshape(-1)]


def _run(obj, n: int, rng: np.random.Generator, max_sweeps: int, max_zealous: int) -> float:
    """One run of the search on ``obj``: sequential allocation, sweeps, zealous updates."""
    obj.reset(np.full(n, -1, dtype=np.int64))
    obj.place(rng.permutation(n))

    def sweep_to_convergence() -> float:
        for _ in range(max_sweeps):
            if obj.place(rng.permutation(n)) == 0:
                break
        return obj.loss()

    best = sweep_to_convergence()
    for _ in range(max_zealous):
        saved = obj.c.copy()
        members = np.flatnonzero(obj.c == rng.choice(np.flatnonzero(obj.sizes)))
        obj.remove(members)
        obj.place(rng.permutation(members))
        if obj.loss() < best - 1e-12:
            best = sweep_to_convergence()
        else:
            obj.reset(saved)
    return best


def is_similarity(arr) -> bool:
    return isinstance(arr, np.ndarray) and np.issubdtype(arr.dtype, np.floating)


def check_similarity(psm: np.ndarray) -> np.ndarray:
    if psm.ndim != 2 or psm.shape[0] != psm.shape[1] or psm.shape[0] == 0:
        raise ValueError(
            f"A similarity matrix must be square with N >= 1, but got shape {psm.shape}."
        )
    if not np.all(np.isfinite(psm)) or psm.min() < 0 or psm.max() > 1:
        raise ValueError("A similarity matrix must hold finite probabilities in [0, 1].")
    return np.ascontiguousarray(psm)


def _max_clusters(max_clusters: int | None, default: int, n: int) -> int:
    if max_clusters is None:
        return default
    return min(_check_int(max_clusters, "max_clusters", 1), n)


def _objective(idata_or_draws, loss: str, a: float, var_name, max_draws, max_clusters):
    """Return the search objective for the input, the number of points and of draws used."""
    if is_similarity(idata_or_draws):
        if loss != "binder":
            raise ValueError(
                "A similarity matrix determines only Binder's loss; pass the label draws "
                "(or the InferenceData) for loss='vi'."
            )
        if var_name is not None:
            raise ValueError("Argument 'var_name' applies only to InferenceData input.")
        psm = check_similarity(idata_or_draws)
        n = psm.shape[0]
        n_draws = 0
        kcap = _max_clusters(max_clusters, n, n)
        obj = _BinderObjective(psm, a, kcap)
    else:
        draws = _thin(flat_draws(idata_or_draws, var_name), max_draws)
        n_draws, n = draws.shape
        dense, n_blocks = salso.dense_labels(draws)
        kcap = _max_clusters(max_clusters, int(n_blocks.max()), n)
        if loss == "vi":
            obj = _VIObjective(dense, n_blocks, kcap)
        else:
            obj = _BinderObjective(_coclustering(dense, n_blocks, np.float64), a, kcap)

    return obj, n, n_draws


def point_estimate(
    idata_or_draws,
    *,
    loss: str = "vi",
    a: float = 1.0,
    max_clusters: int | None = None,
    n_runs: int = 16,
    max_sweeps: int = 50,
    max_zealous: int = 10,
    max_draws: int | None = 1000,
    random_seed=None,
    var_name: str | None = None,
) -> PointEstimate:
    """Clustering that minimises the posterior expected VI or Binder loss.

    Parameters
    ----------
    idata_or_draws : arviz.InferenceData, array_like of int, or numpy.ndarray of float
        Posterior with a label variable, or label draws of shape ``(..., N)``.
        For ``loss="binder"`` a precomputed ``(N, N)`` float similarity matrix
        (from :func:`posterior_similarity`) is also accepted.
    loss : {"vi", "binder"}, default="vi"
        ``"vi"``: variation of information (in bits), computed exactly from the
        draws (see Notes). ``"binder"``: Binder's loss, which depends on the
        draws only through the similarity matrix.
    a : float, default=1.0
        Binder only, in ``(0, 2)``: the cost of separating two points that a
        draw clusters together; joining two points that a draw separates costs
        ``2 - a``. ``a = 1`` gives equal costs, ``sum_{i<j} |1(c_i = c_j) - p_ij|``;
        a larger ``a`` favours fewer, larger clusters.
    max_clusters : int, optional
        Largest number of clusters the search may use. Defaults to the largest
        number of clusters among the draws used (``N`` for a similarity matrix).
    n_runs : int, default=16
        Independent runs of the search; the best result is returned.
    max_sweeps : int, default=50
        Cap on the sweeps of single-point moves after each (re)initialisation.
    max_zealous : int, default=10
        Zealous updates per run (see Notes); ``0`` turns them off.
    max_draws : int or None, default=1000
        Use at most this many draws, evenly spaced over all of them (chains
        concatenated); ``None`` uses every draw. The reported loss refers to the
        draws used.
    random_seed : int, numpy.random.Generator or None
        Seed for the random orders of the search. The same seed and input give
        the same result.
    var_name : str, optional
        Name of the label variable; only for InferenceData input.

    Returns
    -------
    PointEstimate
        ``labels`` (numbered by first appearance), ``expected_loss`` and
        diagnostics; ``sizes`` and ``n_clusters`` are properties.

    Notes
    -----
    *Losses.* For a candidate ``c`` and a draw ``z`` of ``N`` points,
    Wade & Ghahramani (2018) write the variation of information as::

        VI(c, z) = (1/N) sum_i [log2 |c_i| + log2 |z_i| - 2 log2 |c_i ∩ z_i|],

    where ``|c_i|`` is the size of point ``i``'s cluster in ``c`` and
    ``|c_i ∩ z_i|`` the number of points clustered with ``i`` in both. Its
    posterior mean is estimated by the average over the draws used, computed
    exactly from the contingency tables of ``c`` against each draw (not from the
    Jensen lower bound that needs only the similarity matrix). The search keeps
    all the tables, ``max_clusters * sum_s K_s`` 32-bit counts, and an
    ``(N, S)`` index, and scores moving one point to every cluster in
    ``O(max_clusters * S)`` time; thinning to ``max_draws`` bounds both.

    The expected Binder loss is
    ``sum_{i<j} [a p_ij 1(c_i != c_j) + (2 - a)(1 - p_ij) 1(c_i = c_j)]`` with
    ``p`` the similarity matrix (``N**2`` floats; one point move costs ``O(N)``).

    *Search.* Each run visits the points in a random order and puts each one in
    the existing cluster, or a new cluster, that minimises the expected loss of
    the points placed so far. It then sweeps over the points in fresh random
    orders, moving each to its best cluster, until a sweep moves nothing (or
    ``max_sweeps``). A zealous update then empties one randomly chosen cluster
    and places its points again one by one, in random order, each in its best
    cluster (possibly a new one); the change is kept, and followed by sweeps,
    only if the expected loss went down. Zealous updates let the search merge
    and split clusters, which single-point moves cannot do when every point
    prefers its current cluster. This follows the
    sequential allocation, sweetening and zealous updates of SALSO (Dahl,
    Johnson & Müller, 2022), without its time budget or parallel runs. The
    search is greedy: it returns a local minimum, the best found over
    ``n_runs``.

    Examples
    --------
    >>> import numpy as np
    >>> from pymc_pcrp import point_estimate
    >>> draws = np.array([[0, 0, 1, 1], [0, 0, 1, 1], [0, 0, 0, 1]])
    >>> point_estimate(draws, random_seed=0).labels
    array([0, 0, 1, 1])
    """
    loss, a = _check_loss(loss, a)
    n_runs = _check_int(n_runs, "n_runs", 1)
    max_sweeps = _check_int(max_sweeps, "max_sweeps", 1)
    max_zealous = _check_int(max_zealous, "max_zealous", 0)
    if max_draws is not None:
        max_draws = _check_int(max_draws, "max_draws", 1)

    obj, n, n_draws = _objective(idata_or_draws, loss, a, var_name, max_draws, max_clusters)
    runs = np.random.default_rng(random_seed).spawn(n_runs)
    run_losses = np.empty(n_runs, dtype=np.float64)
    best_c = None
    for r, rng in enumerate(runs):
        run_losses[r] = _run(obj, n, rng, max_sweeps, max_zealous)
        if best_c is None or run_losses[r] < run_losses[:r].min():
            best_c = obj.c.copy()
    return PointEstimate(
        labels=first_appearance_labels(best_c),
        expected_loss=float(run_losses.min()),
        loss=loss,
        n_draws=n_draws,
        run_losses=run_losses,
    )


def expected_loss(
    labels,
    idata_or_draws,
    *,
    loss: str = "vi",
    a: float = 1.0,
    max_draws: int | None = 1000,
    var_name: str | None = None,
) -> float:
    """Posterior expected loss of a given clustering, as minimised by :func:`point_estimate`.

    Parameters
    ----------
    labels : array_like of int, shape (N,)
        The clustering to score (any label values).
    idata_or_draws, loss, a, max_draws, var_name
        As in :func:`point_estimate`; with the same ``max_draws`` the two
        functions average over the same draws.

    Returns
    -------
    float
        Expected VI in bits, or expected Binder loss summed over pairs.

    Examples
    --------
    >>> import numpy as np
    >>> from pymc_pcrp import expected_loss
    >>> draws = np.array([[0, 0, 1, 1], [0, 1, 2, 3]])
    >>> expected_loss([0, 0, 1, 1], draws)
    0.5
    """
    loss, a = _check_loss(loss, a)
    c = np.asarray(labels)
    if c.ndim != 1 or not np.issubdtype(c.dtype, np.integer):
        raise ValueError(
            f"Argument 'labels' must be a 1-D integer array, but got dtype {c.dtype} and "
            f"shape {c.shape}."
        )
    c = first_appearance_labels(c)
    if is_similarity(idata_or_draws):
        if loss != "binder":
            raise ValueError("A similarity matrix determines only Binder's loss.")
        psm = check_similarity(idata_or_draws)
    else:
        if max_draws is not None:
            max_draws = _check_int(max_draws, "max_draws", 1)
        draws = _thin(flat_draws(idata_or_draws, var_name), max_draws)
        psm = None
    n = psm.shape[0] if psm is not None else draws.shape[1]
    if c.shape[0] != n:
        raise ValueError(f"Argument 'labels' has {c.shape[0]} points but the posterior has {n}.")
    if loss == "binder":
        if psm is None:
            dense, n_blocks = salso.dense_labels(draws)
            psm = _coclustering(dense, n_blocks, np.float64)
        return float(salso.binder_loss(c, psm, a))
    obj = _VIObjective(*salso.dense_labels(draws), int(c.max()) + 1)
    obj.reset(c)
    return float(obj.loss())
