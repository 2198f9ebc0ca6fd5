"""The paper's choice of the power ``r``: cross-validation of a within-cluster loss.

This is ``--power cv`` of the ``cluster`` command and
:func:`cross_validate_power`; the package's default rule is
:func:`~pymc_pcrp.stats.power_choice.choose_power` (docs/choice_of_r.md compares
the two on real data).

The paper fits the pCRP on a training sample for increasing ``r``, scores each
fit on held-out data with a within-cluster loss, and takes the ``r`` at which
the loss curve "blows up". It leaves three things open; this module settles
them as follows.

**How held-out points get clusters.** For every kept posterior draw of the
training partition, each held-out point joins the existing training cluster
that maximises ``n_k^r t_k(x)``, its pCRP prediction-rule probability (``t_k``
the cluster's NIW Student-t posterior predictive); see
:func:`_assign_to_clusters`. A new cluster is not an option: a point
alone in its cluster contributes zero loss, so allowing new clusters would
reward exactly the spurious singletons that ``r`` is meant to suppress. Each
held-out point is assigned on its own (the held-out points do not join the
partition), so the result does not depend on their order. The loss is computed
per draw and averaged over draws, which propagates the posterior uncertainty of
the partition instead of relying on one point estimate.

**The centre of a cluster in the loss.** The loss
``sum_k sqrt(sum_{j in C_k} ||x_j - xbar_k||^2)`` is computed on the held-out
points alone, with ``xbar_k`` the mean of the held-out points assigned to
cluster ``k``: it is the within-cluster loss of the partition that the fit
induces on the held-out sample. Clusters that receive no held-out point add
nothing. With this centre, splitting a true cluster costs
``sqrt(a) + sqrt(b) > sqrt(a + b)`` (the paper's remark that the square root
makes two clusters with the same mean pay a price), and merging two separated
clusters adds the squared distance between their means.

**Where the curve jumps.** See :func:`find_jump`: with the grid sorted, the
chosen ``r`` is the last grid point before the first consecutive increase of
the loss by more than ``jump_tol`` (default 10%) of the loss before it. The
loss at and beyond the jump belongs to fits in which real clusters were merged,
so the largest ``r`` that still keeps them is the one reported.

**A caveat on mixing.** The single-point Gibbs sweep cannot move between "two
large clusters" and "one merged cluster" once both are large, so for ``r`` near
the merge level a chain stays wherever its early sweeps took it: merged
somewhat before the level at which the exact posterior starts to prefer the
merge, or split somewhat beyond it. The loss curve, and so the chosen ``r``,
reflect where the chains ended up. Run several chains per ``r`` (a chain that
merged then shows as a partial jump and a large ``loss_se``) and, where the
step method offers them, moves that split and merge whole clusters.
"""

from __future__ import annotations

import warnings

from collections.abc import Sequence
from dataclasses import dataclass

import arviz as az
import numpy as np

from pymc_pcrp._idata import draw_nu0s, draw_scales, label_draws
from pymc_pcrp._runtime.logging import progress_line, quiet_loggers
from pymc_pcrp._validation import check_data, check_positive_scalar, check_power_grid
from pymc_pcrp.distributions import NIWPrior
from pymc_pcrp.distributions._niw_numpy import PartitionPredictor, assign, check_prior

__all__ = [
    "CVResult",
    "cluster_loss",
    "cross_validate_power",
    "find_jump",
    "split_train_test",
]


