"""Default ``loo`` on the programs of issue 44 case 1 against their exact elpd_loo, over seeds.

One latent per observation, a ``log_lik`` conditional on it, and ``int<lower=1> N``:
``stan_models/tests/latent_trunc_lower1.stan`` (half-normal latent, unknown noise scale) and
``latent_poisson_lower1.stan`` (Poisson counts, a normal latent per unit, an unused data array).
The exact values are the quadratures of tests/crossval/observations/test_integrated_lower_bound.py.
Each line: the route taken, the estimate, its Monte Carlo se, z = (estimate − exact) / mc se;
the summary: mean and sd of the error, mean mc se, share of |z| ≤ 2 and ≤ 3, sd of z.

    PYTHONPATH=. python3 benchmarks/loo_integrated_lower_bound.py latent_trunc_lower1 --seeds 30
    PYTHONPATH=. python3 benchmarks/loo_integrated_lower_bound.py latent_poisson_lower1 --seeds 20
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from stanlogz.crossval.psis_loo.loo import loo
from stanlogz.stan.model import StanModel
from tests.crossval.observations.test_integrated_lower_bound import _poisson_exact, _trunc_exact

TESTS = Path(__file__).resolve().parents[1] / "stan_models" / "tests"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("program", choices=["latent_trunc_lower1", "latent_poisson_lower1"])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--draws", type=int, default=1000, help="draws per chain (4 chains)")
    a = ap.parse_args()
    data = json.loads((TESTS / f"{a.program}.json").read_text())
    model = StanModel.from_file(TESTS / f"{a.program}.stan", data)
    exact = (_trunc_exact if "trunc" in a.program else _poisson_exact)(np.array(data["y"])).sum()
    err, se = [], []
    for seed in range(1, a.seeds + 1):
        t = time.time()
        r = loo(model, data, seed=seed, n_draws=a.draws)
        err.append(r.elpd_loo - exact)
        se.append(r.mcse_elpd_loo)
        print(f"seed {seed}: {r.log_lik_source} {r.elpd_loo:.4f} mc se {r.mcse_elpd_loo:.4f} "
              f"(exact {exact:.4f}, z {err[-1] / se[-1]:+.2f}), max k-hat "
              f"{np.nanmax(r.khat):.2f}, {len(r.fixed)} fixed, {time.time() - t:.0f} s",
              flush=True)
    e, s = np.array(err), np.array(se)
    z = e / s
    print(f"{len(e)} seeds: mean err {e.mean():+.4f}, sd err {e.std(ddof=1):.4f}, mean mc se "
          f"{s.mean():.4f}, |z| <= 2: {np.mean(np.abs(z) <= 2):.0%}, |z| <= 3: "
          f"{np.mean(np.abs(z) <= 3):.0%}, sd z {z.std(ddof=1):.2f}")


if __name__ == "__main__":
    main()
