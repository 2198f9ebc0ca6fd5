"""Convergence checks of the number of clusters and the log joint (pymc_pcrp.diagnostics)."""

import math

from types import SimpleNamespace

import arviz as az
import numpy as np
import pytest

import pymc_pcrp as pcrp

from pymc_pcrp.stats.convergence import check_convergence, stop_after_interrupted_chain

SEED = sum(ord(c) for c in "test_diagnostics")


def _idata(k, log_joint):
    return az.from_dict(
        posterior={"n_clusters": np.asarray(k)},
        sample_stats={"log_joint": np.asarray(log_joint, dtype=np.float64)},
    )


def _iid(rng, chains, draws):
    k = rng.integers(2, 5, size=(chains, draws))
    return k, -100.0 - 3.0 * k + rng.normal(size=(chains, draws))


def test_well_mixed_chains_pass():
    rng = np.random.default_rng(SEED)
    report = check_convergence(_idata(*_iid(rng, 4, 500)))
    assert report.converged and report.problems == ()
    assert (report.n_chains, report.n_draws, report.ess_min) == (4, 500, 400.0)
    for name in ("n_clusters", "log_joint"):
        q = report[name]
        assert q.ok and not q.constant
        assert q.r_hat < 1.01 and q.ess_bulk > 1000  # 2000 independent draws
    assert "Convergence checks passed" in report.summary()
    assert "NOT CONVERGED" not in report.summary()


def test_chains_that_disagree_fail_on_r_hat():
    rng = np.random.default_rng(SEED + 1)
    k, lj = _iid(rng, 4, 500)
    lj[0] += 5.0  # one chain sits at another level of the log joint
    report = check_convergence(_idata(k, lj))
    assert not report.converged
    assert report["n_clusters"].ok and not report["log_joint"].ok
    assert report["log_joint"].r_hat > 1.01
    (problem,) = [p for p in report.problems if "R-hat" in p]
    assert (
        problem.startswith("log_joint has R-hat") and f"{report['log_joint'].r_hat:.3f}" in problem
    )
    # the message shows how the chains disagree: each chain's mean, the shifted one first
    shown = ", ".join(f"{m:.4g}" for m in lj.mean(axis=1))
    assert f"(chain means {shown})" in problem
    assert lj[0].mean() > lj[1:].mean(axis=1).max() + 4.0
    assert "NOT CONVERGED" in report.summary() and "more draws, more chains" in report.summary()


def test_disagreement_message_lists_at_most_eight_chain_means():
    rng = np.random.default_rng(SEED + 5)
    k, lj = _iid(rng, 10, 200)
    lj += 10.0 * np.arange(10)[:, None]  # ten chains at ten levels
    (problem,) = [p for p in check_convergence(_idata(k, lj)).problems if "R-hat" in p]
    means = problem.split("(chain means ")[1]
    assert means.count(",") == 8 and means.endswith("... (10 chains)).")


def test_short_or_sticky_chains_fail_on_bulk_ess():
    rng = np.random.default_rng(SEED + 2)
    # AR(1) with coefficient 0.98: about 100 draws carry the information of one.
    lj = np.zeros((2, 1000))
    noise = rng.normal(size=(2, 1000))
    for t in range(1, 1000):
        lj[:, t] = 0.98 * lj[:, t - 1] + noise[:, t]
    k = rng.integers(2, 5, size=(2, 1000))
    report = check_convergence(_idata(k, lj))
    assert report["n_clusters"].ok
    q = report["log_joint"]
    assert q.ess_bulk < 200 and not q.ok
    assert any(p.startswith("log_joint has bulk ESS") and "< 200" in p for p in q.problems)


