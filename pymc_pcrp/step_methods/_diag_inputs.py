"""What :class:`~pymc_pcrp.PCRPGibbs` hands the kernels of the diagonal-covariance family.

The step dispatches on the family of its :class:`~pymc_pcrp.NIWMixture`
(``NIWPrior(covariance="diag")``); for the diagonal family the inputs are built
here, the state by :func:`~pymc_pcrp._kernels.diag_state.init_diag_state`, and
the draw is made by :func:`~pymc_pcrp._kernels.diag_chain.advance_diag` (or its
owned-``alpha`` variant). The scale always lives on a grid, a fixed scale
being a one-point grid, so the same kernel serves both.
"""

from __future__ import annotations

import numpy as np

from pymc_pcrp._kernels.diag_chain import advance_diag, advance_diag_alpha
from pymc_pcrp._kernels.diag_state import (
    DiagGrid,
    diag_tables,
    init_diag_state,
    make_diag_grid,
    make_diag_params,
)
from pymc_pcrp.step_methods._step_inputs import SweepInputs

__all__ = ["build_diag_inputs", "diag_kernel", "init_diag_state"]


def build_diag_inputs(
    xc: np.ndarray,
    alpha: float,
    power: float,
    kappa0: float,
    nu0: float,
    psi0: np.ndarray,
    grid: np.ndarray,
    log_w: np.ndarray,
    last_scale: DiagGrid | None = None,
) -> SweepInputs:
    """Parameters, tables and scale grid of the diagonal family for centred data ``xc``.

    Parameters
    ----------
    xc : numpy.ndarray
        Data centred at ``mu0``, shape ``(N, D)``.
    alpha, power, kappa0, nu0 : float
        The pCRP and prior parameters (``a0 = nu0 / 2``).
    psi0 : numpy.ndarray
        The diagonal ``(D, D)`` base matrix (``b0 = s diag(psi0) / 2``).
    grid, log_w : numpy.ndarray
        The scale grid and its log weights (one point for a fixed scale).
    last_scale : DiagGrid, optional
        The previous grid, kept (with the chain's current ``s``) when given.

    Returns
    -------
    SweepInputs
        ``params`` at ``s = 1``; the kernel applies the grid's current ``s``.
    """
    diag = np.ascontiguousarray(np.diag(np.asarray(psi0, dtype=np.float64)))
    params = make_diag_params(alpha, power, kappa0, nu0, diag)
    scale = last_scale if last_scale is not None else make_diag_grid(diag, grid, log_w)
    return SweepInputs(xc, params, diag_tables(xc, params), scale)


def diag_kernel(owned_alpha: bool):
    """Return the diagonal family's advance kernel, with an owned ``alpha`` or without."""
    return advance_diag_alpha if owned_alpha else advance_diag
