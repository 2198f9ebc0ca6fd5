"""A merge proposal that stops scoring once it must fail decides as the full computation.

A split-merge merge is accepted when ``log u < log q + base``, where ``log q``
(the probability that the reverse split's sequential allocation makes the
current partition's choices) only falls as points are scored. The launch
(``launch_proposal`` of either covariance family) draws ``u`` right after its shuffle
when ``base < 0`` and stops scoring once the merge can no longer pass. These
tests run the same launch with and without that bound, from the same seed, and
check that it draws the uniform the test would have drawn, that a stopped
launch is one whose full score rejects the merge, and that a launch that ran
to the end scored exactly what the full one did. The exactness of the whole
move set is checked against enumeration elsewhere (``test_splitmerge.py``,
``test_diag.py``, ``tests/statistical/test_exact_enumeration.py``).
"""

import math

import numpy as np
import pytest

from pymc_pcrp._kernels import allocation, diag_splitmerge, splitmerge
from pymc_pcrp._kernels.allocation import seat_constants
from pymc_pcrp._kernels.diag_state import diag_tables, make_diag_params
from pymc_pcrp._kernels.state import make_params


def _data(d: int, seed: int, gap: float):
    """Two groups of 14 points, ``gap`` apart on every axis; the pair (i, j) = (0, 14)."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(28, d))
    x[14:] += gap
    xc = np.ascontiguousarray(x - x.mean(axis=0))
    members = np.array([p for p in range(28) if p not in (0, 14)], dtype=np.int64)
    target = (members >= 14).astype(np.int64)  # the current partition: group 1 holds j
    return xc, members, target


def _full_launch(xc, members, target, seed, forced, scans, bound):
    n, d = xc.shape
    params = make_params(1.0, 1.3, 0.5, d + 2.0, 0.5 * np.eye(d))
    seat = seat_constants(n, d, params.power, params.kappa0, params.nu0)
    groups = splitmerge.group_workspace(d)
    launch, work = (
        allocation.launch_proposal,
        (params, seat, np.empty(d), np.empty(d), np.empty((d, d))),
    )
    return _run(launch, xc, members, target, seed, forced, scans, bound, groups, work)


def _diag_launch(xc, members, target, seed, forced, scans, bound):
    d = xc.shape[1]
    params = make_diag_params(1.0, 1.3, 0.5, 3.0, 0.5 * np.ones(d))
    seat = np.ascontiguousarray(diag_tables(xc, params)[2][:, 0])
    groups = diag_splitmerge.group_workspace(d)
    launch, work = diag_splitmerge.launch_proposal, (params, seat)
    return _run(launch, xc, members, target, seed, forced, scans, bound, groups, work)


def _run(launch, xc, members, target, seed, forced, scans, bound, groups, work):
    """One launch from ``seed``; returns ``(log_q, log_u, next uniform of the stream)``."""
    rng = np.random.default_rng(seed)
    members = members.copy()
    target = target.copy()
    side = np.zeros(members.shape[0], dtype=np.int64)
    seats = (members, members.shape[0], side, target)
    log_q, log_u = launch(rng, xc, (0, 14, seats, forced, scans, bound), groups, work)
    return log_q, log_u, rng.random()


LAUNCHES = [pytest.param(_full_launch, id="full"), pytest.param(_diag_launch, id="diag")]


@pytest.mark.parametrize("launch", LAUNCHES)
def test_bounded_merge_decides_as_the_full_score(launch):
    stopped_seen = completed_seen = 0
    # overlapping groups (the current split is improbable: log q far below 0) to
    # well separated ones (log q near 0)
    for gap in (0.0, 1.5, 6.0):
        xc, members, target = _data(3, seed=int(10 * gap), gap=gap)
        for seed in range(30):
            log_q, log_u, u = launch(xc, members, target, seed, True, -1, (0.0, 0.0))
            assert math.isnan(log_u) and log_q < 0.0
            # bases that put the test's threshold just and far on either side of log u
            for delta in (-60.0, -20.0, -0.5, -1e-6, 1e-6, 0.5):
                base = math.log(u) - log_q + delta
                if base >= 0.0:
                    continue
                full_accepts = math.log(u) < log_q + base
                b_q, b_u, _ = launch(xc, members, target, seed, True, -1, (base, 1.0))
                assert b_u == math.log(u)  # the uniform the full test would have drawn
                if b_q < b_u - base:
                    stopped_seen += 1
                    assert not full_accepts
                else:
                    completed_seen += 1
                    assert b_q == log_q
                    assert (b_u < b_q + base) == full_accepts
    assert stopped_seen > 50 and completed_seen > 10


@pytest.mark.parametrize("launch", LAUNCHES)
def test_bound_is_ignored_where_it_does_not_apply(launch):
    """Splits, launches with restricted scans and bases >= 0 draw and score as without it."""
    xc, members, target = _data(2, seed=3, gap=2.0)
    cases = [(False, -1, (-5.0, 1.0)), (True, 2, (-5.0, 1.0)), (True, -1, (0.5, 1.0))]
    for forced, scans, bound in cases:
        for seed in range(5):
            plain = launch(xc, members, target, seed, forced, scans, (0.0, 0.0))
            bounded = launch(xc, members, target, seed, forced, scans, bound)
            assert math.isnan(bounded[1])
            assert bounded[0] == plain[0] and bounded[2] == plain[2]
