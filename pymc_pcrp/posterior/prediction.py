r"""Cluster membership probabilities of new points, expressed in the clusters of a point estimate.

A posterior over partitions has no fixed set of clusters: each draw numbers and
shapes its clusters its own way. To say which cluster a new point belongs to,
this module reports probabilities for the clusters of one summary partition
``c`` of the training data (by default the :func:`~pymc_pcrp.posterior.similarity.point_estimate`
minimising the expected variation of information), plus a "new cluster"
option.

**Within one draw.** Given the draw's partition ``z_s`` of the ``N`` training
points, the pCRP prediction rule puts a new point ``x`` in occupied cluster
``k`` or in a new cluster with probabilities

.. math::

    p_s(k \mid x) \propto n_k^r \, t_k(x), \qquad
    p_s(\text{new} \mid x) \propto \alpha \, t_0(x),

where ``t_k`` is the NIW posterior predictive (a multivariate Student-t) of the
points of cluster ``k`` and ``t_0`` the prior predictive. These are the same
terms :func:`pymc_pcrp.posterior.predictive_density` mixes.

**From draw clusters to point-estimate clusters.** If ``x`` joins draw-cluster
``k``, it shares a cluster with every training point in ``k``. Pick one of
those cluster-mates uniformly at random and report its cluster in ``c``: the
probability that this is cluster ``c`` is ``|k ∩ c| / |k|``. So

.. math::

    P_s(c \mid x) = \sum_k p_s(k \mid x) \, \frac{|k \cap c|}{|k|},

and ``P_s(\text{new} \mid x) = p_s(\text{new} \mid x)``. When a draw coincides
with the point estimate the overlap matrix is a permutation and ``P_s`` is
exactly the prediction rule; when a draw merges two point-estimate clusters,
the probability of joining the merged cluster is shared in proportion to their
sizes in it; when a draw splits one, the two parts' probabilities add up.
Each row sums to 1 because the overlap fractions of every ``k`` sum to 1.

**Over draws.** The reported probabilities are the averages of ``P_s`` over the
posterior draws used, a Monte Carlo estimate of the posterior expectation. New
points are predicted one at a time: they do not join the training partition,
so their order does not matter.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import arviz as az
import numpy as np

from scipy.special import logsumexp

from pymc_pcrp._idata import (
    draw_indices,
    draw_nu0s,
    draw_scales,
    label_draws,
    observed_points,
    per_draw,
    resolve_model_parameters,
)
from pymc_pcrp._table_record import is_table_record
from pymc_pcrp._validation import check_data
from pymc_pcrp.distributions import NIWPrior
from pymc_pcrp.distributions._niw_numpy import PartitionPredictor, check_prior, prediction_weights
from pymc_pcrp.posterior.similarity import PointEstimate, point_estimate

__all__ = ["DensityComponents", "PredictResult", "predict", "predictive_density"]

# Seed of the point-estimate search when predict() has to compute the point estimate itself.
_POINT_ESTIMATE_SEED = 0


@dataclass(frozen=True)
class PredictResult:
    """Result of :func:`predict`.

    Attributes
    ----------
    probabilities : numpy.ndarray of float64, shape (M, C + 1)
        Row ``i`` is the posterior probability that new point ``i`` belongs to
        each of the ``C`` clusters of the training partition (column ``j`` is
        cluster ``cluster_labels[j]``), and in the last column that it starts a
        new cluster. Rows sum to 1.
    labels : numpy.ndarray of int64, shape (M,)
        The most probable option per point: a value of ``cluster_labels``, or
        ``-1`` when the new cluster is the most probable. Ties go to the first
        column.
    cluster_labels : numpy.ndarray of int64, shape (C,)
        The training-partition label that each of the first ``C`` columns
        stands for, in increasing order (``0, 1, ..., C - 1`` for a
        :class:`~pymc_pcrp.posterior.similarity.PointEstimate`).
    training_labels : numpy.ndarray of int64, shape (N,)
        The training partition the probabilities refer to.
    n_draws : int
        Number of posterior draws averaged over.
    """

    probabilities: np.ndarray
    labels: np.ndarray
    cluster_labels: np.ndarray
    training_labels: np.ndarray = field(repr=False)
    n_draws: int

    @property
    def new_cluster(self) -> np.ndarray:
        """Probability of a new cluster per point, the last column of ``probabilities``."""
        return self.probabilities[:, -1]


@dataclass(frozen=True)
class DensityComponents:
    """The weighted mixture components of one representative posterior draw.

    Attributes
    ----------
    densities : numpy.ndarray, shape (K + 1, G)
        ``weights[k] * t_k(grid)``: row ``k < K`` is occupied cluster ``k`` of the
        representative partition, the last row is the new-cluster term. The rows
        sum to that draw's predictive density.
    weights : numpy.ndarray, shape (K + 1,)
        The pCRP prediction-rule probabilities, in the same order; they sum to 1.
    sizes : numpy.ndarray, shape (K,)
        Cluster sizes ``n_k`` of the representative partition.
    chain, draw : int
        Position of the representative draw in the posterior.
    """

    densities: np.ndarray
    weights: np.ndarray
    sizes: np.ndarray
    chain: int
    draw: int


def prediction_result(
    total: np.ndarray, n_draws: int, cluster_labels: np.ndarray, training: np.ndarray
) -> PredictResult:
    """Average the summed per-draw probabilities ``total`` and return the prediction.

    ``total`` has one row per new point and one column per cluster of the training
    partition, then one for a new cluster; each new point's label is its most
    probable column (-1 for a new cluster). Shared by :func:`predict` and
    :func:`~pymc_pcrp.posterior.slot_prediction.predict_slots`.
    """
    probabilities = total / n_draws
    # Remove the rounding drift of the sums so that every row adds up to 1 to machine precision.
    probabilities /= probabilities.sum(axis=1, keepdims=True)
    n_clusters = cluster_labels.size
    best = np.argmax(probabilities, axis=1)
    labels = np.where(best < n_clusters, cluster_labels[np.minimum(best, n_clusters - 1)], -1)
    return PredictResult(
        probabilities=probabilities,
        labels=labels.astype(np.int64),
        cluster_labels=cluster_labels.astype(np.int64),
        training_labels=training,
        n_draws=int(n_draws),
    )


def training_partition(point, idata: az.InferenceData, n: int) -> np.ndarray:
    """Integer labels of the ``N`` training points from ``point`` (or a fresh point estimate)."""
    if point is None:
        point = point_estimate(idata, loss="vi", random_seed=_POINT_ESTIMATE_SEED)
    values = np.asarray(point.labels if isinstance(point, PointEstimate) else point)
    if values.shape != (n,) or not np.issubdtype(values.dtype, np.integer):
        raise ValueError(
            f"Argument 'point' must be a PointEstimate or {n} integer labels of the training "
            f"points, but got dtype {values.dtype} and shape {values.shape}."
        )
    if n and values.min() < 0:
        raise ValueError(
            f"Argument 'point' holds negative labels (first at training point "
            f"{int(np.argmax(values < 0))}); labels must be >= 0, because -1 in "
            "PredictResult.labels means a new cluster. Relabel, e.g. with "
            "numpy.unique(point, return_inverse=True)[1]."
        )
    return values.astype(np.int64, copy=False)


#: A new row farther than this many standard deviations (of the fitted data, in any
#: feature) from the fitted data's mean is "far outside" them (see check_new_points).
FAR_SD = 10.0


def _feature_names(idata: az.InferenceData) -> np.ndarray | None:
    """Names of the fitted data's features (the coordinate of its second dim), if it has any.

    None for 1-D data and for PyMC's default coordinate ``0..D-1``, which names nothing.
    """
    obs = idata.observed_data
    da = obs[next(iter(obs.data_vars))]
    if da.ndim != 2 or da.dims[1] not in da.coords:
        return None
    names = np.asarray(da.coords[da.dims[1]].values)
    if np.issubdtype(names.dtype, np.integer) and np.array_equal(names, np.arange(names.size)):
        return None
    return names


def _match_columns(X_new, names: np.ndarray | None):
    """Return a DataFrame ``X_new`` with its columns in the fitted order, found by name."""
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas comes with PyMC
        return X_new
    if names is None or not isinstance(X_new, pd.DataFrame):
        return X_new
    given = {str(c): c for c in X_new.columns}
    wanted = [str(v) for v in names]
    missing = [w for w in wanted if w not in given]
    extra = [str(c) for c in X_new.columns if str(c) not in set(wanted)]
    if missing:
        raise ValueError(
            f"Argument 'X_new' lacks the column(s) {missing} of the data the model was fitted "
            f"on (fitted columns {wanted}; X_new has {list(given)}). Columns are matched by "
            "name; add the missing ones, or pass a NumPy array in the fitted order."
        )
    if extra:
        raise ValueError(
            f"Argument 'X_new' has the column(s) {extra} that the model was not fitted on "
            f"(fitted columns {wanted}); select the fitted ones, X_new[{wanted}]."
        )
    return X_new[[given[w] for w in wanted]]


def _warn_if_far(x_new: np.ndarray, x: np.ndarray, names: np.ndarray | None) -> None:
    """Warn when rows of ``x_new`` lie far outside the fitted data ``x``; name the likely cause."""
    import warnings

    if x.shape[0] < 2 or x_new.shape[0] == 0:
        return
    mean = x.mean(axis=0)
    sd = x.std(axis=0)
    sd = np.where(sd > 0, sd, 1.0)
    distance = np.abs(x_new - mean) / sd
    far = distance.max(axis=1) > FAR_SD
    if not far.any():
        return
    j = int(np.argmax(distance.max(axis=0)))
    feature = f"'{names[j]}'" if names is not None else str(j)
    standardised = np.all(np.abs(mean) < 0.05) and np.all(np.abs(x.std(axis=0) - 1.0) < 0.05)
    new_mean, new_sd = x_new.mean(axis=0), x_new.std(axis=0)
    new_standardised = np.all(np.abs(new_mean) < 1.0) and np.all(new_sd < 3.0)
    if standardised and not new_standardised:
        cause = (
            "The model was fitted on standardised data (mean 0 and sd 1 in every feature) and "
            "X_new is not standardised: transform X_new with the training data's mean and sd "
            "(the same transform as before the fit)."
        )
    else:
        cause = (
            "Check that X_new has the units, scaling and column order of the data the model "
            "was fitted on."
        )
    warnings.warn(
        f"{int(far.sum())} of {x_new.shape[0]} row(s) of X_new lie more than {FAR_SD:g} "
        f"standard deviations from the fitted data's mean (farthest in feature {feature}: "
        f"fitted mean {mean[j]:.3g}, sd {sd[j]:.3g}; X_new up to {x_new[:, j].max():.3g}); "
        f"such rows are predicted to start a new cluster. {cause}",
        UserWarning,
        stacklevel=4,
    )


def check_new_points(X_new, idata: az.InferenceData, x: np.ndarray) -> np.ndarray:
    """``X_new`` as a finite float64 ``(M, D)`` array, checked against the fitted data ``x``.

    A DataFrame's columns are matched to the fitted features by name (reordered;
    missing or unknown ones refused) when the fitted data have named features.
    Rows far outside the fitted data (more than :data:`FAR_SD` of its standard
    deviations from its mean in some feature) give a ``UserWarning`` naming the
    likely cause.
    """
    dim = x.shape[1]
    names = _feature_names(idata)
    x_new = check_data(_match_columns(X_new, names), "X_new")
    if x_new.shape[1] != dim:
        expected = "(M,) or (M, 1)" if dim == 1 else f"(M, {dim})"
        raise ValueError(
            f"Argument 'X_new' has D = {x_new.shape[1]} features (shape {np.shape(X_new)}) but "
            f"the clustered data have D = {dim}; pass an array of shape {expected}."
        )
    _warn_if_far(x_new, x, names)
    return x_new


def _draw_terms(
    predictor: PartitionPredictor,
    z: np.ndarray,
    x_new: np.ndarray,
    training_index: np.ndarray,
    power: float,
    alpha: float,
    scale: float = 1.0,
    nu0: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Return the prediction rule of one draw and its overlap with the training partition.

    Returns ``p_s(k | x)`` of shape ``(K + 1, M)`` (the draw's clusters in the order
    of ``np.unique(z)``, then a new cluster) and the fractions ``|k ∩ c| / |k|`` of
    shape ``(K, C)``, whose rows sum to 1.
    """
    n_point_clusters = int(training_index.max()) + 1
    _, draw_index = np.unique(z, return_inverse=True)
    pred = predictor(z, scale, nu0)
    log_score = pred.logpdf(x_new)  # (K + 1, M)
    log_score[:-1] += power * np.log(pred.sizes)[:, None]
    log_score[-1] += np.log(alpha)
    rule = np.exp(log_score - logsumexp(log_score, axis=0, keepdims=True))
    k = pred.sizes.size
    overlap = np.bincount(
        draw_index * n_point_clusters + training_index, minlength=k * n_point_clusters
    ).reshape(k, n_point_clusters)
    return rule, overlap / pred.sizes[:, None]


