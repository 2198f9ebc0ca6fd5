"""Cluster membership probabilities of new points (pymc_pcrp.posterior.prediction.predict)."""

import arviz as az
import numpy as np
import pytest
import scipy.stats

from reference import niw_posterior as reference_posterior

import pymc_pcrp as pcrp

from pymc_pcrp._idata import observed_points, store_model_parameters, stored_model_parameters
from pymc_pcrp.posterior import prediction
from pymc_pcrp.posterior.prediction import PredictResult

SEED = sum(ord(c) for c in "test_prediction")


def _explicit(idata, kwargs: dict) -> dict:
    """Without a record, alpha = 1 and NIWPrior.from_data of the data, given explicitly."""
    if stored_model_parameters(idata) is None:
        kwargs.setdefault("alpha", 1.0)
        kwargs.setdefault("prior", pcrp.NIWPrior.from_data(observed_points(idata)))
    return kwargs


def predict(idata, X_new, **kwargs):
    """``prediction.predict`` on the hand-made InferenceData below, which carry no record."""
    return prediction.predict(idata, X_new, **_explicit(idata, kwargs))


def predictive_density(idata, grid, **kwargs):
    """``prediction.predictive_density`` on hand-made InferenceData (see :func:`predict`)."""
    return prediction.predictive_density(idata, grid, **_explicit(idata, kwargs))


def _default_scale(x):
    """A value on the scale grid of NIWPrior.from_data(x): the scale of every hand-made draw."""
    return float(pcrp.NIWPrior.from_data(x).scale_grid[60])


def _idata(labels, x, scales=None):
    """InferenceData holding label draws of shape (chain, draw, N), the data and niw_scale.

    Every draw's NIW scale is ``_default_scale(x)`` unless ``scales`` (chain, draw) is given.
    """
    labels = np.asarray(labels, dtype=np.int64)
    if scales is None:
        scales = np.full(labels.shape[:2], _default_scale(x))
    # every draw at the nu0 chains start from (the learned nu0's start value)
    nu0s = np.full(labels.shape[:2], pcrp.NIWPrior.from_data(x).nu0)
    stats = {"niw_scale": scales, "niw_nu0": nu0s}
    return az.from_dict(posterior={"z": labels}, observed_data={"x": x}, sample_stats=stats)


def _rule_by_hand(x, labels, points, prior, power, alpha):
    """pCRP prediction rule with scipy Student-t densities: (M, K + 1), clusters by sorted label."""
    x = x.reshape(len(labels), -1)
    d = x.shape[1]
    blocks = [x[labels == k] for k in np.unique(labels)] + [np.empty((0, d))]
    weights = np.array([len(b) ** power for b in blocks[:-1]] + [alpha])
    columns = []
    for w, members in zip(weights, blocks, strict=True):
        mu_n, kappa_n, nu_n, psi_n = reference_posterior(
            members, prior.mu0, prior.kappa0, prior.nu0, prior.psi0
        )
        df = nu_n - d + 1
        shape = psi_n * (kappa_n + 1) / (kappa_n * df)
        columns.append(w * scipy.stats.multivariate_t(loc=mu_n, shape=shape, df=df).pdf(points))
    out = np.column_stack(columns)
    return out / out.sum(axis=1, keepdims=True)


def _three_blobs(rng):
    x = np.r_[
        rng.normal([0.0, 0.0], 1.0, (10, 2)),
        rng.normal([4.0, 1.0], 0.7, (8, 2)),
        rng.normal([1.0, 5.0], 1.2, (6, 2)),
    ]
    labels = np.repeat([0, 1, 2], [10, 8, 6])
    return x, labels


