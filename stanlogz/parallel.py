"""Independent units of work run over cores, each with its own random generator.

A unit of work is a picklable pair ``(fn, task)``; :func:`run_parallel` calls ``fn(task, rng)``
for every task, where ``rng`` is spawned from ``SeedSequence(seed)`` by the task's index, so the
results do not depend on how many workers run them or in which order they finish.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from typing import Any, TypeVar

import numpy as np

from .errors import InputError

R = TypeVar("R")

BACKENDS = ("auto", "serial", "thread", "process")

SeedLike = int | np.random.SeedSequence | None


def as_seed_sequence(seed: SeedLike) -> np.random.SeedSequence:
    """``seed`` as a SeedSequence (fresh entropy when ``None``)."""
    if isinstance(seed, np.random.SeedSequence):
        return seed
    if seed is not None and (not isinstance(seed, int | np.integer) or seed < 0):
        raise InputError(f"seed must be a non-negative integer, got {seed!r}")
    return np.random.SeedSequence(None if seed is None else int(seed))


def child_sequence(seed: SeedLike, i: int) -> np.random.SeedSequence:
    """The i-th child of ``SeedSequence(seed)``, as ``spawn`` would make it on a fresh sequence.

    Built from the spawn key directly (not ``ss.spawn``), so asking twice gives the same child.
    """
    ss = as_seed_sequence(seed)
    return np.random.SeedSequence(ss.entropy, spawn_key=(*ss.spawn_key, i), pool_size=ss.pool_size)


def spawn_generators(seed: SeedLike, n: int) -> list[np.random.Generator]:
    """``n`` independent generators; the i-th depends only on ``seed`` and i."""
    ss = as_seed_sequence(seed)
    return [np.random.default_rng(child_sequence(ss, i)) for i in range(n)]


def default_workers() -> int:
    """Cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - non-Linux
        return max(1, os.cpu_count() or 1)


def _picklable(obj: Any) -> bool:
    try:
        pickle.dumps(obj)
    except Exception:
        return False
    return True


def _call(unit: tuple[Callable[[Any, np.random.Generator], R], Any, np.random.Generator]) -> R:
    fn, task, rng = unit
    return fn(task, rng)


def run_parallel(
    fn: Callable[[Any, np.random.Generator], R],
    tasks: Sequence[Any],
    seed: SeedLike,
    n_workers: int | None = None,
    backend: str = "auto",
) -> list[R]:
    """``[fn(task, rng_i) for i, task in enumerate(tasks)]``, run over ``n_workers`` workers.

    ``rng_i`` is spawned from ``SeedSequence(seed)`` by index i, so results are identical for any
    ``n_workers`` and backend. ``backend``: ``"serial"``, ``"thread"`` (good for compiled
    targets that release the GIL), ``"process"`` (needs picklable ``fn`` and tasks) or
    ``"auto"``: serial for one worker or one task, else processes when everything pickles and
    threads otherwise. ``n_workers=None`` uses every available core.
    """
    if backend not in BACKENDS:
        raise InputError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    tasks = list(tasks)
    rngs = spawn_generators(seed, len(tasks))
    units = [(fn, task, rng) for task, rng in zip(tasks, rngs, strict=True)]
    workers = default_workers() if n_workers is None else int(n_workers)
    if workers < 1:
        raise InputError(f"n_workers must be >= 1, got {n_workers}")
    workers = min(workers, max(1, len(units)))
    if backend == "auto":
        if workers == 1:
            backend = "serial"
        else:
            backend = "process" if _picklable((fn, tasks)) else "thread"
    elif backend == "process" and not _picklable((fn, tasks)):
        raise InputError("process backend needs a picklable function and tasks; use threads")
    if backend == "serial" or not units:
        return [_call(u) for u in units]
    if backend == "process":
        with ProcessPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(_call, units))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(_call, units))
