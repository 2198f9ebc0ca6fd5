"""Restarts during tuning: a chain tries several random starts and goes on from the best.

On data whose posterior has several deep basins (breast cancer, D = 30), a chain
settles into the basin its random start leads to within a few dozen sweeps and
stays there: the moves that would carry it to a better basin exist (the kernel
is irreducible) but are taken with probabilities of order ``e^-40``. Four chains
then disagree, correctly, and no estimate is reported, although one basin holds
nearly all of the posterior mass (docs/mixing.md, "Restarts during tuning").

Tuning draws are discarded and may be made by any procedure, so the step spends
the first part of tuning on ``restarts`` independent starts of ``segment`` draws
each, every one drawn by the chain's ``init`` from the chain's own generator.
Each start is scored by the mean log joint of its last third of draws; when the
last start ends (or tuning ends first), the chain goes on from the labels of the
best-scoring start's last draw. The kernel that makes the kept draws, and so
the target, is unchanged. Chains stay independent of each other: each runs its
own tournament, so R-hat still compares independent searches, and chains whose
tournaments end in different basins are reported as not converged.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "RESTARTS_MAX",
    "RESTART_DRAWS_MAX",
    "RESTART_SWEEPS",
    "RestartTournament",
    "auto_restarts",
    "segment_draws",
]

# restarts=None: each start runs RESTART_SWEEPS sweeps (rounded up to whole draws); at most
# RESTARTS_MAX starts and at most RESTART_DRAWS_MAX tuning draws in all (docs/mixing.md).
RESTART_SWEEPS = 60
RESTARTS_MAX = 16
RESTART_DRAWS_MAX = 400


def segment_draws(sweeps_per_draw: int, restart_sweeps: int = RESTART_SWEEPS) -> int:
    """Draws of one start: ``ceil(restart_sweeps / sweeps_per_draw)``, at least 1."""
    return max(1, math.ceil(restart_sweeps / max(int(sweeps_per_draw), 1)))


def auto_restarts(sweeps_per_draw: int, init: str) -> int:
    """Return the starts per chain of ``restarts=None``.

    ``min(16, 400 // segment)`` starts of ``segment = ceil(60 / sweeps_per_draw)``
    draws for the random inits (``"random"``, ``"prior"``), 1 (no restarts) for
    the others, whose starts are not over-dispersed draws.
    """
    if init not in ("random", "prior"):
        return 1
    return max(1, min(RESTARTS_MAX, RESTART_DRAWS_MAX // segment_draws(sweeps_per_draw)))


class RestartTournament:
    """The bookkeeping of one chain's restarts (see the module docstring).

    Parameters
    ----------
    restarts : int
        Starts in all (1: none, the chain starts once).
    segment : int
        Draws of each start.
    """

    def __init__(self, restarts: int, segment: int):
        self.restarts = int(restarts)
        self.segment = int(segment)
        self.reset()

    def reset(self) -> None:
        """Forget everything: a new chain begins (``set_rng``)."""
        self.draw = 0
        self.scores: list[float] = []
        self._log_joints: list[float] = []
        self._labels: np.ndarray | None = None
        self._best: np.ndarray | None = None
        self._best_score = -math.inf
        self.done = self.restarts <= 1

    def starts_new(self) -> bool:
        """Whether the coming draw begins a new start (the first start is the chain's own)."""
        return not self.done and self.draw > 0 and self.draw % self.segment == 0

    def record(self, labels: np.ndarray, log_joint: float) -> np.ndarray | None:
        """Record a tuning draw; return the labels to go on from once the last start ends."""
        if self.done:
            return None
        self._log_joints.append(float(log_joint))
        self._labels = labels
        self.draw += 1
        if self.draw % self.segment:
            return None
        self._close_start()
        return self._finish() if len(self.scores) == self.restarts else None

    def stop(self) -> np.ndarray | None:
        """Tuning ends: score a start cut short (if it ran half its draws) and return the best.

        Returns ``None`` when nothing is to change: no tournament, one already
        finished, or no tuning draw made.
        """
        if self.done:
            return None
        if self._log_joints and (2 * len(self._log_joints) >= self.segment or not self.scores):
            self._close_start()
        if not self.scores:  # tuning ended before the first draw
            self._end()
            return None
        return self._finish()

    def _close_start(self) -> None:
        tail = self._log_joints[-max(1, len(self._log_joints) // 3) :]
        score = float(np.mean(tail))
        self.scores.append(score)
        if score > self._best_score:
            self._best_score, self._best = score, np.array(self._labels, copy=True)
        self._log_joints = []

    def _finish(self) -> np.ndarray | None:
        best = self._best
        self._end()
        return best

    def _end(self) -> None:
        self.done = True
        self._labels = None
        self._log_joints = []
