"""Cross-validation of the power r: loss, jump rule, data split and a known-answer curve."""

import numpy as np
import pytest

from reference import log_pcrp_joint

import pymc_pcrp as pcrp

SEED = sum(ord(c) for c in "test_selection")


def _two_blobs(n_per=100, delta=6.0, seed=5):
    """Two unit-covariance 2-D Gaussians ``delta`` apart, split 100 / 100 at random."""
    rng = np.random.default_rng(seed)
    shift = np.array([delta, 0.0])
    x = np.r_[rng.normal(0, 1, (n_per, 2)), rng.normal(0, 1, (n_per, 2)) + shift]
    y = np.r_[np.zeros(n_per, int), np.ones(n_per, int)]
    order = np.random.default_rng(seed + 1).permutation(2 * n_per)
    train, test = order[:n_per], order[n_per:]
    return x[train], y[train], x[test], y[test]


def test_cluster_loss_matches_a_direct_computation():
    rng = np.random.default_rng(SEED)
    x = rng.normal(size=(40, 3))
    labels = rng.integers(0, 4, 40) * 5 - 3
    expected = 0.0
    for k in np.unique(labels):
        members = x[labels == k]
        expected += np.sqrt(np.sum((members - members.mean(axis=0)) ** 2))
    assert pcrp.model_selection.cluster_loss(x, labels) == pytest.approx(expected, rel=1e-12)
    # 1-D input and a single cluster
    v = rng.normal(size=15)
    assert pcrp.model_selection.cluster_loss(v, np.zeros(15, int)) == pytest.approx(
        np.sqrt(np.sum((v - v.mean()) ** 2))
    )
    # the square root charges for splitting a cluster without moving its mean
    halves = np.r_[np.zeros(20, int), np.ones(20, int)]
    same_mean = np.r_[x[:20], -x[:20]]
    assert pcrp.model_selection.cluster_loss(same_mean, halves) > pcrp.model_selection.cluster_loss(
        same_mean, np.zeros(40, int)
    )
    with pytest.raises(ValueError, match="labels"):
        pcrp.model_selection.cluster_loss(x, labels[:-1])


def test_find_jump_takes_the_point_before_the_first_large_rise():
    r = np.array([1.0, 1.1, 1.2, 1.3, 1.4, 1.5])
    # small wiggles (< 10%), then a 50% rise at 1.4, then a larger one later
    loss = np.array([15.5, 15.0, 15.6, 14.9, 22.0, 40.0])
    assert pcrp.model_selection.find_jump(r, loss) == (1.3, 4)
    # a stricter tolerance reads the 4% wiggle at 1.2 as the jump
    assert pcrp.model_selection.find_jump(r, loss, jump_tol=0.03) == (1.1, 2)
    # decreases never count; no jump means the largest r and no index
    assert pcrp.model_selection.find_jump(r, loss[::-1]) == (1.5, None)
    with pytest.raises(ValueError, match="increasing"):
        pcrp.model_selection.find_jump(r[::-1], loss)
    with pytest.raises(ValueError, match="same length"):
        pcrp.model_selection.find_jump(r, loss[:-1])


def test_split_train_test():
    x = np.arange(30, dtype=float).reshape(15, 2)
    train, test = pcrp.model_selection.split_train_test(x, 10, seed=3)
    assert train.shape == (10, 2) and test.shape == (5, 2)
    np.testing.assert_array_equal(np.sort(np.r_[train, test][:, 0]), x[:, 0])
    again, _ = pcrp.model_selection.split_train_test(x, 10, seed=3)
    np.testing.assert_array_equal(train, again)
    other, _ = pcrp.model_selection.split_train_test(x, 10, seed=4)
    assert not np.array_equal(train, other)
    v_train, v_test = pcrp.model_selection.split_train_test(x[:, 0], 4, seed=0)
    assert v_train.shape == (4,) and v_test.shape == (11,)
    for bad in (0, 15, 2.5):
        with pytest.raises(ValueError, match="n_train"):
            pcrp.model_selection.split_train_test(x, bad)


