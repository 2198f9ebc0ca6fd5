"""Gaussian mixture likelihood with the component parameters integrated out (NIW prior)."""

from __future__ import annotations

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

from pymc_pcrp._validation import check_data
from pymc_pcrp.distributions.niw_prior import (
    COVARIANCE_FAMILIES,
    DEFAULT_NU0_OFFSETS,
    DEFAULT_SCALE_FRACTIONS,
    NIWPrior,
)
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
    (:func:`pymc_pcrp.distributions._niw_numpy.scale_marginal_loglik`). Invalid labels give
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
        from pymc_pcrp.distributions._diag_numpy import diag_scale_marginal_loglik
        from pymc_pcrp.distributions._niw_numpy import scale_marginal_loglik

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

    :func:`pymc_pcrp.distributions._niw_numpy.scale_marginal_grad`; zeros for invalid labels
    (where the log density is ``-inf``).
    """

    __props__ = ()

    def make_node(self, x, z, mu0, kappa0, nu0, psi0, *grids):
        """Build the node on the inputs of :class:`ScaleMarginalLogp`."""
        inputs = [pt.as_tensor_variable(v) for v in (x, z, mu0, kappa0, nu0, psi0, *grids)]
        return Apply(self, inputs, [pt.dmatrix()])

    def perform(self, node, inputs, output_storage):
        """Evaluate the gradient in NumPy."""
        from pymc_pcrp.distributions._niw_numpy import scale_marginal_grad, scale_marginal_loglik

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


def static_length(z: TensorVariable) -> int | None:
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
        if isinstance(z, Constant | TensorSharedVariable):  # labels known now: check them now
            labels = np.asarray(z.data if isinstance(z, Constant) else z.get_value())
            bad = (labels < 0) | (labels >= labels.size)
            if bad.any():
                raise ValueError(
                    f"Argument 'z' holds the label {int(labels[bad][0])} at point "
                    f"{int(np.argmax(bad))}, outside 0..{labels.size - 1}: {_LABEL_RANGE}."
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
        res = check_parameters(
            res, kappa0 > 0, nu0 > mu0.shape[0] - 1, msg="kappa0 > 0, nu0 > D - 1"
        )
        return _check_labels(res, x, z)


@_logprob.register(DiagNIWMixtureRV)
def _diag_logp(op, values, *params, **kwargs):
    """Log density of the diagonal family, scale integrated out (``_diag_numpy`` in NumPy).

    ``params`` are the node's inputs (random generator and size first); the last
    nine are the distribution parameters.
    """
    [value] = values
    z, mu0, kappa0, nu0, psi0, *grids = params[-9:]
    x = value if value.ndim == 2 else value[:, None]
    op = ScaleMarginalLogp("diag")
    res = op(x, z, mu0, kappa0, nu0, psi0, *grids)
    res = check_parameters(res, kappa0 > 0, nu0 > 0, msg="kappa0 > 0, nu0 > 0")
    return _check_labels(res, x, z)


#: The message of a label vector outside ``0..N-1`` (the reason and the fix).
_LABEL_RANGE = (
    "the NIWMixture labels z must be integers in 0..N-1 (one label per point, at most N "
    "clusters), for example from numpy.unique(z, return_inverse=True)[1]"
)


def _check_labels(res, x, z):
    """Refuse labels outside ``0..N-1`` with the reason instead of a silent ``-inf``."""
    n = x.shape[0]
    return check_parameters(
        res,
        pt.eq(z.shape[0], n),
        pt.all(pt.ge(z, 0)),
        pt.all(pt.lt(z, n)),
        msg=_LABEL_RANGE,
    )


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
    n = static_length(pt.as_tensor_variable(z))
    if n is not None and n != data.shape[0]:
        raise ValueError(
            f"Argument 'observed' has N = {data.shape[0]} points but 'z' labels {n} items; "
            f"create the labels with n={data.shape[0]}."
        )
