"""The table family: column specs, the NumPy algebra, the kernels and the model's logp."""

import numpy as np
import pandas as pd
import pymc as pm
import pytest

from scipy.special import gammaln
from table_reference import (
    categorical_log_marginal,
    gaussian_log_marginal,
    poisson_log_marginal,
)

import pymc_pcrp as pcrp

from pymc_pcrp._kernels import family_chain, family_moves, table
from pymc_pcrp._kernels.pair_moves import no_pairs
from pymc_pcrp._kernels.partitions import canonical_labels
from pymc_pcrp._kernels.table import make_table_params, table_tables
from pymc_pcrp.distributions._table_numpy import table_log_predictive, table_loglik
from pymc_pcrp.fitting import choose_family


def _mixed(n=30, seed=0):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame(
        {
            "flag": pd.array(rng.random(n) < 0.4, dtype="boolean"),
            "colour": pd.Categorical(rng.choice(["red", "green", "blue"], n)),
            "visits": rng.poisson(3.0, n),
            "height": rng.normal(170.0, 10.0, n),
        }
    )
    df.loc[2, "flag"] = pd.NA
    df.loc[4, "colour"] = np.nan
    df.loc[5, "height"] = np.nan
    df.loc[7, "visits"] = np.nan
    return df


def _kernel_inputs(spec, values, mask, alpha=1.0, power=1.0):
    x = values.copy()
    gaussian = spec.kind == 2
    x[:, gaussian] -= spec.hyp[gaussian, 3]
    x[~mask] = np.nan
    return x, make_table_params(alpha, power, spec.kind, spec.nlev, spec.conc, spec.hyp, x.shape[0])


def test_kinds_are_inferred_from_dtypes_and_overridden_by_the_spec():
    df = _mixed()
    spec = pcrp.table_spec(df)
    assert [c.kind for c in spec.columns] == ["bernoulli", "categorical", "gaussian", "gaussian"]
    spec = pcrp.table_spec(df, {"visits": "poisson"})
    assert [c.kind for c in spec.columns] == ["bernoulli", "categorical", "poisson", "gaussian"]
    assert spec.columns[1].levels == ("blue", "green", "red")
    text = pd.DataFrame({"a": ["x", "y", None], "b": [True, False, True]})
    assert [c.kind for c in pcrp.table_spec(text).columns] == ["categorical", "bernoulli"]


def test_encoding_marks_missing_cells_and_codes_levels():
    df = _mixed()
    spec = pcrp.table_spec(df, {"visits": "poisson"})
    values, mask = spec.encode(df)
    assert values.shape == (30, 4)
    assert not mask[2, 0] and not mask[4, 1] and not mask[7, 2] and not mask[5, 3]
    assert mask.sum() == 30 * 4 - 4
    colours = df["colour"].astype(object).to_numpy()
    assert spec.columns[1].levels[int(values[0, 1])] == colours[0]


@pytest.mark.parametrize(
    ("columns", "match"),
    [
        ("ordinal", "Argument 'kind' must be one of"),
        ({"weight": "gaussian"}, "names 'weight', which is not a column"),
        (["gaussian"], "gives 1 kinds for a table of 4 columns"),
        ({"height": "poisson"}, "not non-negative integers"),
        ({"colour": "gaussian"}, "holds non-numeric values"),
    ],
)
def test_bad_column_specs_are_refused_with_the_reason(columns, match):
    df = _mixed()
    with pytest.raises(ValueError, match=match):
        spec = pcrp.table_spec(df, columns)
        spec.encode(df)


def test_numpy_marginal_matches_the_independent_references():
    df = _mixed(n=12, seed=3)
    spec = pcrp.table_spec(df, {"visits": "poisson"})
    values, mask = spec.encode(df)
    labels = np.arange(12) % 3
    expected = 0.0
    for k in range(3):
        rows = labels == k
        for j, col in enumerate(spec.columns):
            cells = values[rows & mask[:, j], j]
            if col.kind in ("bernoulli", "categorical"):
                conc = np.ones(len(col.levels))
                expected += categorical_log_marginal(cells.astype(int), conc)
            elif col.kind == "poisson":
                expected += poisson_log_marginal(cells, *spec.hyp[j, :2])
            else:
                expected += gaussian_log_marginal(cells, *spec.hyp[j])
    got = table_loglik(values, mask, labels, spec.kind, spec.nlev, spec.conc, spec.hyp)
    assert got == pytest.approx(expected, rel=1e-9, abs=1e-9)


def test_kernel_log_joint_and_new_cluster_weights_match_numpy():
    df = _mixed()
    spec = pcrp.table_spec(df, {"visits": "poisson"})
    values, mask = spec.encode(df)
    alpha, power = 0.7, 1.3
    x, params = _kernel_inputs(spec, values, mask, alpha, power)
    labels = canonical_labels(np.random.default_rng(1).integers(0, 4, 30))
    sizes = np.bincount(labels)
    prior = sizes.size * np.log(alpha) + power * gammaln(sizes).sum()
    loglik = table_loglik(values, mask, labels, spec.kind, spec.nlev, spec.conc, spec.hyp)
    assert family_moves.partition_log_joint(x, labels, params) == pytest.approx(prior + loglik)
    log_new = table_tables(x, params)[0]
    empty = np.zeros((0, 4))
    reference = np.log(alpha) + table_log_predictive(
        values, mask, empty, empty, spec.kind, spec.nlev, spec.conc, spec.hyp
    )
    np.testing.assert_allclose(log_new, reference, rtol=1e-10)


