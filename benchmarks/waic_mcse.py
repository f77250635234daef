"""Coverage of WAIC's Monte Carlo se (stanlogz.crossval.psis_loo.waic): y_i ~ N(θ, 1),
θ ~ N(0, τ0²), whose S → ∞ elpd_waic is known in closed form. For each case, many sets of posterior
draws (independent, or four AR(1) chains with the exact posterior as marginal, to exercise the ESS)
give elpd_waic ± mcse; the table shows the mean and sd of z = (estimate − truth) / mcse and
the share of |z| < 2 (should be ≥ 0.90; 0.95 for a calibrated se).

    PYTHONPATH=. python3 benchmarks/waic_mcse.py [--full] [--seed 1]
"""

from __future__ import annotations

import argparse
import math

import numpy as np
from scipy.stats import norm

from stanlogz._util.seeds import child_int_seed
from stanlogz._util.tables import format_table
from stanlogz.crossval.psis_loo.waic import waic


def truth(y: np.ndarray, m: float, v: float) -> float:
    d = y - m
    return float(np.sum(norm.logpdf(y, m, math.sqrt(1 + v)) - (2 * v**2 + 4 * d**2 * v) / 4))


def draws(rng: np.random.Generator, m: float, v: float, s: int, rho: float) -> np.ndarray:
    """(chains, n) draws of θ with marginal N(m, v): independent (rho = 0) or AR(1)."""
    chains, n = (1, s) if rho == 0 else (4, s // 4)
    e = rng.normal(size=(chains, n))
    th = np.empty_like(e)
    th[:, 0] = e[:, 0]
    for t in range(1, n):
        th[:, t] = rho * th[:, t - 1] + math.sqrt(1 - rho**2) * e[:, t]
    return m + math.sqrt(v) * th


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--full", action="store_true", help="1000 replicates per case (default 200)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    reps = 1000 if args.full else 200
    rows = []
    cases = [("n=20", 20, 2.0, 0.0, 1000), ("n=20", 20, 2.0, 0.0, 4000),
             ("n=20 AR(0.8)", 20, 2.0, 0.8, 4000), ("n=5 outlier", 5, 5.0, 0.0, 1000),
             ("n=100", 100, 2.0, 0.0, 1000)]
    for c, (label, n, tau0, rho, s) in enumerate(cases):
        rng = np.random.default_rng(child_int_seed(args.seed, c))
        y = rng.normal(0.3, 1.0, n)
        if "outlier" in label:
            y[0] = 6.0
        v = 1 / (1 / tau0**2 + n)
        m = v * y.sum()
        t = truth(y, m, v)
        z = []
        for _ in range(reps):
            th = draws(rng, m, v, s, rho)
            ll = norm.logpdf(y[None, None, :], th[:, :, None], 1.0)
            w = waic(ll)
            z.append((w.elpd_waic - t) / w.mcse)
        z = np.array(z)
        rows.append([label, s, rho, reps, round(t, 3), round(float(z.mean()), 3),
                     round(float(z.std()), 3), round(float(np.mean(np.abs(z) < 2)), 3)])
    print(format_table(["case", "S", "AR rho", "reps", "truth", "mean z", "sd z",
                        "cover ±2mcse"], rows))


if __name__ == "__main__":
    main()