@dataclass(frozen=True, repr=False)
class CVResult:
    """Outcome of :func:`cross_validate_power`.

    Attributes
    ----------
    powers : numpy.ndarray, shape (P,)
        The grid of ``r``, sorted increasingly.
    loss : numpy.ndarray, shape (P,)
        Held-out loss averaged over the kept posterior draws.
    loss_se : numpy.ndarray, shape (P,)
        Monte Carlo standard error of ``loss`` (ArviZ ``mcse`` of the per-draw
        losses, which accounts for autocorrelation; 0 when every draw gives
        the same loss).
    mean_k : numpy.ndarray, shape (P,)
        Posterior mean number of clusters of the training data.
    loss_draws : numpy.ndarray, shape (P, chains, draws)
        The held-out loss of every kept draw.
    chosen_power : float
        The ``r`` selected by :func:`find_jump`.
    jump_index : int or None
        Index into ``powers`` of the first point after the jump; ``None`` if the
        curve never jumps (then ``chosen_power`` is the largest ``r``).
    jump_tol : float
        The relative threshold used to detect the jump.
    jumped : bool
        Whether the loss jumped over the grid. If not, ``chosen_power`` is
        only the top of the grid, not a cross-validated choice; :meth:`summary`
        says so.
    """

    powers: np.ndarray
    loss: np.ndarray
    loss_se: np.ndarray
    mean_k: np.ndarray
    loss_draws: np.ndarray
    chosen_power: float
    jump_index: int | None
    jump_tol: float

    @property
    def jumped(self) -> bool:
        """Whether the held-out loss jumped somewhere on the grid."""
        return self.jump_index is not None

    def conclusion(self) -> str:
        """Return one sentence: the chosen ``r`` and why, or that the loss never jumped."""
        low, high = float(self.powers[0]), float(self.powers[-1])
        if self.jumped:
            return (
                f"The held-out loss jumps by more than {self.jump_tol:.0%} at r = "
                f"{self.powers[self.jump_index]:g}; the chosen r = {self.chosen_power:g} is the "
                "last grid point before the jump."
            )
        return (
            f"The held-out loss never jumped (no rise above {self.jump_tol:.0%} between "
            f"neighbouring powers) over the grid [{low:g}, {high:g}], so r was NOT chosen by "
            f"cross-validation: r = {self.chosen_power:g} is just the top of the grid. Extend "
            "the grid to larger r to find the jump."
        )

    def summary(self) -> str:
        """Return a table of the grid (r, loss, its s.e., mean K) and :meth:`conclusion`."""
        lines = [f"{'r':>8} {'loss':>12} {'s.e.':>10} {'mean K':>8}"]
        for i, r in enumerate(self.powers):
            mark = "  <- chosen" if r == self.chosen_power else ""
            if i == self.jump_index:
                mark = "  <- jump"
            lines.append(
                f"{r:>8g} {self.loss[i]:>12.5g} {self.loss_se[i]:>10.2g} "
                f"{self.mean_k[i]:>8.2f}{mark}"
            )
        return "\n".join([*lines, self.conclusion()])

    def __str__(self) -> str:
        return self.summary()

    def __repr__(self) -> str:
        return (
            f"CVResult(chosen_power={self.chosen_power:g}, jumped={self.jumped}, "
            f"jump_index={self.jump_index}, jump_tol={self.jump_tol:g}, "
            f"powers={np.array2string(self.powers, separator=', ')}, "
            f"loss={np.array2string(self.loss, precision=4, separator=', ')})"
        )


def split_train_test(X, n_train: int, seed=None) -> tuple[np.ndarray, np.ndarray]:
    """Split the rows of ``X`` at random into a training and a held-out part.

    Parameters
    ----------
    X : array_like, shape (N, D) or (N,)
    n_train : int
        Number of training points, ``1 <= n_train < N``.
    seed : int or numpy.random.Generator, optional

    Returns
    -------
    X_train, X_test : numpy.ndarray
        ``n_train`` and ``N - n_train`` rows of ``X``, in random order, with
        the shape convention of ``X`` (1-D input gives 1-D parts).
    """
    arr = np.asarray(X, dtype=np.float64)
    check_data(arr, "X")
    n = arr.shape[0]
    if int(n_train) != n_train or not 1 <= n_train < n:
        raise ValueError(
            f"Argument 'n_train' must be an integer with 1 <= n_train < N = {n}, got {n_train}."
        )
    order = np.random.default_rng(seed).permutation(n)
    return arr[order[: int(n_train)]], arr[order[int(n_train) :]]


def cluster_loss(X, labels) -> float:
    """Compute the paper's within-cluster loss ``sum_k sqrt(sum_{j in C_k} ||x_j - xbar_k||^2)``.

    Parameters
    ----------
    X : array_like, shape (M, D) or (M,)
    labels : array_like of int, shape (M,)
        Any integer labels; ``xbar_k`` is the mean of the points labelled ``k``.

    Returns
    -------
    float
    """
    x = check_data(X, "X")
    z = np.asarray(labels)
    if z.shape != (x.shape[0],) or not np.issubdtype(z.dtype, np.integer):
        raise ValueError(
            f"Argument 'labels' must be an integer vector of length {x.shape[0]}, got dtype "
            f"{z.dtype} and shape {z.shape}."
        )
    return _cluster_loss(x, z)


