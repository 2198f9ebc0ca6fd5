"""The scikit-learn estimator PCRPMixture: scikit-learn's own checks, a Pipeline, a grid search."""

import contextlib
import warnings

import numpy as np
import pytest

from sklearn.datasets import make_blobs
from sklearn.metrics import adjusted_rand_score
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

import pymc_pcrp as pcrp

# Tiny runs keep the ~50 checks fast: no tuning (so no scouting tournaments), one chain.
TINY = {"draws": 20, "tune": 0, "chains": 1}


@contextlib.contextmanager
def _quiet():
    """Tiny runs cannot pass the convergence checks; their warnings are expected here."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pcrp.ConvergenceWarning)
        warnings.simplefilter("ignore", UserWarning)
        yield


@parametrize_with_checks([pcrp.PCRPMixture(random_state=0, **TINY)])
def test_scikit_learn_checks(estimator, check):
    """Every check of check_estimator applies and passes: none is expected to fail."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pcrp.ConvergenceWarning)
        check(estimator)


def _blobs(n=60, seed=3):
    x, y = make_blobs(n_samples=n, centers=[[0, 0], [10, 10], [-10, 10]], random_state=seed)
    return x * [1.0, 50.0], y  # columns on very different scales: the pipeline rescales


def test_fit_gives_labels_idata_and_convergence_warnings_as_fit_does():
    x, y = _blobs()
    model = pcrp.PCRPMixture(power=1.1, random_state=1, draws=30, tune=0, chains=2)
    with pytest.warns(pcrp.ConvergenceWarning):
        labels = model.fit_predict(StandardScaler().fit_transform(x))
    assert model.labels_ is labels or np.array_equal(model.labels_, labels)
    assert model.n_clusters_ == np.unique(labels).size == 3
    assert adjusted_rand_score(y, labels) == 1.0
    assert model.idata_.posterior["z"].shape == (2, 30, 60)
    assert float(model.idata_.constant_data["power"]) == 1.1


def test_pipeline_with_standard_scaler_predicts_new_rows():
    x, y = _blobs()
    x_new, y_new = _blobs(n=15, seed=4)
    model = make_pipeline(StandardScaler(), pcrp.PCRPMixture(random_state=2, **TINY))
    with _quiet():
        model.fit(x)
    fitted = model[-1]
    assert adjusted_rand_score(y, fitted.labels_) == 1.0
    proba = model.predict_proba(x_new)
    assert proba.shape == (15, fitted.n_clusters_ + 1)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    labels = model.predict(x_new)
    np.testing.assert_array_equal(labels, np.argmax(proba, axis=1))
    assert adjusted_rand_score(y_new, labels) == 1.0
    # score: the mean log predictive density of the held-out rows (on the scaled data)
    scaled = model[0].transform(x_new)
    expected = np.mean(np.log(pcrp.posterior.predictive_density(fitted.idata_, scaled)))
    assert model.score(x_new) == pytest.approx(expected)
    # the same seed gives the same fit
    again = make_pipeline(StandardScaler(), pcrp.PCRPMixture(random_state=2, **TINY))
    with _quiet():
        again.fit(x)
    np.testing.assert_array_equal(again[-1].labels_, fitted.labels_)


def test_grid_search_over_the_power_picks_by_held_out_density():
    x, _ = _blobs(n=45)
    search = GridSearchCV(
        make_pipeline(StandardScaler(), pcrp.PCRPMixture(random_state=0, **TINY)),
        {"pcrpmixture__power": [1.0, 1.2, 30.0]},
        cv=3,
    )
    with _quiet():
        search.fit(x)
    scores = search.cv_results_["mean_test_score"]
    assert np.all(np.isfinite(scores))
    # r = 30 lumps the three blobs into one cluster: a much worse held-out density
    assert search.best_params_["pcrpmixture__power"] in (1.0, 1.2)
    assert scores[2] < min(scores[:2]) - 0.5
    assert search.best_estimator_[-1].n_clusters_ == 3


def test_set_params_and_get_params_round_trip():
    model = pcrp.PCRPMixture()
    assert model.get_params()["power"] == 1.1
    model.set_params(power=1.3, fit_kwargs={"progressbar": False})
    assert model.get_params()["power"] == 1.3
    assert model.get_params()["fit_kwargs"] == {"progressbar": False}
