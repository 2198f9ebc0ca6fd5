r"""The posterior predictive density of a new point, and cluster prediction for new points.

Given one partition of the ``N`` observed points, the pCRP prediction rule
places a new point ``x`` in occupied cluster ``k`` with probability proportional
to ``n_k^r`` and in a new cluster with probability proportional to ``alpha``.
With the cluster parameters integrated out under the NIW prior, the density of
the new point is therefore the mixture

.. math::

    p(x \mid z, X) = \sum_k \frac{n_k^r}{\sum_j n_j^r + \alpha} t_k(x)
                   + \frac{\alpha}{\sum_j n_j^r + \alpha} t_0(x),

where ``t_k`` is the Student-t posterior predictive of cluster ``k`` and ``t_0``
the prior predictive (design notes, section 3). :func:`predictive_density`
averages this mixture over posterior draws of ``z``; :func:`assign_to_clusters`
uses its terms to give new points a cluster of a fixed training partition.
"""

from __future__ import annotations

from dataclasses import dataclass

import arviz as az
import numpy as np

from scipy.special import gammaln

from pymc_pcrp._validation import check_data, check_positive_scalar
from pymc_pcrp.distributions import NIWPrior
from pymc_pcrp.draws import label_draws, observed_points

__all__ = ["DensityComponents", "assign_to_clusters", "predictive_density"]


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


@dataclass(frozen=True)
class _Predictives:
    """Student-t predictives of the clusters of one partition plus the prior predictive."""

    sizes: np.ndarray  # (K,)
    loc: np.ndarray  # (K + 1, D), last row the prior predictive
    chol: np.ndarray  # (K + 1, D, D) lower Cholesky factors of the t scale matrices
    df: np.ndarray  # (K + 1,)

    def logpdf(self, points: np.ndarray) -> np.ndarray:
        """Log densities at ``points`` of shape ``(G, D)``, shape ``(K + 1, G)``."""
        d = points.shape[1]
        inverse = np.linalg.inv(self.chol)  # (K+1, D, D), small
        whitened = (
            points @ np.swapaxes(inverse, 1, 2)
            - np.einsum("kij,kj->ki", inverse, self.loc)[:, None, :]
        )  # (K+1, G, D): L_k^{-1} (x - loc_k)
        maha = np.sum(whitened**2, axis=2)  # (K+1, G)
        logdet = 2.0 * np.sum(np.log(np.diagonal(self.chol, axis1=1, axis2=2)), axis=1)
        df = self.df[:, None]
        const = (
            gammaln(0.5 * (self.df + d))
            - gammaln(0.5 * self.df)
            - 0.5 * d * np.log(self.df * np.pi)
            - 0.5 * logdet
        )
        return const[:, None] - 0.5 * (df + d) * np.log1p(maha / df)


class _PartitionPredictor:
    """Builds the cluster predictives of any partition of one fixed data set."""

    def __init__(self, x: np.ndarray, prior: NIWPrior) -> None:
        self.prior = prior
        self.xc = x - prior.mu0  # centring on mu0 keeps the update formulas short
        self.outer = (self.xc[:, :, None] * self.xc[:, None, :]).reshape(len(x), -1)

    def __call__(self, labels: np.ndarray) -> _Predictives:
        prior = self.prior
        d = prior.dim
        _, inverse = np.unique(labels, return_inverse=True)
        k = int(inverse.max()) + 1
        one_hot = np.zeros((k, len(labels)))
        one_hot[inverse, np.arange(len(labels))] = 1.0
        counts = one_hot.sum(axis=1)
        sums = one_hot @ self.xc  # (K, D), centred on mu0
        outer = (one_hot @ self.outer).reshape(k, d, d)
        kappa = np.append(prior.kappa0 + counts, prior.kappa0)
        nu = np.append(prior.nu0 + counts, prior.nu0)
        sums = np.vstack([sums, np.zeros(d)])
        outer = np.concatenate([outer, np.zeros((1, d, d))])
        # Psi_n = Psi0 + S + (kappa0 n / kappa_n)(xbar - mu0)(xbar - mu0)^T, written with
        # the sums of (x - mu0): Psi0 + sum (x - mu0)(x - mu0)^T - s s^T / kappa_n.
        psi = prior.psi0 + outer - sums[:, :, None] * sums[:, None, :] / kappa[:, None, None]
        df = nu - d + 1.0
        scale = psi * ((kappa + 1.0) / (kappa * df))[:, None, None]
        return _Predictives(
            sizes=counts,
            loc=prior.mu0 + sums / kappa[:, None],
            chol=np.linalg.cholesky(scale),
            df=df,
        )


def _prediction_weights(sizes: np.ndarray, power: float, alpha: float) -> np.ndarray:
    """Return the pCRP prediction-rule probabilities ``(n_1^r, ..., n_K^r, alpha) / total``."""
    raw = np.append(sizes**power, alpha)
    return raw / raw.sum()


def _check_prior(prior, default_data: np.ndarray, dim: int) -> NIWPrior:
    if prior is None:
        prior = NIWPrior.from_data(default_data)
    elif not isinstance(prior, NIWPrior):
        raise ValueError(
            f"Argument 'prior' must be a pymc_pcrp.NIWPrior or None, got {type(prior).__name__}."
        )
    if prior.dim != dim:
        raise ValueError(
            f"Argument 'prior' describes D = {prior.dim} dimensions but the data have D = {dim}."
        )
    return prior


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


