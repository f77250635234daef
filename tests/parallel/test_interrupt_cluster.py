"""Ctrl-C under ``--workers N`` (a local Dask cluster): one line ``stanlogz: interrupted``,
exit status 130, no traceback — whether the signal reaches the command alone (``kill -INT``)
while the cluster starts, or every process of the group (a terminal's Ctrl-C) while the units
run. Each case is a real subprocess sent a real SIGINT; nothing here is statistical."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EX = ROOT / "stan_models" / "examples"
PROGRAM = EX / "hier_regression.stan"
DATA = EX / "hier_regression.data.json"


def _interrupted(argv: list[str], after: str, *, group: bool, delay: float
                 ) -> tuple[int, str]:
    """Run ``stanlogz argv`` in its own process group, send SIGINT (to the command, or to its
    whole group) ``delay`` seconds after a stderr line contains ``after``; its exit status
    and stderr."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    p = subprocess.Popen([sys.executable, "-m", "stanlogz", *argv], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT,
                         start_new_session=True)
    seen: list[str] = []
    try:
        assert p.stderr is not None
        for line in p.stderr:
            seen.append(line)
            if after in line:
                break
        else:
            pytest.fail(f"the command ended before {after!r}: {''.join(seen)}")
        time.sleep(delay)  # inside the step the line announces
        if group:
            os.killpg(p.pid, signal.SIGINT)
        else:
            p.send_signal(signal.SIGINT)
        _, rest = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    return p.returncode, "".join(seen) + rest


@pytest.mark.parametrize("after, group, delay", [
    ("connecting to a local cluster", False, 1.0),  # while Dask starts its worker processes
    ("cross-validation:", True, 0.3),  # a terminal's Ctrl-C while the folds run on the workers
])
def test_ctrl_c_with_workers_is_one_line(compiled, after, group, delay):
    compiled(PROGRAM, DATA)  # built before: the subprocess loads it from the cache
    rc, err = _interrupted(["kfold", str(PROGRAM), "--data", str(DATA), "--k", "10",
                            "--workers", "2", "--seed", "1"], after, group=group,
                           delay=delay)
    assert rc == 130, err
    assert err.rstrip().splitlines()[-1] == "stanlogz: interrupted", err
    for word in ("Traceback", "Error", "Exception"):
        assert word not in err, err
