"""First contact: how long the README's main job takes a new user, cold and warm.

Run: ``python3 -m benchmarks.first_contact [--states cold,program,warm]``. It runs the README's
command (``stanlogz loo stan_models/examples/wells_logistic.stan --data ...``) as a new process
in three cache states and prints the wall time of each:

* ``cold``: an empty ``STANLOGZ_CACHE`` (the one-time runtime build, the program's build, NUTS);
  what the very first command after installing costs;
* ``program``: a fresh cache that shares the built runtime (a new program: its build and NUTS);
* ``warm``: the user cache with the program already built (NUTS and LOO only).

It also prints the seconds before the first line about sampling reaches stderr (the build part).
Times depend on the machine's load: the cores, and how many other processes share them, are
printed with them.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._common import ROOT  # noqa: E402

COMMAND = ["loo", "stan_models/examples/wells_logistic.stan", "--data",
           "stan_models/examples/wells.data.json", "--seed", "1"]


def run(env: dict[str, str]) -> tuple[float, float | None]:
    """Wall seconds of the command, and seconds until stderr first mentions sampling."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "stanlogz", *COMMAND], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    first_sampling = None
    assert proc.stderr is not None
    for line in proc.stderr:
        if first_sampling is None and ("NUTS" in line or "sampling" in line.lower()):
            first_sampling = time.perf_counter() - t0
    if proc.wait() != 0:
        raise SystemExit(f"stanlogz {' '.join(COMMAND)} failed (exit {proc.returncode})")
    return time.perf_counter() - t0, first_sampling


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--states", default="cold,program,warm",
                        help="comma-separated cache states to time (cold, program, warm)")
    args = parser.parse_args()
    from stanlogz.toolchain import cache_root, ensure_base, find_toolchain

    rows = []
    for state in args.states.split(","):
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        with tempfile.TemporaryDirectory(prefix="stanlogz-first-") as tmp:
            if state in ("cold", "program"):
                env["STANLOGZ_CACHE"] = str(Path(tmp) / "cache")
            if state == "program":  # share the built runtime, as tests/conftest.py does
                base = ensure_base(find_toolchain())
                old = os.environ.get("STANLOGZ_CACHE")
                os.environ["STANLOGZ_CACHE"] = env["STANLOGZ_CACHE"]
                try:
                    (cache_root() / "base" / base.name).symlink_to(base)
                finally:
                    os.environ.pop("STANLOGZ_CACHE")
                    if old is not None:
                        os.environ["STANLOGZ_CACHE"] = old
            if state == "warm":
                run(env)  # make sure the program is built
            wall, first = run(env)
        rows.append((state, wall, first))
        print(f"{state:8s} {wall:7.1f} s   (first sampling message after "
              f"{'-' if first is None else f'{first:.1f} s'})", flush=True)
    load = os.getloadavg()[0]
    print(f"{os.cpu_count()} cores, load average {load:.1f} at the end")


if __name__ == "__main__":
    main()
