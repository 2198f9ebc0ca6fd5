"""Command line: ``python -m pymc_pcrp demo``, ``cluster`` and ``reproduce``.

The same commands are installed as the ``pymc-pcrp`` script. This package is an
application built on the library, not part of it: :mod:`~pymc_pcrp.cli.demo`,
:mod:`~pymc_pcrp.cli.cluster` (with its options, files and report) and
:mod:`~pymc_pcrp.cli.reproduce` (the paper's experiments) each hold one command;
:func:`main` parses the command line and dispatches.
"""

from __future__ import annotations

import argparse
import sys

from collections.abc import Sequence

from pymc_pcrp import _startup
from pymc_pcrp._runtime.interrupts import (
    InterruptWatch,
    caused_by_interrupt,
    watch_interrupts,
)
from pymc_pcrp.cli.cluster import add_cluster_parser, run_cluster
from pymc_pcrp.cli.demo import run_demo
from pymc_pcrp.stats.convergence import SamplingInterrupted

__all__ = ["main", "run_demo"]


def _add_demo_parser(subparsers) -> None:
    demo = subparsers.add_parser(
        "demo",
        help="cluster the bundled Old Faithful data with CRP and pCRP; print the posterior of K",
    )
    demo.add_argument("--alpha", type=float, default=1.0, help="concentration (default 1)")
    demo.add_argument(
        "--power",
        type=float,
        default=1.11,
        help="pCRP power r (default 1.11, the paper's cross-validated choice)",
    )
    demo.add_argument("--draws", type=int, default=2000, help="draws per chain (default 2000)")
    demo.add_argument("--tune", type=int, default=1000, help="burn-in draws (default 1000)")
    demo.add_argument(
        "--sweeps-per-draw", type=int, default=2, help="Gibbs sweeps per stored draw (default 2)"
    )
    demo.add_argument("--chains", type=int, default=4, help="number of chains (default 4)")
    demo.add_argument("--cores", type=int, default=1, help="processes for the chains (default 1)")
    demo.add_argument("--seed", type=int, default=1, help="random seed (default 1)")


def _add_reproduce_parser(subparsers) -> None:
    reproduce = subparsers.add_parser(
        "reproduce",
        help="re-run the paper's experiments; write DIR/tables.md and the figures",
        description=(
            "Run CRP-Oracle, CRP and pCRP (r by cross-validation) on Sim 1, Sim 2, digits 1-4 "
            "and Old Faithful with the paper's protocol (20,000 sweeps, 10,000 burn-in, every "
            "5th kept, 2 chains), and write DIR/tables.md (the paper's values beside ours) "
            "and every figure as PNG."
        ),
    )
    reproduce.add_argument("--out", required=True, help="output folder (created if needed)")
    reproduce.add_argument(
        "--quick",
        action="store_true",
        help="same pipeline on small data with few sweeps (a smoke test, a few minutes)",
    )
    reproduce.add_argument(
        "--mnist",
        default=None,
        metavar="DIR",
        help="folder with the four MNIST IDX files; without it the digits experiment uses "
        "scikit-learn's 8x8 digits as a stand-in",
    )
    reproduce.add_argument("--seed", type=int, default=2018, help="base seed (default 2018)")
    reproduce.add_argument(
        "--n-jobs",
        type=int,
        default=None,
        help="cross-validation grid points fitted in parallel (default: 2, quick: 1)",
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m pymc_pcrp`` and of the ``pymc-pcrp`` script.

    A Ctrl-C at any moment ends the command with status 130 and one line on
    stderr: during the start-up imports through the handler of
    :mod:`pymc_pcrp._startup`, afterwards as a ``KeyboardInterrupt`` that is also
    recorded, so that one swallowed by a library still stops the command from
    publishing a result. A Ctrl-C that comes after the command has reported how
    it ended leaves that status (and the interpreter's shutdown, see
    :func:`pymc_pcrp._startup.restore`).
    """
    previous = _startup.command_handler()
    status = None
    try:
        parser = argparse.ArgumentParser(
            prog="python -m pymc_pcrp",
            description="The powered Chinese restaurant process (pCRP) for PyMC.",
        )
        sub = parser.add_subparsers(dest="command", required=True)
        _add_demo_parser(sub)
        _add_reproduce_parser(sub)
        add_cluster_parser(sub)
        args = parser.parse_args(argv)
        # Ctrl-C is held back while numba loads or compiles a kernel (see watch_interrupts)
        with watch_interrupts() as interrupts:
            status = _run(args, argv, interrupts)
    except KeyboardInterrupt:
        if status is None:  # before the command could report it itself
            print("error: Interrupted; nothing was written.", file=sys.stderr, flush=True)
            status = 130
        # else: the command had ended and said how; a Ctrl-C after that changes nothing
    finally:
        _startup.restore(previous, status)
    return status


def _run(args: argparse.Namespace, argv: Sequence[str] | None, interrupts: InterruptWatch) -> int:
    if args.command == "cluster":
        return run_cluster(args)
    try:
        _run_other(args, argv)
    except BaseException as err:
        # caused_by_interrupt: Ctrl-C itself, or inside a compiled kernel (numba wraps it);
        # interrupts.seen: a Ctrl-C that a library swallowed or turned into another error
        seen = interrupts.seen or _startup.interrupt_seen()
        if not (isinstance(err, SamplingInterrupted) or caused_by_interrupt(err) or seen):
            raise
        what = str(err) if isinstance(err, SamplingInterrupted) else "Interrupted."
        print(f"error: {what} The {args.command} run did not finish.", file=sys.stderr)
        return 130
    # swallowed by a library: the run went on, its output may lack a part
    if interrupts.seen or _startup.interrupt_seen():
        print(
            f"error: Interrupted. The {args.command} run was interrupted; what it wrote may be "
            "incomplete.",
            file=sys.stderr,
        )
        return 130
    return 0


def _run_other(args: argparse.Namespace, argv: Sequence[str] | None) -> None:
    """Run the ``reproduce`` or ``demo`` command."""
    if args.command == "reproduce":
        from pymc_pcrp.cli import reproduce

        words = list(sys.argv[1:] if argv is None else argv)
        reproduce.run_reproduction(
            args.out,
            quick=args.quick,
            mnist=args.mnist,
            seed=args.seed,
            n_jobs=args.n_jobs,
            command="python -m pymc_pcrp " + " ".join(words),
        )
    elif args.command == "demo":  # the demo's options are run_demo's arguments, one for one
        run_demo(**{name: value for name, value in vars(args).items() if name != "command"})
