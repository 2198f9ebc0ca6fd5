"""Template jumps of a chain: remembered partitions turned into an exact independence move.

The tuning tournament of restarts (:mod:`pymc_pcrp.sampler.restarts`) runs
several starts of a chain. When they end in distinct families of states of nearly
the same log joint, a chain of the local moves alone stays in whichever family it
won, and four chains disagree (breast cancer at r = 1.3, docs/mixing.md, "Template
jumps"). :class:`TemplateJumps` keeps some of those partitions (and any given to the
step) as templates when tuning ends and, after every kept draw, proposes partitions
drawn from them (:mod:`pymc_pcrp._kernels.templates`), accepted with the exact
Metropolis-Hastings ratio. The templates are fixed from the first kept draw on, so
the kept draws come from one fixed mixture of exact kernels.
"""

from __future__ import annotations

import numpy as np

from scipy.optimize import linear_sum_assignment

from pymc_pcrp._kernels.partitions import canonical_labels
from pymc_pcrp._kernels.templates import (
    MAX_TEMPLATE_CLUSTERS,
    TemplateSet,
    pack_templates,
    template_jump_chain,
)

__all__ = [
    "SCOUT_MAX_WORK",
    "SCOUT_STARTS",
    "SCOUT_TOURNAMENTS",
    "TEMPLATE_DISTINCT",
    "TEMPLATE_MAX",
    "TEMPLATE_WINDOW",
    "TemplateJumps",
    "check_templates",
    "distinct_templates",
    "points_apart",
]

# Candidates more than this many nats (tournament score, or log joint) below the best are
# not kept.
TEMPLATE_WINDOW = 20.0
# A chain's scouting (sampler/scouting.py): SCOUT_TOURNAMENTS tournaments, each of
# SCOUT_STARTS times the starts of the chain's own, on data of at most SCOUT_MAX_WORK = N D
# (where template jumps are made 25 times a draw).
SCOUT_TOURNAMENTS = 2
SCOUT_STARTS = 3
SCOUT_MAX_WORK = 20_000
# At most this many templates per chain (best first).
TEMPLATE_MAX = 8
# Two candidates are distinct when they place more than this fraction of the points (and
# more than 2 points) differently, after their clusters are matched one to one.
TEMPLATE_DISTINCT = 0.02


def points_apart(a: np.ndarray, b: np.ndarray) -> int:
    """Points placed differently by two partitions after a one-to-one matching of their clusters."""
    _, ia = np.unique(a, return_inverse=True)
    _, ib = np.unique(b, return_inverse=True)
    table = np.zeros((ia.max() + 1, ib.max() + 1), dtype=np.int64)
    np.add.at(table, (ia, ib), 1)
    rows, cols = linear_sum_assignment(-table)
    return int(a.size - table[rows, cols].sum())


def distinct_templates(
    candidates: list[tuple[float, np.ndarray]],
    window: float | None = None,
    distinct: float | None = None,
    max_clusters: int = MAX_TEMPLATE_CLUSTERS,
    most: int | None = None,
) -> list[np.ndarray]:
    """Choose the templates among ``(score, labels)`` candidates (tournament starts).

    Best score first, a candidate is kept when its score is within ``window`` of the
    best, it has at most ``max_clusters`` clusters, and it places more than
    ``max(2, distinct * N)`` points differently from every candidate kept before it;
    at most ``most`` are kept. ``None`` takes :data:`TEMPLATE_WINDOW`,
    :data:`TEMPLATE_DISTINCT` and :data:`TEMPLATE_MAX`.
    """
    window = TEMPLATE_WINDOW if window is None else window
    distinct = TEMPLATE_DISTINCT if distinct is None else distinct
    most = TEMPLATE_MAX if most is None else most
    kept: list[np.ndarray] = []
    if not candidates:
        return kept
    best = max(score for score, _ in candidates)
    for score, labels in sorted(candidates, key=lambda c: -c[0]):
        labels = canonical_labels(np.asarray(labels, dtype=np.int64))
        if score < best - window or labels.max() + 1 > max_clusters:
            continue
        limit = max(2, int(distinct * labels.size))
        if all(points_apart(labels, other) > limit for other in kept):
            kept.append(labels)
            if len(kept) == most:
                break
    return kept


