"""The posterior predictive density of a new point and cluster assignment of new points."""

import arviz as az
import numpy as np
import pytest
import scipy.stats

from reference import niw_posterior as reference_posterior

import pymc_pcrp as pcrp

from pymc_pcrp.stats.cross_validation import _assign_to_clusters as assign_to_clusters

SEED = sum(ord(c) for c in "test_density")


def _from_data(x):
    """The prior the hand-made InferenceData below are given explicitly (they hold no record)."""
    return pcrp.NIWPrior.from_data(x)


def _default_scale(x):
    """A value on the scale grid of NIWPrior.from_data(x): the scale of every hand-made draw."""
    return float(pcrp.NIWPrior.from_data(x).scale_grid[60])


def _idata(labels, x, log_joint=None):
    """InferenceData holding label draws of shape (chain, draw, N), the data and niw_scale."""
    labels = np.asarray(labels, dtype=np.int64)
    stats = {
        "niw_scale": np.full(labels.shape[:2], _default_scale(x)),
        "niw_nu0": np.full(labels.shape[:2], pcrp.NIWPrior.from_data(x).nu0),
    }
    if log_joint is not None:
        stats["log_joint"] = np.asarray(log_joint, dtype=float)
    groups = {"posterior": {"z": labels}, "observed_data": {"x": x}, "sample_stats": stats}
    return az.from_dict(**groups)


def _t_components(x, labels, points, prior, power, alpha):
    """Weighted Student-t components by hand with scipy: occupied clusters, then new."""
    x = x.reshape(len(labels), -1)
    d = x.shape[1]
    sizes, terms = [], []
    for k in np.unique(labels):
        sizes.append(np.sum(labels == k))
        terms.append(x[labels == k])
    terms.append(np.empty((0, d)))
    weights = np.append(np.asarray(sizes, dtype=float) ** power, alpha)
    weights /= weights.sum()
    out = []
    for w, members in zip(weights, terms, strict=True):
        mu_n, kappa_n, nu_n, psi_n = reference_posterior(
            members, prior.mu0, prior.kappa0, prior.nu0, prior.psi0
        )
        df = nu_n - d + 1
        shape = psi_n * (kappa_n + 1) / (kappa_n * df)
        if d == 1:
            pdf = scipy.stats.t(df=df, loc=mu_n[0], scale=np.sqrt(shape[0, 0])).pdf(points)
        else:
            pdf = scipy.stats.multivariate_t(loc=mu_n, shape=shape, df=df).pdf(points)
        out.append(w * pdf)
    return weights, np.array(out)


def test_one_draw_1d_equals_a_hand_computation():
    rng = np.random.default_rng(SEED)
    x = np.r_[rng.normal(-3, 1, 12), rng.normal(2, 0.5, 7), [6.0]]
    labels = np.r_[np.zeros(12), np.ones(7), [2]].astype(int)
    prior = pcrp.NIWPrior(mu0=[0.5], kappa0=0.3, nu0=2.5, psi0=[[1.7]])
    grid = np.linspace(-8, 9, 57)
    idata = _idata(labels[None, None], x)
    dens, parts = pcrp.posterior.predictive_density(
        idata, grid, power=1.4, alpha=0.7, prior=prior, components=True
    )
    weights, expected = _t_components(x, labels, grid, prior, 1.4, 0.7)
    np.testing.assert_allclose(dens, expected.sum(axis=0), rtol=1e-10)
    np.testing.assert_allclose(parts.densities, expected, rtol=1e-10)
    np.testing.assert_allclose(parts.weights, weights, rtol=1e-12)
    np.testing.assert_array_equal(parts.sizes, [12, 7, 1])
    assert (parts.chain, parts.draw) == (0, 0)
    # a (G, 1) grid is the same as a (G,) grid
    np.testing.assert_allclose(
        pcrp.posterior.predictive_density(idata, grid[:, None], power=1.4, alpha=0.7, prior=prior),
        dens,
    )


