"""The prior of a cluster's mean and covariance: :class:`NIWPrior` and its defaults.

The Normal-Inverse-Wishart prior (or, for the diagonal family, a
Normal-Inverse-Gamma prior per dimension) of :class:`~pymc_pcrp.NIWMixture`,
with the grids of its learned scale and degrees of freedom. The likelihood that
integrates the cluster parameters out is in :mod:`pymc_pcrp.distributions.niw`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from scipy.special import logsumexp

from pymc_pcrp._validation import check_data, check_positive_scalar, check_spd

__all__ = [
    "COVARIANCE_FAMILIES",
    "DEFAULT_NU0_OFFSETS",
    "DEFAULT_SCALE_FRACTIONS",
    "NIWPrior",
]


#: Grid of ``c``, the typical within-cluster variance as a fraction of the data
#: variance, of the learned scale of :meth:`NIWPrior.from_data`: log-spaced on
#: ``[1e-4, 3]``, 20 values per decade, equal weights (log-uniform ``s``).
DEFAULT_SCALE_FRACTIONS = np.logspace(-4.0, np.log10(3.0), 91)

#: Grid of ``t = nu0 - (D - 1)`` of :meth:`NIWPrior.from_data` with ``nu0="learn"``:
#: ``exp(u)`` with ``u`` on 20 equally spaced values of ``[0.01, 3]``, equal weights
#: (bayesm's ``rDPGibbs`` default range and grid size for its ``nu``).
DEFAULT_NU0_OFFSETS = np.exp(np.linspace(0.01, 3.0, 20))

#: Cluster covariance families: ``"full"`` (Normal-Inverse-Wishart) and ``"diag"``
#: (a diagonal covariance, Normal-Inverse-Gamma independently per dimension).
COVARIANCE_FAMILIES = ("full", "diag")


@dataclass(frozen=True)
class NIWPrior:
    r"""Normal-Inverse-Wishart prior shared by every mixture component.

    .. math::

        \Sigma_k \sim \mathcal{IW}(\nu_0, \Psi_0), \qquad
        \mu_k \mid \Sigma_k \sim \mathcal{N}(\mu_0, \Sigma_k / \kappa_0).

    Parameters
    ----------
    mu0 : array-like of shape (D,)
        Prior mean of the component means.
    kappa0 : float
        Prior number of pseudo-observations behind ``mu0``; ``> 0``.
    nu0 : float
        Degrees of freedom of the inverse-Wishart; ``> D - 1``.
    psi0 : array-like of shape (D, D)
        Scale matrix of the inverse-Wishart; symmetric positive definite. For
        ``nu0 > D + 1`` the prior mean of each covariance is ``psi0 / (nu0 - D - 1)``.
        With ``scale_grid`` it is the base matrix ``P`` of ``Psi_0 = s P``.
    scale_grid : array-like of shape (G,), optional
        A hyperprior on the scale: the inverse-Wishart scale matrix is
        ``s * psi0`` with ``s`` taking the values of ``scale_grid`` (finite,
        ``> 0``, distinct). ``None`` (default) fixes ``Psi_0 = psi0``. The model
        integrates ``s`` out exactly; :class:`~pymc_pcrp.PCRPGibbs` samples it
        along with the labels and records it as the sample stat ``niw_scale``.
    scale_log_weights : array-like of shape (G,), optional
        Log prior weights of the grid values (finite; normalised to sum to one
        on the probability scale). Defaults to equal weights.
    covariance : {"full", "diag"}, default="full"
        The cluster covariance family. ``"full"``: the Normal-Inverse-Wishart
        prior above. ``"diag"``: each cluster's covariance is diagonal, and
        dimension ``j`` has its own Normal-Inverse-Gamma prior,
        ``sigma_j^2 ~ InvGamma(nu0 / 2, psi0_jj / 2)`` and
        ``mu_j | sigma_j^2 ~ N(mu0_j, sigma_j^2 / kappa0)``, independent across
        dimensions: ``2 D`` parameters per cluster instead of
        ``D (D + 3) / 2``. ``psi0`` must then be diagonal and ``nu0 > 0``;
        dimension ``j`` is exactly the one-dimensional NIW model
        ``(kappa0, nu0, psi0_jj)``. See docs/model.md.
    nu0_grid : array-like of shape (H,), optional
        A hyperprior on ``nu0`` (full family only): ``nu0`` takes the values of
        ``nu0_grid`` (finite, ``> D - 1``, distinct), independently of the
        scale ``s``. ``nu0`` must then be one of them: the value each chain
        starts from. The model integrates ``nu0`` out exactly;
        :class:`~pymc_pcrp.PCRPGibbs` samples it along with the labels and
        records it as the sample stat ``niw_nu0``. ``None`` (default) fixes
        ``nu0``.
    nu0_log_weights : array-like of shape (H,), optional
        Log prior weights of the ``nu0_grid`` values. Defaults to equal weights.

    See Also
    --------
    NIWPrior.from_data : data-based defaults.

    References
    ----------
    .. [1] Murphy, K. P. (2007). "Conjugate Bayesian analysis of the Gaussian
       distribution". Technical note.
    """

    mu0: np.ndarray
    kappa0: float
    nu0: float
    psi0: np.ndarray = field(repr=False)
    scale_grid: np.ndarray | None = field(default=None, repr=False)
    scale_log_weights: np.ndarray | None = field(default=None, repr=False)
    covariance: str = "full"
    nu0_grid: np.ndarray | None = field(default=None, repr=False)
    nu0_log_weights: np.ndarray | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        mu0 = np.atleast_1d(np.asarray(self.mu0, dtype=np.float64))
        if mu0.ndim != 1 or not np.all(np.isfinite(mu0)):
            raise ValueError(
                f"Argument 'mu0' must be a finite vector of shape (D,), but got {self.mu0!r}."
            )
        d = mu0.shape[0]
        kappa0 = check_positive_scalar(self.kappa0, "kappa0")
        nu0 = float(np.asarray(self.nu0, dtype=np.float64))
        if self.covariance not in COVARIANCE_FAMILIES:
            raise ValueError(
                f"Argument 'covariance' must be one of {COVARIANCE_FAMILIES}, got "
                f"{self.covariance!r}."
            )
        if self.covariance == "diag":
            if not np.isfinite(nu0) or nu0 <= 0:
                raise ValueError(
                    f"Argument 'nu0' must be > 0 for covariance='diag' (the inverse-gamma "
                    f"shape is nu0 / 2), but got {nu0}."
                )
            psi0 = check_spd(self.psi0, "psi0", dim=d)
            if np.any(psi0 != np.diag(np.diag(psi0))):
                raise ValueError(
                    "Argument 'psi0' must be diagonal for covariance='diag' (its diagonal holds "
                    "twice the inverse-gamma rates of the dimensions)."
                )
        elif not np.isfinite(nu0) or nu0 <= d - 1:
            raise ValueError(
                f"Argument 'nu0' must be greater than D - 1 = {d - 1} for D = {d} dimensions, "
                f"but got {nu0}. Use nu0 >= D + 2 for a prior covariance with a finite mean."
            )
        psi0 = check_spd(self.psi0, "psi0", dim=d)
        object.__setattr__(self, "mu0", mu0)
        object.__setattr__(self, "kappa0", kappa0)
        object.__setattr__(self, "nu0", nu0)
        object.__setattr__(self, "psi0", psi0)
        grid, log_w = _check_scale_grid(self.scale_grid, self.scale_log_weights)
        object.__setattr__(self, "scale_grid", grid)
        object.__setattr__(self, "scale_log_weights", log_w)
        nu_grid, nu_log_w = _check_grid(
            self.nu0_grid, self.nu0_log_weights, "nu0_grid", "nu0_log_weights"
        )
        if nu_grid is not None:
            if self.covariance == "diag":
                raise ValueError(
                    "Argument 'nu0_grid' is supported for covariance='full' only; leave it out "
                    "for the diagonal family."
                )
            if np.any(nu_grid <= d - 1):
                raise ValueError(
                    f"Argument 'nu0_grid' must hold values greater than D - 1 = {d - 1}, got "
                    f"{nu_grid.min()}."
                )
            if not np.any(nu_grid == nu0):
                raise ValueError(
                    f"Argument 'nu0' ({nu0}) must be one of the values of 'nu0_grid' (the value "
                    "every chain starts from)."
                )
        object.__setattr__(self, "nu0_grid", nu_grid)
        object.__setattr__(self, "nu0_log_weights", nu_log_w)

    @property
    def learns_scale(self) -> bool:
        """Whether the prior has a hyperprior on the scale of ``psi0`` (a ``scale_grid``)."""
        return self.scale_grid is not None

    @property
    def learns_nu0(self) -> bool:
        """Whether the prior has a hyperprior on ``nu0`` (a ``nu0_grid``)."""
        return self.nu0_grid is not None

    def grid_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """``(scale_grid, scale_log_weights)``; ``([1.0], [0.0])`` for a fixed scale."""
        if self.scale_grid is None:
            return np.ones(1), np.zeros(1)
        return self.scale_grid, self.scale_log_weights

    def nu0_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """``(nu0_grid, nu0_log_weights)``; ``([nu0], [0.0])`` for a fixed ``nu0``."""
        if self.nu0_grid is None:
            return np.array([self.nu0]), np.zeros(1)
        return self.nu0_grid, self.nu0_log_weights

    def at_scale(self, s: float, nu0: float | None = None) -> NIWPrior:
        """Return the fixed prior with ``Psi_0 = s * psi0`` (and ``nu0``) of one posterior draw.

        ``nu0`` defaults to the prior's own (a fixed ``nu0``).
        """
        s = check_positive_scalar(s, "s")
        return NIWPrior(
            mu0=self.mu0,
            kappa0=self.kappa0,
            nu0=self.nu0 if nu0 is None else nu0,
            psi0=s * self.psi0,
            covariance=self.covariance,
        )

    @property
    def dim(self) -> int:
        """Dimension ``D`` of the data the prior describes."""
        return int(self.mu0.shape[0])

    @property
    def is_diagonal(self) -> bool:
        """Whether the cluster covariances are diagonal (``covariance="diag"``)."""
        return self.covariance == "diag"

    @classmethod
    def from_data(
        cls,
        X,
        *,
        kappa0: float = 0.01,
        nu0: float | str | None = None,
        scale: float | str = "learn",
        covariance: str = "full",
    ) -> NIWPrior:
        """Weakly informative defaults computed from the data.

        * ``mu0`` is the mean of the data;
        * ``kappa0 = 0.01``: the component means are almost unconstrained;
        * ``nu0`` is learned (full family with a learned scale): a discrete
          hyperprior on ``nu0 = D - 1 + t`` with ``log t`` uniform on
          ``[0.01, 3]`` (:data:`DEFAULT_NU0_OFFSETS`), so the data choose how
          much the clusters' covariances may differ from ``psi0``'s shape;
          chains start at the grid value nearest ``D + 2``. A number fixes it;
          ``D + 2`` (the default before the hyperprior, and of a fixed scale)
          is the least informative value for which the prior mean of each
          covariance, ``psi0 / (nu0 - D - 1)``, exists;
        * the scale matrix is ``s * diag(var(X))``: no prior correlation, and a
          size ``s`` that is learned from the data by default.

        With ``scale="learn"`` (default) ``s`` has a discrete log-uniform
        hyperprior, ``s = nu0 * c`` (``nu0 = D + 2`` here when ``nu0`` is
        learned) with ``c`` on :data:`DEFAULT_SCALE_FRACTIONS`
        (91 values, 20 per decade, from ``1e-4`` to ``3``): ``c`` is the typical
        (harmonic) within-cluster variance as a fraction of the data variance,
        since ``E[Sigma^{-1}] = diag(var(X))^{-1} / c``. The data then choose
        the cluster scale; docs/model.md explains the range.

        With a number, ``scale=0.1`` say, the scale is fixed:
        ``psi0 = (nu0 - D - 1) * scale * diag(var(X))`` (``max(nu0 - D - 1, 1)``
        for ``nu0 < D + 2``), so that a component's covariance is a priori
        ``scale`` of the per-feature variance of all the data. This was the
        default before the hyperprior (with ``scale=0.1``). These choices follow
        the spirit of Fraley & Raftery (2007), "Bayesian regularization for
        normal mixture estimation and model-based clustering".

        Parameters
        ----------
        X : array-like of shape (N, D) or (N,)
            The data to be clustered.
        kappa0 : float, default=0.01
        nu0 : float or "learn", optional
            ``"learn"`` (the default for the full family with a learned scale)
            puts the hyperprior of :data:`DEFAULT_NU0_OFFSETS` on it:
            ``nu0 = D - 1 + t`` with ``t`` log-uniform on ``[1.01, 20.1]``
            (20 values), the range of bayesm's ``rDPGibbs``. A number fixes
            ``nu0``; otherwise the default is ``D + 2`` (3 for the diagonal
            family).
        scale : "learn" or float, default="learn"
            ``"learn"`` for the hyperprior on the scale, or a fixed prior
            cluster covariance as a fraction of the data variance.
        covariance : {"full", "diag"}, default="full"
            The cluster covariance family (see :class:`NIWPrior`).

        Returns
        -------
        NIWPrior
        """
        data = check_data(X, "X")
        n, d = data.shape
        if n < 2:
            raise ValueError("Argument 'X' needs at least 2 points to set data-based defaults.")
        learn = isinstance(scale, str)
        if learn and scale != "learn":
            raise ValueError(f"Argument 'scale' must be 'learn' or a number > 0, got {scale!r}.")
        if not learn:
            scale = check_positive_scalar(scale, "scale")
        if covariance not in COVARIANCE_FAMILIES:
            raise ValueError(
                f"Argument 'covariance' must be one of {COVARIANCE_FAMILIES}, got {covariance!r}."
            )
        diag = covariance == "diag"
        if nu0 is None and learn and not diag:
            nu0 = "learn"
        learn_nu0 = isinstance(nu0, str)
        if learn_nu0 and (nu0 != "learn" or diag or not learn):
            raise ValueError(
                f"Argument 'nu0' must be a number > D - 1, None or 'learn' (with the full "
                f"covariance family and scale='learn'), got {nu0!r}."
            )
        nu_grid = None
        if learn_nu0:
            nu_grid = d - 1.0 + DEFAULT_NU0_OFFSETS
            nu0 = float(nu_grid[np.argmin(np.abs(nu_grid - (d + 2.0)))])
        elif nu0 is None:
            nu0 = 3.0 if diag else float(d + 2)
        nu0 = float(nu0)
        var = data.var(axis=0, ddof=1)
        if np.any(var <= 0):
            cols = np.flatnonzero(var <= 0).tolist()
            raise ValueError(
                f"Argument 'X' has constant column(s) {cols}; drop them or pass psi0 explicitly "
                "via NIWPrior(mu0, kappa0, nu0, psi0)."
            )
        if learn:
            return cls(
                mu0=data.mean(axis=0),
                kappa0=kappa0,
                nu0=nu0,
                psi0=np.diag(var),
                scale_grid=(float(d + 2) if learn_nu0 else nu0) * DEFAULT_SCALE_FRACTIONS,
                covariance=covariance,
                nu0_grid=nu_grid,
            )
        dof = nu0 - 2.0 if diag else nu0 - d - 1
        psi0 = np.diag(max(dof, 1.0) * scale * var)
        return cls(mu0=data.mean(axis=0), kappa0=kappa0, nu0=nu0, psi0=psi0, covariance=covariance)


def _check_scale_grid(grid, log_weights) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Validate a scale grid and its log weights; return them (weights normalised)."""
    g, w = _check_grid(grid, log_weights, "scale_grid", "scale_log_weights")
    if g is not None and np.any(g <= 0):
        raise ValueError(
            f"Argument 'scale_grid' must be a non-empty vector of finite numbers > 0, got {grid!r}."
        )
    return g, w


def _check_grid(
    grid, log_weights, grid_name: str, weights_name: str
) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Validate a hyperprior grid and its log weights; return them (weights normalised)."""
    if grid is None:
        if log_weights is not None:
            raise ValueError(f"Argument '{weights_name}' needs a '{grid_name}'.")
        return None, None
    g = np.atleast_1d(np.asarray(grid, dtype=np.float64))
    if g.ndim != 1 or g.size == 0 or not np.all(np.isfinite(g)):
        raise ValueError(
            f"Argument '{grid_name}' must be a non-empty vector of finite numbers, got {grid!r}."
        )
    if np.unique(g).size != g.size:
        raise ValueError(f"Argument '{grid_name}' must not repeat a value.")
    if log_weights is None:
        w = np.zeros(g.size)
    else:
        w = np.atleast_1d(np.asarray(log_weights, dtype=np.float64))
        if w.shape != g.shape:
            raise ValueError(
                f"Argument '{weights_name}' must have the shape of '{grid_name}' {g.shape}, "
                f"got {w.shape}."
            )
        if not np.all(np.isfinite(w)):
            raise ValueError(f"Argument '{weights_name}' must be finite.")
    w = w - float(logsumexp(w))
    return g, w
