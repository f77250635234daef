"""Coverage of SMC's log Z standard error, and the hit rates of its forward/reverse bounds.

The program is the non-centred hierarchical normal (``stan_models/highdim/hier_normal_nc.stan``:
mu ~ N(0, 5), tau ~ half-N(0, 2), eta_j ~ N(0, 1), y_j ~ N(mu + tau eta_j, sigma_j)) with J groups,
J + 2 parameters; its exact log Z comes from quadrature over tau
(:class:`stanlogz.densities.gaussian.HierarchicalNormalTarget`) and its exact posterior draws
stand in for NUTS draws (4000, as 4 chains x 1000). Each replicate draws a new data set and runs
``smc`` (the registry method, default options) with its own seed. Every replicate's runs are
appended to a JSON-lines file (``--out``), so the table can be recomputed (``--summarize``)
from the same runs under another se rule.

Columns: how often the truth lies within 2 se of the reported log Z (and within its t_{k-1}
95% interval), the mean error in se units, the RMS error, the mean se; for the bounds, how
often the lower bound (mean forward run log Ẑ) is below the truth and the upper bound (mean
reverse run log Ẑ) above it; and, for comparison, the middle of the bracket with its old se.

    PYTHONPATH=. python3 -m benchmarks.coverage_smc --groups 8 100 --reps 40
    PYTHONPATH=. python3 -m benchmarks.coverage_smc --summarize /tmp/smc.jsonl
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats

from stanlogz.densities.gaussian import HierarchicalNormalTarget
from stanlogz.estimators.annealing.smc import smc_estimate


def replicate(n_groups: int, rep: int, n_draws: int) -> dict[str, object]:
    """One data set and SMC run: the truth, the reported value and se, and both directions'
    run log Z (the raw material of every row of the table)."""
    rng = np.random.default_rng([n_groups, rep])
    sigma = rng.uniform(0.5, 2.0, n_groups)
    theta = rng.normal(1.0, 1.0, n_groups)
    target = HierarchicalNormalTarget(rng.normal(theta, sigma), sigma, mu_sd=5.0, tau_sd=2.0)
    draws = target.sample(rng, n_draws)
    t0 = time.perf_counter()
    r = smc_estimate(target, draws, seed=1000 + rep, n_workers=1)
    d = r.diagnostics
    return {"groups": n_groups, "rep": rep, "truth": target.log_z, "log_z": r.log_z,
            "se": r.log_z_se, "df": r.log_z_df, "run_log_z": d["run_log_z"],
            "reverse_run_log_z": d.get("reverse_run_log_z", []),
            "particles": d["n_particles"], "seconds": time.perf_counter() - t0}


def _bracket(f: np.ndarray, b: np.ndarray) -> tuple[float, float, float, float]:
    """The two bounds and the previous default: the bracket's middle with its se."""
    lo, hi = float(np.mean(f)), float(np.mean(b))
    joint2 = np.var(f, ddof=1) / f.size + np.var(b, ddof=1) / b.size
    return lo, hi, 0.5 * (lo + hi), math.sqrt((0.5 * max(hi - lo, 0)) ** 2 + 0.25 * joint2)


def summarize(rows: list[dict[str, object]]) -> None:
    """Print the coverage table of ``rows`` (one per replicate), one line per J."""
    print("| J (params) | reps | covered ±2 se | covered t 95% | mean err/se | RMS err | mean se "
          "| lower < truth | upper > truth | middle: covered ±2 se | middle RMS err | "
          "middle high | s/rep |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for j in sorted({int(r["groups"]) for r in rows}):
        rs = [r for r in rows if r["groups"] == j]
        err = np.array([r["log_z"] - r["truth"] for r in rs])
        se = np.array([r["se"] for r in rs])
        q = np.array([stats.t.ppf(0.975, r["df"]) for r in rs])
        fin = np.isfinite(se)
        b = [_bracket(np.array(r["run_log_z"]), np.array(r["reverse_run_log_z"]))
             for r in rs if r["reverse_run_log_z"]]
        truth_b = np.array([r["truth"] for r in rs if r["reverse_run_log_z"]])
        lo, hi, mid, mid_se = (np.array(c) for c in zip(*b, strict=True))
        print(f"| {j} ({j + 2}) | {len(rs)} ({fin.sum()} with an se) | "
              f"{np.mean(np.abs(err[fin]) <= 2 * se[fin]):.3f} | "
              f"{np.mean(np.abs(err[fin]) <= q[fin] * se[fin]):.3f} | "
              f"{np.mean(err[fin] / se[fin]):+.2f} | {math.sqrt(np.mean(err**2)):.3f} | "
              f"{np.mean(se[fin]):.3f} | {np.mean(lo < truth_b):.3f} | "
              f"{np.mean(hi > truth_b):.3f} | "
              f"{np.mean(np.abs(mid - truth_b) <= 2 * mid_se):.3f} | "
              f"{math.sqrt(np.mean((mid - truth_b) ** 2)):.3f} | "
              f"{np.mean(mid > truth_b):.3f} | "
              f"{np.mean([r['seconds'] for r in rs]):.1f} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--groups", type=int, nargs="+", default=[8, 100])
    ap.add_argument("--reps", type=int, default=12)
    ap.add_argument("--draws", type=int, default=4000)
    ap.add_argument("--start", type=int, default=0, help="first replicate's index")
    ap.add_argument("--out", type=Path, default=Path("coverage_smc.jsonl"),
                    help="JSON-lines file the replicates are appended to")
    ap.add_argument("--summarize", type=Path, nargs="+", default=None,
                    help="only print the table of these JSON-lines files")
    a = ap.parse_args()
    if a.summarize:
        summarize([json.loads(line) for p in a.summarize for line in p.read_text().splitlines()
                   if line.strip()])
        return
    rows = []
    for j in a.groups:
        for i in range(a.start, a.start + a.reps):
            rows.append(replicate(j, i, a.draws))
            r = rows[-1]
            with a.out.open("a") as fh:
                fh.write(json.dumps(r) + "\n")
            print(f"  J={j} rep {i}: err {r['log_z'] - r['truth']:+.3f} se {r['se']:.3f} "
                  f"({r['seconds']:.0f} s)", file=sys.stderr, flush=True)
    summarize(rows)


if __name__ == "__main__":
    main()
