"""Coverage of the estimate an anytime pass gives from few observations and no approximation
of the rest (``approximation: "none"``): elpd_loo is N times the mean of the m observations
done, a simple random sample of the N (the seeded order), with the subsampling se of
:func:`~stanlogz.crossval.psis_loo.subsample.subsample_estimates` (its bootstrap-t factor
included). The pass gets there with m as small as 20 when the budget leaves no more: a
conditional pass thinned so that 20 observations fit (twenty-second session, a hidden
Markov model of 100 steps on the interpreter: m = 26).

The pointwise values are fixed (one loo run per program, all observations), so the full sum
is known exactly and the only error is the sampling of the m observations: each cell draws
``--reps`` subsets without replacement and counts how often the sum lies within 2
subsampling se of the estimate. A cell's Monte Carlo sd is sqrt(c (1 - c) / reps) (0.0028 at
0.95 with 3 x 2,000 replicates).

    PYTHONPATH=$PWD nice python3 -m benchmarks.anytime_few_coverage            # ~2 min
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from stanlogz._util.tables import format_table
from stanlogz.crossval import loo
from stanlogz.crossval.psis_loo.anytime import widen_few
from stanlogz.crossval.psis_loo.subsample import subsample_estimates

ROOT = Path(__file__).resolve().parents[1]
#: (label, program, data): a Poisson regression with influential points (heavy lower tail of
#: elpd_i) and the README's logistic regression.
POPULATIONS = (
    ("roaches (N = 262, influential)", "stan_models/tests/roaches_poisson.stan",
     "stan_models/tests/roaches_sim.json"),
    ("wells (N = 3020)", "stan_models/examples/wells_logistic.stan",
     "stan_models/examples/wells.data.json"),
)
M_VALUES = (10, 20, 26, 40, 60)


#: A population no sample of 20 sees reliably: 200 values near -1.2, 5% of them near -12
#: (a rare outlier class). The estimate from m of them has no information on a class it
#: missed, whatever its se: the table shows how far the error bar is then from covering.
RARE = ("synthetic: 5% of 200 at -12 (rare outliers)", None, None)


def pointwise(program: str | None, data: str | None, seed: int
              ) -> tuple[np.ndarray, np.ndarray]:
    """(elpd_i, lppd_i) of every observation: one loo run (no budget), or :data:`RARE`'s."""
    if program is None:
        rng = np.random.default_rng(0)
        e = rng.normal(-1.2, 0.4, 200)
        e[:10] = -12.0 + rng.normal(0.0, 1.0, 10)
        return e, e.copy()
    r = loo(str(ROOT / program), str(ROOT / data), seed=seed, verify=0)
    return np.asarray(r.elpd_i, dtype=float), np.asarray(r.lppd_i, dtype=float)


def cell(elpd_i: np.ndarray, lppd_i: np.ndarray, m: int, reps: int,
         rng: np.random.Generator) -> dict[str, float]:
    """Coverage of ±1 and ±2 subsampling se over ``reps`` subsets of ``m`` observations."""
    n = elpd_i.size
    total = float(elpd_i.sum())
    z = np.empty(reps)
    for r in range(reps):
        index = np.sort(rng.choice(n, size=m, replace=False))
        ps = SimpleNamespace(lppd_i=lppd_i[index])
        est = subsample_estimates(np.zeros(n), index, elpd_i[index], ps, [])
        widen_few(est, m)  # as anytime_pass does with approximation "none"
        se = est["subsampling_se"]
        z[r] = (est["elpd"] - total) / se if se > 0 else math.inf
    return {"m": m, "cover1": float(np.mean(np.abs(z) <= 1)),
            "cover2": float(np.mean(np.abs(z) <= 2)), "mean_z": float(np.mean(z)),
            "sd_z": float(np.std(z))}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--subset-seeds", type=int, default=3,
                    help="independent streams of subsets per cell (their replicates pooled)")
    args = ap.parse_args(argv)
    rows = []
    for label, program, data in (*POPULATIONS, RARE):
        elpd_i, lppd_i = pointwise(program, data, args.seed)
        rng = np.random.default_rng(args.seed)
        for m in M_VALUES:
            c = cell(elpd_i, lppd_i, m, args.reps * args.subset_seeds, rng)
            rows.append([label, str(m), f"{c['cover1']:.3f}", f"{c['cover2']:.3f}",
                         f"{c['mean_z']:+.2f}", f"{c['sd_z']:.2f}"])
            print(rows[-1], flush=True)
    print(format_table(["population", "m", "±1 se covers", "±2 se covers", "mean z", "sd z"],
                       rows))


if __name__ == "__main__":
    main()
