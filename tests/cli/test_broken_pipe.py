"""``stanlogz loo ... | head -1``: a stdout closed by its reader ends the run quietly (exit
status 141, as a Unix tool killed by SIGPIPE), not with "internal error: BrokenPipeError"."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIX = Path("/work/shared/fixtures/cmdstan")
if not FIX.is_dir():
    FIX = ROOT / "shared" / "fixtures" / "cmdstan"
COIN = sorted(str(p) for p in (FIX / "coin").glob("coin-*.csv"))


def test_closed_stdout_exits_quietly() -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-m", "stanlogz", "--quiet", "loo", "--fit", *COIN],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=ROOT)
    # the reader goes away before the command writes anything (it spends its first seconds
    # importing), so its first write meets a closed pipe
    proc.stdout.close()
    err = proc.stderr.read().decode()
    rc = proc.wait(timeout=300)
    assert rc == 141, (rc, err)
    assert err == "", err  # no "internal error", no "Exception ignored" from the final flush


def test_open_stdout_still_gets_everything() -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-m", "stanlogz", "--quiet", "loo", "--fit", *COIN],
                         capture_output=True, env=env, cwd=ROOT, timeout=300, check=False)
    assert out.returncode == 0, out.stderr
    assert b"elpd_loo" in out.stdout and b"Pareto k" in out.stdout