def test_one_draw_equal_to_point_estimate_is_the_prediction_rule():
    rng = np.random.default_rng(SEED)
    x, labels = _three_blobs(rng)
    prior = pcrp.NIWPrior(mu0=[1.0, 1.5], kappa0=0.2, nu0=4.5, psi0=[[1.5, 0.3], [0.3, 2.0]])
    points = rng.normal([1.5, 2.0], 3.0, (25, 2))
    # the draw uses other label values than the point estimate, in another order
    draw = np.array([7, 3, 5])[labels]
    result = predict(
        _idata(draw[None, None], x), points, power=1.3, alpha=0.8, prior=prior, point=labels
    )
    expected = _rule_by_hand(x, labels, points, prior, 1.3, 0.8)
    assert isinstance(result, PredictResult)
    assert result.probabilities.shape == (25, 4)
    np.testing.assert_allclose(result.probabilities, expected, rtol=1e-9, atol=1e-300)
    np.testing.assert_allclose(result.new_cluster, expected[:, -1], rtol=1e-9)
    best = np.argmax(expected, axis=1)
    np.testing.assert_array_equal(result.labels, np.where(best == 3, -1, best))
    np.testing.assert_array_equal(result.cluster_labels, [0, 1, 2])
    np.testing.assert_array_equal(result.training_labels, labels)
    assert result.n_draws == 1


def test_identical_draws_give_the_one_draw_answer():
    rng = np.random.default_rng(SEED + 1)
    x, labels = _three_blobs(rng)
    points = rng.normal(1.0, 2.5, (12, 2))
    one = predict(_idata(labels[None, None], x), points, power=1.2, point=labels)
    draws = np.broadcast_to(labels, (2, 5, labels.size))
    many = predict(_idata(draws, x), points, power=1.2, point=labels)
    assert many.n_draws == 10
    np.testing.assert_allclose(many.probabilities, one.probabilities, rtol=1e-12)
    # the default prior is NIWPrior.from_data of the observed points, at the draw's scale
    prior = pcrp.NIWPrior.from_data(x).at_scale(_default_scale(x))
    np.testing.assert_allclose(
        _rule_by_hand(x, labels, points, prior, 1.2, 1.0), one.probabilities, rtol=1e-9
    )


def test_each_draw_uses_its_own_learned_scale():
    rng = np.random.default_rng(SEED + 11)
    x, labels = _three_blobs(rng)
    points = rng.normal(1.0, 2.5, (12, 2))
    grid = pcrp.NIWPrior.from_data(x).scale_grid
    scales = np.array([[grid[20], grid[70]]])
    both = predict(
        _idata(np.stack([labels, labels])[None], x, scales), points, power=1.2, point=labels
    )
    singles = [
        _rule_by_hand(x, labels, points, pcrp.NIWPrior.from_data(x).at_scale(s), 1.2, 1.0)
        for s in scales[0]
    ]
    assert not np.allclose(singles[0], singles[1], rtol=1e-3)  # the scale matters here
    np.testing.assert_allclose(both.probabilities, np.mean(singles, axis=0), rtol=1e-9)
    # without niw_scale (or off the prior's grid) a learned-scale prior is refused
    bare = az.from_dict(posterior={"z": labels[None, None]}, observed_data={"x": x})
    with pytest.raises(ValueError, match=r"learns its scale.*'niw_scale'"):
        predict(bare, points, power=1.2, point=labels)
    with pytest.raises(ValueError, match="not on the prior's scale grid"):
        predict(
            _idata(labels[None, None], x, np.full((1, 1), 0.123)), points, power=1.2, point=labels
        )


def test_draw_that_merges_and_splits_point_clusters_is_mapped_by_overlap():
    rng = np.random.default_rng(SEED + 2)
    x, labels = _three_blobs(rng)
    prior = pcrp.NIWPrior.from_data(x, kappa0=0.5, scale=0.1)
    points = rng.normal(1.5, 2.0, (9, 2))
    # draw: clusters 0 and 1 of the point estimate merged, cluster 2 split into 4 + 2 points
    draw = np.r_[np.zeros(18), np.ones(4), np.full(2, 2)].astype(int)
    rule = _rule_by_hand(x, draw, points, prior, 1.1, 1.5)  # columns: merged, 2a, 2b, new
    expected = np.column_stack(
        [rule[:, 0] * 10 / 18, rule[:, 0] * 8 / 18, rule[:, 1] + rule[:, 2], rule[:, 3]]
    )
    result = predict(
        _idata(draw[None, None], x), points, power=1.1, alpha=1.5, prior=prior, point=labels
    )
    np.testing.assert_allclose(result.probabilities, expected, rtol=1e-9)

    # two draws average their mapped probabilities; max_draws=1 keeps the first draw only
    both = np.stack([labels, draw])[None]
    averaged = predict(_idata(both, x), points, power=1.1, alpha=1.5, prior=prior, point=labels)
    alone = predict(
        _idata(labels[None, None], x), points, power=1.1, alpha=1.5, prior=prior, point=labels
    )
    np.testing.assert_allclose(
        averaged.probabilities, 0.5 * (alone.probabilities + expected), rtol=1e-9
    )
    first = predict(
        _idata(both, x), points, power=1.1, alpha=1.5, prior=prior, point=labels, max_draws=1
    )
    assert first.n_draws == 1
    np.testing.assert_allclose(first.probabilities, alone.probabilities, rtol=1e-12)