def predict(
    idata: az.InferenceData,
    X_new,
    *,
    power: float | None = None,
    alpha: float | None = None,
    prior: NIWPrior | None = None,
    point: PointEstimate | np.ndarray | None = None,
    max_draws: int | None = None,
) -> PredictResult:
    """Posterior probability that each new point joins each training cluster or a new one.

    For every posterior draw, the pCRP prediction rule gives the probability
    that ``x`` joins each of the draw's clusters, ``∝ n_k^r t_k(x)``, or starts
    a new one, ``∝ alpha t_0(x)``, with ``t`` the NIW Student-t predictives.
    The draw's clusters are translated into the clusters ``c`` of the training
    partition ``point`` by the overlap fractions ``|k ∩ c| / |k|`` (the cluster
    of a randomly chosen cluster-mate; see the module docstring), and the
    result is averaged over draws.

    Parameters
    ----------
    idata : arviz.InferenceData
        Output of :func:`pymc_pcrp.fit` (or ``pm.sample`` on a model with one
        pCRP label vector and one observed :class:`~pymc_pcrp.NIWMixture`).
    X_new : array_like or pandas.DataFrame, shape (M, D), or (M,) for 1-D data
        The new points (for a :class:`~pymc_pcrp.TableMixture`, a table with
        the fitted columns, matched by name, missing cells allowed, and no
        level a categorical column did not have in training:
        :mod:`pymc_pcrp.posterior.table_prediction`); they must have the
        features of the clustered data, on
        the same scale (standardise them the same way if the training data
        were standardised). A DataFrame's columns are matched by name to the
        fitted data's features (its ``feature`` coordinate) and reordered;
        missing or unknown columns are refused. Rows more than ten standard
        deviations of the fitted data from its mean give a ``UserWarning``
        naming the likely cause.
    power, alpha, prior : optional
        The pCRP power ``r``, the concentration and the NIW prior the posterior
        was sampled with. They are read from the record in ``idata``, which
        :func:`pymc_pcrp.fit` and ``pm.sample`` (with :mod:`pymc_pcrp`
        imported) write, and :func:`pymc_pcrp.record_model` adds; a random
        ``alpha`` or ``power`` is recorded as its posterior draws, and each
        draw's prediction rule uses that draw's value. A value given here that
        differs from the record is refused, a PyMC variable too. Without a
        record (the PyMC integration switched off, or an older run) all three
        are required: nothing is guessed.
    point : PointEstimate or array_like of int, shape (N,), optional
        The partition of the training points whose clusters the columns refer
        to. Defaults to ``point_estimate(idata, loss="vi", random_seed=0)``;
        pass the point estimate you report to make sure the columns match it.
        Labels must be ``>= 0``: ``-1`` in the result means a new cluster.
    max_draws : int, optional
        Use at most this many draws, evenly spaced through the chains
        (concatenated); all draws by default. The cost grows linearly with
        the number of draws.

    Returns
    -------
    PredictResult
        ``probabilities`` of shape ``(M, C + 1)`` (last column: new cluster),
        ``labels`` (the most probable option, ``-1`` for new) and the training
        labels the columns stand for.

    Raises
    ------
    ValueError
        If ``X_new`` holds NaN or infinite values, has the wrong number of
        features or (a DataFrame) misses fitted columns, if ``power``,
        ``alpha``, ``prior`` or ``point`` are invalid or conflict with the
        record in ``idata``, if they are needed and missing, or if ``idata``
        lacks the label draws or the observed data, or its observed data hold
        NaN.
    TypeError
        If ``power`` or ``alpha`` is a PyMC variable.

    Examples
    --------
    >>> import numpy as np, pymc_pcrp as pcrp
    >>> from pymc_pcrp.posterior.prediction import predict
    >>> x = pcrp.datasets.load_old_faithful()
    >>> idata = pcrp.fit(x, power=1.11, draws=200, tune=200, chains=2,
    ...                  random_seed=1)  # doctest: +SKIP
    >>> result = predict(idata, [[2.0, 55.0], [4.5, 80.0]])  # doctest: +SKIP
    >>> result.probabilities.sum(axis=1)  # doctest: +SKIP
    array([1., 1.])
    """
    if is_table_record(idata):  # a TableMixture: pymc_pcrp.posterior.table_prediction
        from pymc_pcrp.posterior.table_prediction import predict_table

        kwargs = dict(power=power, alpha=alpha, prior=prior, point=point, max_draws=max_draws)
        return predict_table(idata, X_new, **kwargs)
    power, alpha, prior = resolve_model_parameters(idata, power, alpha, prior)
    x = observed_points(idata)
    draws = label_draws(idata)
    n, dim = x.shape
    if draws.shape[-1] != n:
        raise ValueError(
            f"The label draws cover {draws.shape[-1]} points but idata.observed_data holds {n}."
        )
    powers = per_draw(power, draws.shape[:2], "power")
    alphas = per_draw(alpha, draws.shape[:2], "alpha")
    x_new = check_new_points(X_new, idata, x)
    prior = check_prior(prior, x, dim)
    training = training_partition(point, idata, n)
    cluster_labels, training_index = np.unique(training, return_inverse=True)
    n_point_clusters = cluster_labels.size

    predictor = PartitionPredictor(x, prior)
    scales = draw_scales(idata, prior.grid_arrays()[0], draws.shape[:2], "predict").reshape(-1)
    nu0s = draw_nu0s(idata, prior, draws.shape[:2], "predict").reshape(-1)
    flat = draws.reshape(-1, n)
    chosen = draw_indices(draws.shape[0], draws.shape[1], max_draws)
    total = np.zeros((x_new.shape[0], n_point_clusters + 1))
    for index in chosen:
        rule, overlap = _draw_terms(
            predictor,
            flat[index],
            x_new,
            training_index,
            powers[index],
            alphas[index],
            scales[index],
            nu0s[index],
        )
        total[:, :-1] += rule[:-1].T @ overlap
        total[:, -1] += rule[-1]
    return prediction_result(total, chosen.size, cluster_labels, training)


