"""The backstop of ``--time-budget``: a step that checks no budget is interrupted
``WATCHDOG_GRACE_S`` seconds after the budget is spent, and the command ends in one line with
exit status 2 (not "interrupted", not a time-out of the caller).

The commands here set the grace to ``GRACE`` seconds (15 by default) and their steps sleep in
short slices rather than spin: the watchdog sees the same step that never checks the budget,
and the suite does not lose a core's minute to busy loops."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: The watchdog's grace in these commands
GRACE = 3.0

# a command whose step is a loop of 120 s that never checks the budget
CODE = r"""
import sys, time
import stanlogz.cli
import stanlogz.commands.compile as c
def run(args, report):
    t = time.monotonic()
    while time.monotonic() - t < 120:
        time.sleep(0.01)
    return 0
c.run = run
stanlogz.cli.WATCHDOG_GRACE_S = @GRACE@
sys.exit(stanlogz.cli.main(["--json", "--time-budget", "1", "compile", "x.stan"]))
""".replace("@GRACE@", repr(GRACE))


def test_a_step_that_checks_no_budget_is_stopped_in_one_line():
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True,
                          timeout=110, cwd=ROOT)
    took = time.monotonic() - start
    assert proc.returncode == 2
    # twice the budget and the grace the step ran past without ending: 2 x (1 + 3) s
    line = "the time budget of 1 s ran out in a step that does not check it; run with " \
           "--time-budget 8s"
    assert proc.stderr.strip().splitlines()[-1] == f"stanlogz: error: {line}"
    obj = json.loads(proc.stdout)
    assert {k: obj[k] for k in ("error", "kind", "exit_status")} == {
        "error": line, "kind": "error", "exit_status": 2}
    assert [r["argv"] for r in obj["routes"]] == [["--time-budget", "8s"]]  # the typed route
    # stopped after the grace, long before the 120 s loop would end (imports included)
    assert GRACE < took < 100


# a command whose step waits on worker processes busy for 120 s (as `cv`'s replicates do on
# a program whose coupled chains do not meet): the main thread waits on a lock, which
# interrupt_main's flag alone does not end (`cv` under --time-budget 20s ran for 10 min)
POOL = r"""
import sys, time
import stanlogz.cli
import stanlogz.commands.compile as c
from stanlogz.parallel import run_parallel

def busy(task, rng):
    t = time.monotonic()
    while time.monotonic() - t < 120:
        time.sleep(0.01)
    return task

def run(args, report):
    run_parallel(busy, [1, 2], 0, n_workers=2, backend="process")
    return 0
c.run = run
stanlogz.cli.WATCHDOG_GRACE_S = @GRACE@
sys.exit(stanlogz.cli.main(["--json", "--time-budget", "1", "compile", "x.stan"]))
""".replace("@GRACE@", repr(GRACE))

# the same on threads, which cannot be ended: the process must not wait for them at exit
THREADS = POOL.replace('backend="process"', 'backend="thread"')


def test_a_step_waiting_on_workers_is_stopped_and_the_workers_with_it():
    # processes: the whole process tree ends after the grace, long before the workers' 120 s
    # (the pipes would otherwise stay open until the orphaned workers end); threads: the
    # process does not wait for them at exit. Both at once, to keep the suite short.
    start = time.monotonic()
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, cwd=ROOT)
             for code in (POOL, THREADS)]
    for proc in procs:
        _, err = proc.communicate(timeout=110)
        assert proc.returncode == 2, err[-2000:]
        assert err.strip().splitlines()[-1].startswith(
            "stanlogz: error: the time budget of 1 s ran out in a step that does not check it")
    assert GRACE < time.monotonic() - start < 100
