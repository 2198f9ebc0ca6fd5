"""The data sets of the paper, at the protocol's sizes, with their cross-validation data."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pymc_pcrp.cli.reproduce.paper_values import (
    K_TRUE,
)
from pymc_pcrp.cli.reproduce.protocol import (
    Protocol,
)
from pymc_pcrp.datasets import load_digits_1to4, load_old_faithful
from pymc_pcrp.stats.cross_validation import split_train_test

# --------------------------------------------------------------------------- data


@dataclass(frozen=True)
class PaperSample:
    """One clustered data set at one size."""

    n: int
    X: np.ndarray
    labels: np.ndarray
    seed: int


@dataclass(frozen=True)
class PaperDataSet:
    """A data set of the paper: its clustered samples and its cross-validation data."""

    name: str
    key: str
    k_true: int
    samples: tuple[PaperSample, ...]
    cv_train: np.ndarray
    cv_test: np.ndarray
    cv_seed: int
    note: str


SEED_OFFSETS = {
    "sim1": (1, 2, 3),
    "sim2": (11, 12, 13),
    "digits": (21, 22, 23),
    "old_faithful": (31,),
}
"""Data seeds are ``seed + offset``: one per clustered size, then the CV sample."""


def simulation_data_set(
    name: str, key: str, draw: Callable, k_true: int, params, protocol: Protocol, seed: int
) -> PaperDataSet:
    """Return a simulated data set at the protocol's sizes (seeds offset by ``SEED_OFFSETS``)."""
    offsets = SEED_OFFSETS[key]
    samples = []
    for n, offset in zip(protocol.sim_sizes, offsets[:-1], strict=True):
        x, labels = draw(n, seed=seed + offset)
        samples.append(PaperSample(n=n, X=x, labels=labels, seed=seed + offset))
    n_train, n_test = protocol.sim_cv
    cv_seed = seed + offsets[-1]
    cv_x, _ = draw(n_train + n_test, seed=cv_seed)
    train, test = cv_x[:n_train], cv_x[n_train:]
    means = ", ".join(f"{m:g}" for m in params.means)
    sds = ", ".join(f"{s:g}" for s in params.sds)
    weights = ", ".join(f"{w:.3g}" for w in params.weights)
    note = (
        f"{name}: 1-D mixture, weights ({weights}), means ({means}), sds ({sds}); raw "
        f"(not standardised). CV: an independent sample (seed {cv_seed}) of "
        f"{n_train} training + {n_test} held-out points."
    )
    return PaperDataSet(name, key, k_true, tuple(samples), train, test, cv_seed, note)


def digits_data_set(protocol: Protocol, seed: int, mnist: str | Path | None) -> PaperDataSet:
    """Return the digits 1-4 at the protocol's sizes (the 8x8 stand-in when ``mnist`` is None)."""
    offsets = SEED_OFFSETS["digits"]
    used: list[np.ndarray] = []
    replace = False
    samples = []

    def draw(n: int, data_seed: int):
        nonlocal replace
        exclude = np.concatenate(used) if used and not replace else None
        try:
            return load_digits_1to4(n, data_seed, mnist, replace=replace, exclude=exclude)
        except ValueError:
            if mnist is not None:
                raise
            # The 8x8 stand-in has 723 images of 1-4: draw with replacement from here on.
            replace = True
            return load_digits_1to4(n, data_seed, None, replace=True)

    for n, offset in zip(protocol.digit_sizes, offsets[:-1], strict=True):
        data = draw(n, seed + offset)
        used.append(data.indices)
        samples.append(PaperSample(n=n, X=data.X, labels=data.labels, seed=seed + offset))
    cv_seed = seed + offsets[-1]
    cv_data = draw(protocol.digit_cv, cv_seed)
    half = protocol.digit_cv // 2
    train, test = split_train_test(cv_data.X, half, seed=cv_seed)
    source = cv_data.source
    if source == "sklearn-8x8":
        where = (
            "scikit-learn's 8x8 digits (the offline stand-in, NOT MNIST; 723 images of 1-4"
            + (", so images are drawn with replacement" if replace else "")
            + ")"
        )
    else:
        where = f"MNIST ({source}, from {mnist})"
    disjoint = "overlapping (drawn with replacement)" if replace else "disjoint"
    note = (
        f"Digits 1-4: {where}; 2-D spectral embedding of each sample, standardised. "
        f"CV: a {disjoint} sample of {protocol.digit_cv} images (seed {cv_seed}) embedded on "
        f"its own and split {half} training / {protocol.digit_cv - half} held-out."
    )
    k_true = K_TRUE["Digits 1-4"]
    return PaperDataSet("Digits 1-4", "digits", k_true, tuple(samples), train, test, cv_seed, note)


def _faithful_manual_labels(durations: np.ndarray) -> np.ndarray:
    """Label the "manual clustering": eruptions shorter than 3 minutes (0) or not (1)."""
    return (durations >= 3.0).astype(np.int64)


def old_faithful_data_set(protocol: Protocol, seed: int) -> tuple[PaperDataSet, int]:
    """Old Faithful (standardised) and the seed of its split for cross-validation."""
    raw = load_old_faithful()
    x = load_old_faithful(standardize=True)
    labels = _faithful_manual_labels(raw[:, 0])
    (offset,) = SEED_OFFSETS["old_faithful"]
    split_seed = seed + offset
    order = np.random.default_rng(split_seed).permutation(x.shape[0])
    cv_rows, kept = order[: protocol.faithful_cv], np.sort(order[protocol.faithful_cv :])
    half = protocol.faithful_cv // 2
    train, test = x[cv_rows[:half]], x[cv_rows[half:]]
    disagreements = _faithful_em_check(x, labels)
    note = (
        f"Old Faithful: all {x.shape[0]} eruptions standardised (z-scores), then "
        f"{protocol.faithful_cv} chosen at random (seed {split_seed}) for CV, split {half} "
        f"training / {protocol.faithful_cv - half} held-out; the other {kept.size} are "
        f"clustered. Manual clustering: duration < 3 min vs >= 3 min "
        f"({int(np.sum(labels == 0))} / {int(np.sum(labels == 1))} of all {labels.size}); "
        f"a 2-component Gaussian mixture fitted by EM to the standardised data "
        f"(scikit-learn, 5 starts) disagrees with it on {disagreements} eruption(s)."
    )
    sample = PaperSample(n=int(kept.size), X=x[kept], labels=labels[kept], seed=split_seed)
    data = PaperDataSet(
        "Old Faithful",
        "old_faithful",
        K_TRUE["Old Faithful"],
        (sample,),
        train,
        test,
        split_seed,
        note,
    )
    return data, disagreements


def _faithful_em_check(x: np.ndarray, labels: np.ndarray) -> int:
    """Points on which a 2-component EM Gaussian mixture disagrees with the manual split."""
    from sklearn.mixture import GaussianMixture

    fitted = GaussianMixture(2, n_init=5, random_state=0).fit(x).predict(x)
    same = int(np.sum(fitted == labels))
    return int(min(same, labels.size - same))
