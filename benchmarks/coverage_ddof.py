"""ddof of the between-observation se: coverage of ±2 se with the variance of the pointwise
values taken with N (ddof 0, ArviZ 0.x) or N − 1 (ddof 1, R's loo, ArviZ 1.x, stanlogz)
degrees of freedom, against exact truths.

Model: Bayesian linear regression with known noise sd 1 and prior N(0, I) on p coefficients
(intercept; intercept and slope), x ~ N(0, 1); data from the model, or misspecified (noise
1.5 t_5). Pointwise values: exact LOO log p(y_i | x_i, y_−i) (conjugate). Truths:

* elpd: the full-data posterior predictive's expected log score on N new (x, y) from the data
  generating process, by 40-point Gauss–Hermite quadrature over x̃ (exact to rounding);
* difference: the p = 2 program's elpd minus the p = 1 program's, both exact, paired on the
  same data (the se of ``compare``'s elpd_diff, without its Monte Carlo part, which is 0 here).

Columns: loo's sqrt(N var) with ddof 0 and 1; ``elpd se`` and ``diff_se``: stanlogz's calibrated
interval (``elpd_loo_interval``, ``diff_interval``: ±2 × loo's se × the capped small-N
bootstrap-t factor); ``no diff_se``: the fraction of data sets with |elpd_diff| < 4, where
``compare`` gives no interval; then the coverage of loo's se and of the interval on the others,
and last what the interval would cover where none is given. Both targets and ±1 se:
``benchmarks/coverage_interval.py``.

Each row's coverage has Monte Carlo sd sqrt(c (1 − c) / sims) (±0.009 at 0.9 for 1,000 sims).

    PYTHONPATH=$PWD nice python3 benchmarks/coverage_ddof.py          # quick (~1 min)
    PYTHONPATH=$PWD nice python3 benchmarks/coverage_ddof.py --full   # 4x the replicates
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from benchmarks.coverage_cv import GH_W, GH_X, _design, _posterior
from stanlogz._util.sum_se import sum_se
from stanlogz._util.tables import format_table
from stanlogz.crossval.refit import cv_se
from stanlogz.crossval.refit.cv_se import calibration_factor
from stanlogz.crossval.select.compare import SMALL_DIFF


def elpd_se(values: np.ndarray) -> float:
    """Half the half-width of stanlogz's calibrated interval (``elpd_loo_interval``,
    ``diff_interval``): loo's se times the small-N factor."""
    return calibration_factor(values) * sum_se(values)


