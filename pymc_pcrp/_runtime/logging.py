"""Silencing library log lines and numerical warnings around runs that report for themselves."""

from __future__ import annotations

import logging
import sys
import warnings

from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["progress_line", "quiet_loggers"]


@contextmanager
def quiet_loggers(*names: str, runtime_warnings: bool = True) -> Iterator[None]:
    """Raise the named loggers to ``ERROR`` inside the block, then restore their levels.

    Parameters
    ----------
    *names : str
        Logger names, for example ``"pymc"`` (per-run sampler lines) or ``"arviz"``.
    runtime_warnings : bool, default=True
        Also ignore ``RuntimeWarning`` (numpy's division warnings for a constant draw).
    """
    loggers = [logging.getLogger(name) for name in names]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            if runtime_warnings:
                warnings.simplefilter("ignore", RuntimeWarning)
            yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


def progress_line(message: str, stream=None) -> None:
    """Print one progress line to ``stream`` (standard error) when progress is wanted.

    Progress is wanted on a terminal, or when the user asked for it
    (:func:`pymc_pcrp._runtime.compile_notice.progress_wanted`).
    """
    from pymc_pcrp._runtime.compile_notice import progress_wanted

    stream = sys.stderr if stream is None else stream
    if progress_wanted(stream):
        print(message, file=stream, flush=True)