def _separated(rng):
    x = np.r_[rng.normal([-10.0, 0.0], 1.0, (30, 2)), rng.normal([10.0, 0.0], 1.0, (30, 2))]
    truth = np.repeat([0, 1], 30)
    draws = np.tile(truth, (1, 6, 1))
    draws[0, 1, 3] = 2  # a few draws with a stray singleton, as a sampler would produce
    draws[0, 4, 40] = 2
    return x, truth, draws


def test_centres_far_points_and_row_sums():
    rng = np.random.default_rng(SEED + 3)
    x, truth, draws = _separated(rng)
    points = np.array([[-10.0, 0.0], [10.0, 0.0], [0.0, 200.0], [-300.0, -300.0]])
    with pytest.warns(UserWarning, match=r"2 of 4 row\(s\) of X_new lie more than 10"):
        result = predict(_idata(draws, x), points, power=1.2, alpha=1.0, point=truth)
    p = result.probabilities
    assert p.shape == (4, 3)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    assert np.all(p >= 0)
    assert p[0, 0] > 0.99 and p[1, 1] > 0.99
    assert p[2, -1] > 0.9 and p[3, -1] > 0.99
    np.testing.assert_array_equal(result.labels, [0, 1, -1, -1])


def test_fitted_posterior_with_default_point_estimate():
    rng = np.random.default_rng(SEED + 4)
    x, _, _ = _separated(rng)
    idata = pcrp.fit(
        x,
        power=1.1,
        draws=40,
        tune=40,
        chains=1,
        random_seed=SEED,
        compute_convergence_checks=False,
    )
    points = np.array([[-10.0, 0.5], [9.5, -0.5], [0.0, 80.0]])
    with pytest.warns(UserWarning, match="1 of 3 row"):  # the far point (0, 80)
        result = predict(idata, points)  # r, alpha and the prior come from the record
        explicit = predict(idata, points, power=1.1, alpha=1.0)
    np.testing.assert_array_equal(result.probabilities, explicit.probabilities)
    pe = pcrp.point_estimate(idata, random_seed=0)
    np.testing.assert_array_equal(result.training_labels, pe.labels)
    assert result.probabilities.shape == (3, pe.n_clusters + 1)
    np.testing.assert_allclose(result.probabilities.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_array_equal(result.labels[:2], [pe.labels[0], pe.labels[-1]])
    assert result.labels[2] == -1


def test_one_dimensional_data_accept_a_vector_of_new_points():
    rng = np.random.default_rng(SEED + 5)
    x = np.r_[rng.normal(-4, 1, 15), rng.normal(4, 1, 15)]
    labels = np.repeat([0, 1], 15)
    idata = _idata(labels[None, None], x)
    flat = predict(idata, np.array([-4.0, 4.0]), power=1.5, point=labels)
    column = predict(idata, np.array([[-4.0], [4.0]]), power=1.5, point=labels)
    np.testing.assert_allclose(flat.probabilities, column.probabilities)
    np.testing.assert_array_equal(flat.labels, [0, 1])


def test_invalid_input_is_refused():
    rng = np.random.default_rng(SEED + 6)
    x, labels = _three_blobs(rng)
    idata = _idata(labels[None, None], x)
    with pytest.raises(ValueError, match=r"X_new.*NaN"):
        predict(idata, [[0.0, np.nan]], power=1.1, point=labels)
    with pytest.raises(ValueError, match=r"X_new.*infinite"):
        predict(idata, [[0.0, np.inf]], power=1.1, point=labels)
    with pytest.raises(ValueError, match=r"X_new.*D = 3"):
        predict(idata, np.zeros((4, 3)), power=1.1, point=labels)
    with pytest.raises(ValueError, match="X_new"):
        predict(idata, np.zeros(4), power=1.1, point=labels)
    with pytest.raises(ValueError, match="point"):
        predict(idata, np.zeros((1, 2)), power=1.1, point=labels[:-1])
    with pytest.raises(ValueError, match="point"):
        predict(idata, np.zeros((1, 2)), power=1.1, point=labels.astype(float))
    # -1 in the result means "a new cluster": a training cluster cannot be called -1
    negative = labels.copy()
    negative[labels == labels[5]] = -1
    with pytest.raises(ValueError, match=r"'point' holds negative labels \(first at training"):
        predict(idata, np.zeros((1, 2)), power=1.1, point=negative)
    with pytest.raises(ValueError, match="power"):
        predict(idata, np.zeros((1, 2)), power=0.0, point=labels)
    with pytest.raises(ValueError, match="alpha"):
        predict(idata, np.zeros((1, 2)), power=1.1, alpha=-1.0, point=labels)
    with pytest.raises(ValueError, match="prior"):
        predict(
            idata, np.zeros((1, 2)), power=1.1, point=labels, prior=pcrp.NIWPrior.from_data(x[:, 0])
        )
    with pytest.raises(ValueError, match="max_draws"):
        bigger = _idata(np.tile(labels, (1, 3, 1)), x)
        predict(bigger, np.zeros((1, 2)), power=1.1, point=labels, max_draws=0)


def test_stored_parameters_are_used_and_conflicts_refused():
    rng = np.random.default_rng(SEED + 7)
    x, truth, draws = _separated(rng)
    prior = pcrp.NIWPrior(mu0=[0.0, 1.0], kappa0=0.2, nu0=6.0, psi0=np.eye(2) * 3.0)
    old = _idata(draws, x)  # no record: an older run, or the PyMC integration switched off
    for given in ({}, {"power": 1.7}, {"power": 1.7, "alpha": 0.3}):
        with pytest.raises(ValueError, match=r"does not record.*never guesses.*record_model"):
            prediction.predict(old, x[:2], point=truth, **given)
    expected = prediction.predict(old, x[:3], power=1.7, alpha=0.3, prior=prior, point=truth)
    stored = old.copy()
    store_model_parameters(stored, power=1.7, alpha=0.3, prior=prior)
    got = prediction.predict(stored, x[:3], point=truth)
    np.testing.assert_array_equal(got.probabilities, expected.probabilities)
    # agreeing arguments are accepted, conflicting ones refused with both values
    prediction.predict(stored, x[:1], power=1.7, alpha=0.3, prior=prior, point=truth)
    with pytest.raises(ValueError, match=r"'power' = 1.1 conflicts with the power = 1.7"):
        prediction.predict(stored, x[:1], power=1.1, point=truth)
    with pytest.raises(ValueError, match=r"'alpha' = 1 conflicts with the alpha = 0.3"):
        prediction.predict(stored, x[:1], alpha=1.0, point=truth)
    other = pcrp.NIWPrior(mu0=[0.0, 1.0], kappa0=0.5, nu0=6.0, psi0=np.eye(2) * 3.0)
    with pytest.raises(ValueError, match=r"'prior' conflicts.*kappa0 = 0.5 given, 0.2 stored"):
        prediction.predict(stored, x[:1], prior=other, point=truth)
    grid = np.array([[0.0, 0.0], [10.0, 0.0]])
    np.testing.assert_array_equal(
        prediction.predictive_density(stored, grid),
        prediction.predictive_density(old, grid, power=1.7, alpha=0.3, prior=prior),
    )
    with pytest.raises(ValueError, match="'power' = 2 conflicts"):
        prediction.predictive_density(stored, grid, power=2.0)
    with pytest.raises(ValueError, match="does not record"):
        prediction.predictive_density(old, grid, power=1.7, alpha=0.3)
