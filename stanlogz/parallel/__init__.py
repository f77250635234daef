"""Independent units of work, each with its own random generator, on local cores or a cluster.

A unit of work is a pair ``(fn, task)``; :func:`run_parallel` calls ``fn(task, rng)`` for every
task, where ``rng`` is spawned from ``SeedSequence(seed)`` by the task's index, so the results do
not depend on how many workers run them, where, or in which order they finish.

One executor runs the units: the local one (serial, threads or processes; the default), or a
Dask cluster chosen with :func:`use_executor` (``client=`` on the public API, the scheduler
and workers options on the command line). Modules: :mod:`.local` (cores of this machine),
:mod:`.dask` (a ``dask.distributed.Client``), :mod:`.shipping` (compiled libraries sent to workers).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

import numpy as np

from .._util.progress import Progress
from .._util.seeds import SeedLike, as_seed_sequence, child_sequence, spawn_generators
from ..errors import InputError
from .local import BACKENDS, run_local
from .state import _EXECUTOR, _INSIDE_UNIT

R = TypeVar("R")
F = TypeVar("F", bound=Callable[..., Any])


__all__ = [
    "BACKENDS",
    "SeedLike",
    "as_seed_sequence",
    "child_sequence",
    "current_executor",
    "default_workers",
    "run_parallel",
    "spawn_generators",
    "use_executor",
    "with_client",
]

def default_workers() -> int:
    """Cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - non-Linux
        return max(1, os.cpu_count() or 1)


def current_executor() -> Any:
    """The cluster executor :func:`run_parallel` uses here, or ``None`` for the local one."""
    return _EXECUTOR.get()


@contextlib.contextmanager
def use_executor(client: Any = None, *, progress: Progress = None) -> Iterator[Any]:
    """Within the ``with`` body, :func:`run_parallel` sends every unit to ``client``.

    ``client``: a ``dask.distributed.Client``, or ``None`` to keep the executor in force (the
    local one unless an enclosing ``use_executor`` chose a cluster). ``progress`` gets a line
    counting the finished units, across workers, at most once a second.
    """
    if client is None:
        yield current_executor()
        return
    from .dask import DaskExecutor

    token = _EXECUTOR.set(DaskExecutor(client, progress=progress))
    try:
        yield client
    finally:
        _EXECUTOR.reset(token)


def with_client(fn: F) -> F:
    """Give the public entry point ``fn`` a keyword ``client=None``: with a
    ``dask.distributed.Client`` its independent units run on that cluster (same results)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, client: Any = None, **kwargs: Any) -> Any:
        with use_executor(client, progress=kwargs.get("progress")):
            return fn(*args, **kwargs)

    sig = inspect.signature(fn)
    params = list(sig.parameters.values())
    extra = inspect.Parameter("client", inspect.Parameter.KEYWORD_ONLY, default=None,
                              annotation="Any")
    at = next((i for i, p in enumerate(params) if p.kind is inspect.Parameter.VAR_KEYWORD),
              len(params))
    wrapper.__signature__ = sig.replace(parameters=[*params[:at], extra, *params[at:]])
    doc = fn.__doc__ or ""
    returns = re.search(r"\n( *)Returns\n\1-------\n", doc)
    if returns:  # numpydoc: one more entry at the end of Parameters
        ind = returns.group(1)
        entry = (f"{ind}client : dask.distributed.Client, optional\n{ind}    Run the independent "
                 f"units (chains, replicates, splits, fix-ups) on its cluster,\n{ind}    with "
                 "the same results.\n")
        at = returns.start()  # before the blank line that ends Parameters
        wrapper.__doc__ = doc[:at] + entry + doc[at:]
    else:
        wrapper.__doc__ = doc.rstrip() + (
            "\n\n    ``client``: a ``dask.distributed.Client``; the independent units (chains, "
            "replicates, splits,\n    fix-ups) then run on its cluster, with the same results.\n")
    return wrapper  # type: ignore[return-value]


def task_generators(seed: SeedLike, n: int) -> list[np.random.Generator]:
    """The generators :func:`run_parallel` gives its ``n`` tasks for ``seed`` (task i's is
    the i-th), for a caller that runs the same tasks in its own order and must reproduce
    their results (exact LFO under a time budget)."""
    return spawn_generators(as_seed_sequence(seed), n)


def run_parallel(
    fn: Callable[[Any, np.random.Generator], R],
    tasks: Sequence[Any],
    seed: SeedLike,
    n_workers: int | None = None,
    backend: str = "auto",
    on_done: Callable[[], None] | None = None,
) -> list[R]:
    """``[fn(task, rng_i) for i, task in enumerate(tasks)]``, run over ``n_workers`` workers.

    ``rng_i`` is spawned from ``SeedSequence(seed)`` by index i, so results are identical for any
    ``n_workers``, backend and executor. ``backend``: ``"serial"``, ``"thread"`` (good for
    compiled targets that release the GIL), ``"process"`` (needs picklable ``fn`` and tasks) or
    ``"auto"``: serial for one worker or one task, else processes when everything pickles and
    threads otherwise. ``n_workers=None`` uses every available core. Inside
    :func:`use_executor` with a cluster, every unit goes to the cluster instead (``n_workers``
    and ``backend`` are then the cluster's business). ``on_done`` is called here, in this
    process, each time a unit finishes (for progress bars: :mod:`stanlogz._util.progress`).
    """
    if backend not in BACKENDS:
        raise InputError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    workers = default_workers() if n_workers is None else int(n_workers)
    if workers < 1:
        raise InputError(f"n_workers must be >= 1, got {n_workers}")
    tasks = list(tasks)
    ss = as_seed_sequence(seed)
    executor = current_executor()
    if executor is not None and tasks and not _INSIDE_UNIT.get():
        return executor.map(fn, tasks, ss, on_done=on_done)
    if _INSIDE_UNIT.get():
        workers, backend = 1, "serial"
    return run_local(fn, tasks, spawn_generators(ss, len(tasks)), workers, backend,
                     on_done=on_done)
