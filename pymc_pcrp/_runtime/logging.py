"""Silencing library log lines and numerical warnings around runs that report for themselves."""

from __future__ import annotations

import logging
import warnings

from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["quiet_loggers"]


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