def check_templates(templates, n: int) -> list[np.ndarray]:
    """Validate the ``templates`` option: partitions of the ``n`` points, as label arrays."""
    if templates is None:
        return []
    if isinstance(templates, np.ndarray) and templates.ndim == 1:
        templates = [templates]
    checked = []
    for i, labels in enumerate(templates):
        arr = np.asarray(labels)
        if (
            arr.shape != (n,)
            or not np.issubdtype(arr.dtype, np.integer)
            or (arr.size and arr.min() < 0)
        ):
            raise ValueError(
                f"Argument 'templates' must be a sequence of label arrays of shape ({n},) "
                f"with non-negative integers (one partition of the data each); entry {i} has "
                f"shape {arr.shape} and dtype {arr.dtype}."
            )
        checked.append(canonical_labels(arr.astype(np.int64)))
    return checked


class TemplateJumps:
    """A chain's template move: the templates and its counts of proposals and acceptances.

    Parameters
    ----------
    rate : float
        Proposals per kept draw on average (the integer part always, one more with
        probability the fractional part); 0 turns the move off.
    given : list of numpy.ndarray
        Partitions passed to the step (``templates=``) or scouted by the chain
        (:mod:`pymc_pcrp.sampler.scouting`); they join the chain's own tournament
        starts as candidates.
    pack : callable, optional
        ``pack(xc, templates, params)`` builds the proposal (the cluster family's
        :meth:`~pymc_pcrp.sampler.families.ClusterFamily.pack_templates`); by
        default the full NIW family's.
    """

    def __init__(self, rate: float, given: list[np.ndarray] | None = None, pack=None):
        self.rate = float(rate)
        self.given = list(given or [])
        self.pack = pack_templates if pack is None else pack
        self.reset()

    def reset(self) -> None:
        """Forget the templates: a new chain begins."""
        self.templates: TemplateSet | None = None
        self.built = False
        self.proposed = 0
        self.accepted = 0

    @property
    def active(self) -> bool:
        """Whether the move runs (templates built, at least two of them, rate above 0)."""
        return self.templates is not None and self.rate > 0

    def use(self, xc: np.ndarray, templates: list[np.ndarray], params) -> int:
        """Pack canonical ``templates`` at kernel ``params``; return how many are used.

        Fewer than two templates leave the move off.
        """
        self.built = True
        self.templates = self.pack(xc, templates, params) if len(templates) >= 2 else None
        return len(templates) if self.templates is not None else 0

    def build(self, xc: np.ndarray, params, starts, score) -> int:
        """Choose the templates and build their proposals at the chain's current parameters.

        Called once, on the first draw after tuning, with the tournament's
        ``(score, labels)`` starts (``starts``) and ``score(labels)``, which
        gives a given partition its log joint. Returns the number of templates
        (none unless at least two are distinct).
        """
        candidates = list(starts) + [(score(labels), labels) for labels in self.given]
        return self.use(xc, distinct_templates(candidates), params)

    def run(self, rng: np.random.Generator, xc: np.ndarray, labels: np.ndarray, params):
        """Make this draw's proposals from canonical ``labels``; return the new labels or None.

        ``params`` are the kernel parameters at the chain's current hyperparameters
        (the target of the move is the partition's posterior given them).
        """
        self.proposed = self.accepted = 0
        if not self.active:
            return None
        rate = self.rate
        count = int(rate) + (1 if rng.random() < rate - int(rate) else 0)
        new, self.accepted = template_jump_chain(rng, xc, labels, self.templates, params, count)
        self.proposed = count
        return new if self.accepted else None