def _check_grid(grid, dim: int) -> np.ndarray:
    arr = np.asarray(grid, dtype=np.float64)
    if arr.ndim == 1 and dim == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.shape[1] != dim or arr.shape[0] == 0:
        expected = "(G,) or (G, 1)" if dim == 1 else f"(G, {dim})"
        raise ValueError(
            f"Argument 'grid' must have shape {expected} for D = {dim} data, "
            f"but got shape {np.shape(grid)}."
        )
    if not np.all(np.isfinite(arr)):
        raise ValueError("Argument 'grid' contains NaN or infinite values.")
    return arr


def _representative_draw(idata: az.InferenceData, labels: np.ndarray) -> tuple[int, int]:
    """Among draws with the modal number of clusters, the one with the highest log joint.

    Without a ``log_joint`` sample statistic the last such draw is used.
    """
    n_chains, n_draws = labels.shape[:2]
    flat = labels.reshape(n_chains * n_draws, -1)
    k = np.array([np.unique(row).size for row in flat])
    values, counts = np.unique(k, return_counts=True)
    candidates = np.flatnonzero(k == values[np.argmax(counts)])
    if "sample_stats" in idata.groups() and "log_joint" in idata.sample_stats:
        log_joint = np.asarray(idata.sample_stats["log_joint"].values, dtype=np.float64).reshape(-1)
        best = candidates[np.argmax(log_joint[candidates])]
    else:
        best = candidates[-1]
    return divmod(int(best), n_draws)


