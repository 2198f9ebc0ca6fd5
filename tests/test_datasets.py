"""Tests of the bundled data sets."""

import numpy as np

from pymc_pcrp.datasets import load_old_faithful


def test_old_faithful_shape_and_means():
    X = load_old_faithful()
    assert X.shape == (272, 2)
    assert X.dtype == np.float64
    np.testing.assert_allclose(X.mean(axis=0), [3.487783, 70.897059], rtol=0.0, atol=1e-6)
    np.testing.assert_array_equal(X[:3], [[3.6, 79.0], [1.8, 54.0], [3.333, 74.0]])
    # Waiting times are whole minutes.
    np.testing.assert_array_equal(X[:, 1], np.round(X[:, 1]))


def test_old_faithful_equals_shared_copy(shared_data_dir):
    shared = np.loadtxt(shared_data_dir / "old_faithful.csv", delimiter=",", skiprows=1)
    np.testing.assert_array_equal(load_old_faithful(), shared)
