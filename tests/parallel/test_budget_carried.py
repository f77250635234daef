"""A time budget set by :func:`stanlogz.time_budget` reaches the units of work a run sends to
a Dask worker process and to a local worker process: their steps see what is left of it, and
refuse in the voice of the run that sent them (Python keywords here)."""

from __future__ import annotations

import os
import sys
import time

import cloudpickle
import pytest
from distributed import Client, LocalCluster

import stanlogz
from stanlogz._util.deadline import BudgetSpent
from stanlogz.parallel import run_parallel, use_executor

# Workers cannot import this test module: its functions travel by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])


@pytest.fixture(scope="module")
def worker() -> Client:
    """One worker process (its own interpreter: nothing of this process's state but what the
    units carry)."""
    with LocalCluster(n_workers=1, threads_per_worker=2, processes=True,
                      dashboard_address=":0") as cluster, Client(cluster) as client:
        yield client


def _seen(task, rng):
    """What a unit sees of its run: the process, the budget left and in all, the voice."""
    from stanlogz._util import deadline
    from stanlogz.errors import voice

    return os.getpid(), deadline.remaining(), deadline.budget_seconds(), voice()


def _spend(task, rng):
    """A step that checks the budget (as a refit's flow fit does)."""
    from stanlogz._util import deadline

    deadline.check_spent("a unit of work")
    return task


def test_a_budget_set_by_time_budget_reaches_a_dask_worker(worker):
    with use_executor(worker):
        bare = run_parallel(_seen, [0, 1], seed=1)
        t0 = time.monotonic()
        with stanlogz.time_budget("10m"):
            seen = run_parallel(_seen, [0, 1], seed=1)
        took = time.monotonic() - t0
    assert all(pid != os.getpid() for pid, *_ in seen)  # ran in the worker process
    assert [s[1:] for s in bare] == [(None, None, "api")] * 2  # no budget: none carried
    for _, left, whole, voice in seen:
        # the worker reads the budget's end on the same wall clock: at most what the call took
        # has gone (clock reads differ by microseconds, hence the 1 s slack)
        assert whole == 600.0 and 600.0 - took - 1.0 <= left <= 600.0 and voice == "api"
    # the budget is lifted with the block, on the worker too
    with use_executor(worker):
        assert run_parallel(_seen, [0], seed=1)[0][1] is None


def test_a_worker_step_refuses_in_the_python_voice_once_the_budget_is_spent(worker):
    with use_executor(worker), stanlogz.time_budget(0.2):
        time.sleep(0.4)
        with pytest.raises(BudgetSpent) as info:
            run_parallel(_spend, [0, 1], seed=1)
    line = str(info.value)
    # twice the budget of 0.2 s, in whole seconds
    assert "ran out during a unit of work; run with stanlogz.time_budget('1s')" in line
    assert "--" not in line and info.value.routes[0].options == {"time_budget": "1s"}


def test_a_budget_reaches_a_local_worker_process():
    with stanlogz.time_budget("10m"):
        seen = run_parallel(_seen, [0, 1], seed=1, n_workers=2, backend="process")
    assert all(pid != os.getpid() for pid, *_ in seen)
    assert all(whole == 600.0 and 0 < left <= 600.0 for _, left, whole, _ in seen)
