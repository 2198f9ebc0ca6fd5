"""Gaussian mixture likelihood with the component parameters integrated out (NIW prior)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytensor.tensor as pt

from pymc.distributions.dist_math import check_parameters
from pymc.distributions.distribution import Continuous
from pymc.logprob.abstract import _logprob
from pytensor.gradient import grad_not_implemented, grad_undefined
from pytensor.graph.basic import Apply, Constant
from pytensor.graph.op import Op
from pytensor.tensor.random.op import RandomVariable
from pytensor.tensor.sharedvar import TensorSharedVariable
from pytensor.tensor.variable import TensorVariable
from scipy import stats
from scipy.special import logsumexp

from pymc_pcrp._validation import check_data, check_positive_scalar, check_spd
from pymc_pcrp.distributions.pcrp import PowerCRPRV

__all__ = [
    "COVARIANCE_FAMILIES",
    "DEFAULT_NU0_OFFSETS",
    "DEFAULT_SCALE_FRACTIONS",
    "DiagNIWMixtureRV",
    "NIWMixture",
    "NIWMixtureRV",
    "NIWPrior",
    "niw_mixture",
    "niw_mixture_1d",
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


class NIWMixtureRV(RandomVariable):
    """Random variable op: data given labels, with NIW-distributed component parameters."""

    name = "niw_mixture"
    dtype = "floatX"
    _print_name = ("NIWMixture", "\\operatorname{NIWMixture}")

    def rng_fn(
        self, rng, z, mu0, kappa0, nu0, psi0, scale_grid, scale_log_w, nu0_grid, nu0_log_w, size
    ):
        """Draw the scale and ``nu0``, each cluster's mean and covariance, then its points.

        The 1-D variant (:data:`niw_mixture_1d`) returns a vector of length ``N``.
        """
        if size is not None or z.ndim != 1:
            raise NotImplementedError(
                "NIWMixture draws one data set per label vector; batched sizes are not supported."
            )
        d = mu0.shape[0]
        psi0 = psi0 * _draw_grid_value(rng, scale_grid, scale_log_w)
        nu0 = _draw_grid_value(rng, nu0_grid, nu0_log_w) if nu0_grid.shape[0] > 1 else nu0
        out = np.empty((z.shape[0], d))
        for label in np.unique(z):
            members = z == label
            cov = np.atleast_2d(stats.invwishart.rvs(df=float(nu0), scale=psi0, random_state=rng))
            mean = rng.multivariate_normal(mu0, cov / float(kappa0))
            out[members] = rng.multivariate_normal(mean, cov, size=int(members.sum()))
        return out[:, 0] if self.ndim_supp == 1 else out

    #: The cluster covariance family of the op (see :class:`NIWPrior`).
    covariance = "full"


class DiagNIWMixtureRV(NIWMixtureRV):
    """:class:`NIWMixtureRV` of the diagonal family: ``psi0`` diagonal, ``nu0 / 2`` the shape."""

    name = "diag_niw_mixture"
    _print_name = ("DiagNIWMixture", "\\operatorname{DiagNIWMixture}")
    covariance = "diag"

    @classmethod
    def rng_fn(
        cls, rng, z, mu0, kappa0, nu0, psi0, scale_grid, scale_log_w, nu0_grid, nu0_log_w, size
    ):
        """Draw the scale, each cluster's variances and mean from the prior, then its points."""
        if size is not None or z.ndim != 1:
            raise NotImplementedError(
                "NIWMixture draws one data set per label vector; batched sizes are not supported."
            )
        s = _draw_grid_value(rng, scale_grid, scale_log_w)
        rates = 0.5 * s * np.diag(psi0)
        out = np.empty((z.shape[0], mu0.shape[0]))
        for label in np.unique(z):
            members = z == label
            var = rates / rng.gamma(0.5 * float(nu0), size=rates.shape)
            mean = rng.normal(mu0, np.sqrt(var / float(kappa0)))
            out[members] = rng.normal(mean, np.sqrt(var), size=(int(members.sum()), var.size))
        return out


def _draw_grid_value(rng, grid: np.ndarray, log_weights: np.ndarray) -> float:
    """One value of a hyperprior grid, drawn with its prior weights."""
    weights = np.exp(log_weights - np.max(log_weights))
    return float(grid[rng.choice(grid.shape[0], p=weights / weights.sum())])


