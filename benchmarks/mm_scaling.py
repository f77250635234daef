"""Moment matching's cost per observation against the number of parameters: a simulated
horseshoe regression (N rows, D predictors, three true signals, a few rows made influential by
shifting their outcome), NUTS, then ``loo(fix="mm")``; the table shows D, the parameters
(2D + 3), the draws, the observations moment-matched, the seconds per point (mean, max, and
the part spent in density / log-likelihood evaluations, from a timed pass over the draws),
the evaluations per point, and k̂ before and after. Evaluations are unavoidable (linear in
D per draw); the rest (the affine maps, PSIS) should stay a small O(S·D) share.

    PYTHONPATH=. python3 benchmarks/mm_scaling.py [--dims 250,1000] [--rows 60] [--seed 1]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from stanlogz._util.tables import format_table
from stanlogz.crossval import loo
from stanlogz.stan.model import StanModel
from stanlogz.stan.settings import NutsArgs

PROGRAM = Path(__file__).resolve().parents[1] / "stan_models" / "tests" / "horseshoe_reg.stan"


def simulate(n: int, d: int, rng: np.random.Generator) -> dict:
    """Rows x ~ N(0, I), three signals, noise sd 1; the first three rows' outcomes shifted by
    6, 8 and 10 sd so that leaving them out moves the posterior."""
    x = rng.standard_normal((n, d))
    beta = np.zeros(d)
    beta[:3] = (3.0, -2.0, 1.5)
    y = 1.0 + x @ beta + rng.standard_normal(n)
    y[:3] += (6.0, 8.0, 10.0)
    return {"N": n, "D": d, "X": x.tolist(), "y": y.tolist()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dims", default="250,1000", help="comma-separated D values")
    ap.add_argument("--rows", type=int, default=60)
    ap.add_argument("--draws", type=int, default=250, help="NUTS draws per chain (4 chains)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rows = []
    for d in (int(v) for v in args.dims.split(",")):
        data = simulate(args.rows, d, np.random.default_rng(args.seed + d))
        m = StanModel.from_file(PROGRAM, data)
        t0 = time.perf_counter()
        r = loo(m, fix="mm", settings=NutsArgs(chains=4, warmup=300, draws=args.draws),
                seed=args.seed)
        total = time.perf_counter() - t0
        mm = [f for f in r.fixed if f.method == "mm"]
        if not mm:
            rows.append([d, m.dim, r.n_samples, 0, "-", "-", "-", "-", "-", "-",
                         round(total, 1)])
            continue
        unc = r.draws.flat_unconstrained()
        from stanlogz.crossval.observations.pointwise import PointwiseLogLik

        pw = PointwiseLogLik(m, r.data, r.observations, "log_lik")
        t1 = time.perf_counter()
        m.log_density_many(unc)
        pw.column(mm[0].index, unc)
        per_eval = (time.perf_counter() - t1) / (2 * unc.shape[0])
        secs = [f.seconds for f in mm]
        rows.append([d, m.dim, r.n_samples, len(mm), round(float(np.mean(secs)), 2),
                     round(float(np.max(secs)), 2),
                     round(float(np.mean([f.n_evals for f in mm])) * per_eval, 2),
                     int(np.mean([f.n_evals for f in mm])),
                     round(float(np.mean([f.khat for f in mm])), 2),
                     round(float(np.mean([f.khat_after for f in mm])), 2), round(total, 1)])
    print(format_table(["D", "parameters", "draws", "points", "s/point", "max s/point",
                        "eval s/point", "evals/point",
                        "k-hat before", "after", "total s (NUTS incl.)"], rows))


if __name__ == "__main__":
    main()