def test_loss_curve_jumps_where_the_two_clusters_merge():
    x_train, y_train, x_test, y_test = _two_blobs()
    prior = pcrp.NIWPrior.from_data(x_train)
    # The exact merge level r*: log p(true split) = log p(one cluster) under
    # p(z | X) ∝ alpha^K prod Gamma(n_k)^r prod m(X_k), which is linear in r.
    one = np.zeros(len(x_train), int)
    args = (prior.mu0, prior.kappa0, prior.nu0, prior.psi0)

    def log_odds(r):
        return log_pcrp_joint(y_train, x_train, 1.0, r, *args) - log_pcrp_joint(
            one, x_train, 1.0, r, *args
        )

    r_star = 1.0 - log_odds(1.0) / (log_odds(2.0) - log_odds(1.0))
    assert 1.4 < r_star < 1.7  # measured 1.52 for this data set

    powers = np.round(np.arange(1.0, 3.01, 0.2), 1)
    res = pcrp.model_selection.cross_validate_power(
        x_train, x_test, powers, draws=100, tune=100, chains=2, random_seed=1
    )
    # measured (random_seed=1): 19.02 18.69 | 32.95 25.82 25.82 25.82 25.82 32.95 32.95 ...
    true_loss = pcrp.model_selection.cluster_loss(x_test, y_test)  # 18.69
    one_loss = pcrp.model_selection.cluster_loss(x_test, np.zeros(len(x_test), int))  # 32.95
    np.testing.assert_array_equal(res.powers, powers)
    assert res.loss_draws.shape == (powers.size, 2, 100)
    chosen = int(np.flatnonzero(res.powers == res.chosen_power)[0])
    assert res.jump_index == chosen + 1 and res.jumped
    assert f"chosen r = {res.chosen_power:g} is the last grid point before the jump" in str(res)
    assert "jumped=True" in repr(res)
    assert 1.0 < res.chosen_power < r_star
    # before the jump both clusters are kept and the held-out loss is the true partition's
    assert res.mean_k[chosen] > 1.9
    assert res.loss[chosen] == pytest.approx(true_loss, rel=0.1)
    # well past r*, every draw has merged them: the loss is exactly the one-cluster loss
    assert res.mean_k[-1] < 1.05
    assert res.loss[-1] == pytest.approx(one_loss, rel=1e-9)
    assert res.loss[-1] > 1.5 * res.loss[chosen]
    assert res.loss[res.jump_index] > 1.3 * res.loss[chosen]
    assert np.all(res.loss_se >= 0) and np.all(np.isfinite(res.loss_se))


def test_results_do_not_depend_on_n_jobs_or_grid_order():
    x_train, _, x_test, _ = _two_blobs(n_per=40, seed=11)
    kwargs = {"draws": 20, "tune": 20, "random_seed": SEED}
    serial = pcrp.model_selection.cross_validate_power(
        x_train, x_test, [1.0, 1.5, 3.0], n_jobs=1, **kwargs
    )
    parallel = pcrp.model_selection.cross_validate_power(
        x_train, x_test, [3.0, 1.0, 1.5], n_jobs=2, **kwargs
    )
    np.testing.assert_array_equal(serial.powers, parallel.powers)
    np.testing.assert_array_equal(serial.loss_draws, parallel.loss_draws)
    np.testing.assert_array_equal(serial.mean_k, parallel.mean_k)
    assert serial.chosen_power == parallel.chosen_power
    other = pcrp.model_selection.cross_validate_power(
        x_train, x_test, [1.0, 1.5, 3.0], draws=20, tune=20
    )
    assert not np.array_equal(serial.loss_draws, other.loss_draws)


def test_warns_when_the_curve_never_jumps():
    rng = np.random.default_rng(SEED)
    x = rng.normal(size=(60, 2))  # one cluster: nothing to merge
    with pytest.warns(UserWarning, match="never rose"):
        res = pcrp.model_selection.cross_validate_power(
            x[:40], x[40:], [2.0, 3.0], draws=20, tune=30, random_seed=SEED
        )
    assert res.chosen_power == 3.0 and res.jump_index is None
    assert res.jumped is False and "jumped=False" in repr(res)
    assert "r was NOT chosen by cross-validation: r = 3 is just the top of the grid" in (
        res.summary()
    )


