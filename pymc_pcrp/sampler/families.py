"""Cluster families: what a chain needs to know about the likelihood it integrates out.

A family is one object with a small interface, chosen by name
(:func:`family_for`, the ``covariance`` of the :class:`~pymc_pcrp.NIWMixture`):

* :meth:`ClusterFamily.build_inputs`: centred data, kernel parameters, sweep tables
  and the scale grid, from the model's numbers;
* :meth:`ClusterFamily.init_state`: the sweep state (labels, counts, sufficient
  statistics) of a partition;
* :meth:`ClusterFamily.advance_kernel`: the compiled kernel that makes one draw
  (sweeps and the default move set in one numba call);
* :meth:`ClusterFamily.nu0`: the ``nu0`` a draw used (a sample stat);
* :meth:`ClusterFamily.log_joint` and :meth:`ClusterFamily.pack_templates`: a
  partition's log joint, and the proposal of the template jumps;
* :meth:`ClusterFamily.hot_kernel` and :meth:`ClusterFamily.log_likelihood`: the
  draw of a hot replica of parallel tempering, and the log likelihood its swaps test;
* what the family supports (latent values, the pair moves, template jumps,
  tempering), so the chain can refuse an option with the reason.

:data:`FULL` (Normal-Inverse-Wishart, full covariances; kernels in
``_kernels.state``/``sweep``/``chain``/``hyper``), :data:`DIAG`
(Normal-Inverse-Gamma per dimension; ``_kernels.diag_*``) and :data:`TABLE`
(tables of binary, categorical, count and Gaussian columns; the generic moves
of ``_kernels.family_moves`` over ``_kernels.table``, its own sweep and the
template jumps of ``_kernels.family_templates``) are the families.
docs/architecture.md says how to add one.
"""

from __future__ import annotations

import math

from collections.abc import Callable
from typing import ClassVar

import numpy as np

from pymc_pcrp._kernels import family_chain, family_moves, family_tempering
from pymc_pcrp._kernels.chain import advance
from pymc_pcrp._kernels.diag_chain import advance_diag
from pymc_pcrp._kernels.diag_state import (
    diag_tables,
    init_diag_state,
    make_diag_grid,
    make_diag_params,
)
from pymc_pcrp._kernels.family_templates import pack_family_templates
from pymc_pcrp._kernels.hyper import advance_scaled, make_scale_grid
from pymc_pcrp._kernels.log_joint import partition_log_joint
from pymc_pcrp._kernels.state import init_state, make_params
from pymc_pcrp._kernels.sweep import sweep_tables
from pymc_pcrp._kernels.table import make_table_params, table_tables
from pymc_pcrp._kernels.tempering import (
    advance_hot,
    advance_hot_scaled,
    cold_log_likelihood_scaled,
)
from pymc_pcrp._kernels.tempering import log_likelihood as full_log_likelihood
from pymc_pcrp._kernels.templates import TemplateSet, pack_templates
from pymc_pcrp.sampler.inputs import SweepInputs

__all__ = [
    "DIAG",
    "FAMILIES",
    "FULL",
    "TABLE",
    "ClusterFamily",
    "DiagonalNIG",
    "FullNIW",
    "TableFamily",
    "family_for",
]


