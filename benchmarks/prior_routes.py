"""Sensitivity by each route to the prior density (issue 35, item 6): coverage of its standard
errors against the conjugate normal's closed forms, per route.

    PYTHONPATH=$PWD python3 benchmarks/prior_routes.py --seeds 20

The same model (mu ~ N(mu0, tau0²), y_i ~ N(mu, sigma²)) as four programs, one per route:
``normal.stan`` (``int<lower=0> N``: zero observations, NUTS on the prior), ``normal_n1.stan``
(``int<lower=1> N``, nothing else: one-observation instances), ``normal_n1_lprior.stan`` (an
``lprior`` generated quantity) and ``examples/normal_mean.stan`` (``int<lower=1> N`` with
``log_lik``); the last three draw their prior by independence Metropolis–Hastings. For every
seed, each reported derivative and value of log Z and elpd_loo (11 per run, fewer where one is
refused) gives z = (estimate − truth) / se; the table has the fraction with |z| <= 2 (0.954
for a right se), the largest |z|, the mean z and the seconds per run.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from benchmarks.truths.bayes_factors.truths import derivative, normal_elpd_loo, normal_log_z
from stanlogz.bayes_factors.sensitivity import sensitivity

ROOT = Path(__file__).resolve().parents[1]
T, EX = ROOT / "stan_models" / "tests", ROOT / "stan_models" / "examples"


def _cases() -> list[tuple[Path, object, dict]]:
    nd = json.loads((T / "normal.json").read_text())
    raw = json.loads((EX / "normal_mean.data.json").read_text())
    md = {"y": raw["y"], "sigma": raw["sigma"], "mu0": 0.0, "tau0": raw["prior_sd"]}
    return [(T / "normal.stan", nd, nd), (T / "normal_n1.stan", nd, nd),
            (T / "normal_n1_lprior.stan", nd, nd),
            (EX / "normal_mean.stan", EX / "normal_mean.data.json", md)]


def z_scores(r, d: dict) -> list[float]:
    """(estimate − truth) / se of every derivative and value ``r`` reports (refused ones out)."""
    out = []
    for q, f in (("log_z", normal_log_z), ("elpd_loo", normal_elpd_loo)):
        for power, s in r.quantities[q].items():
            def scaled(a, f=f, power=power):
                return f(d, a, 1.0) if power == "prior" else f(d, 1.0, a)
            out.append((s.derivative - derivative(scaled)) / s.derivative_se)
            out += [(v["value"] - scaled(float(k))) / v["se"] for k, v in s.at.items()
                    if v["how"] != "refused"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=20)
    args = ap.parse_args()
    print("| program | prior route | seeds | values | within ±2 se | max abs z | mean z | s/run |")
    print("|---|---|---|---|---|---|---|---|")
    for prog, data, d in _cases():
        zs, route, t0 = [], "", time.perf_counter()
        for seed in range(100, 100 + args.seeds):
            r = sensitivity(prog, data, seed=seed)
            route = r.prior_route
            zs += z_scores(r, d)
        z = np.asarray(zs)
        print(f"| {prog.name} | {route} | {args.seeds} | {z.size} | "
              f"{np.mean(np.abs(z) <= 2):.3f} | {np.max(np.abs(z)):.2f} | {np.mean(z):+.2f} | "
              f"{(time.perf_counter() - t0) / args.seeds:.1f} |")


if __name__ == "__main__":
    main()
