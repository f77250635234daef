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
95% interval), the mean error in se units, the mean and RMS error, the mean se, the RMS of
error / se (about 1 for an honest se; t_7 errors give 1.18); for the
bounds, how often the lower bound (mean forward run log Ẑ) is below the truth, the upper
bound (mean reverse run log Ẑ) above it, and the bracket interval (each bound moved out by
its t quantile times its se) holds it; and, for comparison, the RMS error of the bracket's
middle (the value reported before) and how often it lay above the truth.

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
from stanlogz.estimators.annealing.bracket import bracket
from stanlogz.estimators.annealing.smc import forward_log_z, smc_estimate


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


def summarize(rows: list[dict[str, object]]) -> None:
    """Print the coverage table of ``rows`` (one per replicate), one line per J. log Z and its
    se are recomputed from the stored forward runs by :func:`forward_log_z` (what ``smc``
    reports: a deterministic function of the runs), the bounds by :func:`bracket`."""
    print("| J (params) | reps | covered ±2 se | covered t 95% | mean err/se | mean err | RMS err "
          "| mean se | RMS err/se | lower < truth | upper > truth | bracket interval covers "
          "| middle: RMS err | middle high | s/rep |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for j in sorted({int(r["groups"]) for r in rows}):
        rs = [r for r in rows if r["groups"] == j]
        truth = np.array([r["truth"] for r in rs])
        est = [forward_log_z(np.array(r["run_log_z"]))[:2] for r in rs]
        err = np.array([e[0] for e in est]) - truth
        se = np.array([e[1] for e in est])
        df = np.array([len(r["run_log_z"]) - 1 for r in rs])
        fin = np.isfinite(se)
        # forward_log_z's se carries the t_{k-1} quantile (±1.96 se is the t 95% interval)
        q = np.full(df.shape, stats.norm.ppf(0.975))
        bs = [bracket(np.array(r["run_log_z"]), np.array(r["reverse_run_log_z"])) for r in rs]
        lo = np.array([b.lower for b in bs])
        hi = np.array([b.upper for b in bs])
        iv = np.array([b.interval(0.95, d) for b, d in zip(bs, df, strict=True)])
        mid = 0.5 * (lo + hi)
        print(f"| {j} ({j + 2}) | {len(rs)} ({fin.sum()} with an se) | "
              f"{np.mean(np.abs(err[fin]) <= 2 * se[fin]):.3f} | "
              f"{np.mean(np.abs(err[fin]) <= q[fin] * se[fin]):.3f} | "
              f"{np.mean(err[fin] / se[fin]):+.2f} | {np.mean(err):+.3f} | "
              f"{math.sqrt(np.mean(err**2)):.3f} | {np.mean(se[fin]):.3f} | "
              f"{math.sqrt(np.mean((err[fin] / se[fin]) ** 2)):.2f} | "
              f"{np.mean(lo < truth):.3f} | {np.mean(hi > truth):.3f} | "
              f"{np.mean((iv[:, 0] <= truth) & (truth <= iv[:, 1])):.3f} | "
              f"{math.sqrt(np.mean((mid - truth) ** 2)):.3f} | {np.mean(mid > truth):.3f} | "
              f"{np.mean([r['seconds'] for r in rs]):.0f} |", flush=True)


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
