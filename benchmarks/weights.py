"""Model-weight benchmark: seconds for stacking (one solve, and with its bootstrap se) and
pseudo-BMA+ against the number of observations N and programs K, with the stacking KKT gap
and the largest weight difference to ArviZ's ``compare(method="stacking")``.

    nice -n 10 python3 -m benchmarks.weights [--n 100,1000,10000] [--k 2,5,10] [--seed 1]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from stanlogz import arviz_compat
from stanlogz.crossval.select.weights import pseudo_bma_weights, stacking_weights
from stanlogz.report.output import format_table


def elpd_matrix(n: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """Pointwise elpd of k programs sharing a common per-observation difficulty."""
    base = rng.normal(-1.0, 0.5, n)
    return base[:, None] + rng.normal(0.0, 0.3, (n, k)) - 0.02 * np.arange(k)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", default="100,1000,10000")
    ap.add_argument("--k", default="2,5,10")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    rows = []
    for n in map(int, a.n.split(",")):
        for k in map(int, a.k.split(",")):
            e = elpd_matrix(n, k, rng)
            t = time.perf_counter()
            w = stacking_weights(e, n_boot=0)
            t_one = time.perf_counter() - t
            t = time.perf_counter()
            stacking_weights(e, n_boot=200, seed=a.seed)
            t_boot = time.perf_counter() - t
            t = time.perf_counter()
            pseudo_bma_weights(e, n_boot=1000, seed=a.seed)
            t_bma = time.perf_counter() - t
            t = time.perf_counter()
            theirs = arviz_compat.compare_weights(e, "stacking")
            t_az = time.perf_counter() - t
            rows.append([n, k, t_one, t_boot, t_bma, t_az, w.details["kkt_gap"],
                         float(np.max(np.abs(w.weights - theirs)))])
    print(format_table(["N", "K", "stacking s", "+200 boot s", "pseudo-bma+ s", "arviz s",
                        "kkt gap", "max |w - arviz|"], rows,
                       title="model weights: seconds, stacking optimality, ArviZ agreement"))


if __name__ == "__main__":
    main()