def _check_train_and_other(X_train, X_other, name: str) -> tuple[np.ndarray, np.ndarray]:
    """Both data sets as checked float arrays; they must have the same features."""
    x_train = check_data(X_train, "X_train")
    x_other = check_data(X_other, name)
    if x_other.shape[1] != x_train.shape[1]:
        raise ValueError(
            f"Argument '{name}' has D = {x_other.shape[1]} features but 'X_train' has "
            f"D = {x_train.shape[1]}."
        )
    return x_train, x_other


def _assign_to_clusters(
    X_train,
    labels,
    X_new,
    *,
    power: float,
    prior: NIWPrior | None = None,
    alpha: float = 1.0,
    allow_new: bool = False,
) -> np.ndarray:
    """Give each new point the training cluster it most probably joins.

    Under the pCRP prediction rule, a new point ``x`` joins occupied cluster
    ``k`` of the training partition with probability proportional to
    ``n_k^r t_k(x)`` (``t_k`` the cluster's Student-t posterior predictive).
    Each new point is assigned on its own, to the cluster maximising this
    quantity; new points do not join the partition, so the order of
    ``X_new`` does not matter.

    Parameters
    ----------
    X_train : array_like, shape (N, D) or (N,)
        The clustered data.
    labels : array_like of int, shape (N,)
        A partition of ``X_train`` (any integer labels).
    X_new : array_like, shape (M, D) or (M,)
        The points to assign.
    power : float
        The pCRP power ``r``.
    prior : NIWPrior, optional
        Defaults to ``NIWPrior.from_data(X_train)``, the default of
        :func:`pymc_pcrp.fit`. If it learns its scale, the predictives are
        averaged over the scale's exact conditional given ``labels``.
    alpha : float, default=1.0
        Concentration; it matters only when ``allow_new=True``.
    allow_new : bool, default=False
        If true, a point whose new-cluster term ``alpha t_0(x)`` exceeds every
        ``n_k^r t_k(x)`` gets the label ``-1``.

    Returns
    -------
    numpy.ndarray of int64, shape (M,)
        Labels taken from ``labels`` (or ``-1``).
    """
    x, x_new = _check_train_and_other(X_train, X_new, "X_new")
    z = np.asarray(labels)
    if z.shape != (x.shape[0],) or not np.issubdtype(z.dtype, np.integer):
        raise ValueError(
            f"Argument 'labels' must be an integer vector of length {x.shape[0]}, got dtype "
            f"{z.dtype} and shape {z.shape}."
        )
    power = check_positive_scalar(power, "power")
    alpha = check_positive_scalar(alpha, "alpha")
    prior = check_prior(prior, x, x.shape[1])
    return assign(PartitionPredictor(x, prior), z, x_new, power, alpha, allow_new)


def _cluster_loss(x: np.ndarray, labels: np.ndarray) -> float:
    _, inverse = np.unique(labels, return_inverse=True)
    counts = np.bincount(inverse)
    sums = np.zeros((counts.size, x.shape[1]))
    np.add.at(sums, inverse, x)
    residuals = x - (sums / counts[:, None])[inverse]
    within = np.bincount(inverse, weights=np.sum(residuals**2, axis=1), minlength=counts.size)
    return float(np.sum(np.sqrt(within)))


def find_jump(powers, loss, jump_tol: float = 0.1) -> tuple[float, int | None]:
    """Locate the jump of a cross-validation loss curve and the ``r`` just before it.

    With the grid sorted increasingly, the jump is at the first index ``i`` with
    ``loss[i] - loss[i - 1] > jump_tol * loss[i - 1]``: the first step up by more
    than ``jump_tol`` of the current level. Smaller steps up are read as Monte
    Carlo noise or as the slow drift before the blow-up. The chosen ``r`` is
    ``powers[i - 1]``, the largest ``r`` whose fits have not yet merged the
    clusters whose merging makes the loss jump.

    Parameters
    ----------
    powers : array_like, shape (P,)
        Strictly increasing grid of ``r``.
    loss : array_like, shape (P,)
    jump_tol : float, default=0.1
        Relative increase that counts as a jump; the paper's Sim 1 curve moves
        by about 4% before its blow-up.

    Returns
    -------
    chosen_power : float
        ``powers[i - 1]``, or ``powers[-1]`` if there is no jump.
    jump_index : int or None
        ``i``, or ``None`` if there is no jump.
    """
    r = np.asarray(powers, dtype=np.float64)
    values = np.asarray(loss, dtype=np.float64)
    if r.ndim != 1 or values.shape != r.shape or r.size < 2:
        raise ValueError(
            "Arguments 'powers' and 'loss' must be vectors of the same length >= 2, got shapes "
            f"{r.shape} and {values.shape}."
        )
    if np.any(np.diff(r) <= 0):
        raise ValueError("Argument 'powers' must be strictly increasing.")
    jump_tol = check_positive_scalar(jump_tol, "jump_tol")
    steps = np.diff(values) > jump_tol * values[:-1]
    if not steps.any():
        return float(r[-1]), None
    index = int(np.argmax(steps)) + 1
    return float(r[index - 1]), index