def predictive_density(
    idata: az.InferenceData,
    grid,
    *,
    power: float | None = None,
    alpha: float | None = None,
    prior: NIWPrior | None = None,
    max_draws: int | None = None,
    components: bool = False,
) -> np.ndarray | tuple[np.ndarray, DensityComponents]:
    """Posterior predictive density of one new point, evaluated on a grid.

    For each posterior draw of the partition, the pCRP prediction rule gives a
    mixture of Student-t densities: cluster ``k`` with weight
    ``n_k^r / (sum_j n_j^r + alpha)`` and the NIW prior predictive (a new
    cluster) with weight ``alpha / (sum_j n_j^r + alpha)``. The result is the
    average of these mixtures over the draws.

    Parameters
    ----------
    idata : arviz.InferenceData
        Output of :func:`pymc_pcrp.fit` (or ``pm.sample`` on a model with one
        pCRP label vector and one observed :class:`~pymc_pcrp.NIWMixture`).
    grid : array_like, shape (G,) for 1-D data or (G, D)
        Where to evaluate the density.
    power, alpha, prior : optional
        The ``r``, ``alpha`` and NIW prior the posterior was sampled with; read
        from the record in ``idata`` (a random one draw by draw; a different
        value given here is refused), and required without a record, as in
        :func:`predict`.
    max_draws : int, optional
        Use at most this many draws, evenly spaced through the chains
        (concatenated); all draws by default.
    components : bool, default=False
        Also return the weighted components of one representative draw (see
        Returns).

    Returns
    -------
    density : numpy.ndarray, shape (G,)
        The posterior predictive density at each grid point.
    components : DensityComponents
        Only if ``components=True``. The representative draw is, among the
        draws whose number of clusters equals the posterior mode of ``K``, the
        one with the highest ``sample_stats.log_joint`` (the last such draw if
        that statistic is absent); all draws are considered, whatever
        ``max_draws``. This mirrors the paper's Figure 4, which shows the
        density with the components of a partition with the modal number of
        clusters. The components are those of a single partition, so they sum
        to that draw's density, not to the averaged ``density``.

    Examples
    --------
    >>> import numpy as np, pymc_pcrp as pcrp
    >>> x = np.r_[np.random.default_rng(0).normal(-3, 1, 50),
    ...           np.random.default_rng(1).normal(3, 1, 50)]
    >>> idata = pcrp.fit(x, power=1.2, draws=100, tune=100, chains=1,
    ...                  random_seed=0)  # doctest: +SKIP
    >>> dens = pcrp.posterior.predictive_density(idata, np.linspace(-8, 8, 200))  # doctest: +SKIP
    """
    power, alpha, prior = resolve_model_parameters(idata, power, alpha, prior)
    x = observed_points(idata)
    labels = label_draws(idata)
    if labels.shape[-1] != x.shape[0]:
        raise ValueError(
            f"The label draws cover {labels.shape[-1]} points but idata.observed_data holds "
            f"{x.shape[0]}."
        )
    dim = x.shape[1]
    prior = check_prior(prior, x, dim)
    points = _check_grid(grid, dim)
    predictor = PartitionPredictor(x, prior)

    n_chains, n_draws = labels.shape[:2]
    powers = per_draw(power, (n_chains, n_draws), "power")
    alphas = per_draw(alpha, (n_chains, n_draws), "alpha")
    scales = draw_scales(idata, prior.grid_arrays()[0], (n_chains, n_draws), "predictive_density")
    nu0s = draw_nu0s(idata, prior, (n_chains, n_draws), "predictive_density")
    flat = labels.reshape(n_chains * n_draws, -1)
    chosen = draw_indices(n_chains, n_draws, max_draws)
    density = np.zeros(points.shape[0])
    for index in chosen:
        pred = predictor(flat[index], scales.reshape(-1)[index], nu0s.reshape(-1)[index])
        weights = prediction_weights(pred.sizes, powers[index], alphas[index])
        density += weights @ np.exp(pred.logpdf(points))
    density /= chosen.size
    if not components:
        return density

    chain, draw = _representative_draw(idata, labels)
    pred = predictor(labels[chain, draw], scales[chain, draw], nu0s[chain, draw])
    flat_index = chain * n_draws + draw
    weights = prediction_weights(pred.sizes, powers[flat_index], alphas[flat_index])
    parts = DensityComponents(
        densities=weights[:, None] * np.exp(pred.logpdf(points)),
        weights=weights,
        sizes=pred.sizes.astype(np.int64),
        chain=chain,
        draw=draw,
    )
    return density, parts
