"""Input checks at the boundary: data the arithmetic cannot hold is refused by name."""

import numpy as np
import pandas as pd
import pymc as pm
import pytest

import pymc_pcrp as pcrp

from pymc_pcrp._validation import check_data


def test_complex_data_is_refused_not_cast():
    x = np.ones((5, 2)) + 1j
    with pytest.raises(ValueError, match="Argument 'X' holds complex numbers"):
        check_data(x, "X")


@pytest.mark.parametrize("scale", [1e154, 1e101, -1e120])
def test_data_too_large_for_sums_of_squares_is_refused(scale):
    x = np.random.default_rng(0).normal(size=(20, 2))
    x[:, 1] *= scale
    with pytest.raises(ValueError, match=r"Argument 'X' has column\(s\) \[1\] with values above"):
        check_data(x, "X")


def test_data_too_small_for_sums_of_squares_is_refused():
    x = np.random.default_rng(0).normal(size=(20, 3)) * 1e-200
    with pytest.raises(ValueError, match=r"column\(s\) \[0, 1, 2\] with values below"):
        check_data(x, "X")


def test_missing_cells_point_to_the_table_family_and_infinities_do_not():
    x = np.ones((4, 2))
    x[2, 1] = np.nan
    with pytest.raises(
        ValueError, match=r"row\(s\) \[2\]\. The Gaussian families .*family='table'"
    ):
        check_data(x, "X")
    frame = pd.DataFrame(x, columns=["a", "b"])
    with pytest.raises(ValueError, match=r"drop those rows \(X\.dropna\(\)\).*family='table'"):
        check_data(frame, "X")
    x[2, 1] = np.inf
    with pytest.raises(ValueError, match=r"Drop or impute those rows before clustering\.$"):
        check_data(x, "X")


def test_ordinary_scales_and_zero_columns_pass():
    x = np.random.default_rng(0).normal(size=(20, 3))
    x[:, 0] *= 1e90
    x[:, 1] *= 1e-90
    x[:, 2] = 0.0
    np.testing.assert_array_equal(check_data(x, "X"), x)


def test_predict_refuses_points_beyond_the_arithmetic(tmp_path):
    import pymc_pcrp as pcrp

    x = np.random.default_rng(1).normal(size=(30, 2))
    idata = pcrp.fit(
        x, power=1.1, draws=20, tune=10, chains=1, random_seed=2, compute_convergence_checks=False
    )
    with pytest.raises(ValueError, match="above 1e\\+100"):
        pcrp.predict(idata, np.array([[1e155, 0.0]]))


@pytest.mark.parametrize("arg", ["alpha", "power"])
def test_a_string_for_alpha_or_power_is_refused_by_name(arg):
    """Issue 13: ``alpha='1'`` gave PyTensor's "Cannot convert '1' to a tensor variable"."""
    kwargs = {"alpha": 1.0, "power": 1.1, "n": 5, arg: "1"}
    with pm.Model(), pytest.raises(ValueError, match=f"Argument '{arg}' must be a number"):
        pcrp.PowerCRP("z", **kwargs)
    with pytest.raises(ValueError, match=f"Argument '{arg}' must be a number"):
        pcrp.fit(np.arange(6.0), **{"power" if arg == "power" else "alpha": "1"}, draws=2)


def test_the_power_is_bounded_where_n_to_the_r_overflows():
    from pymc_pcrp._validation import check_power, max_power

    limit = max_power(60)
    with np.errstate(over="ignore"):
        assert np.isfinite(np.power(60.0, limit * (1 - 1e-9)))
        assert not np.isfinite(np.power(60.0, limit * 1.01))
    assert check_power(limit, 60) == limit
    with pytest.raises(ValueError, match=r"'power' = 1e\+308 is too large for 60 points"):
        check_power(1e308, 60)
    assert max_power(1) == np.inf  # one point: any power