class ClusterFamily:
    """The interface of a cluster family (see the module); subclasses implement it."""

    #: The name a model gives (``NIWMixture``'s ``covariance``).
    name: ClassVar[str] = ""
    #: Whether the family's values may be latent (updated by another step).
    supports_latent: ClassVar[bool] = False
    #: Whether the pair moves exist for it.
    supports_local_moves: ClassVar[bool] = False
    #: Whether parallel tempering (hot replicas) exists for it.
    supports_tempering: ClassVar[bool] = False
    #: Whether the template jumps exist for it.
    supports_template_jumps: ClassVar[bool] = False
    #: Whether its scale grid also carries a grid of ``nu0`` values.
    has_nu0_grid: ClassVar[bool] = False
    #: Whether a tuning chain makes at least the split-merge proposals that cost about
    #: one sweep (:func:`~pymc_pcrp.sampler.options.sweep_matched_rate`).
    tunes_by_sweep_cost: ClassVar[bool] = False
    #: Whether the informed split-merge proposals exist for it; its kernel's plan then
    #: ends with their rate (:meth:`kernel_plan`).
    supports_informed_moves: ClassVar[bool] = False

    def build_inputs(
        self,
        xc: np.ndarray,
        numbers: tuple[float, float, float, float],
        arrays: tuple,
        kept_scale,
    ) -> tuple[SweepInputs, int | None]:
        """Return the kernel inputs for centred data ``xc``, and the start index of ``nu0``.

        ``numbers`` is ``(alpha, power, kappa0, nu0)``; ``arrays`` is ``(psi0,
        grid, log_w, nu_grid, nu_log_w)``; ``kept_scale`` is the previous scale grid,
        to be kept (with the chain's current ``s``) when the data and prior did not
        change, else ``None``. The second value is the grid index of the ``nu0``
        every chain starts from when a new ``nu0`` grid was built, else ``None``.
        """
        raise NotImplementedError

    def kernel_plan(self, moves: tuple, informed_moves: float) -> tuple:
        """Return the ``plan`` argument of the family's draw kernel.

        ``moves`` is ``(n_sweeps, n_split_merge, n_scans, n_specks, pairs)``, the
        plan every family's kernel takes; a family with informed proposals adds
        their rate.
        """
        return (*moves, informed_moves) if self.supports_informed_moves else moves

    def init_state(self, xc: np.ndarray, labels: np.ndarray, params):
        """Return the sweep state of partition ``labels`` of ``xc``."""
        raise NotImplementedError

    def advance_kernel(self, scaled: bool) -> Callable:
        """Return the kernel of one draw (``scaled``: with a learned scale grid)."""
        raise NotImplementedError

    def fixed_nu0(self, params) -> float:
        """Return the ``nu0`` held by fixed kernel parameters."""
        raise NotImplementedError

    def new_cluster_weights(self, xc: np.ndarray, params) -> np.ndarray:
        """Return each point's ``log alpha + log prior predictive`` (the tables' first entry)."""
        raise NotImplementedError

    def nu0(self, inputs: SweepInputs) -> float:
        """Return the ``nu0`` of the draw just made (for the ``niw_nu0`` stat)."""
        return self.fixed_nu0(inputs.params)

    def log_joint(self, xc: np.ndarray, labels: np.ndarray, params) -> float:
        """Return the log joint of canonical ``labels`` at fixed kernel ``params``."""
        raise NotImplementedError

    def pack_templates(self, xc: np.ndarray, templates: list[np.ndarray], params) -> TemplateSet:
        """Return the template jumps' proposal from canonical ``templates`` at ``params``."""
        raise NotImplementedError(f"no template jumps for covariance='{self.name}'")

    def hot_kernel(self, scaled: bool) -> Callable:
        """Return the kernel of one draw of a hot replica (``scaled``: a learned scale grid).

        Called as ``kernel(rng, (xc, state, params, tables), beta, n_sweeps)``, or
        with the replica's scale grid after the chain when ``scaled``; it returns
        the replica's log likelihood ``log p(X | z)`` after the draw.
        """
        raise NotImplementedError(f"no parallel tempering for covariance='{self.name}'")

    def log_likelihood(self, state, params, scale=None) -> float:
        """Return ``log p(X | z)`` of a state's partition (at the grid's current ``s``)."""
        raise NotImplementedError(f"no parallel tempering for covariance='{self.name}'")

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class FullNIW(ClusterFamily):
    """Gaussian clusters with full covariances under a Normal-Inverse-Wishart prior."""

    name = "full"
    supports_latent = True
    supports_local_moves = True
    supports_tempering = True
    supports_template_jumps = True
    has_nu0_grid = True

    def build_inputs(self, xc, numbers, arrays, kept_scale):
        """See :meth:`ClusterFamily.build_inputs`; a one-point grid gives fixed ``Psi_0``."""
        alpha, power, kappa0, nu0 = numbers
        psi0, grid, log_w, nu_grid, nu_log_w = arrays
        scale, fixed, start = None, (1.0, 0.0), None
        nu_grid = np.asarray(nu_grid, dtype=np.float64)
        if grid.shape[0] == 1 and nu_grid.shape[0] == 1:
            fixed = (float(grid[0]), float(log_w[0]))
            if fixed[0] != 1.0:
                psi0 = fixed[0] * np.asarray(psi0, dtype=np.float64)
        elif kept_scale is not None:
            scale = kept_scale  # keeps the chain's current s (and nu0)
        else:
            start = int(np.argmin(np.abs(nu_grid - float(nu0))))
            nu_log_w = np.asarray(nu_log_w, dtype=np.float64)
            scale = make_scale_grid(xc, psi0, grid, log_w, nu_grid, nu_log_w, start)
        if scale is not None:  # the tables belong to the chain's nu0 (the kernel keeps them so)
            nu0 = scale.nu0s[scale.current[2]]
        params = make_params(alpha, power, kappa0, float(nu0), psi0)
        return SweepInputs(xc, params, sweep_tables(xc, params), scale, fixed), start

    def init_state(self, xc, labels, params):
        """See :meth:`ClusterFamily.init_state` (:func:`~pymc_pcrp._kernels.sweep.init_state`)."""
        return init_state(xc, labels, params)

    def advance_kernel(self, scaled):
        """:func:`~pymc_pcrp._kernels.hyper.advance_scaled`, or ``chain.advance`` unscaled."""
        return advance_scaled if scaled else advance

    def fixed_nu0(self, params):
        """See :meth:`ClusterFamily.fixed_nu0`."""
        return params.nu0

    def new_cluster_weights(self, xc, params):
        """See :meth:`ClusterFamily.new_cluster_weights` (a fixed ``Psi_0`` only)."""
        return sweep_tables(xc, params)[0]

    def log_joint(self, xc, labels, params):
        """See :meth:`ClusterFamily.log_joint` (``_kernels.log_joint.partition_log_joint``)."""
        return partition_log_joint(xc, labels, params)

    def pack_templates(self, xc, templates, params):
        """See :meth:`ClusterFamily.pack_templates` (``_kernels.templates.pack_templates``)."""
        return pack_templates(xc, templates, params)

    def hot_kernel(self, scaled):
        """``_kernels.tempering.advance_hot_scaled``, or ``advance_hot`` unscaled."""
        return advance_hot_scaled if scaled else advance_hot

    def log_likelihood(self, state, params, scale=None):
        """See :meth:`ClusterFamily.log_likelihood` (``_kernels.tempering``)."""
        if scale is None:
            return full_log_likelihood(state, params)
        return cold_log_likelihood_scaled(state, params, scale)

    def nu0(self, inputs):
        """Return the grid's current ``nu0`` with a learned scale, else the fixed one."""
        if inputs.scale is None:
            return self.fixed_nu0(inputs.params)
        return float(inputs.scale.nu0s[inputs.scale.current[2]])


