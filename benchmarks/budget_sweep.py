"""Where a time budget's end falls against the wall clock: ``loo``, ``kfold`` and ``evidence``
on corpus posteriors under short budgets, each as a user runs it (a fresh ``stanlogz``
process, ``--json --quiet --seed 1``), its wall time (the process's, start to exit) against
its budget.

``python3 -m benchmarks.budget_sweep [--only NAME ...] [--commands loo,kfold,evidence]
[--budgets 6,15] [--out FILE]``

Each row: the posterior, the command, the budget, whether it answered (exit 0; ``stopped``
where the JSON's ``budget_stop`` is set) or refused (exit 2, its line), the wall seconds and
the overrun (wall minus budget; positive: past the budget). The interpreter's start and
imports count (the command line's budget counts the process's age), so at load 3 about 3 s
of a 6 s budget are gone before the first step. The twenty-ninth session's rows are in
``benchmarks/data/budget_sweep_s29_*.txt`` (before and after its fixes, at different loads:
docs/features/time-budget.md).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import time

from benchmarks.corpus import CORPUS

POSTERIORS = ["eight_schools-eight_schools_centered", "kidiq-kidscore_interaction",
              "mesquite-logmesquite", "wells_data-wells_dae_inter_model",
              "radon_mn-radon_county_intercept", "GLMM_Poisson_data-GLMM_Poisson_model",
              "earnings-logearn_interaction_z", "dogs-dogs_hierarchical"]


def run(posterior: str, command: str, budget: float) -> dict:
    """One command under ``budget`` seconds: its exit status, wall seconds and result."""
    folder = CORPUS / posterior
    argv = ["stanlogz", "--json", "--quiet", "--seed", "1", "--time-budget", str(budget),
            command, str(folder / "model.stan"), "--data", str(folder / "data.json")]
    start = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, env=dict(os.environ))
    wall = time.monotonic() - start
    try:
        out = json.loads(proc.stdout)
    except json.JSONDecodeError:
        out = {}
    line = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else ""
    return {"posterior": posterior, "command": command, "budget": budget,
            "rc": proc.returncode, "wall": wall, "over": wall - budget,
            "stopped": bool(out.get("budget_stop")), "line": line[:200]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", default=POSTERIORS)
    ap.add_argument("--commands", default="loo,kfold,evidence")
    ap.add_argument("--budgets", default="6,15")
    ap.add_argument("--out", default=None, help="JSON lines, one per run")
    args = ap.parse_args()
    print("| posterior | command | budget (s) | status | wall s | over s |")
    print("|---|---|---|---|---|---|")
    out = open(args.out, "a") if args.out else None
    for posterior in args.only:
        for command in args.commands.split(","):
            for budget in (float(b) for b in args.budgets.split(",")):
                r = run(posterior, command, budget)
                status = ("answered" + (" (stopped)" if r["stopped"] else "") if r["rc"] == 0
                          else f"refused (rc {r['rc']})")
                print(f"| {posterior} | {command} | {budget:g} | {status} | {r['wall']:.1f} | "
                      f"{r['over']:+.1f} |", flush=True)
                if out:
                    out.write(json.dumps(r) + "\n")
                    out.flush()


if __name__ == "__main__":
    main()