def test_one_draw_2d_equals_a_hand_computation():
    rng = np.random.default_rng(SEED + 1)
    x = np.r_[rng.normal(0, 1, (9, 2)), rng.normal(4, 1, (5, 2)) * [1.0, 2.0]]
    labels = np.r_[np.full(9, 1), np.full(5, 0)]
    prior = pcrp.NIWPrior.from_data(x, kappa0=0.2).at_scale(_default_scale(x))
    points = rng.normal(2, 3, (40, 2))
    dens = pcrp.posterior.predictive_density(
        _idata(labels[None, None], x), points, power=1.2, alpha=1.5, prior=_from_data(x)
    )
    _, expected = _t_components(x, labels, points, prior, 1.2, 1.5)
    with pytest.raises(AssertionError):  # from_data has kappa0=0.01: another prior
        np.testing.assert_allclose(dens, expected.sum(axis=0), rtol=1e-6)
    dens = pcrp.posterior.predictive_density(
        _idata(labels[None, None], x), points, power=1.2, alpha=1.5, prior=prior
    )
    np.testing.assert_allclose(dens, expected.sum(axis=0), rtol=1e-10)


def test_averages_over_draws_and_max_draws_thins_evenly():
    rng = np.random.default_rng(SEED + 2)
    x = rng.normal(size=(10, 2))
    prior = pcrp.NIWPrior.from_data(x).at_scale(_default_scale(x))  # the default at the draws' s
    draws = np.array(
        [
            [np.zeros(10), np.r_[np.zeros(5), np.ones(5)]],
            [np.arange(10) % 3, np.r_[np.zeros(9), [1]]],
        ]
    ).astype(int)
    points = rng.normal(size=(25, 2))
    singles = [
        _t_components(x, draws[c, d], points, prior, 1.3, 1.0)[1].sum(axis=0)
        for c in range(2)
        for d in range(2)
    ]
    idata = _idata(draws, x)
    dens = pcrp.posterior.predictive_density(
        idata, points, power=1.3, alpha=1.0, prior=_from_data(x)
    )
    np.testing.assert_allclose(dens, np.mean(singles, axis=0), rtol=1e-10)
    # two of four draws, evenly spaced over the concatenated chains: flat indices 0 and 3
    thin = pcrp.posterior.predictive_density(
        idata, points, power=1.3, alpha=1.0, prior=_from_data(x), max_draws=2
    )
    np.testing.assert_allclose(thin, (singles[0] + singles[3]) / 2, rtol=1e-10)


def test_components_come_from_the_best_draw_with_the_modal_k():
    x = np.random.default_rng(SEED + 3).normal(size=6)
    draws = np.array(
        [
            [[0, 0, 0, 1, 1, 1], [0, 1, 2, 0, 1, 2], [0, 0, 1, 1, 1, 1]],
            [[0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 1, 1], [0, 1, 0, 1, 0, 1]],
        ]
    )
    # K per draw: 2 3 2 / 1 2 2 -> mode 2; the highest log joint among K=2 draws is (1, 1)
    log_joint = [[5.0, 99.0, 1.0], [50.0, 7.0, 2.0]]
    _, parts = pcrp.posterior.predictive_density(
        _idata(draws, x, log_joint),
        np.linspace(-3, 3, 11),
        power=1.1,
        alpha=1.0,
        prior=_from_data(x),
        components=True,
    )
    assert (parts.chain, parts.draw) == (1, 1)
    np.testing.assert_array_equal(parts.sizes, [4, 2])
    # without a log joint, the last draw with the modal K
    _, parts = pcrp.posterior.predictive_density(
        _idata(draws, x),
        np.linspace(-3, 3, 11),
        power=1.1,
        alpha=1.0,
        prior=_from_data(x),
        components=True,
    )
    assert (parts.chain, parts.draw) == (1, 2)


