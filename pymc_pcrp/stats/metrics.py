"""Agreement between clusterings, and the paper's posterior summary table.

Lu, Li & Dunson (2018) score each posterior draw of the partition against the
true one with normalised mutual information (NMI, higher is better) and the
variation of information (VI, lower is better), then report the mean of each
over the kept draws with a standard error, the mean number of clusters ``K``
with its standard error, and the largest ``K`` visited, ``K_max``.

Conventions
-----------
Both scores depend only on the partitions, not on the label values, and are
computed from the contingency table ``n[k, c]`` (points in cluster ``k`` of
one labelling and class ``c`` of the other) of ``N`` points, with the
entropies ``H(U)``, ``H(V)`` and mutual information ``I(U; V)`` of the
empirical distributions.

* ``NMI = I(U; V) / mean(H(U), H(V))`` with the arithmetic mean by default,
  as scikit-learn's :func:`~sklearn.metrics.normalized_mutual_info_score`
  (``average_method`` selects the geometric mean, the max or the min
  instead). NMI does not depend on the logarithm's base. When both
  labellings put every point in one cluster the partitions are identical and
  NMI is 1; when exactly one of them does, NMI is 0.
* ``VI = H(U) + H(V) - 2 I(U; V) = H(U | V) + H(V | U)`` (Meila, 2003), a
  metric on partitions, in **bits** by default (``base=2``). The paper does not
  state its unit, but its numbers fit bits: for the digits data (four about
  equally frequent classes) an NMI of 0.651 with about four clusters implies a
  VI of about 1.40 in bits but 0.97 in nats, and the paper reports 1.38-1.40.
  Pass ``base=numpy.e`` for nats.

The per-draw scores of a whole posterior (thousands of draws of thousands of
points) are computed at once: the contingency tables of a block of draws come
from a single :func:`numpy.bincount`, and ``x log x`` of the counts from a
lookup table.
"""

from __future__ import annotations

import math

from dataclasses import asdict, dataclass

import arviz as az
import numpy as np
import xarray as xr

from pymc_pcrp._idata import label_draws

__all__ = [
    "ClusteringSummary",
    "clustering_summary",
    "draw_metrics",
    "normalized_mutual_info",
    "variation_of_information",
]

_AVERAGE_METHODS = ("arithmetic", "geometric", "max", "min")
# Elements of the (draws, points) code array built per block of draws.
_BLOCK_ELEMENTS = 1 << 21


# --------------------------------------------------------------------------- core


def _as_labels(values, name: str) -> np.ndarray:
    """Return a 1-D labelling as codes ``0..C-1`` (``int64``), refusing bad shapes."""
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(
            f"Argument '{name}' must be a 1-D array of labels, but got shape {arr.shape}."
        )
    if arr.size == 0:
        raise ValueError(f"Argument '{name}' is empty; pass at least one label.")
    _, codes = np.unique(arr, return_inverse=True)
    return codes.reshape(-1).astype(np.int64)


def _canonical_rows(draws: np.ndarray) -> np.ndarray:
    """Relabel each row to ``0..K-1`` (in sorted order of the old labels)."""
    order = np.argsort(draws, axis=1, kind="stable")
    ranked = np.take_along_axis(draws, order, axis=1)
    new = np.zeros(draws.shape, dtype=np.int64)
    new[:, 1:] = np.cumsum(ranked[:, 1:] != ranked[:, :-1], axis=1)
    out = np.empty_like(new)
    np.put_along_axis(out, order, new, axis=1)
    return out


def _check_average_method(average_method: str) -> str:
    if average_method not in _AVERAGE_METHODS:
        raise ValueError(
            f"Argument 'average_method' must be one of {list(_AVERAGE_METHODS)}, "
            f"but got {average_method!r}."
        )
    return average_method


def _check_base(base) -> float:
    b = float(base)
    if not np.isfinite(b) or b <= 0 or b == 1:
        raise ValueError(f"Argument 'base' must be a finite number > 0 and != 1, but got {base}.")
    return b


