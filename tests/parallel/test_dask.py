"""Units of work on a Dask cluster: same answers as the local executor, libraries shipped to
workers without a rebuild, faults (a killed worker, a failing unit, Ctrl-C) handled.

Every check here is exact (bit-identical results, task bookkeeping), never statistical: the
per-unit generators depend only on the seed and the unit's index.
"""

from __future__ import annotations

import _thread
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

import cloudpickle
import numpy as np
import pytest
from distributed import Client, LocalCluster

import stanlogz
from stanlogz.cli import main
from stanlogz.errors import InputError
from stanlogz.parallel import run_parallel, use_executor
from stanlogz.toolchain import build_count

# Workers cannot import this test module: its functions travel by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])

ROOT = Path(__file__).resolve().parents[2]
NORMAL = ROOT / "stan_models" / "tests" / "normal.stan"
NORMAL_DATA = ROOT / "stan_models" / "tests" / "normal.json"


@pytest.fixture(scope="module")
def threads() -> Client:
    """Two single-threaded workers in this process (fast to start)."""
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as cluster, Client(cluster) as client:
        yield client


@pytest.fixture(scope="module")
def worker_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("worker-cache")


@pytest.fixture(scope="module")
def processes(worker_cache: Path) -> Client:
    """Two worker processes with their own (empty) build cache: libraries must be shipped."""
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                      env={"STANLOGZ_CACHE": str(worker_cache)}) as cluster, \
            Client(cluster) as client:
        yield client


def _draw(task, rng):
    scale, n, pause = task
    time.sleep(pause)
    return scale * rng.standard_normal(n)


def _marked(task, rng):
    marks, i = task
    Path(marks, f"{os.getpid()}-{i}").touch()
    time.sleep(0.4)
    return rng.standard_normal(2)


def _scheduler_units(client: Client) -> list[str]:
    """stanlogz unit tasks the scheduler still knows, after it settled (liveness wait)."""
    def units(dask_scheduler=None):
        return [str(k) for k in dask_scheduler.tasks if "stanlogz-unit" in str(k)]

    deadline = time.monotonic() + 20
    left = client.run_on_scheduler(units)
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = client.run_on_scheduler(units)
    return left


def test_same_results_local_one_worker_several_workers_any_order(threads):
    # later tasks finish first on the cluster (shorter pauses), so completion order differs
    tasks = [(1.0 + i, 3, 0.02 * (8 - i)) for i in range(8)]
    ref = run_parallel(_draw, tasks, seed=7, n_workers=1)
    lines: list[str] = []
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as one, Client(one) as client1:
        with use_executor(client1):
            got1 = run_parallel(_draw, tasks, seed=7)
    with use_executor(threads, progress=lines.append):
        got2 = run_parallel(_draw, tasks, seed=7, n_workers=1, backend="serial")
    for a, b, c in zip(ref, got1, got2, strict=True):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, c)
    assert lines[-1].startswith("cluster: 8/8 units done")
    # a caller that counts its own finished units (a workflow's bar) gets no second count
    lines.clear()
    done: list[int] = []
    with use_executor(threads, progress=lines.append):
        run_parallel(_draw, tasks, seed=7, on_done=lambda: done.append(1))
    assert len(done) == 8 and not any("units done" in ln for ln in lines)


def _fail_on_three(task, rng):
    if task == 3:
        raise InputError(f"unit {task} cannot run")
    time.sleep(0.5)
    return task


def test_first_failure_raised_and_the_rest_cancelled(threads):
    with use_executor(threads), pytest.raises(InputError, match="^unit 3 cannot run$"):
        run_parallel(_fail_on_three, list(range(12)), seed=1)
    assert _scheduler_units(threads) == []


def test_keyboard_interrupt_cancels_remote_units(threads, tmp_path):
    def interrupt() -> None:  # Ctrl-C once a unit runs
        deadline = time.monotonic() + 10
        while not any(tmp_path.iterdir()) and time.monotonic() < deadline:
            time.sleep(0.01)
        _thread.interrupt_main()

    threading.Thread(target=interrupt, daemon=True).start()
    with use_executor(threads), pytest.raises(KeyboardInterrupt):
        run_parallel(_marked, [(str(tmp_path), i) for i in range(20)], seed=1)
    assert _scheduler_units(threads) == []
    assert len(list(tmp_path.iterdir())) < 20