def test_fitted_1d_density_integrates_to_one():
    rng = np.random.default_rng(SEED + 4)
    x = np.r_[rng.normal(-3, 1, 30), rng.normal(3, 0.7, 30)]
    idata = pcrp.fit(
        x,
        power=1.2,
        draws=40,
        tune=40,
        chains=2,
        random_seed=SEED,
        compute_convergence_checks=False,
    )
    # the new-cluster term is a Student-t with df 3: a wide grid, fine where the data are
    grid = np.unique(
        np.r_[
            np.linspace(-5000, -40, 5000), np.linspace(-40, 40, 8001), np.linspace(40, 5000, 5000)
        ]
    )
    dens, parts = pcrp.posterior.predictive_density(
        idata, grid, power=1.2, alpha=1.0, components=True
    )
    assert abs(np.trapezoid(dens, grid) - 1.0) < 1e-3
    assert abs(np.trapezoid(parts.densities.sum(axis=0), grid) - 1.0) < 1e-3
    # the mass is where the data are: the two modes beat the valley between them
    at = pcrp.posterior.predictive_density(idata, [-3.0, 0.0, 3.0], power=1.2, alpha=1.0)
    assert at[1] < 0.2 * min(at[0], at[2])


def test_assign_to_clusters_maximises_the_prediction_rule():
    rng = np.random.default_rng(SEED + 5)
    x = np.r_[rng.normal(0, 1, (30, 2)), rng.normal(3, 1, (6, 2))]
    labels = np.r_[np.full(30, 7), np.full(6, 2)]
    prior = pcrp.NIWPrior.from_data(x)
    new = rng.uniform(-2, 5, (200, 2))
    _, comps = _t_components(x, labels, new, prior, 2.0, 1.0)  # rows: label 2, label 7, new
    expected = np.where(comps[0] > comps[1], 2, 7)
    got = assign_to_clusters(x, labels, new, power=2.0, prior=prior)
    np.testing.assert_array_equal(got, expected)
    assert set(got) == {2, 7}
    # a larger power moves points from the small cluster to the large one
    more = assign_to_clusters(x, labels, new, power=4.0, prior=prior)
    assert np.sum(more == 2) < np.sum(got == 2)
    assert np.all(more[got == 7] == 7)


def test_assign_to_clusters_can_open_a_new_cluster():
    x = np.r_[np.zeros(5), np.ones(5)] + np.linspace(0, 0.1, 10)
    labels = np.r_[np.zeros(5, int), np.ones(5, int)]
    prior = pcrp.NIWPrior(mu0=[0.5], kappa0=0.01, nu0=3.0, psi0=[[0.1]])
    new = np.array([0.02, 1.05, 40.0])
    np.testing.assert_array_equal(
        assign_to_clusters(x, labels, new, power=1.0, prior=prior, allow_new=True),
        [0, 1, -1],
    )
    np.testing.assert_array_equal(
        assign_to_clusters(x, labels, new, power=1.0, prior=prior),
        [0, 1, 1],
    )


def test_bad_arguments():
    x = np.random.default_rng(0).normal(size=(8, 2))
    idata = _idata(np.zeros((1, 2, 8)), x)
    with pytest.raises(ValueError, match=r"grid.*\(G, 2\)"):
        pcrp.posterior.predictive_density(
            idata, np.zeros(5), power=1.0, alpha=1.0, prior=_from_data(x)
        )
    with pytest.raises(ValueError, match="D = 1 dimensions"):
        pcrp.posterior.predictive_density(
            idata, np.zeros((5, 2)), power=1.0, alpha=1.0, prior=pcrp.NIWPrior.from_data(x[:, 0])
        )
    with pytest.raises(ValueError, match="power"):
        pcrp.posterior.predictive_density(
            idata, np.zeros((5, 2)), power=0.0, alpha=1.0, prior=_from_data(x)
        )
    with pytest.raises(ValueError, match="labels"):
        assign_to_clusters(x, np.zeros(7, int), x, power=1.0)
    with pytest.raises(ValueError, match="features"):
        assign_to_clusters(x, np.zeros(8, int), x[:, :1], power=1.0)