def test_training_fits_use_the_step_defaults(monkeypatch):
    seen = []
    real_fit = pcrp.fitting.fit

    def spy(*args, **kwargs):
        seen.append(kwargs)
        return real_fit(*args, **kwargs)

    monkeypatch.setattr(pcrp.fitting, "fit", spy)
    x = np.random.default_rng(SEED + 1).normal(size=(30, 2))
    with pytest.warns(UserWarning, match="never rose"):
        pcrp.model_selection.cross_validate_power(
            x[:20], x[20:], [1.0, 2.0], draws=5, tune=5, random_seed=SEED, jump_tol=100.0
        )
    assert len(seen) == 2
    for kwargs in seen:
        # no step options: PCRPGibbs runs with its own default moves and initialisation
        assert "pcrp_gibbs" not in kwargs and "init" not in kwargs
        assert kwargs["compute_convergence_checks"] is False


def test_bad_arguments():
    x = np.random.default_rng(0).normal(size=(20, 2))
    with pytest.raises(ValueError, match="at least two"):
        pcrp.model_selection.cross_validate_power(x, x, [1.2])
    with pytest.raises(ValueError, match="repeated"):
        pcrp.model_selection.cross_validate_power(x, x, [1.2, 1.2])
    with pytest.raises(ValueError, match="powers"):
        pcrp.model_selection.cross_validate_power(x, x, [0.0, 1.2])
    with pytest.raises(ValueError, match="features"):
        pcrp.model_selection.cross_validate_power(x, x[:, :1], [1.0, 1.2])
    with pytest.raises(ValueError, match="must not set"):
        pcrp.model_selection.cross_validate_power(x, x, [1.0, 1.2], fit_kwargs={"power": 2.0})


# ----------------------------------------------------------------- the rule of power="auto"


def test_merged_pairs_ignores_specks_and_names_joined_clusters():
    reference = np.r_[np.zeros(40, int), np.ones(40, int), np.full(30, 2), np.full(2, 3)]
    # clusters 0 and 1 joined, cluster 2 kept, the speck 3 absorbed by 2
    labels = np.r_[np.zeros(80, int), np.ones(32, int)]
    assert pcrp.model_selection.merged_pairs(reference, labels) == [(0, 1)]
    # only the speck absorbed: no merge
    only_speck = np.r_[np.zeros(40, int), np.ones(40, int), np.full(32, 2)]
    assert pcrp.model_selection.merged_pairs(reference, only_speck) == []
    # with no speck threshold, absorbing cluster 3 into 2 counts as a merge
    assert pcrp.model_selection.merged_pairs(reference, only_speck, speck=0.0) == [(2, 3)]
    with pytest.raises(ValueError, match="'speck' must be a fraction"):
        pcrp.model_selection.merged_pairs(reference, labels, speck=1.5)
    with pytest.raises(ValueError, match="same length"):
        pcrp.model_selection.merged_pairs(reference, labels[:-1])


def test_agreeing_power_stops_at_the_first_merge_of_real_clusters():
    three = np.r_[np.zeros(50, int), np.ones(50, int), np.full(50, 2), np.full(3, 3)]
    no_speck = np.r_[np.zeros(50, int), np.ones(50, int), np.full(53, 2)]
    merged = np.r_[np.zeros(100, int), np.ones(53, int)]
    rule = pcrp.model_selection.agreeing_power
    assert rule([1.0, 1.1, 1.3], [three, no_speck, merged]) == 1.1
    assert rule([1.0, 1.1, 1.3], [three, no_speck, no_speck]) == 1.3
    # a merge stops the walk even if a later point estimate agrees again
    assert rule([1.0, 1.1, 1.3], [three, merged, no_speck]) == 1.0
    with pytest.raises(ValueError, match="one partition per power"):
        rule([1.0, 1.1], [three])
    with pytest.raises(ValueError, match="strictly increasing"):
        rule([1.1, 1.0], [three, three])


