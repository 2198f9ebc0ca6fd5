"""Restarts during tuning: a chain tries several random starts and goes on from the best.

On data whose posterior has several deep basins (breast cancer, D = 30), a chain
settles into the basin its random start leads to within a few dozen sweeps and
stays there: the moves that would carry it to a better basin exist (the kernel
is irreducible) but are taken with probabilities of order ``e^-40``. Four chains
then disagree, correctly, and no estimate is reported, although one basin holds
nearly all of the posterior mass (docs/mixing.md, "Restarts during tuning").

Tuning draws are discarded and may be made by any procedure, so the step spends
the first part of tuning on a tournament in two rounds. In the first, the chain
makes ``restarts`` independent starts of ``segment`` draws each, every one drawn
by the chain's ``init`` from the chain's own generator; in the second, the
``finalists`` best of them go on, one after the other, from where they stopped,
for ``2 segment`` draws each (a start that has found the best basin may not have
settled in it yet after one segment). A start is scored by the mean log joint of
the last third of its latest segment. When the tournament ends (or tuning ends
first), the chain goes on from the labels of the best-scoring candidate. The
kernel that makes the kept draws, and so the target, is unchanged. Chains stay
independent of each other: each runs its own tournament, so R-hat still compares
independent searches, and chains whose tournaments end in different basins are
reported as not converged.

A start is drawn by :func:`initial_labels` (``PCRPGibbs(init=...)``), the same for a
new chain and for each start of a tournament.
"""

from __future__ import annotations

import math

import numpy as np

from pymc_pcrp._kernels.partitions import canonical_labels
from pymc_pcrp._kernels.prior_draws import sample_partitions

__all__ = [
    "FRESH",
    "RANDOM_INITS",
    "RESTARTS_MAX",
    "RESTART_DRAWS_MAX",
    "RESTART_FINALISTS",
    "RESTART_SWEEPS",
    "RestartTournament",
    "auto_restarts",
    "finalists",
    "initial_labels",
    "random_init_max_k",
    "segment_draws",
    "tournament_draws",
]

# restarts=None: each start runs RESTART_SWEEPS sweeps (rounded up to whole draws); at most
# RESTARTS_MAX starts, and the whole tournament at most RESTART_DRAWS_MAX tuning draws
# (docs/mixing.md, "Restarts during tuning"). The final round takes the best quarter of the
# starts, at most RESTART_FINALISTS.
RESTART_SWEEPS = 30
RESTARTS_MAX = 16
RESTART_DRAWS_MAX = 400
RESTART_FINALISTS = 4

RANDOM_INITS = ("random", "prior")  # the inits whose starts are over-dispersed draws
# init="random" draws K0 uniform on 1..min(ceil(sqrt(N)), RANDOM_INIT_MAX_K).
RANDOM_INIT_MAX_K = 20

FRESH = "fresh"  # RestartTournament.before_draw: the coming draw starts from a new random start


def segment_draws(sweeps_per_draw: int, restart_sweeps: int = RESTART_SWEEPS) -> int:
    """Draws of one start's first segment: ``ceil(restart_sweeps / sweeps_per_draw)``, >= 1."""
    return max(1, math.ceil(restart_sweeps / max(int(sweeps_per_draw), 1)))