_SIGNATURE = "(n),(d),(),(),(d,d),(g),(g),(h),(h)"
niw_mixture = NIWMixtureRV(signature=_SIGNATURE + "->(n,d)")
niw_mixture_1d = NIWMixtureRV(signature=_SIGNATURE + "->(n)")
diag_niw_mixture = DiagNIWMixtureRV(signature=_SIGNATURE + "->(n,d)")
diag_niw_mixture_1d = DiagNIWMixtureRV(signature=_SIGNATURE + "->(n)")


class ScaleMarginalLogp(Op):
    """``log sum_g w_g prod_k m(X_k | s_g P)``: the log density with the scale integrated out.

    With a grid of ``nu0`` values, ``log sum_{g,h} w_g v_h prod_k m(X_k | s_g P, nu_h)``.
    Computed in NumPy over the occupied clusters only, ``O(N D^2 + K D^3 + G K D)``
    (:func:`pymc_pcrp._niw_numpy.scale_marginal_loglik`). Invalid labels give
    ``-inf``. Its gradient in the data is :class:`ScaleMarginalGrad` (same cost),
    so that NUTS can update latent values clustered by a ``PowerCRP``; the labels
    are discrete and the prior's parameters constants, so they have none.
    """

    __props__ = ("covariance",)

    def __init__(self, covariance: str = "full"):
        self.covariance = covariance
        super().__init__()

    def make_node(self, x, z, mu0, kappa0, nu0, psi0, *grids):
        """Build the node: data ``(N, D)``, labels, NIW parameters, grids and log weights."""
        inputs = [pt.as_tensor_variable(v) for v in (x, z, mu0, kappa0, nu0, psi0, *grids)]
        return Apply(self, inputs, [pt.dscalar()])

    def perform(self, node, inputs, output_storage):
        """Evaluate the marginal log likelihood in NumPy."""
        from pymc_pcrp._diag_numpy import diag_scale_marginal_loglik
        from pymc_pcrp._niw_numpy import scale_marginal_loglik

        loglik = diag_scale_marginal_loglik if self.covariance == "diag" else scale_marginal_loglik
        x, z, mu0, kappa0, nu0, psi0, grid, log_w, nu_grid, nu_log_w = inputs
        n = x.shape[0]
        z = np.asarray(z)
        if z.shape[0] != n or (n and (z.min() < 0 or z.max() >= n)):
            value = -np.inf
        else:
            xc = np.asarray(x, dtype=np.float64) - mu0
            nus = [float(nu0)] if nu_grid.shape[0] == 1 else nu_grid
            parts = [loglik(xc, z, float(kappa0), float(nu), psi0, grid, log_w) for nu in nus]
            value = parts[0] if len(parts) == 1 else float(logsumexp(nu_log_w + np.array(parts)))
        output_storage[0][0] = np.asarray(value, dtype=np.float64)

    def L_op(self, inputs, outputs, output_grads):
        """Gradient in the data only (:class:`ScaleMarginalGrad`)."""
        (g_out,) = output_grads
        rest = [grad_not_implemented(self, i, v) for i, v in enumerate(inputs) if i > 1]
        z = inputs[1]
        if self.covariance == "diag":  # latent values of the diagonal family: not yet
            x_grad = grad_not_implemented(self, 0, inputs[0], "covariance='diag' has no gradient")
            return [x_grad, grad_undefined(self, 1, z), *rest]
        return [g_out * ScaleMarginalGrad()(*inputs), grad_undefined(self, 1, z), *rest]


