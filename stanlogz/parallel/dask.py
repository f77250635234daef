"""The cluster executor: units of work on a ``dask.distributed`` cluster.

The function and all tasks are pickled once (cloudpickle) into one payload that the scheduler
holds; every unit is a Dask task ``(payload, i, seed)`` that rebuilds ``rng_i`` from the seed
sequence, so a unit's result does not depend on the worker that runs it or when. Compiled
libraries referenced by the payload are offered once per library (content-addressed by their
cache key) and fetched only by workers that miss them in their own cache
(:mod:`.shipping`). A worker that dies has its units rerun elsewhere by the scheduler (the
payload and library bytes are task literals, recomputable anywhere). The first unit that raises
cancels the rest and its exception is raised here; so does Ctrl-C.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import signal
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

import numpy as np

from .._util.progress import steps
from .._util.seeds import child_sequence
from ..errors import InputError
from .shipping import Fetch, LibraryRef, collecting, fetching
from .state import _INSIDE_UNIT, ambient, carrying

R = TypeVar("R")

INSTALL_HINT = 'pip install "stanlogz[dask]"'

#: Seconds between progress lines.
PROGRESS_INTERVAL_S = 1.0


def _require_distributed() -> Any:
    try:
        import distributed
    except ImportError:
        raise InputError(f"running on a Dask cluster needs dask.distributed: {INSTALL_HINT}"
                         ) from None
    return distributed


@contextlib.contextmanager
def _interrupts_held() -> Iterator[list[int]]:
    """Within the body, Ctrl-C is recorded instead of raised (main thread only): a cluster
    interrupted halfway through closing cannot be closed, and Dask's exit hook then prints a
    traceback. The caller raises KeyboardInterrupt once the cluster is closed."""
    held: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield held
        return
    previous = signal.signal(signal.SIGINT, lambda signum, frame: held.append(signum))
    try:
        yield held
    finally:
        signal.signal(signal.SIGINT, previous)


def _ignore_interrupts() -> None:
    """Run on each local worker: Ctrl-C at a terminal reaches every process of its group, and
    a worker would print a traceback; this process cancels the units and closes the workers."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def open_client(address: str | None = None, n_workers: int | None = None,
                *, processes: bool = True) -> Any:
    """A ``dask.distributed.Client``: connected to the scheduler at ``address``
    (``tcp://host:8786`` or a scheduler file), else on a new ``LocalCluster`` of ``n_workers``
    single-threaded worker processes, which ignore Ctrl-C (this process stops them) and log
    nothing below CRITICAL (a unit's error reaches this process as its exception; a worker
    that loses its scheduler while the cluster closes after Ctrl-C would otherwise print a
    traceback of its heartbeat). The client
    closes its own local cluster on close. Ctrl-C while the cluster starts closes it and then
    raises KeyboardInterrupt."""
    distributed = _require_distributed()
    if address:
        try:
            if address.endswith(".json"):
                return distributed.Client(scheduler_file=address, timeout=30)
            return distributed.Client(address, timeout=30)
        except (OSError, TimeoutError, ValueError) as exc:
            raise InputError(f"cannot reach the Dask scheduler at {address}: "
                             f"{' '.join(str(exc).split())}") from None
    if n_workers is None or n_workers < 1:
        raise InputError(f"a local cluster needs n_workers >= 1, got {n_workers}")
    cluster = client = None
    with _interrupts_held() as held:  # the cluster starts whole (a few seconds), then stops
        try:
            cluster = distributed.LocalCluster(n_workers=n_workers, threads_per_worker=1,
                                               processes=processes, dashboard_address=":0",
                                               silence_logs=logging.CRITICAL)
            client = distributed.Client(cluster)
            client._stanlogz_owns_cluster = cluster  # closed with the client (close_client)
            if processes and not held:
                client.run(_ignore_interrupts)
        except Exception:
            if not held:
                raise
        if held and client is not None:
            _close(client)
        elif held and cluster is not None:
            cluster.close()
    if held:
        raise KeyboardInterrupt
    return client


def close_client(client: Any) -> None:
    """Close ``client`` and the local cluster :func:`open_client` started for it (a Ctrl-C
    meanwhile is raised once both are closed)."""
    with _interrupts_held() as held:
        _close(client)
    if held:
        raise KeyboardInterrupt


def _close(client: Any) -> None:
    cluster = getattr(client, "_stanlogz_owns_cluster", None)
    client.close()
    if cluster is not None:
        cluster.close()


# ---------------------------------------------------------------------------------- worker side

_payloads: OrderedDict[str, tuple[Callable[..., Any], list[Any]]] = OrderedDict()
_payload_lock = threading.Lock()
_KEEP_PAYLOADS = 4


def _literal(data: bytes) -> bytes:
    """A task whose result is its argument: data the scheduler can recompute if lost."""
    return data


def _fetch_from_cluster(lib_keys: dict[str, str]) -> Fetch:
    def fetch(ref: LibraryRef) -> bytes:
        from distributed import worker_client

        if ref.key not in lib_keys:
            raise InputError(f"model library {ref.filename} was not offered to the cluster")
        # worker_client secedes from the worker's thread pool while waiting, so a task
        # recomputing the bytes can run even when every thread of the worker waits for them
        with worker_client() as client:
            return client.get_dataset(lib_keys[ref.key]).result()

    return fetch


