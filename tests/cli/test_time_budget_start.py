"""``--time-budget`` counts from the start of the command's process: the interpreter's start,
the imports and the parsing are part of the time a user gives (an 8 s budget ran 12 s of
wall time when the clock started after them on a loaded machine). Nothing here is
statistical: the times are those of a sleep, with seconds of slack for a loaded machine."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# a process that spends 3 s before the command starts, then a command whose step reports
# what is left of its 20 s budget; as a console script (argv from sys.argv) and as a call
CODE = r"""
import sys, time
time.sleep(3.0)
import stanlogz.cli
import stanlogz.commands.compile as c
from stanlogz._util import deadline
def run(args, report):
    print(round(deadline.remaining(), 2), round(deadline.budget_seconds(), 2))
    return 0
c.run = run
argv = ["--time-budget", "20", "compile", "x.stan"]
if sys.argv[1] == "script":
    sys.argv = ["stanlogz", *argv]
    sys.exit(stanlogz.cli.main())
sys.exit(stanlogz.cli.main(argv))
"""


def _left(how: str) -> tuple[float, float]:
    proc = subprocess.run([sys.executable, "-c", CODE, how], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    left, total = map(float, proc.stdout.split())
    return left, total


def test_the_command_line_budget_counts_the_process_start():
    left, total = _left("script")
    assert total == 20.0  # the budget stated is the one given
    assert 0.0 < left <= 17.0  # 3 s of sleep before the command (and its imports) counted


def test_a_call_of_the_entry_point_counts_from_the_call():
    # main(argv) from a program that has run for a while: the budget starts with the call
    left, _ = _left("call")
    assert 17.5 < left <= 20.0


# the command's process ends in main() (after its exit handlers), not in the interpreter's
# teardown of every module: 0.6 s after each command, part of what a --time-budget ran past
EXIT = r"""
import atexit, sys
atexit.register(lambda: print("exit handler ran", flush=True))
import stanlogz.cli
sys.argv = ["stanlogz", "--version"]
status = stanlogz.cli.main()
print("main returned", status)
"""


def test_the_command_ends_its_process_after_the_exit_handlers():
    proc = subprocess.run([sys.executable, "-c", EXIT], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("stanlogz ") and "exit handler ran" in proc.stdout
    assert "main returned" not in proc.stdout
