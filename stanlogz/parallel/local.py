"""The local executor: units of work over this machine's cores (serial, threads or processes)."""

from __future__ import annotations

import pickle
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor, as_completed
from typing import Any, TypeVar

import numpy as np

from ..errors import InputError
from .state import ambient, carrying

R = TypeVar("R")

BACKENDS = ("auto", "serial", "thread", "process")


def picklable(obj: Any) -> bool:
    """Whether ``obj`` survives ``pickle.dumps`` (what a process pool needs)."""
    try:
        pickle.dumps(obj)
    except Exception:
        return False
    return True


def _call(unit: tuple[Callable[[Any, np.random.Generator], R], Any, np.random.Generator]) -> R:
    fn, task, rng = unit
    return fn(task, rng)


def _call_carrying(unit: tuple[Any, ...]) -> Any:
    """A unit in a worker process, under its run's budget and voice (:func:`.state.ambient`)."""
    *rest, carry = unit
    with carrying(carry):
        return _call(tuple(rest))


def run_local(
    fn: Callable[[Any, np.random.Generator], R],
    tasks: Sequence[Any],
    rngs: Sequence[np.random.Generator],
    workers: int,
    backend: str,
    on_done: Callable[[], None] | None = None,
) -> list[R]:
    """``[fn(task, rng) ...]`` over ``workers`` local workers with ``backend`` (see
    :func:`stanlogz.parallel.run_parallel`); ``on_done()`` after each unit, in this thread."""
    units = [(fn, task, rng) for task, rng in zip(tasks, rngs, strict=True)]
    workers = min(workers, max(1, len(units)))
    if backend == "auto":
        if workers == 1:
            backend = "serial"
        else:
            backend = "process" if picklable((fn, list(tasks))) else "thread"
    elif backend == "process" and not picklable((fn, list(tasks))):
        raise InputError("process backend needs a picklable function and tasks; use threads")
    if backend == "serial" or not units:
        out = []
        for u in units:
            out.append(_call(u))
            if on_done is not None:
                on_done()
        return out
    pool_type = ProcessPoolExecutor if backend == "process" else ThreadPoolExecutor
    with pool_type(max_workers=workers) as pool:
        try:
            if backend == "process":  # another process: the run's budget and voice go with it
                carry = ambient()
                futures = [pool.submit(_call_carrying, (*u, carry)) for u in units]
            else:
                futures = [pool.submit(_call, u) for u in units]
            if on_done is not None:
                for f in as_completed(futures):
                    if f.exception() is not None:
                        break  # raised below, in task order
                    on_done()
            return [f.result() for f in futures]
        except KeyboardInterrupt:  # the user, or the time budget's backstop: stop the workers
            _stop_workers(pool)
            raise


def _stop_workers(pool: Any) -> None:
    """Cancel what has not started and end a process pool's workers now (leaving the pool's
    ``with`` would otherwise wait for every running unit: minutes of unbounded work). Threads
    cannot be ended; their units run on, and the command line exits without waiting for
    them."""
    procs = list((getattr(pool, "_processes", None) or {}).values())  # process pools only
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in procs:
        proc.terminate()
