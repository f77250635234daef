"""``--scheduler ADDRESS`` and ``--workers N``: where a command's independent units run.

Shared by every command that runs independent units (chains, replicates, splits, fix-ups):
``add_executor_arguments(parser)`` in ``add_arguments`` and ``@with_executor`` on ``run`` (or
``with executor(args, report):`` around the API call). Without either flag the units run on this
machine's cores.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import Any

from ..errors import InputError
from ..parallel import use_executor
from ..parallel.dask import close_client, open_client


def _positive(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {n}")
    return n


def add_executor_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--scheduler`` and ``--workers`` to ``parser``."""
    group = parser.add_argument_group("cluster (needs pip install \"stanlogz[dask]\")")
    group.add_argument("--scheduler", metavar="ADDRESS", default=None,
                       help="run the independent units on the Dask cluster whose scheduler is "
                       "at ADDRESS (tcp://host:8786, or a scheduler-file .json)")
    group.add_argument("--workers", metavar="N", type=_positive, default=None,
                       help="start a local Dask cluster of N worker processes for the units "
                       "(default: this process's cores, without Dask)")


@contextlib.contextmanager
def executor(args: argparse.Namespace, report: Any) -> Iterator[Any]:
    """The Dask client the flags ask for, in force for ``run_parallel`` within the body
    (``None``, the local executor, without the flags)."""
    address, workers = getattr(args, "scheduler", None), getattr(args, "workers", None)
    if address and workers:
        raise InputError("give --scheduler (a running cluster) or --workers (a local one), "
                         "not both")
    if not address and not workers:
        yield None
        return
    where = address or f"a local cluster of {workers} workers"
    report.progress(f"connecting to {where}...")
    client = open_client(address, workers)
    try:
        with use_executor(client, progress=report.progress):
            yield client
    finally:
        close_client(client)


def with_executor(run: Callable[[argparse.Namespace, Any], int]
                  ) -> Callable[[argparse.Namespace, Any], int]:
    """Decorate a command's ``run(args, report)`` so that it runs within :func:`executor`."""

    @functools.wraps(run)
    def wrapped(args: argparse.Namespace, report: Any) -> int:
        with executor(args, report):
            return run(args, report)

    return wrapped