class ScaleMarginalGrad(Op):
    """Gradient of :class:`ScaleMarginalLogp` in the data, ``(N, D)``.

    :func:`pymc_pcrp._niw_numpy.scale_marginal_grad`; zeros for invalid labels
    (where the log density is ``-inf``).
    """

    __props__ = ()

    def make_node(self, x, z, mu0, kappa0, nu0, psi0, *grids):
        """Build the node on the inputs of :class:`ScaleMarginalLogp`."""
        inputs = [pt.as_tensor_variable(v) for v in (x, z, mu0, kappa0, nu0, psi0, *grids)]
        return Apply(self, inputs, [pt.dmatrix()])

    def perform(self, node, inputs, output_storage):
        """Evaluate the gradient in NumPy."""
        from pymc_pcrp._niw_numpy import scale_marginal_grad, scale_marginal_loglik

        x, z, mu0, kappa0, nu0, psi0, grid, log_w, nu_grid, nu_log_w = inputs
        x = np.asarray(x, dtype=np.float64)
        n = x.shape[0]
        z = np.asarray(z)
        if z.shape[0] != n or (n and (z.min() < 0 or z.max() >= n)):
            out = np.zeros_like(x)
        elif nu_grid.shape[0] == 1:
            out = scale_marginal_grad(x - mu0, z, float(kappa0), float(nu0), psi0, grid, log_w)
        else:
            # the gradient of log sum_h v_h L_h is sum_h pi_h grad log L_h, pi_h ∝ v_h L_h
            xc = x - mu0
            args = (z, float(kappa0))
            logs = [scale_marginal_loglik(xc, *args, nu, psi0, grid, log_w) for nu in nu_grid]
            pi = np.exp(nu_log_w + np.array(logs) - logsumexp(nu_log_w + np.array(logs)))
            out = np.zeros_like(x)
            for weight, nu in zip(pi, nu_grid, strict=True):
                if weight > 1e-15:
                    out += weight * scale_marginal_grad(xc, *args, nu, psi0, grid, log_w)
        output_storage[0][0] = out


def _static_length(z: TensorVariable) -> int | None:
    """Length of a label vector when it is known before sampling."""
    if z.type.shape and z.type.shape[0] is not None:
        return int(z.type.shape[0])
    owner = z.owner
    if owner is not None and isinstance(owner.op, PowerCRPRV):
        n = owner.op.dist_params(owner)[-1]
        if isinstance(n, Constant):
            return int(n.data)
    return None


class NIWMixture(Continuous):
    r"""Collapsed Gaussian mixture likelihood of data given cluster labels.

    Each cluster ``k`` has its own mean and covariance with a shared
    Normal-Inverse-Wishart prior (:class:`NIWPrior`); integrating them out gives

    .. math::

        \log p(X \mid z) = \sum_k \log m(X_k), \\
        \log m(X_k) = -\tfrac{n_k D}{2}\log\pi
            + \log\Gamma_D(\tfrac{\nu_n}{2}) - \log\Gamma_D(\tfrac{\nu_0}{2})
            + \tfrac{\nu_0}{2}\log|\Psi_0| - \tfrac{\nu_n}{2}\log|\Psi_n|
            + \tfrac{D}{2}\log\tfrac{\kappa_0}{\kappa_n},

    with :math:`\kappa_n = \kappa_0 + n_k`, :math:`\nu_n = \nu_0 + n_k` and
    :math:`\Psi_n` the posterior scale matrix of cluster ``k``. This is an exact,
    normalised density of the data given the labels; it does not depend on how
    the labels are numbered.

    With ``NIWPrior(..., covariance="diag")`` the clusters' covariances are
    diagonal and ``m(X_k)`` is the product over dimensions of one-dimensional
    NIW marginals with ``(kappa0, nu0, psi0_jj)`` (docs/model.md); the variable's
    op is then a :class:`DiagNIWMixtureRV`.

    Parameters
    ----------
    z : TensorVariable
        Integer labels of length ``N``, usually a :class:`PowerCRP` variable.
    prior : NIWPrior
        The component prior, e.g. ``NIWPrior.from_data(X)``.

    Notes
    -----
    ``observed`` may have shape ``(N, D)`` or, for one-dimensional data, ``(N,)``.
    Forward draws (prior predictive) first draw each cluster's mean and
    covariance from the NIW prior, then the points. For posterior predictive
    checks use :func:`pymc_pcrp.sample_posterior_predictive`: the cluster
    parameters are integrated out and absent from the trace, so PyMC's own
    forward draw would take them from the prior instead of their posterior
    given the data. Once :mod:`pymc_pcrp` is imported,
    ``pm.sample_posterior_predictive(idata)`` calls it for the NIWMixture
    (docs/entry_points.md).

    References
    ----------
    .. [1] Murphy, K. P. (2007). "Conjugate Bayesian analysis of the Gaussian
       distribution".
    """

    rv_type = NIWMixtureRV
    rv_op = niw_mixture

    def __new__(cls, name, z, prior, *, observed=None, **kwargs):
        """Validate the observed data against ``z`` and ``prior``, then register the variable."""
        if observed is not None:
            _check_observed(observed, z, prior)
        return super().__new__(cls, name, z, prior, observed=observed, **kwargs)

    @classmethod
    def dist(cls, z, prior, **kwargs):
        """Create the distribution outside a model (see the class docstring)."""
        if not isinstance(prior, NIWPrior):
            raise TypeError(
                f"Argument 'prior' must be an NIWPrior, e.g. NIWPrior.from_data(X); got "
                f"{type(prior).__name__}."
            )
        z = pt.as_tensor_variable(z)
        if z.ndim != 1 or not z.dtype.startswith(("int", "uint")):
            raise ValueError(
                f"Argument 'z' must be a 1-D integer label vector, but got ndim={z.ndim}, "
                f"dtype={z.dtype}."
            )
        shape = kwargs.get("shape")
        one_d = shape is not None and len(tuple(shape)) == 1
        if one_d and prior.dim != 1:
            raise ValueError(
                f"1-D observed data need a 1-D prior, but 'prior' has dimension {prior.dim}."
            )
        if prior.is_diagonal:
            op = diag_niw_mixture_1d if one_d else diag_niw_mixture
        else:
            op = niw_mixture_1d if one_d else niw_mixture
        params = [
            z,
            prior.mu0,
            prior.kappa0,
            prior.nu0,
            prior.psi0,
            *prior.grid_arrays(),
            *prior.nu0_arrays(),
        ]
        return op(*params, **{k: v for k, v in kwargs.items() if k in ("size", "rng")})

    @staticmethod
    def support_point(rv, size, z, mu0, kappa0, nu0, psi0, *grids):
        """Every point at the prior mean ``mu0`` (the start of a latent NIWMixture)."""
        if rv.ndim == 1:
            return pt.broadcast_to(mu0[0], (z.shape[0],))
        return pt.broadcast_to(mu0, (z.shape[0], mu0.shape[0]))

    @staticmethod
    def logp(value, z, mu0, kappa0, nu0, psi0, *grids):
        """Sum of the NIW log marginal likelihoods of the clusters (scale and nu0 integrated out).

        A fixed scale is a one-point grid. The sum runs over the occupied
        clusters only, in NumPy (:class:`ScaleMarginalLogp`): memory
        ``O(N D + K D^2)``. (A PyTensor graph over N slots of ``D x D``, used
        for a fixed scale before, took 6.6 GB and 40 s at N = 100,000, D = 50.)
        """
        x = value if value.ndim == 2 else value[:, None]
        res = ScaleMarginalLogp()(x, z, mu0, kappa0, nu0, psi0, *grids)
        return check_parameters(
            res, kappa0 > 0, nu0 > mu0.shape[0] - 1, msg="kappa0 > 0, nu0 > D - 1"
        )