def test_a_draw_leaves_the_state_equal_to_one_rebuilt_from_its_labels():
    df = _mixed()
    spec = pcrp.table_spec(df, {"visits": "poisson"})
    x, params = _kernel_inputs(spec, *spec.encode(df))
    rng = np.random.default_rng(5)
    state = family_moves.init_state(x, canonical_labels(rng.integers(0, 3, 30)), params)
    out = (np.zeros(4, dtype=np.int64), np.zeros(30, dtype=np.int64))
    chain = (x, state, params, table_tables(x, params))
    for _ in range(5):
        family_chain.advance(rng, chain, (3, 2.0, -1, 1.0, no_pairs(), 3.0), out, None)
    assert out[0][0] > 0  # split-merge proposals were made
    fresh = family_moves.init_state(x, state.labels, params)
    for p in range(state.k[0]):
        slot = state.order[p]
        np.testing.assert_allclose(state.sums[slot], fresh.sums[slot], atol=1e-9)
        np.testing.assert_allclose(state.cache[slot], fresh.cache[slot], atol=1e-9)
    assert state.k[0] == len(np.unique(state.labels))


def test_a_rows_own_cluster_is_scored_as_if_the_row_were_taken_out():
    # loo_score reads the row's cells out of its cluster by hand; the reference takes
    # the row out of a copy of the statistics, refreshes the cache and scores it.
    df = _mixed(n=40, seed=3)
    df["visits"] = np.random.default_rng(4).choice([0, 1, 3, 7, 9, 70, 200], 40)
    spec = pcrp.table_spec(df, {"visits": "poisson"})
    x, params = _kernel_inputs(spec, *spec.encode(df), alpha=0.5, power=1.2)
    labels = canonical_labels(np.arange(40) % 3)
    state = family_moves.init_state(x, labels, params)
    for i in range(40):
        slot = state.labels[i]
        stats, cache = state.sums.copy(), state.cache.copy()
        table.shift(stats, slot, x, i, -1.0, params)
        table.refresh(stats, cache, slot, params)
        expected = table.score(cache, slot, x, i, params)
        got = table.loo_score(state.sums, state.cache, slot, x, i, params)
        assert got == pytest.approx(expected, rel=1e-10, abs=1e-10)
    # scores of counts: rising factorials by product or log-gamma, against SciPy
    empty = np.zeros((0, 4))
    reference = np.log(0.5) + table_log_predictive(
        *spec.encode(df), empty, empty, spec.kind, spec.nlev, spec.conc, spec.hyp
    )
    np.testing.assert_allclose(table_tables(x, params)[0], reference, rtol=1e-10)


def test_table_mixture_logp_is_the_collapsed_marginal():
    df = _mixed()
    spec = pcrp.table_spec(df, {"visits": "poisson"})
    values, mask = spec.encode(df)
    labels = canonical_labels(np.arange(30) % 4)
    with pm.Model() as model:
        z = pcrp.PowerCRP("z", alpha=1.0, power=1.0, n=30)
        pcrp.TableMixture("x", z=z, columns=spec, observed=df)
    got = model.compile_logp(vars=[model["x"]])({"z": labels})
    expected = table_loglik(values, mask, labels, spec.kind, spec.nlev, spec.conc, spec.hyp)
    assert got == pytest.approx(expected)


def test_table_mixture_refuses_a_table_of_the_wrong_length():
    with pm.Model():
        z = pcrp.PowerCRP("z", alpha=1.0, power=1.0, n=10)
        with pytest.raises(ValueError, match="has N = 30 rows but 'z' labels 10 items"):
            pcrp.TableMixture("x", z=z, observed=_mixed())


def test_pair_moves_are_refused_for_a_table():
    with pm.Model():
        z = pcrp.PowerCRP("z", alpha=1.0, power=1.0, n=30)
        pcrp.TableMixture("x", z=z, observed=_mixed())
        with pytest.raises(ValueError, match="covariance='table'"):
            pcrp.PCRPGibbs([z], pair_moves=1.0)


def test_fit_chooses_the_family_from_the_data():
    numeric = np.random.default_rng(0).normal(size=(10, 2))
    assert choose_family(numeric, None) == "gaussian"
    assert choose_family(pd.DataFrame(numeric), None) == "gaussian"
    assert choose_family(pd.Series(numeric[:, 0]), None) == "gaussian"
    assert choose_family(_mixed(), None) == "table"
    with_nan = numeric.copy()
    with_nan[0, 0] = np.nan
    assert choose_family(with_nan, None) == "gaussian"  # refused there: ask for a table
    assert choose_family(with_nan, "table") == "table"
    dated = _mixed().assign(when=pd.Timestamp("2024-01-01"))
    assert choose_family(dated, None) == "gaussian"  # dates are refused there, naming them
    assert choose_family(numeric, None, columns="poisson") == "table"
    with pytest.raises(ValueError, match="Argument 'family' must be one of"):
        choose_family(numeric, "mixed")
    with pytest.raises(ValueError, match="use it with family='table'"):
        choose_family(numeric, "gaussian", columns="gaussian")


def test_an_owned_alpha_recomputes_a_tables_new_cluster_weights():
    from pymc_pcrp.sampler.inputs import REFRESH_EVERY

    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 2.0, 2.0)
        z = pcrp.PowerCRP("z", alpha=alpha, power=1.1, n=30)
        pcrp.TableMixture("x", z=z, columns={"visits": "poisson"}, observed=_mixed())
        step = pcrp.PCRPGibbs([z, alpha], rng=1)
    assert step.inputs.alpha is not None  # the step owns alpha
    point, _ = step.step(model.initial_point())
    inputs = step.inputs.arrays(point)
    exact = inputs.tables[0].copy()
    inputs.tables[0][:] += 0.5  # as if shifted by rounding
    step.inputs.alpha_draws = REFRESH_EVERY - 1
    step.inputs.refresh_owned_alpha(inputs)
    np.testing.assert_allclose(inputs.tables[0], exact, rtol=1e-12)