def _draw_indices(n_chains: int, n_draws: int, max_draws: int | None) -> np.ndarray:
    """Flat indices into ``(chain, draw)`` of the draws to use, evenly spaced."""
    total = n_chains * n_draws
    if max_draws is None or max_draws >= total:
        return np.arange(total)
    if int(max_draws) != max_draws or max_draws < 1:
        raise ValueError(f"Argument 'max_draws' must be a positive integer, got {max_draws}.")
    return np.unique(np.linspace(0, total - 1, int(max_draws)).round().astype(np.int64))


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
    power: float,
    alpha: float,
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
    power, alpha : float
        The ``r`` and ``alpha`` the posterior was sampled with. They are not
        stored in ``idata``, so they must be given.
    prior : NIWPrior, optional
        The NIW prior the posterior was sampled with. It is not stored in
        ``idata`` either; the default, ``NIWPrior.from_data`` of the observed
        data, is what :func:`pymc_pcrp.fit` uses when it is called without a
        prior. Pass the prior explicitly whenever sampling used another one.
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
    >>> dens = pcrp.predictive_density(idata, np.linspace(-8, 8, 200), power=1.2,
    ...                                alpha=1.0)  # doctest: +SKIP
    """
    power = check_positive_scalar(power, "power")
    alpha = check_positive_scalar(alpha, "alpha")
    x = observed_points(idata)
    labels = label_draws(idata)
    if labels.shape[-1] != x.shape[0]:
        raise ValueError(
            f"The label draws cover {labels.shape[-1]} points but idata.observed_data holds "
            f"{x.shape[0]}."
        )
    dim = x.shape[1]
    prior = _check_prior(prior, x, dim)
    points = _check_grid(grid, dim)
    predictor = _PartitionPredictor(x, prior)

    n_chains, n_draws = labels.shape[:2]
    flat = labels.reshape(n_chains * n_draws, -1)
    chosen = _draw_indices(n_chains, n_draws, max_draws)
    density = np.zeros(points.shape[0])
    for index in chosen:
        pred = predictor(flat[index])
        weights = _prediction_weights(pred.sizes, power, alpha)
        density += weights @ np.exp(pred.logpdf(points))
    density /= chosen.size
    if not components:
        return density

    chain, draw = _representative_draw(idata, labels)
    pred = predictor(labels[chain, draw])
    weights = _prediction_weights(pred.sizes, power, alpha)
    parts = DensityComponents(
        densities=weights[:, None] * np.exp(pred.logpdf(points)),
        weights=weights,
        sizes=pred.sizes.astype(np.int64),
        chain=chain,
        draw=draw,
    )
    return density, parts


def assign_to_clusters(
    X_train,
    labels,
    X_new,
    *,
    power: float,
    prior: NIWPrior | None = None,
    alpha: float = 1.0,
    allow_new: bool = False,
) -> np.ndarray:
    """Give each new point the training cluster it most probably joins.

    Under the pCRP prediction rule, a new point ``x`` joins occupied cluster
    ``k`` of the training partition with probability proportional to
    ``n_k^r t_k(x)`` (``t_k`` the cluster's Student-t posterior predictive).
    Each new point is assigned on its own, to the cluster maximising this
    quantity; new points do not join the partition, so the order of
    ``X_new`` does not matter.

    Parameters
    ----------
    X_train : array_like, shape (N, D) or (N,)
        The clustered data.
    labels : array_like of int, shape (N,)
        A partition of ``X_train`` (any integer labels).
    X_new : array_like, shape (M, D) or (M,)
        The points to assign.
    power : float
        The pCRP power ``r``.
    prior : NIWPrior, optional
        Defaults to ``NIWPrior.from_data(X_train)``, the default of
        :func:`pymc_pcrp.fit`.
    alpha : float, default=1.0
        Concentration; it matters only when ``allow_new=True``.
    allow_new : bool, default=False
        If true, a point whose new-cluster term ``alpha t_0(x)`` exceeds every
        ``n_k^r t_k(x)`` gets the label ``-1``.

    Returns
    -------
    numpy.ndarray of int64, shape (M,)
        Labels taken from ``labels`` (or ``-1``).
    """
    x = check_data(X_train, "X_train")
    x_new = check_data(X_new, "X_new")
    if x_new.shape[1] != x.shape[1]:
        raise ValueError(
            f"Argument 'X_new' has D = {x_new.shape[1]} features but 'X_train' has "
            f"D = {x.shape[1]}."
        )
    z = np.asarray(labels)
    if z.shape != (x.shape[0],) or not np.issubdtype(z.dtype, np.integer):
        raise ValueError(
            f"Argument 'labels' must be an integer vector of length {x.shape[0]}, got dtype "
            f"{z.dtype} and shape {z.shape}."
        )
    power = check_positive_scalar(power, "power")
    alpha = check_positive_scalar(alpha, "alpha")
    prior = _check_prior(prior, x, x.shape[1])
    return _assign(_PartitionPredictor(x, prior), z, x_new, power, alpha, allow_new)


def _assign(
    predictor: _PartitionPredictor,
    labels: np.ndarray,
    x_new: np.ndarray,
    power: float,
    alpha: float,
    allow_new: bool,
) -> np.ndarray:
    """:func:`assign_to_clusters` without the input checks (for repeated use)."""
    values = np.unique(labels)
    pred = predictor(labels)
    score = pred.logpdf(x_new)
    score[:-1] += power * np.log(pred.sizes)[:, None]
    score[-1] += np.log(alpha)
    best = np.argmax(score if allow_new else score[:-1], axis=0)
    out = np.where(best < values.size, values[np.minimum(best, values.size - 1)], -1)
    return out.astype(np.int64)