@_logprob.register(DiagNIWMixtureRV)
def _diag_logp(op, values, *params, **kwargs):
    """Log density of the diagonal family (:mod:`pymc_pcrp._diag_numpy`), scale integrated out.

    ``params`` are the node's inputs (random generator and size first); the last
    nine are the distribution parameters.
    """
    [value] = values
    z, mu0, kappa0, nu0, psi0, *grids = params[-9:]
    x = value if value.ndim == 2 else value[:, None]
    op = ScaleMarginalLogp("diag")
    res = op(x, z, mu0, kappa0, nu0, psi0, *grids)
    return check_parameters(res, kappa0 > 0, nu0 > 0, msg="kappa0 > 0, nu0 > 0")


def _check_observed(observed, z, prior: NIWPrior) -> None:
    """Validate observed data against the labels and the prior before building the model."""
    raw = observed.get_value() if isinstance(observed, TensorSharedVariable) else observed
    if isinstance(raw, TensorVariable):
        return
    arr = np.asarray(raw)
    if arr.ndim not in (1, 2):
        raise ValueError(
            f"Argument 'observed' must have shape (N,) or (N, D), but got shape {arr.shape}."
        )
    data = check_data(arr, "observed")
    if data.shape[1] != prior.dim:
        raise ValueError(
            f"Argument 'observed' has D = {data.shape[1]} columns but 'prior' has dimension "
            f"{prior.dim}; build the prior from the same data, e.g. NIWPrior.from_data(X)."
        )
    n = _static_length(pt.as_tensor_variable(z))
    if n is not None and n != data.shape[0]:
        raise ValueError(
            f"Argument 'observed' has N = {data.shape[0]} points but 'z' labels {n} items; "
            f"create the labels with n={data.shape[0]}."
        )