def _exact_loo(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """log p(y_i | x_i, y_−i) for every i (prior N(0, I), noise sd 1): by the rank-one
    downdate of the posterior precision."""
    prec = np.eye(x.shape[1]) + x.T @ x
    v = np.linalg.inv(prec)
    m = v @ (x.T @ y)
    h = np.einsum("ij,jk,ik->i", x, v, x)  # x_i' V x_i
    # leave-one-out predictive: mean x_i' m_−i, var 1 + x_i' V_−i x_i with
    # x_i' V_−i x_i = h / (1 − h) and residual (y_i − x_i' m) / (1 − h)
    s2 = 1.0 + h / (1.0 - h)
    r = (y - x @ m) / (1.0 - h)
    return -0.5 * np.log(2 * np.pi * s2) - r**2 / (2 * s2)


def _truth(x: np.ndarray, y: np.ndarray, p: int, beta: np.ndarray, noise_var: float) -> float:
    """N E log p(ỹ | x̃, y) of the p-coefficient program on new (x̃, ỹ); ``beta`` the data
    generating coefficients (intercept, slope)."""
    n = y.size
    xd = _design(x, p)
    m, v = _posterior(xd, y)
    xt = _design(GH_X, p)
    mean_true = beta[0] + beta[1] * GH_X
    s2 = 1.0 + np.einsum("ij,jk,ik->i", xt, v, xt)
    return n * float(np.sum(GH_W * (-0.5 * np.log(2 * np.pi * s2)
                                     - (noise_var + (mean_true - xt @ m) ** 2) / (2 * s2))))


def table(n_sims: int, rng: np.random.Generator) -> list[list]:
    rows = []
    for case in ("model right", "noise 1.5 t_5"):
        for n in (10, 20, 50, 100, 300):
            hit = {k: 0 for k in ("elpd 0", "elpd 1", "elpd now", "diff 0", "diff 1",
                                  "diff 1 big", "diff now", "diff small")}
            big = 0
            for _ in range(n_sims):
                beta = rng.normal(size=2) * np.array([1.0, 0.3])
                x = rng.normal(size=n)
                if case == "model right":
                    noise, nv = rng.normal(size=n), 1.0
                else:
                    noise, nv = 1.5 * rng.standard_t(5, n), 1.5**2 * 5 / 3
                y = beta[0] + beta[1] * x + noise
                e1 = _exact_loo(_design(x, 1), y)
                e2 = _exact_loo(_design(x, 2), y)
                t1 = _truth(x, y, 1, beta, nv)
                t2 = _truth(x, y, 2, beta, nv)
                d = e2 - e1
                err_e, err_d = abs(e2.sum() - t2), abs(d.sum() - (t2 - t1))
                for ddof in (0, 1):
                    hit[f"elpd {ddof}"] += err_e <= 2 * math.sqrt(n * np.var(e2, ddof=ddof))
                    hit[f"diff {ddof}"] += err_d <= 2 * math.sqrt(n * np.var(d, ddof=ddof))
                hit["elpd now"] += err_e <= 2 * elpd_se(e2)
                if abs(d.sum()) >= SMALL_DIFF:  # stanlogz gives no se below 4
                    big += 1
                    hit["diff 1 big"] += err_d <= 2 * math.sqrt(n * np.var(d, ddof=1))
                    hit["diff now"] += err_d <= 2 * elpd_se(d)
                else:  # what a calibrated se would cover there, had it been given
                    hit["diff small"] += err_d <= 2 * elpd_se(d)
            cov = {k: round(v / n_sims, 3) for k, v in hit.items()}
            for k in ("diff 1 big", "diff now"):
                cov[k] = round(hit[k] / big, 3) if big else None
            small = n_sims - big
            cov["diff small"] = round(hit["diff small"] / small, 3) if small else None
            rows.append([case, n, n_sims, cov["elpd 0"], cov["elpd 1"], cov["elpd now"],
                         cov["diff 0"], cov["diff 1"], round(1 - big / n_sims, 3),
                         cov["diff 1 big"], cov["diff now"], cov["diff small"]])
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--full", action="store_true", help="4x the replicates")
    ap.add_argument("--seed", type=int, default=20251126)
    ap.add_argument("--cap", type=float, default=None,
                    help="the small-N factor's cap (default stanlogz's; e.g. 1000 for none)")
    a = ap.parse_args()
    if a.cap is not None:
        cv_se.MAX_FACTOR = a.cap
    n_sims = 1000 * (4 if a.full else 1)
    t = time.perf_counter()
    rows = table(n_sims, np.random.default_rng(a.seed))
    print(format_table(["data", "N", "sims", "elpd ddof 0", "elpd ddof 1", "elpd se",
                        "diff ddof 0", "diff ddof 1", "no diff_se", "ddof 1 |d|>=4",
                        "diff_se |d|>=4", "calibrated |d|<4"], rows,
                       title="Exact LOO: coverage of ±2 sqrt(N var(values)) of the expected "
                       "log score (elpd) and of the p=2 − p=1 difference "
                       f"({time.perf_counter() - t:.0f} s; MC sd of each cell ≈ "
                       f"{math.sqrt(0.09 / n_sims):.3f} at 0.9)"))


if __name__ == "__main__":
    main()
