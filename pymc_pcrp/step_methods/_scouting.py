"""Scouting tournaments of restarts run before ``pm.sample``, shared by every chain of a fit.

:func:`scout_templates` runs independent tournaments of restarts with the step the
chains will use and returns their best starts, which :func:`~pymc_pcrp.fit` gives
every chain as templates (``PCRPGibbs(templates=...)``; the template jumps are in
:mod:`pymc_pcrp.sampler.templates`).
"""

from __future__ import annotations

import numpy as np

from pymc_pcrp.sampler import templates

__all__ = ["scout_templates"]


def scout_templates(model, step_kwargs: dict, seed, cores: int = 1) -> list[np.ndarray]:
    """Run independent tournaments of restarts outside ``pm.sample``; return their starts.

    :func:`~pymc_pcrp.fit` passes these to every chain (``templates=``), so that a
    family of states that one chain's own tournament missed can still be jumped to
    by every chain (each chain meets only some of the families on its own).
    ``SCOUT_TOURNAMENTS`` tournaments run, each of ``SCOUT_STARTS`` times a chain's
    starts (both in :mod:`pymc_pcrp.sampler.templates`), made by the step the
    chains use (``step_kwargs``) from generators seeded by children of ``seed`` (so
    the result does not depend on ``cores``); with ``cores > 1`` they run side by
    side in forked processes where the platform forks safely (Linux), one after the
    other otherwise. The starts within ``TEMPLATE_WINDOW`` of the best start's score
    are returned (each chain then chooses among them and its own starts). Returns
    ``[]`` when the chains would make no template jumps or run no tournament, and
    above ``N D = SCOUT_MAX_WORK``: the tournaments run before sampling, and their
    cost grows with the data (minutes at a million points).
    """
    from pymc_pcrp.step_methods.pcrp_gibbs import PCRPGibbs

    with model:
        step = PCRPGibbs(**{**step_kwargs, "templates": None})
    if not isinstance(step, PCRPGibbs) or step.plan.template_jumps == 0 or step.restarts <= 1:
        return []
    if step.chain.n * max(step.chain.d, 1) > templates.SCOUT_MAX_WORK:
        return []  # a tournament this size would cost more than a chain's own
    kwargs = {**step_kwargs, "templates": None, "restarts": templates.SCOUT_STARTS * step.restarts}
    root = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    seeds = root.spawn(templates.SCOUT_TOURNAMENTS)
    jobs = [(model, kwargs, child) for child in seeds]
    if cores > 1 and _can_fork():
        parts = _in_forked_processes(_tournament_starts, jobs)
    else:
        parts = [_tournament_starts(*job) for job in jobs]
    starts = [start for part in parts for start in part]
    if not starts:
        return []
    best = max(score for score, _ in starts)
    return [labels for score, labels in starts if score >= best - templates.TEMPLATE_WINDOW]


def _tournament_starts(model, step_kwargs: dict, seed) -> list[tuple[float, np.ndarray]]:
    """One tournament of restarts by a fresh step; its ``(score, labels)`` starts."""
    from pymc_pcrp.sampler.restarts import segment_draws, tournament_draws
    from pymc_pcrp.step_methods.pcrp_gibbs import PCRPGibbs

    with model:
        step = PCRPGibbs(**step_kwargs)
    step.set_rng(np.random.default_rng(seed))
    step.tune = True
    point = model.initial_point()
    for _ in range(tournament_draws(step.restarts, segment_draws(step.sweeps_per_draw))):
        point, _ = step.step(point)
    step.chain.tournament.stop()
    return step.chain.tournament.candidates


def _can_fork() -> bool:
    """Whether forked worker processes are safe here (Linux: yes; macOS and Windows: no)."""
    import multiprocessing
    import sys

    return sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods()


def _in_forked_processes(function, jobs: list[tuple]) -> list:
    """``[function(*job) for job in jobs]``, each job in its own forked process.

    A fork inherits the model and the compiled kernels, so nothing is pickled on
    the way in; the results come back through a pipe. A job that fails re-raises
    its error here.
    """
    import multiprocessing

    context = multiprocessing.get_context("fork")
    pipes, processes = [], []
    for job in jobs:
        receive, send = context.Pipe(duplex=False)
        process = context.Process(target=_send_result, args=(send, function, job), daemon=True)
        process.start()
        send.close()
        pipes.append(receive)
        processes.append(process)
    results = []
    try:
        for receive in pipes:
            ok, value = receive.recv()
            if not ok:
                raise RuntimeError(f"a scouting tournament failed in its process: {value}")
            results.append(value)
    finally:
        for process in processes:
            process.join(timeout=5)
            if process.is_alive():
                process.terminate()
    return results


def _send_result(send, function, job) -> None:
    try:
        result = (True, function(*job))
    except BaseException as error:  # reported in the parent
        result = (False, f"{type(error).__name__}: {error}")
    send.send(result)
    send.close()