# The fits of the grid run silently: no progress bars (they may run in parallel) and no
# convergence checks (the spread of the per-draw losses shows in ``loss_se`` instead).
_QUIET_FIT = {"progressbar": False, "compute_convergence_checks": False}


def _score_power(
    x_train: np.ndarray,
    x_test: np.ndarray,
    power: float,
    alpha: float,
    prior: NIWPrior,
    fit_kwargs: dict,
    seed: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Fit at one ``r`` and return the held-out loss and ``K`` of every kept draw."""
    from pymc_pcrp.fitting import fit  # fitting imports this package (fit(power="cv"))

    with quiet_loggers("pymc", runtime_warnings=False):
        idata = fit(
            x_train,
            power=power,
            alpha=alpha,
            prior=prior,
            random_seed=seed,
            **_QUIET_FIT,
            **fit_kwargs,
        )
    labels = label_draws(idata)
    predictor = PartitionPredictor(x_train, prior)
    scales = draw_scales(idata, prior.grid_arrays()[0], labels.shape[:2], "cross_validate_power")
    nu0s = draw_nu0s(idata, prior, labels.shape[:2], "cross_validate_power")
    losses = np.empty(labels.shape[:2])
    n_clusters = np.empty(labels.shape[:2], dtype=np.int64)
    for c in range(labels.shape[0]):
        for d in range(labels.shape[1]):
            z = labels[c, d]
            assigned = assign(predictor, z, x_test, power, alpha, False, scales[c, d], nu0s[c, d])
            losses[c, d] = _cluster_loss(x_test, assigned)
            n_clusters[c, d] = np.unique(z).size
    return losses, n_clusters


def _mcse(values: np.ndarray) -> float:
    if np.ptp(values) == 0:
        return 0.0
    se = float(az.mcse(az.convert_to_dataset({"loss": values}), method="mean")["loss"])
    if not np.isfinite(se):  # too few draws for ArviZ; fall back to the iid formula
        se = float(np.std(values, ddof=1) / np.sqrt(values.size))
    return se


def cross_validate_power(
    X_train,
    X_test,
    powers: Sequence[float],
    *,
    alpha: float = 1.0,
    prior: NIWPrior | None = None,
    draws: int = 500,
    tune: int = 500,
    chains: int = 1,
    sweeps_per_draw: int | None = None,
    random_seed: int | None = None,
    n_jobs: int | None = 1,
    jump_tol: float = 0.1,
    fit_kwargs: dict | None = None,
) -> CVResult:
    """Choose the pCRP power ``r`` by held-out loss over a grid.

    For each ``r`` in ``powers``, :func:`pymc_pcrp.fit` samples the partition of
    ``X_train``; for every kept draw, each point of ``X_test`` joins the training
    cluster with the largest pCRP predictive probability ``n_k^r t_k(x)`` and
    the loss :func:`cluster_loss` of the held-out points is computed; the
    losses are averaged over draws. :func:`find_jump` then picks the ``r`` just
    before the loss curve jumps. The module docstring explains these choices.

    Parameters
    ----------
    X_train, X_test : array_like, shape (N, D) / (M, D), or 1-D
        Training and held-out data (see :func:`split_train_test`).
    powers : sequence of float
        Grid of ``r`` (at least two values, all > 0); it is sorted. The paper
        starts at ``1 + eps`` and increases ``r`` until the curve blows up.
    alpha : float, default=1.0
        Concentration, the same for every ``r``.
    prior : NIWPrior, optional
        Defaults to ``NIWPrior.from_data(X_train)``; the same prior is used at
        every ``r``.
    draws, tune, chains, sweeps_per_draw
        Passed to :func:`pymc_pcrp.fit` for every ``r``.
    random_seed : int, optional
        Seeds of the grid points are spawned from it with
        :class:`numpy.random.SeedSequence`, one per grid point in the sorted
        order, so the result does not depend on ``n_jobs`` or the backend.
    n_jobs : int or None, default=1
        Grid points fitted in parallel through :class:`joblib.Parallel` (loky
        processes by default). ``None`` defers to an enclosing
        ``joblib.parallel_config``, which also selects another backend, for
        example ``joblib.parallel_config(backend="dask")`` for a Dask cluster.
    jump_tol : float, default=0.1
        Relative increase of the loss that counts as the jump.
    fit_kwargs : dict, optional
        Further arguments of :func:`pymc_pcrp.fit` (for example ``init``, or
        ``pcrp_gibbs`` options of the step method); not those set above. Each
        fit runs its chains one after the other (``cores=1``) unless ``cores``
        is given here.

    Returns
    -------
    CVResult
        ``jumped`` tells whether the loss jumped on the grid; if not,
        ``chosen_power`` is merely the largest ``r`` of the grid (``summary()``
        says so in words).

    Warns
    -----
    UserWarning
        If the loss never jumps over the grid: the largest ``r`` is returned and
        the grid should probably extend further.

    Notes
    -----
    The training fits use the step method's default moves (whatever
    :class:`~pymc_pcrp.PCRPGibbs` does when given no options) unless
    ``fit_kwargs`` sets ``pcrp_gibbs``; their convergence is not checked (no
    :class:`~pymc_pcrp.ConvergenceWarning`): the spread of the per-draw losses
    shows in ``loss_se``.
    """
    x_train, x_test = _check_train_and_other(X_train, X_test, "X_test")
    grid = check_power_grid(powers)
    alpha = check_positive_scalar(alpha, "alpha")
    jump_tol = check_positive_scalar(jump_tol, "jump_tol")
    prior = check_prior(prior, x_train, x_train.shape[1])
    extra = dict(fit_kwargs or {})
    own = {"power", "alpha", "prior", "random_seed", "draws", "tune", "chains", "sweeps_per_draw"}
    clash = own & extra.keys()
    if clash:
        raise ValueError(f"Argument 'fit_kwargs' must not set {sorted(clash)}.")
    extra.setdefault("cores", 1)
    extra.update(draws=draws, tune=tune, chains=chains, sweeps_per_draw=sweeps_per_draw)

    from joblib import Parallel, delayed

    children = np.random.SeedSequence(random_seed).spawn(grid.size)
    seeds = [int(child.generate_state(1, dtype=np.uint32)[0]) for child in children]
    import time

    start = time.perf_counter()
    results = []
    # results in grid order as each finishes, so that a terminal sees how far it has got
    from pymc_pcrp._runtime.compile_notice import progress_wanted

    as_done = "generator" if progress_wanted() else "list"
    jobs = Parallel(n_jobs=n_jobs, return_as=as_done)(
        delayed(_score_power)(x_train, x_test, float(r), alpha, prior, extra, seed)
        for r, seed in zip(grid, seeds, strict=True)
    )
    for i, result in enumerate(jobs):
        results.append(result)
        progress_line(
            f"pymc_pcrp: cross-validation, r = {grid[i]:g} fitted ({i + 1} of {grid.size}, "
            f"{time.perf_counter() - start:.0f} s)"
        )
    loss_draws = np.stack([losses for losses, _ in results])
    k_draws = np.stack([ks for _, ks in results])
    loss = loss_draws.mean(axis=(1, 2))
    chosen, index = find_jump(grid, loss, jump_tol)
    if index is None:
        warnings.warn(
            f"The held-out loss never rose by more than {jump_tol:.0%} between consecutive "
            f"powers over [{grid[0]:g}, {grid[-1]:g}]; returning the largest power. Extend the "
            "grid to larger r to locate the jump.",
            UserWarning,
            stacklevel=2,
        )
    return CVResult(
        powers=grid,
        loss=loss,
        loss_se=np.array([_mcse(values) for values in loss_draws]),
        mean_k=k_draws.mean(axis=(1, 2)),
        loss_draws=loss_draws,
        chosen_power=chosen,
        jump_index=index,
        jump_tol=jump_tol,
    )