def test_power_sensitivity_reports_a_join_with_its_posterior_mass():
    a = np.r_[np.zeros(50, int), np.ones(50, int), np.full(50, 2)]
    joined = np.r_[np.zeros(100, int), np.full(50, 2)]
    # draws at r = 1: clusters 0 and 1 apart in 3 of 4 draws
    draws_1 = np.stack([a, a, a, joined])
    sens = pcrp.model_selection.power_sensitivity(
        [1.0, 1.1, 1.3], [a, a, joined], 1.1, draws=[draws_1, draws_1, draws_1[:1]]
    )
    assert sens.material
    assert sens.n_clusters.tolist() == [3, 3, 2]
    assert sens.ari[:2].tolist() == [1.0, 1.0] and sens.ari[2] < 0.7
    assert sens.vi[1] == 0.0 and sens.vi[2] > 0.5
    assert len(sens.changes) == 1
    assert "At r = 1.3 the point estimate joins clusters 0 and 1" in sens.changes[0]
    assert "at r = 1.1 they are apart in 75% of the draws" in sens.changes[0]
    assert sens.warning().startswith("The answer depends on r.")
    attrs = sens.attrs()
    assert attrs["pcrp_sensitivity_n_clusters"] == [3, 3, 2]
    assert attrs["pcrp_sensitivity_material"] == 1
    assert "r" in sens.summary() and "VI to reported (bits)" in sens.summary()
    # chosen at the top: a smaller r splits one of the answer's clusters, 75% of r = 1's draws
    top = pcrp.model_selection.power_sensitivity(
        [1.0, 1.3], [a, joined], 1.3, draws=[draws_1, None]
    )
    assert "splits one of the answer's clusters in two (50 and 50 points)" in top.changes[0]
    assert "apart in 75% of the draws" in top.changes[0]
    same = pcrp.model_selection.power_sensitivity([1.0, 1.1], [a, a], 1.0)
    assert not same.material and same.warning() is None
    with pytest.raises(ValueError, match=r"'chosen_power' = 1\.2 is not in 'powers'"):
        pcrp.model_selection.power_sensitivity([1.0, 1.1], [a, a], 1.2)


def test_fit_power_auto_is_the_fit_at_the_chosen_power(recwarn):
    rng = np.random.default_rng(SEED)
    shift = np.array([7.0, 0.0])
    x = np.r_[rng.normal(0, 1, (60, 2)), rng.normal(0, 1, (60, 2)) + shift]
    settings = dict(draws=40, tune=40, chains=2, random_seed=3)
    idata = pcrp.fit(x, power="auto", **settings)
    chosen = idata.attrs["pcrp_chosen_power"]
    assert chosen == pcrp.model_selection.DEFAULT_POWER == 1.1
    assert idata.attrs["pcrp_power_rule"].startswith("default: the package's default r")
    assert idata.attrs["pcrp_sensitivity_powers"] == [1.0, 1.1, 1.3]
    assert idata.attrs["pcrp_sensitivity_n_clusters"][-1] == 2
    assert float(idata.constant_data["power"]) == chosen
    direct = pcrp.fit(x, power=chosen, **settings)
    np.testing.assert_array_equal(idata.posterior["z"].values, direct.posterior["z"].values)
    with pytest.raises(ValueError, match="'power' must be a number > 0 or 'auto'"):
        pcrp.fit(x, power="cv")
    with pytest.raises(ValueError, match="leave out return_inferencedata=False"):
        pcrp.fit(x, power="auto", return_inferencedata=False)
    choose = pcrp.model_selection.choose_power
    with pytest.raises(ValueError, match=r"must hold the default r = 1\.1"):
        choose(x, powers=(1.0, 1.3))
    with pytest.raises(ValueError, match="'rule' must be 'default' or 'agree'"):
        choose(x, rule="loo")
