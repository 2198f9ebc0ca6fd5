"""Numba kernels over plain arrays. Nothing in this sub-package knows about PyMC."""
