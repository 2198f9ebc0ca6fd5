"""What :class:`~pymc_pcrp.PCRPGibbs` hands the kernels of the diagonal-covariance family.

The step dispatches on the family of its :class:`~pymc_pcrp.NIWMixture`
(``NIWPrior(covariance="diag")``, :func:`diag_family`); for the diagonal family
the inputs are built here, the state by
:func:`~pymc_pcrp._kernels.diag_state.init_diag_state`, and the draw is made by
:func:`~pymc_pcrp._kernels.diag_chain.advance_diag` (which also serves an
owned ``alpha``). The scale always lives on a grid, a fixed scale being a one-point
grid, so the same kernel serves both. :func:`init_family_state` and
:func:`advance_kernel` pick the state builder and the kernel of either family.
"""

from __future__ import annotations

import numpy as np

from pymc_pcrp._kernels.chain import advance
from pymc_pcrp._kernels.diag_chain import advance_diag
from pymc_pcrp._kernels.diag_state import (
    DiagGrid,
    diag_tables,
    init_diag_state,
    make_diag_grid,
    make_diag_params,
)
from pymc_pcrp._kernels.hyper import advance_scaled
from pymc_pcrp._kernels.state import NIWParams, SweepState, init_state
from pymc_pcrp.step_methods._step_inputs import SweepInputs

__all__ = ["advance_kernel", "build_diag_inputs", "diag_family", "init_family_state"]


def diag_family(niw, latent: str | None) -> bool:
    """Whether the labels' NIWMixture ``niw`` (``None``: none) has ``covariance="diag"``.

    Raises ``NotImplementedError`` for a diagonal NIWMixture with latent values
    (``latent`` is their name, ``None`` when observed), which the diagonal
    kernels do not handle yet.
    """
    op = getattr(getattr(niw, "owner", None), "op", None)
    diag = op is not None and getattr(op, "covariance", "full") == "diag"
    if diag and latent is not None:
        raise NotImplementedError(
            f"The NIWMixture '{niw.name}' has latent values and covariance='diag'; "
            "PCRPGibbs supports latent values with the full-covariance family only so far."
        )
    return diag


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


def init_family_state(
    diag: bool, xc: np.ndarray, labels: np.ndarray, params: NIWParams
) -> SweepState:
    """Build the sweep state of the diagonal family (``diag``) or the full one from labels."""
    return (init_diag_state if diag else init_state)(xc, labels, params)


def advance_kernel(diag: bool, scaled: bool):
    """Return the advance kernel of a family, with or without a scale grid.

    The diagonal family always has a grid (``scaled`` is ignored); the full one
    runs :func:`~pymc_pcrp._kernels.hyper.advance_scaled` with a learned scale,
    :func:`~pymc_pcrp._kernels.chain.advance` without. Each takes an owned
    ``alpha``'s arguments last (``None`` without one).
    """
    if diag:
        return advance_diag
    return advance_scaled if scaled else advance