class DiagonalNIG(ClusterFamily):
    """Gaussian clusters with diagonal covariances (Normal-Inverse-Gamma per dimension).

    The scale always lives on a grid, a fixed scale being a one-point grid, so
    one kernel serves both; the parameters keep ``a0 = nu0 / 2``.
    """

    name = "diag"

    def build_inputs(self, xc, numbers, arrays, kept_scale):
        """See :meth:`ClusterFamily.build_inputs` (``psi0`` is a diagonal matrix)."""
        alpha, power, kappa0, nu0 = numbers
        psi0, grid, log_w, _, _ = arrays
        diag = np.ascontiguousarray(np.diag(np.asarray(psi0, dtype=np.float64)))
        params = make_diag_params(alpha, power, kappa0, nu0, diag)
        scale = kept_scale if kept_scale is not None else make_diag_grid(diag, grid, log_w)
        return SweepInputs(xc, params, diag_tables(xc, params), scale), None

    def init_state(self, xc, labels, params):
        """See :meth:`ClusterFamily.init_state` (``_kernels.diag_state.init_diag_state``)."""
        return init_diag_state(xc, labels, params)

    def advance_kernel(self, scaled):
        """``_kernels.diag_chain.advance_diag`` (always on a grid: ``scaled`` is ignored)."""
        return advance_diag

    def fixed_nu0(self, params):
        """See :meth:`ClusterFamily.fixed_nu0` (``2 a0``)."""
        return 2.0 * params.a0


