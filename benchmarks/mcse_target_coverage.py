"""Coverage of elpd_loo stopped at a precision target (``loo(mcse_target=...)``, ``--mcse``)
on the real roaches Poisson regression (N = 262, ten observations with k̂ > 0.7, moment
matched), against its exact elpd_loo by quadrature (benchmarks/roaches_exact_loo.py, error
~2e-5).

Each seed runs loo as a user would (NUTS 4 x 1000 after 1000 warmup, fix="auto", the chains
continued until mcse_elpd_loo <= target; verify=0: the self-check's refits do not change the
estimate) and records the estimate, its reported mcse, the draws, the rounds and what ended
the run. The table counts |estimate − exact| <= 1, 2, 3 reported mcse and whether the
reported mcse met the target. Rows are appended to benchmarks/data/mcse_target_runs.ndjson
(one per seed and target) so a run can be resumed.

    nice -n 10 python3 -m benchmarks.mcse_target_coverage --target 0.5 --seeds 20
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np

from benchmarks.roaches_exact_loo import DATA, reference
from stanlogz.crossval import loo
from stanlogz.stan.load import load_model

ROOT = Path(__file__).resolve().parents[1]
PROGRAM = ROOT / "stan_models" / "tests" / "roaches_poisson.stan"
RUNS = Path(__file__).resolve().parent / "data" / "mcse_target_runs.ndjson"


def one(model, target: float, seed: int, verify: str = "0") -> dict:
    t0 = time.perf_counter()
    r = loo(model, seed=seed, mcse_target=target, verify=0 if verify == "0" else verify)
    return {"target": target, "seed": seed, "verify": verify, "backend": type(model).__name__,
            "band": None if r.band is None else (r.band.status, r.band.correction, r.band.se),
            "elpd_loo": r.elpd_loo, "mcse": r.mcse_elpd_loo,
            "ended_by": r.precision["ended_by"], "draws": r.precision["draws"],
            "rounds": [(x["draws"], x["mcse_elpd_loo"]) for x in r.precision["rounds"]],
            "seconds": time.perf_counter() - t0}


def table(rows: list[dict], exact: float) -> str:
    out = ["| target | verify | runs | met target | median draws | within 1 mcse | within 2 | "
           "within 3 | mean z | sd z |", "|---|---|---|---|---|---|---|---|---|---|"]
    for t, v in sorted({(r["target"], r.get("verify", "0")) for r in rows}):
        rs = [r for r in rows if r["target"] == t and r.get("verify", "0") == v]
        z = np.array([(r["elpd_loo"] - exact) / r["mcse"] for r in rs])
        met = sum(r["ended_by"] == "target" for r in rs)
        cover = [int(np.sum(np.abs(z) <= k)) for k in (1, 2, 3)]
        draws = int(np.median([r["draws"] for r in rs]))
        out.append(f"| {t:g} | {v} | {len(rs)} | {met} | {draws} | "
                   + " | ".join(f"{c}/{len(rs)}" for c in cover)
                   + f" | {z.mean():+.2f} | {z.std(ddof=1) if len(z) > 1 else math.nan:.2f} |")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", type=float, default=0.5)
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--first-seed", type=int, default=1)
    ap.add_argument("--verify", default="0",
                    help="loo's self-check: 0 (off, as the first runs) or auto (the default: "
                         "its k-hat band correction included)")
    args = ap.parse_args()
    exact = reference()["elpd_loo"]
    done = []
    if RUNS.is_file():
        done = [json.loads(line) for line in RUNS.read_text().splitlines() if line.strip()]
    have = {(r["target"], r["seed"], r.get("verify", "0")) for r in done}
    model = load_model(PROGRAM, DATA)
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        if (args.target, seed, args.verify) in have:
            continue
        row = one(model, args.target, seed, args.verify)
        done.append(row)
        with RUNS.open("a") as f:
            f.write(json.dumps(row) + "\n")
        z = (row["elpd_loo"] - exact) / row["mcse"]
        print(f"target {args.target:g} seed {seed}: {row['elpd_loo']:.3f} mcse {row['mcse']:.3f} "
              f"z {z:+.2f} draws {row['draws']} ({row['ended_by']}, {row['seconds']:.0f} s)",
              flush=True)
    print(f"exact elpd_loo {exact:.4f}")
    print(table(done, exact))


if __name__ == "__main__":
    main()