def test_unpicklable_units_are_refused_in_one_line(threads):
    lock = threading.Lock()
    with use_executor(threads), pytest.raises(InputError, match="cannot be sent to the cluster"):
        run_parallel(lambda task, rng: lock, [1, 2], seed=1)


def _normal_posterior_draws() -> np.ndarray:
    # conjugate normal (stan_models/tests/normal): exact posterior draws of mu
    d = json.loads(NORMAL_DATA.read_text())
    prec = 1 / d["tau0"] ** 2 + d["N"] / d["sigma"] ** 2
    mean = (d["mu0"] / d["tau0"] ** 2 + sum(d["y"]) / d["sigma"] ** 2) / prec
    rng = np.random.default_rng(0)
    return mean + rng.standard_normal((2, 100, 1)) / np.sqrt(prec)


def test_stan_program_on_worker_processes_same_answer_library_shipped_once(
        compiled, processes, worker_cache):
    model = compiled("normal")
    draws = _normal_posterior_draws()
    kw = dict(method="ais", draws=draws, seed=3, n_chains=6, n_temps=30)
    local = stanlogz.evidence(model, **kw)
    remote = stanlogz.evidence(model, client=processes, **kw)
    assert remote.log_z == local.log_z
    np.testing.assert_array_equal(remote.diagnostics["log_weights"],
                                  local.diagnostics["log_weights"])
    # the workers' own cache now holds the library, received (not built) under its cache key
    shipped = list(worker_cache.glob(f"v1/models/*/{model.lib_path.name}"))
    assert [p.parent.name for p in shipped] == [model.lib_path.parent.name]
    assert shipped[0].read_bytes() == model.lib_path.read_bytes()
    assert set(processes.run(build_count).values()) == {0}


def test_killed_worker_units_rerun_elsewhere_same_answer(processes, tmp_path):
    tasks = [(str(tmp_path), i) for i in range(10)]
    ref = run_parallel(_marked, tasks, seed=5, n_workers=1)
    for p in tmp_path.iterdir():
        p.unlink()
    pids = set(processes.run(os.getpid).values())
    killed: list[int] = []

    def kill_first_busy_worker() -> None:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            busy = [int(p.name.split("-")[0]) for p in tmp_path.iterdir()]
            busy = [p for p in busy if p in pids]
            if busy:
                killed.append(busy[0])
                os.kill(busy[0], signal.SIGKILL)
                return
            time.sleep(0.02)

    killer = threading.Thread(target=kill_first_busy_worker, daemon=True)
    killer.start()
    with use_executor(processes):
        got = run_parallel(_marked, tasks, seed=5)
    killer.join()
    assert killed and killed[0] not in set(processes.run(os.getpid).values())
    for a, b in zip(ref, got, strict=True):
        np.testing.assert_array_equal(a, b)


def test_cli_scheduler_flag_gives_the_local_answer(processes, capsys):
    common = ["--json", "--quiet", "--seed", "2", "evidence", str(NORMAL), "--data",
              str(NORMAL_DATA), "--method", "ais", "--draws", "200", "--warmup", "200",
              "--option", "n_chains=4", "--option", "n_temps=20"]
    assert main(common) == 0
    local = json.loads(capsys.readouterr().out)
    assert main([*common, "--scheduler", processes.scheduler.address]) == 0
    remote = json.loads(capsys.readouterr().out)
    assert remote["log_z"] == local["log_z"]
    assert remote["diagnostics"]["log_weights"] == local["diagnostics"]["log_weights"]


def test_cli_without_dask_says_how_to_install(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed -> ImportError
    code = main(["evidence", str(NORMAL), "--data", str(NORMAL_DATA), "--method", "ais",
                 "--workers", "2"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert err[-1] == ('stanlogz: error: running on a Dask cluster needs dask.distributed: '
                       'pip install "stanlogz[dask]"')
    assert main(["loo", str(NORMAL), "--workers", "2", "--scheduler", "tcp://x:1"]) == 2
    assert "not both" in capsys.readouterr().err