def test_constant_quantities_are_decided_by_agreement_between_chains():
    same = check_convergence(_idata(np.full((3, 50), 2), np.full((3, 50), -80.5)))
    assert same.converged
    assert same["n_clusters"].constant and math.isnan(same["n_clusters"].r_hat)
    assert math.isnan(same["log_joint"].ess_bulk)
    different = check_convergence(
        _idata(np.full((3, 50), 2), np.repeat([[-80.5], [-80.5], [-91.0]], 50, axis=1))
    )
    assert not different.converged
    assert different["n_clusters"].ok
    lj = different["log_joint"]
    assert lj.constant and lj.r_hat == math.inf
    assert "differs between chains" in lj.problems[0] and "-91" in lj.problems[0]
    # Rounding noise of a recomputed density is still "constant".
    jitter = -80.5 + 1e-12 * np.random.default_rng(SEED).normal(size=(2, 50))
    assert check_convergence(_idata(np.full((2, 50), 2), jitter))["log_joint"].constant


def test_one_chain_checks_the_ess_only():
    rng = np.random.default_rng(SEED + 3)
    report = check_convergence(_idata(*_iid(rng, 1, 400)))
    assert report.converged and report.ess_min == 100.0
    assert math.isnan(report["n_clusters"].r_hat)
    assert "R-hat needs at least 2 chains" in report.summary()
    short = check_convergence(_idata(*_iid(rng, 1, 50)))
    assert not short.converged and all("bulk ESS" in p for p in short.problems)


def test_missing_quantities():
    with pytest.raises(ValueError, match="nothing to check"):
        check_convergence(az.from_dict(posterior={"mu": np.zeros((2, 10))}))
    only_k = az.from_dict(posterior={"n_clusters": np.full((2, 10), 3)})
    assert [q.name for q in check_convergence(only_k).quantities] == ["n_clusters"]


def test_fit_warns_with_the_quantity_value_and_remedy():
    rng = np.random.default_rng(SEED + 4)
    x = np.r_[rng.normal(-5, 1, (20, 2)), rng.normal(5, 1, (20, 2))]
    # 2 chains x 15 draws cannot reach a bulk ESS of 200.
    with pytest.warns(pcrp.ConvergenceWarning) as caught:
        idata = pcrp.fit(x, power=1.1, draws=15, tune=10, chains=2, random_seed=SEED)
    report = check_convergence(idata)
    messages = [str(w.message) for w in caught if w.category is pcrp.ConvergenceWarning]
    assert len(messages) == len(report.problems) >= 1
    for problem, message in zip(report.problems, messages, strict=True):
        assert message.startswith(problem)
        assert "more draws, more chains, or another power r" in message
        assert "split_merge" in message
    ess = report["n_clusters"].ess_bulk
    if not report["n_clusters"].constant:
        assert any(f"n_clusters has bulk ESS {ess:.0f} < 200" in m for m in messages)
    assert issubclass(pcrp.ConvergenceWarning, UserWarning)


def test_fit_does_not_warn_when_checks_are_off(recwarn):
    x = np.random.default_rng(SEED + 5).normal(size=(20, 2))
    pcrp.fit(x, draws=10, tune=5, chains=1, random_seed=SEED, compute_convergence_checks=False)
    assert not [w for w in recwarn if w.category is pcrp.ConvergenceWarning]


def test_an_interrupted_chain_stops_the_chains_after_it():
    """A chain that ends before its last draw makes every later chain stop at its first."""
    seen = []
    callback = stop_after_interrupted_chain(4, lambda trace, draw: seen.append(draw.chain))

    def draw(chain, i):
        return SimpleNamespace(chain=chain, draw_idx=i)

    for i in range(4):  # chain 0 runs to its last draw: chain 1 may start
        callback(trace=None, draw=draw(0, i))
    callback(trace=None, draw=draw(1, 0))
    callback(trace=None, draw=draw(1, 1))  # chain 1 interrupted here (PyMC caught it)
    with pytest.raises(KeyboardInterrupt):
        callback(trace=None, draw=draw(2, 0))
    with pytest.raises(KeyboardInterrupt):  # and so on for every remaining chain
        callback(trace=None, draw=draw(3, 0))
    assert seen == [0, 0, 0, 0, 1, 1, 2, 3]  # the caller's callback saw every draw