class TableFamily(ClusterFamily):
    """Tables of binary, categorical, count and Gaussian columns (one conjugate prior each).

    Its kernels are the generic moves of ``_kernels.family_moves`` over the
    operations of ``_kernels.table``; a missing cell (NaN in the data) is left
    out of its row's score and of its cluster's statistics. There is no scale
    grid and no ``nu0`` (the ``niw_scale`` stat is 1 and ``niw_nu0`` NaN).
    """

    name = "table"
    supports_template_jumps = True
    supports_tempering = True

    #: Tables with many columns get 0.1 proposals per sweep from the size rule, too few
    #: for every chain to reach the main mode while it tunes (docs/tables.md, "Tuning").
    tunes_by_sweep_cost = True
    supports_informed_moves = True

    def build_inputs(self, xc, numbers, arrays, kept_scale):
        """See :meth:`ClusterFamily.build_inputs`; ``arrays`` is ``(kind, nlev, conc, hyp)``.

        ``numbers`` starts with ``(alpha, power)``; ``xc`` is the encoded table
        (level codes, counts, values centred at their prior means, NaN missing).
        """
        alpha, power = numbers[:2]
        params = make_table_params(alpha, power, *arrays, n_rows=xc.shape[0], data=xc)
        return SweepInputs(xc, params, table_tables(xc, params)), None

    def init_state(self, xc, labels, params):
        """See :meth:`ClusterFamily.init_state` (``_kernels.family_moves.init_state``)."""
        return family_moves.init_state(xc, np.asarray(labels, dtype=np.int64), params)

    def advance_kernel(self, scaled):
        """``_kernels.family_chain.advance`` (no scale grid: ``scaled`` is ignored)."""
        return family_chain.advance

    def fixed_nu0(self, params):
        """NaN: the family has no ``nu0``."""
        return math.nan

    def new_cluster_weights(self, xc, params):
        """See :meth:`ClusterFamily.new_cluster_weights` (``_kernels.table.table_tables``)."""
        return table_tables(xc, params)[0]

    def log_joint(self, xc, labels, params):
        """See :meth:`ClusterFamily.log_joint` (``_kernels.family_moves.partition_log_joint``)."""
        return family_moves.partition_log_joint(xc, labels, params)

    def pack_templates(self, xc, templates, params):
        """See :meth:`ClusterFamily.pack_templates` (``_kernels.family_templates``)."""
        return pack_family_templates(xc, templates, params, self.new_cluster_weights(xc, params))

    def hot_kernel(self, scaled):
        """``_kernels.family_tempering.advance_hot`` (no scale grid: ``scaled`` is ignored)."""
        return family_tempering.advance_hot

    def log_likelihood(self, state, params, scale=None):
        """See :meth:`ClusterFamily.log_likelihood` (``_kernels.family_tempering``)."""
        return family_tempering.log_likelihood(state, params)


FULL = FullNIW()
DIAG = DiagonalNIG()
TABLE = TableFamily()
#: The families by name.
FAMILIES: dict[str, ClusterFamily] = {family.name: family for family in (FULL, DIAG, TABLE)}


def family_for(name: str) -> ClusterFamily:
    """Return the cluster family called ``name`` (``"full"``, ``"diag"`` or ``"table"``)."""
    try:
        return FAMILIES[name]
    except KeyError:
        raise ValueError(
            f"Unknown cluster family {name!r}: choose one of {sorted(FAMILIES)}."
        ) from None
