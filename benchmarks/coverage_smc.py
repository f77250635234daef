"""Coverage of SMC's log Z standard error on a hierarchical program of GLMM size.

The program is the non-centred hierarchical normal (``stan_models/highdim/hier_normal_nc.stan``:
mu ~ N(0, 5), tau ~ half-N(0, 2), eta_j ~ N(0, 1), y_j ~ N(mu + tau eta_j, sigma_j)) with J groups,
J + 2 parameters; its exact log Z comes from quadrature over tau
(:class:`stanlogz.densities.gaussian.HierarchicalNormalTarget`) and its exact posterior draws
stand in for NUTS draws (4000, as 4 chains x 1000). Each replicate draws a new data set and runs
``smc`` (the registry method, default options) with its own seed; the table shows how often the
truth lies within 2 se of the estimate, the mean error in se units and the runs' spread.

    PYTHONPATH=. python3 benchmarks/coverage_smc.py            # quick: J = 100, 12 replicates
    PYTHONPATH=. python3 benchmarks/coverage_smc.py --full     # J = 100 and 250, 40 replicates
"""

from __future__ import annotations

import argparse
import math
import sys
import time

import numpy as np

from stanlogz.densities.gaussian import HierarchicalNormalTarget
from stanlogz.estimators.annealing.smc import smc_estimate
from stanlogz.estimators.common import log_mean_exp


def replicate(n_groups: int, rep: int, n_draws: int, reverse: bool = True) -> dict[str, float]:
    rng = np.random.default_rng([n_groups, rep])
    sigma = rng.uniform(0.5, 2.0, n_groups)
    theta = rng.normal(1.0, 1.0, n_groups)
    target = HierarchicalNormalTarget(rng.normal(theta, sigma), sigma, mu_sd=5.0, tau_sd=2.0)
    draws = target.sample(rng, n_draws)
    t0 = time.perf_counter()
    r = smc_estimate(target, draws, seed=1000 + rep, n_workers=1, reverse=reverse)
    runs = np.asarray(r.diagnostics["run_log_z"])
    d = r.diagnostics
    lme = log_mean_exp(runs)
    return {"err": r.log_z - target.log_z, "se": r.log_z_se,
            "finite": math.isfinite(r.log_z_se),
            "err_lme": lme - target.log_z, "se_delta": r.diagnostics["delta_method_se"],
            "run_sd": float(np.std(runs, ddof=1)),
            "fwd_err": d.get("forward_log_z", r.log_z) - target.log_z,
            "fwd_se": d.get("forward_se", r.log_z_se),
            "gap": d.get("sandwich_gap", math.nan), "agree": d.get("bounds_consistent", True),
            "particles": r.diagnostics["n_particles"],
            "seconds": time.perf_counter() - t0}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--full", action="store_true", help="J = 100 and 250, 40 replicates each")
    ap.add_argument("--groups", type=int, nargs="+", default=None)
    ap.add_argument("--reps", type=int, default=None)
    ap.add_argument("--draws", type=int, default=4000)
    ap.add_argument("--start", type=int, default=0, help="first replicate's index")
    ap.add_argument("--forward-only", action="store_true",
                    help="without the reverse runs (the estimator before the sandwich check)")
    a = ap.parse_args()
    groups = a.groups or ([100, 250] if a.full else [100])
    reps = a.reps or (40 if a.full else 12)
    print("| J | params | reps | covered ±2se | mean err/se | mean se | mean run sd | particles "
          "| old: lme ±2 delta se | old mean err | s/rep |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for j in groups:
        rows = []
        for i in range(a.start, a.start + reps):
            rows.append(replicate(j, i, a.draws, reverse=not a.forward_only))
            r = rows[-1]
            print(f"  J={j} rep {i}: err {r['err']:+.3f} se {r['se']:.3f} run sd "
                  f"{r['run_sd']:.2f} particles {r['particles']} | lme err {r['err_lme']:+.3f} "
                  f"delta se {r['se_delta']:.3f} | forward err {r['fwd_err']:+.3f} se "
                  f"{r['fwd_se']:.3f} bracket {r['gap']:+.3f} consistent {r['agree']} | "
                  f"{r['seconds']:.0f} s", file=sys.stderr,
                  flush=True)
        fin = [r for r in rows if r["finite"]]
        cov = np.mean([abs(r["err"]) <= 2 * r["se"] for r in fin]) if fin else math.nan
        z = np.mean([r["err"] / r["se"] for r in fin]) if fin else math.nan
        old = np.mean([abs(r["err_lme"]) <= 2 * r["se_delta"] for r in rows])
        fwd = np.mean([abs(r["fwd_err"]) <= 2 * r["fwd_se"] for r in rows])
        print(f"  J={j}: forward runs alone (lognormal) covered {fwd:.2f}; bounds crossed in "
              f"{np.mean([not r['agree'] for r in rows]):.2f} of the reps", flush=True)
        print(f"| {j} | {j + 2} | {reps} ({len(fin)} with an se) | {cov:.2f} | {z:+.2f} | "
              f"{np.mean([r['se'] for r in fin]):.3f} | "
              f"{np.mean([r['run_sd'] for r in rows]):.3f} | "
              f"{np.mean([r['particles'] for r in rows]):.0f} | {old:.2f} | "
              f"{np.mean([r['err_lme'] for r in rows]):+.3f} | "
              f"{np.mean([r['seconds'] for r in rows]):.1f} |", flush=True)


if __name__ == "__main__":
    main()
