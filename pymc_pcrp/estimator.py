"""A scikit-learn estimator over :func:`pymc_pcrp.fit` and :func:`pymc_pcrp.predict`.

:class:`PCRPMixture` samples the pCRP mixture posterior of the training rows
(``fit``), summarises it by the partition minimising the posterior expected
variation of information (``labels_``), assigns new rows to those clusters or to
a new one (``predict``, ``predict_proba``) and scores held-out rows by their mean
log posterior predictive density (``score``), so that it works in a
``Pipeline`` and in ``GridSearchCV`` over ``power``.
"""

from __future__ import annotations

import numpy as np

from sklearn.base import BaseEstimator, ClusterMixin, DensityMixin
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from pymc_pcrp import fitting
from pymc_pcrp.posterior import point_estimate, predict, predictive_density

__all__ = ["PCRPMixture"]


class PCRPMixture(ClusterMixin, DensityMixin, BaseEstimator):
    """Cluster rows with the powered Chinese restaurant process mixture (scikit-learn API).

    Parameters
    ----------
    power : float, default=1.1
        The pCRP power ``r`` (``1`` is the Dirichlet process); tune it with
        ``GridSearchCV`` (``score`` is the held-out log predictive density).
    alpha : float, default=1.0
        Concentration.
    covariance : {"full", "diag"}, default="full"
        Cluster covariance family of the default prior ``NIWPrior.from_data``.
    draws, tune, chains, cores : int
        Kept draws per chain, burn-in draws, chains and processes, as in
        :func:`pymc_pcrp.fit`.
    sweeps_per_draw : int, optional
        Gibbs sweeps per kept draw; the step's automatic choice by default.
    init : str, optional
        Initial partition of each chain (see :class:`~pymc_pcrp.PCRPGibbs`).
    random_state : int, numpy.random.RandomState or None, default=None
        Seed of the whole fit (sampling and point estimate); an int makes
        ``fit`` reproducible.
    fit_kwargs : dict, optional
        Further arguments of :func:`pymc_pcrp.fit` (for example ``pcrp_gibbs``
        options or ``progressbar=True``).

    Attributes
    ----------
    idata_ : arviz.InferenceData
        The posterior, as :func:`pymc_pcrp.fit` returns it.
    point_estimate_ : pymc_pcrp.posterior.PointEstimate
        The summary partition of the training rows.
    labels_ : numpy.ndarray of int64, shape (n_samples,)
        Its cluster of each training row, ``0 .. n_clusters_ - 1``.
    n_clusters_ : int
        Number of clusters of the point estimate.
    n_features_in_ : int
        Number of columns seen by ``fit``.

    Warns
    -----
    ConvergenceWarning
        As :func:`pymc_pcrp.fit`: when an R-hat or a bulk ESS of the number of
        clusters or of the log joint fails its check.

    Examples
    --------
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> import pymc_pcrp as pcrp
    >>> model = make_pipeline(StandardScaler(), pcrp.PCRPMixture(power=1.1, random_state=1))
    >>> labels = model.fit_predict(pcrp.datasets.load_old_faithful())  # doctest: +SKIP
    """

    def __init__(
        self,
        power: float = 1.1,
        alpha: float = 1.0,
        covariance: str = "full",
        draws: int = 500,
        tune: int = 500,
        chains: int = 2,
        cores: int = 1,
        sweeps_per_draw: int | None = None,
        init: str | None = None,
        random_state=None,
        fit_kwargs: dict | None = None,
    ) -> None:
        self.power = power
        self.alpha = alpha
        self.covariance = covariance
        self.draws = draws
        self.tune = tune
        self.chains = chains
        self.cores = cores
        self.sweeps_per_draw = sweeps_per_draw
        self.init = init
        self.random_state = random_state
        self.fit_kwargs = fit_kwargs

    def fit(self, X, y=None) -> PCRPMixture:
        """Sample the posterior of the rows of ``X`` and summarise it by one partition.

        Parameters
        ----------
        X : array_like of shape (n_samples, n_features)
            At least two rows; NaN and infinite values are refused.
        y : None
            Ignored.

        Returns
        -------
        PCRPMixture
            The fitted estimator.
        """
        X = validate_data(self, X, ensure_min_samples=2, dtype=np.float64)
        seeds = check_random_state(self.random_state).randint(0, 2**31 - 1, size=2)
        self.idata_ = fitting.fit(
            X,
            power=self.power,
            alpha=self.alpha,
            covariance=self.covariance,
            draws=self.draws,
            tune=self.tune,
            chains=self.chains,
            cores=self.cores,
            sweeps_per_draw=self.sweeps_per_draw,
            init=self.init,
            random_seed=int(seeds[0]),
            **(self.fit_kwargs or {}),
        )
        self.point_estimate_ = point_estimate(self.idata_, loss="vi", random_seed=int(seeds[1]))
        self.labels_ = np.asarray(self.point_estimate_.labels, dtype=np.int64)
        self.n_clusters_ = int(self.point_estimate_.n_clusters)
        return self

    def _new_rows(self, X) -> np.ndarray:
        check_is_fitted(self)
        return validate_data(self, X, reset=False, dtype=np.float64)

    def predict_proba(self, X) -> np.ndarray:
        """Posterior probability of each row joining each cluster of ``labels_``, or a new one.

        Returns
        -------
        numpy.ndarray of shape (n_samples, ``n_clusters_ + 1``)
            Column ``k < n_clusters_`` is cluster ``k`` of ``labels_``; the last
            column is a new cluster. Rows sum to 1 (:func:`pymc_pcrp.predict`).
        """
        x = self._new_rows(X)
        return predict(self.idata_, x, point=self.point_estimate_).probabilities

    def predict(self, X) -> np.ndarray:
        """Return the most probable cluster of ``labels_`` per row, ``-1`` for a new cluster."""
        x = self._new_rows(X)
        return predict(self.idata_, x, point=self.point_estimate_).labels

    def score_samples(self, X) -> np.ndarray:
        """Log posterior predictive density of each row (each one alone, as a new point)."""
        x = self._new_rows(X)
        with np.errstate(divide="ignore"):
            return np.log(predictive_density(self.idata_, x))

    def score(self, X, y=None) -> float:
        """Mean log posterior predictive density of the rows of ``X`` (higher is better)."""
        return float(np.mean(self.score_samples(X)))