def _unpickled(payload: bytes, digest: str, lib_keys: dict[str, str]
               ) -> tuple[Callable[..., Any], list[Any]]:
    with _payload_lock:
        found = _payloads.get(digest)
        if found is not None:
            _payloads.move_to_end(digest)
            return found
    import cloudpickle

    with fetching(_fetch_from_cluster(lib_keys)):
        found = cloudpickle.loads(payload)
    with _payload_lock:
        _payloads[digest] = found
        while len(_payloads) > _KEEP_PAYLOADS:
            _payloads.popitem(last=False)
    return found


def run_unit(payload: bytes, digest: str, i: int, ss: np.random.SeedSequence,
             lib_keys: dict[str, str], carry: dict[str, Any] | None = None) -> Any:
    """Unit ``i`` of a payload, on a worker: ``fn(tasks[i], rng_i)``, under the time budget
    and in the voice of the run that sent it (``carry``: :func:`.state.ambient`)."""
    fn, tasks = _unpickled(payload, digest, lib_keys)
    token = _INSIDE_UNIT.set(True)
    try:
        with carrying(carry):
            return fn(tasks[i], np.random.default_rng(child_sequence(ss, i)))
    finally:
        _INSIDE_UNIT.reset(token)


# ---------------------------------------------------------------------------------- client side


class DaskExecutor:
    """Runs :func:`stanlogz.parallel.run_parallel`'s units on a ``dask.distributed.Client``."""

    def __init__(self, client: Any, progress: Callable[[str], None] | None = None) -> None:
        distributed = _require_distributed()
        if not isinstance(client, distributed.Client):
            raise InputError(f"client must be a dask.distributed.Client, not "
                             f"{type(client).__name__}")
        self.client = client
        self.progress = progress

    def map(self, fn: Callable[[Any, np.random.Generator], R], tasks: Sequence[Any],
            ss: np.random.SeedSequence, on_done: Callable[[], None] | None = None) -> list[R]:
        """``[fn(task_i, rng_i)]`` over the cluster, in task order; ``on_done()`` here as
        each unit finishes."""
        import cloudpickle
        from distributed import as_completed

        with collecting() as libs:
            try:
                payload = cloudpickle.dumps((fn, list(tasks)))
            except Exception as exc:
                raise InputError(f"the units of work cannot be sent to the cluster (they do not "
                                 f"pickle: {' '.join(str(exc).split())})") from None
        digest = hashlib.sha256(payload).hexdigest()[:32]
        client = self.client
        run = uuid.uuid4().hex[:12]
        # library bytes: offered as published datasets, fetched only by workers that miss them
        lib_keys = {key: f"stanlogz-lib-{key}-{run}" for key in libs}
        lib_futures = [client.submit(_literal, path.read_bytes(), key=lib_keys[key], pure=False)
                       for key, (_, path) in libs.items()]
        for fut in lib_futures:
            client.publish_dataset(fut, name=fut.key)
        blob = client.submit(_literal, payload, key=f"stanlogz-payload-{digest}", pure=False)
        carry = ambient()
        futures = [client.submit(run_unit, blob, digest, i, ss, lib_keys, carry,
                                 key=f"stanlogz-unit-{run}-{i}", pure=False)
                   for i in range(len(tasks))]
        results: list[Any] = [None] * len(futures)
        index = {f.key: i for i, f in enumerate(futures)}
        # a caller that counts its own units (on_done: a workflow's bar) gets no second bar
        ticker = _Ticker(None if on_done is not None else self.progress, len(futures))
        try:
            for fut in as_completed(futures):
                if fut.status != "finished":
                    exc = fut.exception()  # the except clause below cancels the rest
                    raise exc if isinstance(exc, BaseException) else RuntimeError(str(exc))
                results[index[fut.key]] = fut.result()
                fut.release()
                ticker.done()
                if on_done is not None:
                    on_done()
        except BaseException:  # a unit failed, or Ctrl-C: nothing keeps running remotely
            ticker.bar.close()
            client.cancel(futures)
            raise
        finally:
            for name in lib_keys.values():
                client.unpublish_dataset(name)
            del blob, lib_futures
        ticker.finish()
        return results


class _Ticker:
    """'k/n units done' lines, at most once per PROGRESS_INTERVAL_S."""

    def __init__(self, progress: Callable[[str], None] | None, n: int) -> None:
        self.progress, self.n, self.k = progress, n, 0
        self.start = self.last = time.perf_counter()
        self.bar = steps(progress, n, "cluster units", unit="unit")

    def done(self) -> None:
        self.k += 1
        if self.bar.drawn:
            self.bar.update()
            return
        now = time.perf_counter()
        if self.progress and now - self.last >= PROGRESS_INTERVAL_S and self.k < self.n:
            self.last = now
            self.progress(f"cluster: {self.k}/{self.n} units done")

    def finish(self) -> None:
        self.bar.close()
        if self.progress and self.n:
            self.progress(f"cluster: {self.n}/{self.n} units done in "
                          f"{time.perf_counter() - self.start:.1f} s")
