"""pmmh at its default settings (automatic batch) on doubly-intractable toys with exact posteriors.

Outer: tau ~ gamma(a, b), unnormalized likelihood exp(-tau/2 sum y^2); inner: the Gaussian whose
normalizer (2 pi / tau)^(N/2) is missing, so tau | y ~ gamma(a + N/2, b + sum y^2 / 2). The table
gives the sign-corrected posterior mean, its MCSE, the error in MCSE units, MCSE / posterior sd,
the chosen batch, the share of negative 1/Z estimates and the seconds (or the one-line refusal);
with --batch the fixed batch instead (e.g. --batch 10, the former default), with --proposal
gaussian the former default proposal.

    PYTHONPATH=. python3 benchmarks/pmmh_default.py                 # N = 10, seeds 1-2
    PYTHONPATH=. python3 benchmarks/pmmh_default.py --full          # N = 10 and 40, seeds 1-5
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np

from stanlogz.errors import EstimationError
from stanlogz.pmmh.pseudo_marginal import pmmh

TESTS = Path("stan_models/tests")
TOYS = {10: TESTS / "gauss_precision_outer.json", 40: TESTS / "gauss_precision_40.json"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--full", action="store_true")
    ap.add_argument("--batch", type=int, default=None, help="a fixed batch (default automatic)")
    ap.add_argument("--sizes", type=int, nargs="+", choices=sorted(TOYS), default=None)
    ap.add_argument("--proposal", default="t", help="inner proposal (default t, pmmh's default)")
    ap.add_argument("--seeds", type=int, nargs="+", default=None)
    a = ap.parse_args()
    sizes, seeds = ([10, 40], range(1, 6)) if a.full else ([10], range(1, 3))
    sizes, seeds = a.sizes or sizes, a.seeds or seeds
    print("| N | seed | truth | mean | mcse | err/mcse | mcse/sd | batch | negative | seconds |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for n in sizes:
        data = json.loads(TOYS[n].read_text())
        y = np.array(data["y"])
        shape, rate = data["a"] + n / 2, data["b"] + 0.5 * float(y @ y)
        truth, sd = shape / rate, math.sqrt(shape) / rate
        for seed in seeds:
            t0 = time.perf_counter()
            try:
                r = pmmh(TESTS / "gauss_precision_outer.stan",
                         TESTS / "gauss_precision_inner.stan", TOYS[n], seed=seed,
                         batch=a.batch, proposal=a.proposal)
            except EstimationError as exc:
                print(f"| {n} | {seed} | {truth:.4f} | refused: {exc} | | | | | | "
                      f"{time.perf_counter() - t0:.0f} |", flush=True)
                continue
            (row,) = r.summary_rows()
            print(f"| {n} | {seed} | {truth:.4f} | {row['mean']:.4f} | {row['mcse']:.4f} | "
                  f"{(row['mean'] - truth) / row['mcse']:+.2f} | {row['mcse'] / sd:.3f} | "
                  f"{r.batch}{' (auto)' if r.batch_auto else ''} | "
                  f"{1 - r.fraction_positive:.3f} | {time.perf_counter() - t0:.0f} |", flush=True)


if __name__ == "__main__":
    main()
