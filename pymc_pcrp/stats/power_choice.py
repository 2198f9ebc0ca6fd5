"""The package's default choice of the power ``r``, and how the answer moves with it.

:func:`choose_power` (behind ``fit(power="auto")`` and the ``cluster`` command's
default) fits ``r = 1, 1.1, 1.3``, reports the fit at ``r = 1.1`` and, in
:class:`PowerSensitivity`, how the answer moves over the grid: which clusters a
neighbouring ``r`` joins or splits, and the posterior probability that the smaller
``r`` keeps them apart. ``choose_power(rule="agree")`` keeps instead the largest
``r`` whose point estimate joins no two clusters of ``r = 1``'s
(:func:`agreeing_power`). docs/choice_of_r.md compares these rules with the paper's
cross-validation (:mod:`pymc_pcrp.stats.cross_validation`) on real data and explains
the choice.
"""

from __future__ import annotations

import warnings

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pymc_pcrp._idata import label_draws
from pymc_pcrp._runtime.logging import progress_line
from pymc_pcrp._validation import check_power_grid

__all__ = [
    "AUTO_POWERS",
    "DEFAULT_POWER",
    "PowerChoice",
    "PowerSensitivity",
    "PowerSensitivityWarning",
    "agreeing_power",
    "choose_power",
    "merged_pairs",
    "power_sensitivity",
]


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

    from pymc_pcrp.stats.metrics import variation_of_information

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
    from pymc_pcrp.fitting import fit  # fit(power="auto") calls this function
    from pymc_pcrp.posterior import point_estimate

    grid = check_power_grid(powers) if len(powers) > 1 else np.asarray(powers, dtype=float)
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
        progress_line(f"pymc_pcrp: choosing r, fit {i + 1} of {grid.size} (r = {r:g}) ...")
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
