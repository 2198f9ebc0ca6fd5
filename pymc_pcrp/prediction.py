r"""Cluster membership probabilities of new points, expressed in the clusters of a point estimate.

A posterior over partitions has no fixed set of clusters: each draw numbers and
shapes its clusters its own way. To say which cluster a new point belongs to,
this module reports probabilities for the clusters of one summary partition
``c`` of the training data (by default the :func:`~pymc_pcrp.summaries.point_estimate`
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
terms :func:`pymc_pcrp.predictive_density` mixes.

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

from pymc_pcrp._validation import check_data, check_positive_scalar
from pymc_pcrp.density import _check_prior, _draw_indices, _PartitionPredictor
from pymc_pcrp.distributions import NIWPrior
from pymc_pcrp.draws import label_draws, observed_points
from pymc_pcrp.summaries import PointEstimate, point_estimate

__all__ = ["PredictResult", "predict"]

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
        :class:`~pymc_pcrp.summaries.PointEstimate`).
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


def _training_partition(point, idata: az.InferenceData, n: int) -> np.ndarray:
    """Integer labels of the ``N`` training points from ``point`` (or a fresh point estimate)."""
    if point is None:
        point = point_estimate(idata, loss="vi", random_seed=_POINT_ESTIMATE_SEED)
    values = np.asarray(point.labels if isinstance(point, PointEstimate) else point)
    if values.shape != (n,) or not np.issubdtype(values.dtype, np.integer):
        raise ValueError(
            f"Argument 'point' must be a PointEstimate or {n} integer labels of the training "
            f"points, but got dtype {values.dtype} and shape {values.shape}."
        )
    return values.astype(np.int64, copy=False)


def _check_new_points(X_new, dim: int) -> np.ndarray:
    """``X_new`` as a finite float64 array of shape ``(M, D)``."""
    x_new = check_data(X_new, "X_new")
    if x_new.shape[1] != dim:
        expected = "(M,) or (M, 1)" if dim == 1 else f"(M, {dim})"
        raise ValueError(
            f"Argument 'X_new' has D = {x_new.shape[1]} features (shape {np.shape(X_new)}) but "
            f"the clustered data have D = {dim}; pass an array of shape {expected}."
        )
    return x_new


def predict(
    idata: az.InferenceData,
    X_new,
    *,
    power: float,
    alpha: float = 1.0,
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
    X_new : array_like, shape (M, D), or (M,) for 1-D data
        The new points; they must have the features of the clustered data, on
        the same scale (standardise them the same way if the training data
        were standardised).
    power : float
        The pCRP power ``r`` the posterior was sampled with.
    alpha : float, default=1.0
        The concentration the posterior was sampled with.
    prior : NIWPrior, optional
        The NIW prior the posterior was sampled with. ``idata`` stores neither
        the prior nor ``power`` and ``alpha``, so they must be given again. The
        default, ``NIWPrior.from_data(observed_points(idata))``, matches
        :func:`pymc_pcrp.fit` only when ``fit`` was called without a prior;
        pass the prior explicitly whenever sampling used another one.
    point : PointEstimate or array_like of int, shape (N,), optional
        The partition of the training points whose clusters the columns refer
        to. Defaults to ``point_estimate(idata, loss="vi", random_seed=0)``;
        pass the point estimate you report to make sure the columns match it.
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
        If ``X_new`` holds NaN or infinite values or has the wrong number of
        features, if ``power``, ``alpha``, ``prior`` or ``point`` are invalid, or
        if ``idata`` lacks the label draws or the observed data.

    Examples
    --------
    >>> import numpy as np, pymc_pcrp as pcrp
    >>> from pymc_pcrp.prediction import predict
    >>> x = pcrp.load_old_faithful()
    >>> idata = pcrp.fit(x, power=1.11, draws=200, tune=200, chains=2,
    ...                  random_seed=1)  # doctest: +SKIP
    >>> result = predict(idata, [[2.0, 55.0], [4.5, 80.0]], power=1.11)  # doctest: +SKIP
    >>> result.probabilities.sum(axis=1)  # doctest: +SKIP
    array([1., 1.])
    """
    power = check_positive_scalar(power, "power")
    alpha = check_positive_scalar(alpha, "alpha")
    x = observed_points(idata)
    draws = label_draws(idata)
    n, dim = x.shape
    if draws.shape[-1] != n:
        raise ValueError(
            f"The label draws cover {draws.shape[-1]} points but idata.observed_data holds {n}."
        )
    x_new = _check_new_points(X_new, dim)
    prior = _check_prior(prior, x, dim)
    training = _training_partition(point, idata, n)
    cluster_labels, training_index = np.unique(training, return_inverse=True)
    n_point_clusters = cluster_labels.size

    predictor = _PartitionPredictor(x, prior)
    flat = draws.reshape(-1, n)
    chosen = _draw_indices(draws.shape[0], draws.shape[1], max_draws)
    total = np.zeros((x_new.shape[0], n_point_clusters + 1))
    for index in chosen:
        z = flat[index]
        _, draw_index = np.unique(z, return_inverse=True)
        pred = predictor(z)  # clusters in the order of np.unique(z), then the prior predictive
        log_score = pred.logpdf(x_new)  # (K + 1, M)
        log_score[:-1] += power * np.log(pred.sizes)[:, None]
        log_score[-1] += np.log(alpha)
        rule = np.exp(log_score - logsumexp(log_score, axis=0, keepdims=True))  # p_s(k | x)
        k = pred.sizes.size
        overlap = np.bincount(
            draw_index * n_point_clusters + training_index, minlength=k * n_point_clusters
        ).reshape(k, n_point_clusters)
        overlap = overlap / pred.sizes[:, None]  # |k ∩ c| / |k|; rows sum to 1
        total[:, :-1] += rule[:-1].T @ overlap
        total[:, -1] += rule[-1]
    probabilities = total / chosen.size
    # Remove the rounding drift of the sums so that every row adds up to 1 to machine precision.
    probabilities /= probabilities.sum(axis=1, keepdims=True)
    best = np.argmax(probabilities, axis=1)
    labels = np.where(
        best < n_point_clusters, cluster_labels[np.minimum(best, n_point_clusters - 1)], -1
    )
    return PredictResult(
        probabilities=probabilities,
        labels=labels.astype(np.int64),
        cluster_labels=cluster_labels.astype(np.int64),
        training_labels=training,
        n_draws=int(chosen.size),
    )