def finalists(restarts: int) -> int:
    """Return the starts that go on to the final round: ``min(4, restarts // 4)``."""
    return min(RESTART_FINALISTS, int(restarts) // 4)


def tournament_draws(restarts: int, segment: int) -> int:
    """Tuning draws of a whole tournament: ``(restarts + 2 finalists) segment``."""
    return (int(restarts) + 2 * finalists(restarts)) * int(segment)


def auto_restarts(sweeps_per_draw: int, init: str) -> int:
    """Return the starts per chain of ``restarts=None``.

    The most starts, up to 16, whose tournament fits in 400 tuning draws
    (:func:`tournament_draws` with segments of :func:`segment_draws`), for the
    random inits (``"random"``, ``"prior"``); 1 (no restarts) for the others,
    whose starts are not over-dispersed draws.
    """
    if init not in RANDOM_INITS:
        return 1
    segment = segment_draws(sweeps_per_draw)
    for restarts in range(RESTARTS_MAX, 1, -1):
        if tournament_draws(restarts, segment) <= RESTART_DRAWS_MAX:
            return restarts
    return 1


class RestartTournament:
    """The bookkeeping of one chain's restarts (see the module docstring).

    The step asks :meth:`before_draw` what the coming tuning draw starts from,
    and hands every tuning draw's labels and log joint to :meth:`record`;
    :meth:`stop` ends the tournament when tuning ends.

    Parameters
    ----------
    restarts : int
        Starts in the first round (1: no tournament, the chain starts once).
    segment : int
        Draws of each start in the first round (twice as many in the final).
    """

    def __init__(self, restarts: int, segment: int):
        self.restarts = int(restarts)
        self.segment = int(segment)
        self.n_finalists = finalists(self.restarts)
        self.reset()

    def reset(self) -> None:
        """Forget everything: a new chain begins (``set_rng``)."""
        self.round = 0
        self.index = 0  # the start (round 0) or the finalist (round 1) now running
        self.candidates: list[tuple[float, np.ndarray]] = []  # (score, labels) per start
        self.final: list[int] = []  # the candidates in the final round, best first
        self._log_joints: list[float] = []
        self._labels: np.ndarray | None = None
        self._pending: np.ndarray | None = None
        self.done = self.restarts <= 1

    @property
    def scores(self) -> list[float]:
        """The latest score of every start so far."""
        return [score for score, _ in self.candidates]

    def before_draw(self) -> np.ndarray | str | None:
        """Return what the coming draw starts from.

        ``None``: the chain's current state; :data:`FRESH`: a new random start;
        an array: these labels (a finalist, or the winner once the tournament
        has ended).
        """
        if self._pending is not None:
            pending, self._pending = self._pending, None
            return pending
        if self.done or self._log_joints:
            return None
        if self.round == 0:
            return FRESH if self.index > 0 else None
        return self.candidates[self.final[self.index]][1]

    def record(self, labels: np.ndarray, log_joint: float) -> None:
        """Record a tuning draw's labels and log joint."""
        if self.done:
            return
        self._log_joints.append(float(log_joint))
        self._labels = labels
        if len(self._log_joints) < self._length():
            return
        self._score_segment()
        self.index += 1
        if self.round == 0 and self.index == self.restarts:
            if self.n_finalists == 0:
                self._finish()
                return
            ranked = np.argsort([-score for score in self.scores], kind="stable")
            self.final = [int(c) for c in ranked[: self.n_finalists]]
            self.round, self.index = 1, 0
        elif self.round == 1 and self.index == len(self.final):
            self._finish()

    def stop(self) -> None:
        """Tuning ends: score a segment cut short if it ran half its draws, and pick the best.

        The winner's labels are what the next :meth:`before_draw` returns; nothing
        changes when there is no tournament, it already ended, or no tuning draw
        was made.
        """
        if self.done:
            return
        if self._log_joints and (
            2 * len(self._log_joints) >= self._length() or not self.candidates
        ):
            self._score_segment()
        self._finish()

    def _length(self) -> int:
        return self.segment if self.round == 0 else 2 * self.segment

    def _score_segment(self) -> None:
        tail = self._log_joints[-max(1, len(self._log_joints) // 3) :]
        entry = (float(np.mean(tail)), np.array(self._labels, copy=True))
        if self.round == 0:
            self.candidates.append(entry)
        else:
            self.candidates[self.final[self.index]] = entry
        self._log_joints = []

    def _finish(self) -> None:
        if self.candidates:
            best = int(np.argmax(self.scores))
            self._pending = self.candidates[best][1]
        self.done = True  # candidates keep their labels: the template jumps choose from them
        self._labels = None
        self._log_joints = []


def random_init_max_k(n: int) -> int:
    """Largest ``K0`` of ``init="random"``: ``min(ceil(sqrt(n)), RANDOM_INIT_MAX_K)``."""
    return max(1, min(math.ceil(math.sqrt(n)), RANDOM_INIT_MAX_K))


def initial_labels(
    init: str,
    rng: np.random.Generator,
    n: int,
    current: np.ndarray,
    alpha: float,
    power: float,
) -> np.ndarray:
    """Draw the start labels of a chain for ``PCRPGibbs(init=...)`` (see its docstring).

    ``current`` holds the labels of the start point (used by ``init="point"``);
    ``alpha`` and ``power`` are the prior's (used by ``init="prior"``).
    """
    if init == "random":
        k0 = int(rng.integers(1, random_init_max_k(n) + 1))
        return canonical_labels(rng.integers(0, k0, size=n))
    if init == "prior":
        return sample_partitions(rng, n, alpha, power, 1)[0]
    if init == "one":
        return np.zeros(n, dtype=np.int64)
    if init == "singletons":
        return np.arange(n, dtype=np.int64)
    return canonical_labels(np.asarray(current, dtype=np.int64))