def _partition_scores(
    draws: np.ndarray, truth: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float, int]:
    """Mutual information and entropies of many labellings against one, in nats.

    Parameters
    ----------
    draws : numpy.ndarray
        ``int64`` array of shape ``(S, N)``; any integer labels.
    truth : numpy.ndarray
        ``int64`` codes ``0..T-1`` of shape ``(N,)`` with every code present.

    Returns
    -------
    mi, h_draws : numpy.ndarray
        Shape ``(S,)``: ``I(draw; truth)`` and ``H(draw)``.
    k : numpy.ndarray
        Shape ``(S,)``: number of clusters of each draw.
    h_truth : float
        ``H(truth)``.
    n_truth : int
        Number of classes ``T`` of ``truth``.
    """
    s, n = draws.shape
    n_truth = int(truth.max()) + 1
    if s and (draws.min() < 0 or draws.max() >= n):
        draws = _canonical_rows(draws)
    n_labels = int(draws.max()) + 1 if s else 1

    # x log x of every possible count 0..N, looked up instead of recomputed.
    counts_range = np.arange(n + 1, dtype=np.float64)
    xlogx = np.zeros(n + 1)
    xlogx[1:] = counts_range[1:] * np.log(counts_range[1:])

    sum_joint = np.empty(s)
    sum_rows = np.empty(s)
    k = np.empty(s, dtype=np.int64)
    cells = n_labels * n_truth
    block = max(1, min(_BLOCK_ELEMENTS // n, _BLOCK_ELEMENTS // cells))
    for start in range(0, s, block):
        stop = min(s, start + block)
        rows = stop - start
        codes = draws[start:stop] * n_truth + truth
        codes += (np.arange(rows, dtype=np.int64) * cells)[:, None]
        table = np.bincount(codes.ravel(), minlength=rows * cells).reshape(rows, n_labels, n_truth)
        sizes = table.sum(axis=2)
        sum_joint[start:stop] = xlogx[table].sum(axis=(1, 2))
        sum_rows[start:stop] = xlogx[sizes].sum(axis=1)
        k[start:stop] = np.count_nonzero(sizes, axis=1)

    sum_truth = xlogx[np.bincount(truth, minlength=n_truth)].sum()
    log_n = math.log(n)
    h_draws = np.maximum(log_n - sum_rows / n, 0.0)
    h_truth = max(log_n - sum_truth / n, 0.0)
    mi = (sum_joint - sum_rows - sum_truth) / n + log_n
    mi = np.clip(mi, 0.0, np.minimum(h_draws, h_truth))
    return mi, h_draws, k, h_truth, n_truth


def _nmi_from_scores(mi, h_a, h_b, k_a, k_b, average_method: str) -> np.ndarray:
    """NMI from mutual information and entropies, with the single-cluster conventions."""
    mi = np.asarray(mi, dtype=np.float64)
    h_a = np.asarray(h_a, dtype=np.float64)
    h_b = np.broadcast_to(np.asarray(h_b, dtype=np.float64), h_a.shape)
    if average_method == "arithmetic":
        norm = 0.5 * (h_a + h_b)
    elif average_method == "geometric":
        norm = np.sqrt(h_a * h_b)
    elif average_method == "max":
        norm = np.maximum(h_a, h_b)
    else:
        norm = np.minimum(h_a, h_b)
    with np.errstate(divide="ignore", invalid="ignore"):
        nmi = np.where(norm > 0, mi / np.where(norm > 0, norm, 1.0), 0.0)
    single_a = np.asarray(k_a) == 1
    single_b = np.broadcast_to(np.asarray(k_b) == 1, single_a.shape)
    nmi = np.where(single_a ^ single_b, 0.0, nmi)
    nmi = np.where(single_a & single_b, 1.0, nmi)
    return np.clip(nmi, 0.0, 1.0)


def _pair_scores(a, b) -> tuple[float, float, float, int, int]:
    """``(I, H(a), H(b), K(a), K(b))`` of two labellings, in nats."""
    codes_a = _as_labels(a, "a")
    codes_b = _as_labels(b, "b")
    if codes_a.size != codes_b.size:
        raise ValueError(
            f"Arguments 'a' and 'b' must label the same points, but have lengths "
            f"{codes_a.size} and {codes_b.size}."
        )
    mi, h_a, k_a, h_b, k_b = _partition_scores(codes_a[None, :], codes_b)
    return float(mi[0]), float(h_a[0]), h_b, int(k_a[0]), k_b


# --------------------------------------------------------------------------- pairs


def normalized_mutual_info(a, b, *, average_method: str = "arithmetic") -> float:
    """Normalised mutual information between two labellings of the same points.

    Parameters
    ----------
    a, b : array_like of shape (N,)
        Cluster labels; only which points share a label matters.
    average_method : {"arithmetic", "geometric", "max", "min"}, default="arithmetic"
        How the two entropies are averaged into the normaliser; the default
        matches :func:`sklearn.metrics.normalized_mutual_info_score`.

    Returns
    -------
    float
        In ``[0, 1]``; ``1`` exactly when the partitions are equal (two
        single-cluster labellings included), ``0`` when they are independent
        or exactly one of them is a single cluster.

    Examples
    --------
    >>> from pymc_pcrp.stats.metrics import normalized_mutual_info
    >>> normalized_mutual_info([0, 0, 1, 1], [5, 5, 2, 2])
    1.0
    >>> normalized_mutual_info([0, 0, 1, 1], [0, 1, 0, 1])
    0.0
    """
    average_method = _check_average_method(average_method)
    mi, h_a, h_b, k_a, k_b = _pair_scores(a, b)
    return float(_nmi_from_scores(mi, h_a, h_b, k_a, k_b, average_method))


def variation_of_information(a, b, *, base: float = 2.0) -> float:
    """Variation of information ``H(a | b) + H(b | a)`` between two labellings.

    Parameters
    ----------
    a, b : array_like of shape (N,)
        Cluster labels; only which points share a label matters.
    base : float, default=2
        Base of the logarithm: ``2`` gives bits (the paper's unit, see the
        module notes), ``numpy.e`` nats.

    Returns
    -------
    float
        ``0`` exactly when the partitions are equal, at most ``log(N)``.

    Examples
    --------
    >>> from pymc_pcrp.stats.metrics import variation_of_information
    >>> variation_of_information([0, 0, 0, 0], [0, 0, 1, 1])  # one bit
    1.0
    """
    base = _check_base(base)
    mi, h_a, h_b, _, _ = _pair_scores(a, b)
    return float(max(h_a + h_b - 2.0 * mi, 0.0) / math.log(base))


# --------------------------------------------------------------------------- posterior


def _draws_and_dims(idata, var_name: str | None):
    """Label draws ``(chain, draw, N)`` and the chain/draw coordinates, if known."""
    if isinstance(idata, az.InferenceData):
        draws = label_draws(idata, var_name)
        post = idata.posterior
        coords = {dim: post.coords[dim].values for dim in ("chain", "draw") if dim in post.coords}
        return draws, coords
    draws = np.asarray(idata)
    if draws.ndim != 3 or not np.issubdtype(draws.dtype, np.integer):
        raise ValueError(
            "Argument 'idata' must be an arviz.InferenceData or an integer array of label "
            f"draws of shape (chain, draw, N), but got dtype {draws.dtype} and shape "
            f"{draws.shape}."
        )
    return draws.astype(np.int64, copy=False), {}


def draw_metrics(
    idata,
    true_labels,
    var_name: str | None = None,
    *,
    base: float = 2.0,
    average_method: str = "arithmetic",
) -> xr.Dataset:
    """NMI, VI and number of clusters of every posterior draw against the true labels.

    Parameters
    ----------
    idata : arviz.InferenceData or array_like of int, shape (chain, draw, N)
        Posterior label draws, as returned by :func:`pymc_pcrp.fit` or
        ``pm.sample``, or the label array itself.
    true_labels : array_like of shape (N,)
        The reference partition (any label values).
    var_name : str, optional
        The label variable, see :func:`pymc_pcrp.posterior.label_draws`.
    base : float, default=2
        Logarithm base of VI (bits by default).
    average_method : {"arithmetic", "geometric", "max", "min"}, default="arithmetic"
        NMI normaliser, see :func:`normalized_mutual_info`.

    Returns
    -------
    xarray.Dataset
        Variables ``nmi``, ``vi`` (float) and ``n_clusters`` (int), each with
        dims ``(chain, draw)``, ready for ``az.summary``, ``az.ess`` or
        ``az.plot_trace``.
    """
    average_method = _check_average_method(average_method)
    base = _check_base(base)
    draws, coords = _draws_and_dims(idata, var_name)
    chains, n_draws, n = draws.shape
    truth = _as_labels(true_labels, "true_labels")
    if truth.size != n:
        raise ValueError(
            f"Argument 'true_labels' has {truth.size} labels, but the draws label {n} points."
        )
    flat = draws.reshape(chains * n_draws, n)
    mi, h_draws, k, h_truth, k_truth = _partition_scores(flat, truth)
    nmi = _nmi_from_scores(mi, h_draws, h_truth, k, k_truth, average_method)
    vi = np.maximum(h_draws + h_truth - 2.0 * mi, 0.0) / math.log(base)
    dims = ("chain", "draw")
    shape = (chains, n_draws)
    return xr.Dataset(
        {
            "nmi": (dims, nmi.reshape(shape)),
            "vi": (dims, vi.reshape(shape)),
            "n_clusters": (dims, k.reshape(shape)),
        },
        coords=coords,
        attrs={"vi_base": base, "nmi_average_method": average_method},
    )


@dataclass(frozen=True)
class ClusteringSummary:
    """One row of the paper's results tables, with two kinds of standard error.

    Attributes
    ----------
    nmi_mean, vi_mean, k_mean : float
        Posterior means of NMI, VI and the number of clusters ``K``.
    nmi_se, vi_se, k_se : float
        Naive standard errors ``sd / sqrt(n_draws)`` (``ddof=1``) over all
        kept draws, as the paper reports them. They treat the draws as
        independent, so they understate the error of autocorrelated chains.
    nmi_mcse, vi_mcse, k_mcse : float
        Monte Carlo standard errors of the means from :func:`arviz.mcse`
        (``method="mean"``), which accounts for autocorrelation within and
        disagreement between chains. ``0`` when every draw has the same value,
        NaN with fewer than four draws per chain.
    k_max : int
        Largest number of clusters among the kept draws.
    n_draws : int
        Number of draws summarised (chains times draws per chain).
    vi_base : float
        Logarithm base of VI (``2``: bits).
    """

    nmi_mean: float
    nmi_se: float
    nmi_mcse: float
    vi_mean: float
    vi_se: float
    vi_mcse: float
    k_mean: float
    k_se: float
    k_mcse: float
    k_max: int
    n_draws: int
    vi_base: float = 2.0

    def as_dict(self) -> dict[str, float | int]:
        """Return the fields as a plain ``dict`` (``pandas.Series(summary.as_dict())``)."""
        return asdict(self)

    def __str__(self) -> str:
        def cell(name: str, mean: float, se: float, mcse: float, digits: int) -> str:
            return f"{name} {mean:.{digits}f} (SE {se:.1e}, MCSE {mcse:.1e})"

        unit = {2.0: "bits", math.e: "nats"}.get(self.vi_base, f"log base {self.vi_base:g}")
        return " | ".join(
            [
                cell("NMI", self.nmi_mean, self.nmi_se, self.nmi_mcse, 3),
                cell(f"VI[{unit}]", self.vi_mean, self.vi_se, self.vi_mcse, 3),
                cell("K", self.k_mean, self.k_se, self.k_mcse, 2),
                f"K_max {self.k_max}",
                f"{self.n_draws} draws",
            ]
        )


def clustering_summary(
    idata,
    true_labels,
    var_name: str | None = None,
    *,
    base: float = 2.0,
    average_method: str = "arithmetic",
) -> ClusteringSummary:
    """Summarise a clustering posterior against the true labels, as the paper's tables do.

    Each kept draw is scored by :func:`draw_metrics`; the summary gives the mean
    NMI, VI and number of clusters ``K`` over all draws of all chains, each with
    the naive standard error the paper reports and ArviZ's Monte Carlo standard
    error, and ``K_max``. The paper's protocol keeps every fifth of the last
    10,000 of 20,000 sweeps: ``pymc_pcrp.fit(..., tune=2000, draws=2000,
    sweeps_per_draw=5)`` gives that per chain.

    Parameters
    ----------
    idata : arviz.InferenceData or array_like of int, shape (chain, draw, N)
        Posterior label draws (burn-in already discarded).
    true_labels : array_like of shape (N,)
        The reference partition.
    var_name : str, optional
        The label variable, see :func:`pymc_pcrp.posterior.label_draws`.
    base : float, default=2
        Logarithm base of VI (bits by default, as the paper's numbers suggest).
    average_method : {"arithmetic", "geometric", "max", "min"}, default="arithmetic"
        NMI normaliser.

    Returns
    -------
    ClusteringSummary
        Frozen dataclass; ``str()`` prints the table row, ``as_dict()`` the fields.

    Examples
    --------
    >>> import numpy as np
    >>> from pymc_pcrp.stats.metrics import clustering_summary
    >>> truth = np.array([0, 0, 1, 1])
    >>> draws = np.array([[[0, 0, 1, 1], [0, 0, 1, 2], [0, 0, 1, 1], [0, 0, 0, 0]]])
    >>> s = clustering_summary(draws, truth)  # 1 chain of 4 draws
    >>> s.k_mean, s.k_max, round(s.vi_mean, 6)  # VI: 0, 1/2 and 1 bit
    (2.0, 3, 0.375)
    """
    metrics = draw_metrics(idata, true_labels, var_name, base=base, average_method=average_method)
    n_draws = metrics.sizes["chain"] * metrics.sizes["draw"]
    floats = metrics.astype(np.float64)
    # ArviZ needs four draws per chain; below that it would only log a warning.
    enough = metrics.sizes["draw"] >= 4
    mcse = az.mcse(floats, method="mean") if enough else None
    values: dict[str, float] = {}
    for name, key in (("nmi", "nmi"), ("vi", "vi"), ("n_clusters", "k")):
        x = floats[name].values.ravel()
        values[f"{key}_mean"] = float(x.mean())
        values[f"{key}_se"] = float(x.std(ddof=1) / math.sqrt(n_draws)) if n_draws > 1 else np.nan
        if np.all(x == x[0]):
            values[f"{key}_mcse"] = 0.0
        else:
            values[f"{key}_mcse"] = float(mcse[name]) if mcse is not None else np.nan
    return ClusteringSummary(
        **values,
        k_max=int(metrics["n_clusters"].max()),
        n_draws=int(n_draws),
        vi_base=base,
    )
