"""Coverage of loo's se and of stanlogz's calibrated intervals beside it (``elpd_loo_interval``,
``diff_interval``: estimate ± 2 × small-N factor × loo's se, level 0.954), against exact
truths, for both targets an elpd_loo is read as estimating (Sivula, Magnusson, Matamoros &
Vehtari 2022):

* **conditional**: the expected log score, on N new (x, y) from the data-generating process,
  of the posterior predictive fitted to *these* data (40-point Gauss–Hermite quadrature over
  x̃, exact to rounding);
* **data-averaged**: the same averaged over data sets, for training sets of N − 1 (what exact
  LOO estimates without bias): N × E[score per observation at N − 1], by 4,000 data sets.

Model and data as ``benchmarks/coverage_ddof.py``: Bayesian linear regression with known noise
sd 1 and prior N(0, I), x ~ N(0, 1), coefficients fixed at (0.5, 0.3) so the data-averaged
target is one number per row; data from the model or misspecified (noise 1.5 t₅); pointwise
values exact LOO (conjugate), so there is no Monte Carlo error. elpd is the p = 2 program's;
the difference is p = 2 minus p = 1 (the intercept-only program), where the interval is given
only for |elpd_diff| >= 4 and N >= 20 (``compare``'s rule; the column ``given`` says how often).

Columns: ``±1 se`` (nominal 0.683) and ``±2 se`` (0.954) of loo's se, the interval's coverage
(nominal 0.954), and ``miss high``: the share of the interval's misses where elpd_loo is above
the target. Monte Carlo sd of a cell ≈ sqrt(c (1 − c) / sims) (±0.010 at 0.95 for 500 sims).

    PYTHONPATH=$PWD nice python3 benchmarks/coverage_interval.py            # 500 sims per row
    PYTHONPATH=$PWD nice python3 benchmarks/coverage_interval.py --sims 2000
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from benchmarks.coverage_cv import _design
from benchmarks.coverage_ddof import _exact_loo, _truth
from stanlogz._util.sum_se import sum_se
from stanlogz._util.tables import format_table
from stanlogz.crossval.refit.cv_se import elpd_interval
from stanlogz.crossval.select.compare import MIN_OBS, SMALL_DIFF

BETA = np.array([0.5, 0.3])
CASES = {"model right": (lambda rng, n: rng.normal(size=n), 1.0),
         "noise 1.5 t_5": (lambda rng, n: 1.5 * rng.standard_t(5, n), 1.5**2 * 5 / 3)}


def _data(rng: np.random.Generator, n: int, case: str) -> tuple[np.ndarray, np.ndarray]:
    noise, _ = CASES[case]
    x = rng.normal(size=n)
    return x, BETA[0] + BETA[1] * x + noise(rng, n)


def averaged_targets(case: str, n: int, reps: int, rng: np.random.Generator
                     ) -> tuple[float, float]:
    """N × E[score per observation] of the p = 2 program and of the p = 2 − p = 1 difference,
    trained on N − 1 observations, over ``reps`` data sets."""
    nv = CASES[case][1]
    e2, d = np.empty(reps), np.empty(reps)
    for r in range(reps):
        x, y = _data(rng, n - 1, case)
        t2, t1 = _truth(x, y, 2, BETA, nv), _truth(x, y, 1, BETA, nv)
        e2[r], d[r] = t2 / (n - 1), (t2 - t1) / (n - 1)
    return n * float(e2.mean()), n * float(d.mean())


def row(case: str, n: int, sims: int, rng: np.random.Generator, avg_reps: int) -> list:
    nv = CASES[case][1]
    avg_e, avg_d = averaged_targets(case, n, avg_reps, rng)
    keys = ("e1c", "e2c", "eic", "e1a", "e2a", "eia", "d2c", "dic", "d2a", "dia")
    hit = dict.fromkeys(keys, 0)
    miss_hi = {"c": [0, 0], "a": [0, 0]}
    given = 0
    for _ in range(sims):
        x, y = _data(rng, n, case)
        e2 = _exact_loo(_design(x, 2), y)
        e1 = _exact_loo(_design(x, 1), y)
        t2, t1 = _truth(x, y, 2, BETA, nv), _truth(x, y, 1, BETA, nv)
        est, se = float(e2.sum()), sum_se(e2)
        iv = elpd_interval(e2, est)
        for tag, target in (("c", t2), ("a", avg_e)):
            err = est - target
            hit[f"e1{tag}"] += abs(err) <= se
            hit[f"e2{tag}"] += abs(err) <= 2 * se
            inside = iv.low <= target <= iv.high
            hit[f"ei{tag}"] += inside
            if not inside:
                miss_hi[tag][0] += 1
                miss_hi[tag][1] += err > 0
        d = e2 - e1
        diff, dse = float(d.sum()), sum_se(d)
        ok = abs(diff) >= SMALL_DIFF and n >= MIN_OBS
        given += ok
        div = elpd_interval(d, diff) if ok else None
        for tag, target in (("c", t2 - t1), ("a", avg_d)):
            hit[f"d2{tag}"] += abs(diff - target) <= 2 * dse
            if div is not None:
                hit[f"di{tag}"] += div.low <= target <= div.high
    cov = {k: round(v / sims, 3) for k, v in hit.items()}
    for k in ("dic", "dia"):
        cov[k] = round(hit[k] / given, 3) if given else None
    hi = {t: (round(m[1] / m[0], 2) if m[0] else None) for t, m in miss_hi.items()}
    return [case, n, sims, cov["e1c"], cov["e2c"], cov["eic"], hi["c"], cov["e1a"], cov["e2a"],
            cov["eia"], hi["a"], cov["d2c"], cov["d2a"], round(given / sims, 2), cov["dic"],
            cov["dia"]]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sims", type=int, default=500, help="data sets per row")
    ap.add_argument("--avg-reps", type=int, default=4000,
                    help="data sets for each row's data-averaged target")
    ap.add_argument("--n", type=int, nargs="+", default=[10, 20, 50, 100, 300])
    ap.add_argument("--seed", type=int, default=20251127)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    t = time.perf_counter()
    rows = []
    for case in CASES:
        for n in a.n:
            rows.append(row(case, n, a.sims, rng, a.avg_reps))
            print(rows[-1], flush=True)  # progress: each row as it is done
    print(format_table(
        ["data", "N", "sims", "elpd ±1se cond", "±2se cond", "interval cond", "miss high",
         "±1se avg", "±2se avg", "interval avg", "miss high", "diff ±2se cond", "±2se avg",
         "given", "diff interval cond", "interval avg"], rows,
        title="Exact LOO: coverage of loo's se and of the calibrated interval (level 0.954) "
              "for the conditional and the data-averaged elpd "
              f"({time.perf_counter() - t:.0f} s; MC sd of a cell ≈ "
              f"{math.sqrt(0.05 * 0.95 / a.sims):.3f} at 0.95)"))


if __name__ == "__main__":
    main()
