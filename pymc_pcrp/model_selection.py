"""Choosing the power ``r``: the package's default rule, and the paper's cross-validation.

**The default** (:func:`choose_power`, behind ``fit(power="auto")`` and the
``cluster`` command's default) fits ``r = 1, 1.1, 1.3``, reports the fit at
``r = 1.1`` and, in :class:`PowerSensitivity`, how the answer moves over the grid.
``choose_power(rule="agree")`` keeps instead the largest ``r`` whose point estimate
joins no two clusters of ``r = 1``'s (:func:`agreeing_power`). docs/choice_of_r.md
compares these with the rules below on real data and explains the choice.

**The paper's rule** (:func:`cross_validate_power`, ``--power cv``) is described in
the rest of this docstring.

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

import sys
import warnings

from collections.abc import Sequence
from dataclasses import dataclass

import arviz as az
import numpy as np

from pymc_pcrp._idata import draw_nu0s, draw_scales, label_draws
from pymc_pcrp._runtime.logging import quiet_loggers
from pymc_pcrp._validation import check_data, check_positive_scalar
from pymc_pcrp.distributions import NIWPrior
from pymc_pcrp.distributions._niw_numpy import PartitionPredictor, assign, check_prior
from pymc_pcrp.fitting import fit

__all__ = [
    "AUTO_POWERS",
    "DEFAULT_POWER",
    "CVResult",
    "PowerChoice",
    "PowerSensitivity",
    "PowerSensitivityWarning",
    "agreeing_power",
    "choose_power",
    "cluster_loss",
    "cross_validate_power",
    "find_jump",
    "merged_pairs",
    "power_sensitivity",
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


def _check_power_grid(powers) -> np.ndarray:
    """Return the grid of powers sorted; refuse fewer than two distinct positive values."""
    grid = np.asarray(powers, dtype=np.float64)
    if grid.ndim != 1 or grid.size < 2:
        raise ValueError(f"Argument 'powers' must hold at least two values, got {powers!r}.")
    grid = np.sort(grid)
    if np.any(np.diff(grid) == 0):
        raise ValueError("Argument 'powers' holds repeated values.")
    for value in grid:
        check_positive_scalar(value, "powers")
    return grid


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
    grid = _check_power_grid(powers)
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
    from pymc_pcrp.step_methods._compile_notice import progress_wanted

    as_done = "generator" if progress_wanted() else "list"
    jobs = Parallel(n_jobs=n_jobs, return_as=as_done)(
        delayed(_score_power)(x_train, x_test, float(r), alpha, prior, extra, seed)
        for r, seed in zip(grid, seeds, strict=True)
    )
    for i, result in enumerate(jobs):
        results.append(result)
        _progress(
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


def _check_speck(speck) -> float:
    speck = float(speck)
    if not 0 <= speck < 1:
        raise ValueError(f"Argument 'speck' must be a fraction in [0, 1), got {speck!r}.")
    return speck


def merged_pairs(reference, labels, *, speck: float = 0.05) -> list[tuple[int, int]]:
    """Pairs of clusters of ``reference`` that ``labels`` merges, specks left out.

    A cluster of ``reference`` is a speck when it holds fewer than ``speck`` times
    the points. Each other cluster goes where most of its points go in ``labels``;
    two that go to the same cluster of ``labels`` are merged there.

    Parameters
    ----------
    reference, labels : array_like of int, shape (N,)
        Two partitions of the same points (any integer labels).
    speck : float, default=0.05
        Clusters of ``reference`` below this fraction of the points are ignored.

    Returns
    -------
    list of (int, int)
        The merged pairs, as labels of ``reference``, in increasing order.

    Examples
    --------
    >>> merged_pairs([0, 0, 1, 1, 2], [5, 5, 5, 5, 5], speck=0.3)
    [(0, 1)]
    """
    a = np.asarray(reference)
    b = np.asarray(labels)
    if (
        a.ndim != 1
        or a.shape != b.shape
        or not (np.issubdtype(a.dtype, np.integer) and np.issubdtype(b.dtype, np.integer))
    ):
        raise ValueError(
            "Arguments 'reference' and 'labels' must be integer vectors of the same length, "
            f"got shapes {a.shape} and {b.shape}."
        )
    speck = _check_speck(speck)
    values, counts = np.unique(a, return_counts=True)
    big = values[counts >= max(speck * a.size, 1)]
    home = {}
    for k in big:
        targets, hits = np.unique(b[a == k], return_counts=True)
        home[int(k)] = int(targets[np.argmax(hits)])
    keys = sorted(home)
    return [(i, j) for n, i in enumerate(keys) for j in keys[n + 1 :] if home[i] == home[j]]


def agreeing_power(powers, point_estimates, *, speck: float = 0.05) -> float:
    """Return the largest ``r`` up to which every point estimate agrees with the first.

    Walking up the sorted grid, a point estimate agrees when it merges no two
    clusters of the first one (specks aside, :func:`merged_pairs`): a larger ``r``
    may absorb specks, but not join clusters that ``r = powers[0]`` keeps apart.
    The walk stops at the first disagreement. This is the rule behind
    ``pymc_pcrp.fit(power="auto")``; docs/choice_of_r.md shows how it compares with
    cross-validation and PSIS-LOO on real data.

    Parameters
    ----------
    powers : sequence of float
        The grid, strictly increasing (at least one value).
    point_estimates : sequence of array_like of int
        One partition per grid value, each of shape (N,).
    speck : float, default=0.05
        See :func:`merged_pairs`.

    Returns
    -------
    float
    """
    grid = np.asarray(powers, dtype=np.float64)
    if grid.ndim != 1 or grid.size < 1 or np.any(np.diff(grid) <= 0):
        raise ValueError(f"Argument 'powers' must be strictly increasing, got {powers!r}.")
    if len(point_estimates) != grid.size:
        raise ValueError(
            f"Argument 'point_estimates' must hold one partition per power ({grid.size}), "
            f"got {len(point_estimates)}."
        )
    chosen = float(grid[0])
    for r, labels in zip(grid[1:], point_estimates[1:], strict=True):
        if merged_pairs(point_estimates[0], labels, speck=speck):
            break
        chosen = float(r)
    return chosen


#: The grid of ``fit(power="auto")`` and of the ``cluster`` command's default.
AUTO_POWERS = (1.0, 1.1, 1.3)

#: The power that ``rule="default"`` reports; the other grid values are its check.
DEFAULT_POWER = 1.1

#: What each rule of :func:`choose_power` reports, in words.
RULE_TEXT = {
    "default": "the package's default r (docs/choice_of_r.md), checked against its grid neighbours",
    "agree": "the largest of the grid whose point estimate joins no two clusters of the "
    "smallest r's (clusters under 5% of the points aside)",
}

#: Clusters below this fraction of the points are specks (:func:`merged_pairs`).
SPECK = 0.05


class PowerSensitivityWarning(UserWarning):
    """The point estimate changes materially between neighbouring powers ``r``."""


def _apart_probability(draws: np.ndarray, a: np.ndarray, b: np.ndarray) -> float:
    """Posterior probability that a random point of ``a`` and a random one of ``b`` are apart."""
    together = 0.0
    for z in draws:
        _, inverse = np.unique(z, return_inverse=True)
        count_a = np.bincount(inverse[a], minlength=inverse.max() + 1)
        count_b = np.bincount(inverse[b], minlength=inverse.max() + 1)
        together += float(count_a @ count_b) / (a.size * b.size)
    return 1.0 - together / len(draws)


@dataclass(frozen=True, repr=False)
class PowerSensitivity:
    """How the point estimate moves with ``r`` around the chosen one.

    Attributes
    ----------
    powers : numpy.ndarray, shape (P,)
        The grid of ``r`` that was fitted.
    chosen_power : float
        The ``r`` of the reported answer.
    n_clusters : numpy.ndarray of int, shape (P,)
        Clusters of the point estimate at each ``r``.
    sizes : tuple of tuple of int
        Cluster sizes of each point estimate, largest first.
    mean_k : numpy.ndarray, shape (P,)
        Posterior mean number of clusters at each ``r``.
    ari : numpy.ndarray, shape (P,)
        Adjusted Rand index between each point estimate and the chosen one (1: the same).
    vi : numpy.ndarray, shape (P,)
        Variation of information (bits) between each point estimate and the chosen one
        (0: the same).
    changes : tuple of str
        One sentence per material change: a grid ``r`` whose point estimate joins two
        clusters of the other (specks aside, :func:`merged_pairs`), with the posterior
        probability, at the smaller ``r``, that the two are apart.
    rule : str
        How ``chosen_power`` was chosen, in words.
    """

    powers: np.ndarray
    chosen_power: float
    n_clusters: np.ndarray
    sizes: tuple
    mean_k: np.ndarray
    ari: np.ndarray
    vi: np.ndarray
    changes: tuple
    rule: str = "given"

    @property
    def material(self) -> bool:
        """Whether the answer changes materially over the grid."""
        return bool(self.changes)

    def warning(self) -> str | None:
        """One paragraph for the top of a report, or ``None`` when nothing changes."""
        if not self.material:
            return None
        return (
            f"The answer depends on r. {' '.join(self.changes)} The reported r = "
            f"{self.chosen_power:g} is {self.rule}; whether the clusters named here are one "
            "or two is decided by the choice of r, not by the data alone."
        )

    def rows(self) -> list[list[str]]:
        """Table rows: r, K, sizes, mean K, ARI and VI to the chosen answer."""
        out = []
        for i, r in enumerate(self.powers):
            sizes = ", ".join(str(v) for v in self.sizes[i][:6])
            if len(self.sizes[i]) > 6:
                sizes += f", +{len(self.sizes[i]) - 6} more"
            mark = " (reported)" if r == self.chosen_power else ""
            out.append(
                [
                    f"{r:g}{mark}",
                    str(int(self.n_clusters[i])),
                    sizes,
                    f"{self.mean_k[i]:.2f}",
                    f"{self.ari[i]:.3f}",
                    f"{self.vi[i]:.3f}",
                ]
            )
        return out

    #: Header of :meth:`rows`.
    HEADER = ("r", "K", "cluster sizes", "mean K", "ARI to reported", "VI to reported (bits)")

    def summary(self) -> str:
        """Return the table of :meth:`rows` as text, then the changes."""
        widths = [
            max(len(h), *(len(row[i]) for row in self.rows())) for i, h in enumerate(self.HEADER)
        ]
        lines = ["  ".join(h.ljust(w) for h, w in zip(self.HEADER, widths, strict=True))]
        lines += [
            "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in self.rows()
        ]
        lines += list(self.changes) or [
            "The point estimate does not change materially over the grid."
        ]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()

    def __repr__(self) -> str:
        return (
            f"PowerSensitivity(chosen_power={self.chosen_power:g}, "
            f"powers={np.array2string(self.powers, separator=', ')}, "
            f"n_clusters={np.array2string(self.n_clusters, separator=', ')}, "
            f"material={self.material})"
        )

    def attrs(self) -> dict:
        """Return the table as netCDF-friendly attributes (prefix ``pcrp_sensitivity_``)."""
        return {
            "pcrp_sensitivity_powers": [float(v) for v in self.powers],
            "pcrp_sensitivity_n_clusters": [int(v) for v in self.n_clusters],
            "pcrp_sensitivity_mean_k": [float(v) for v in self.mean_k],
            "pcrp_sensitivity_ari": [float(v) for v in self.ari],
            "pcrp_sensitivity_vi_bits": [float(v) for v in self.vi],
            "pcrp_sensitivity_sizes": "; ".join(
                ",".join(str(v) for v in sizes) for sizes in self.sizes
            ),
            "pcrp_sensitivity_material": int(self.material),
            "pcrp_sensitivity_changes": " ".join(self.changes),
        }


def power_sensitivity(
    powers,
    point_estimates,
    chosen_power: float,
    *,
    draws=None,
    speck: float = SPECK,
    mean_k=None,
    rule: str = "given",
) -> PowerSensitivity:
    """Compare the point estimates of a grid of ``r`` with the one at ``chosen_power``.

    Parameters
    ----------
    powers : sequence of float
        Strictly increasing grid.
    point_estimates : sequence of array_like of int
        One partition of the same ``N`` points per grid value.
    chosen_power : float
        A value of ``powers``.
    draws : sequence of array_like of int, optional
        Label draws ``(S, N)`` per grid value; they give the posterior probability that
        two merged clusters are apart at the smaller ``r``.
    speck : float, default=0.05
        See :func:`merged_pairs`.
    mean_k : sequence of float, optional
        Posterior mean K per grid value (NaN when omitted).
    rule : str, default="given"
        How ``chosen_power`` was chosen, in words (for :meth:`PowerSensitivity.warning`).

    Returns
    -------
    PowerSensitivity
    """
    from sklearn.metrics import adjusted_rand_score

    from pymc_pcrp.metrics import variation_of_information

    grid = np.asarray(powers, dtype=np.float64)
    labels = [np.asarray(z) for z in point_estimates]
    if chosen_power not in grid:
        raise ValueError(f"Argument 'chosen_power' = {chosen_power!r} is not in 'powers'.")
    c = int(np.flatnonzero(grid == chosen_power)[0])
    changes = []
    for i, r in enumerate(grid):
        if i == c:
            continue
        small, large = (i, c) if i < c else (c, i)
        for a, b in merged_pairs(labels[small], labels[large], speck=speck):
            in_a = np.flatnonzero(labels[small] == a)
            in_b = np.flatnonzero(labels[small] == b)
            mass = ""
            if draws is not None:
                p = _apart_probability(np.asarray(draws[small]), in_a, in_b)
                mass = f" (at r = {grid[small]:g} they are apart in {p:.0%} of the draws)"
            if small == c:
                what = f"clusters {a} and {b} of the answer ({in_a.size} and {in_b.size} points)"
                changes.append(f"At r = {r:g} the point estimate joins {what}{mass}.")
            else:
                changes.append(
                    f"At r = {r:g} the point estimate splits one of the answer's clusters in two "
                    f"({in_a.size} and {in_b.size} points){mass}."
                )
    return PowerSensitivity(
        powers=grid,
        chosen_power=float(chosen_power),
        n_clusters=np.array([np.unique(z).size for z in labels]),
        sizes=tuple(
            tuple(int(v) for v in np.sort(np.unique(z, return_counts=True)[1])[::-1])
            for z in labels
        ),
        mean_k=np.full(grid.size, np.nan) if mean_k is None else np.asarray(mean_k, dtype=float),
        ari=np.array([adjusted_rand_score(labels[c], z) for z in labels]),
        vi=np.array([variation_of_information(labels[c], z) for z in labels]),
        changes=tuple(changes),
        rule=rule,
    )


@dataclass(frozen=True, repr=False)
class PowerChoice:
    """Outcome of :func:`choose_power`.

    Attributes
    ----------
    idata : arviz.InferenceData
        The fit at the chosen ``r``, the same as ``fit(X, power=chosen_power, ...)`` with
        the same seed; its ``attrs`` hold the rule and the sensitivity table.
    chosen_power : float
    sensitivity : PowerSensitivity
    fits : dict of float to arviz.InferenceData
        Every grid fit, by ``r``.
    estimates : dict of float to PointEstimate
        The VI point estimate of every grid fit.
    """

    idata: object
    chosen_power: float
    sensitivity: PowerSensitivity
    fits: dict
    estimates: dict

    def __repr__(self) -> str:
        return f"PowerChoice(chosen_power={self.chosen_power:g}, sensitivity={self.sensitivity!r})"


def _progress(message: str, stream=None) -> None:
    from pymc_pcrp.step_methods._compile_notice import progress_wanted

    stream = sys.stderr if stream is None else stream
    if progress_wanted(stream):
        print(message, file=stream, flush=True)


def choose_power(
    X,
    *,
    powers: Sequence[float] = AUTO_POWERS,
    rule: str = "default",
    speck: float = SPECK,
    random_seed=None,
    point_estimate_seed=None,
    **fit_kwargs,
) -> PowerChoice:
    """Fit every ``r`` of a small grid, report one, and show how the answer moves with ``r``.

    The rule behind ``fit(power="auto")``: fit at each ``r`` of ``powers``, summarise
    each fit by its VI point estimate, report the fit at the rule's ``r`` and compare
    the point estimates of the others with it (:class:`PowerSensitivity`; a material
    change raises :class:`PowerSensitivityWarning`). docs/choice_of_r.md compares the
    rules with cross-validation, PSIS-LOO and fixed powers on real data.

    Parameters
    ----------
    X : array_like or pandas.DataFrame
        As for :func:`pymc_pcrp.fit`.
    powers : sequence of float, default=AUTO_POWERS
        The grid, ``(1, 1.1, 1.3)`` by default.
    rule : {"default", "agree"}, default="default"
        ``"default"``: report :data:`DEFAULT_POWER` (r = 1.1, which must be on the grid),
        the others being its check. ``"agree"``: the largest ``r`` up to which every
        point estimate keeps apart the clusters of the first (specks aside,
        :func:`agreeing_power`).
    speck : float, default=0.05
        Clusters of less than this fraction of the points are specks (:func:`merged_pairs`).
    random_seed : int, optional
        Every grid fit uses it, so the chosen fit equals ``fit(X, power=r,
        random_seed=random_seed, ...)``.
    point_estimate_seed : int, optional
        Seed of every grid fit's :func:`~pymc_pcrp.point_estimate`; by default a child
        of ``random_seed``.
    **fit_kwargs
        Other arguments of :func:`pymc_pcrp.fit` (``draws``, ``chains``, ``prior`` ...).

    Returns
    -------
    PowerChoice

    Warns
    -----
    PowerSensitivityWarning
        When the point estimate changes materially over the grid (:attr:`PowerSensitivity.changes`).
    ConvergenceWarning
        Those of the chosen fit only.
    """
    from pymc_pcrp.posterior import point_estimate

    grid = _check_power_grid(powers) if len(powers) > 1 else np.asarray(powers, dtype=float)
    speck = _check_speck(speck)
    if rule not in RULE_TEXT:
        raise ValueError(f"Argument 'rule' must be 'default' or 'agree', got {rule!r}.")
    if rule == "default" and DEFAULT_POWER not in grid:
        raise ValueError(
            f"Argument 'powers' must hold the default r = {DEFAULT_POWER:g} with "
            f"rule='default', got {powers!r}."
        )
    if "power" in fit_kwargs:
        raise ValueError("Argument 'power' is chosen by choose_power; leave it out.")
    if fit_kwargs.get("return_inferencedata", True) is False:
        raise ValueError(
            "choose_power (power='auto') needs InferenceData to compare the point estimates; "
            "leave out return_inferencedata=False."
        )
    seed_seq = None
    if random_seed is not None and not isinstance(random_seed, np.random.Generator):
        entropy = [int(v) for v in np.atleast_1d(random_seed)]
        seed_seq = np.random.SeedSequence(entropy, spawn_key=(0x5E75,))
    fits, estimates, caught_by_r = {}, {}, {}
    for i, r in enumerate(grid):
        _progress(f"pymc_pcrp: choosing r, fit {i + 1} of {grid.size} (r = {r:g}) ...")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            idata = fit(X, power=float(r), random_seed=random_seed, **fit_kwargs)
        caught_by_r[float(r)] = caught
        fits[float(r)] = idata
        pe_seed = point_estimate_seed
        if pe_seed is None and seed_seq is not None:
            pe_seed = int(seed_seq.generate_state(1)[0])
        estimates[float(r)] = point_estimate(idata, random_seed=pe_seed)
    labels = [estimates[float(r)].labels for r in grid]
    if rule == "agree":
        chosen = agreeing_power(grid, labels, speck=speck)
    else:
        chosen = DEFAULT_POWER
    draws = [label_draws(fits[float(r)]).reshape(-1, labels[0].size) for r in grid]
    draws = [d[:: max(1, d.shape[0] // 200)] for d in draws]
    mean_k = [float(np.mean([np.unique(z).size for z in d])) for d in draws]
    sensitivity = power_sensitivity(
        grid, labels, chosen, draws=draws, speck=speck, mean_k=mean_k, rule=RULE_TEXT[rule]
    )
    for w in caught_by_r[chosen]:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    idata = fits[chosen]
    idata.attrs.update(
        pcrp_power_rule=f"{rule}: {RULE_TEXT[rule]}",
        pcrp_chosen_power=float(chosen),
        **sensitivity.attrs(),
    )
    if sensitivity.material:
        warnings.warn(
            sensitivity.warning(),
            PowerSensitivityWarning,
            stacklevel=2,
        )
    return PowerChoice(idata, chosen, sensitivity, fits, estimates)
