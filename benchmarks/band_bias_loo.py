"""The k̂ band's bias in the error bar, through ``stanlogz.loo`` with NUTS draws: the
hierarchical normal of ``benchmarks/band_bias_coverage.py`` as a Stan program
(``stan_models/shapes/hier_known_scales.stan``: ``int<lower=1> N``, an unused data array, 100
groups of 2–3, τ = 1.5), its exact LOO closed-form. The band's refits are made to cost too
much (``BAND_SECONDS = 0``), so the band is left as PSIS gives it with its estimated bias in
``mcse_elpd_loo``; z = (elpd_loo − exact) / mcse_elpd_loo per seed, and the z the mc se
without the bias would give.

    python3 -m benchmarks.band_bias_loo --seeds 8
"""

from __future__ import annotations

import argparse
import math
import os

import numpy as np

from benchmarks._common import ROOT
from benchmarks.band_bias_coverage import exact_loo

PROGRAM = ROOT / "stan_models" / "shapes" / "hier_known_scales.stan"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=8)
    a = ap.parse_args(argv)
    import stanlogz
    from stanlogz.crossval.psis_loo import band_refit

    band_refit.BAND_SECONDS = 0.0
    os.environ["STANLOGZ_VERIFY"] = "auto"
    print("| seed | N | elpd_loo | exact | mcse_elpd_loo | band | band bias | z | z without it |\n"
          "|---|---|---|---|---|---|---|---|---|")
    zs = []
    for seed in range(1, a.seeds + 1):
        rng = np.random.default_rng([5, seed])
        groups, sigma, tau = 100, 1.0, 1.5
        g = np.repeat(np.arange(groups), rng.integers(2, 4, size=groups))
        theta = rng.normal(0, 5) + tau * rng.standard_normal(groups)
        y = theta[g] + sigma * rng.standard_normal(g.size)
        data = {"N": int(g.size), "J": groups, "g": (g + 1).tolist(), "y": y.tolist(),
                "w": rng.standard_normal(g.size).tolist(), "sigma": sigma, "tau": tau}
        exact = float(exact_loo(g, y, sigma, tau).sum())
        r = stanlogz.loo(str(PROGRAM), data, seed=seed)
        b = r.band
        bias = 0.0 if b is None else b.bias
        z = (r.elpd_loo - exact) / r.mcse_elpd_loo
        without = math.sqrt(max(r.mcse_elpd_loo**2 - bias**2, 1e-300))
        zs.append(z)
        print(f"| {seed} | {g.size} | {r.elpd_loo:.2f} | {exact:.2f} | {r.mcse_elpd_loo:.3f} | "
              f"{'-' if b is None else f'{b.status} ({b.n})'} | {bias:.3f} | {z:+.2f} | "
              f"{(r.elpd_loo - exact) / without:+.2f} |", flush=True)
    z = np.array(zs)
    print(f"\n{z.size} seeds: mean z {z.mean():+.2f}, rms {np.sqrt(np.mean(z**2)):.2f}, "
          f"max abs {np.abs(z).max():.2f}")


if __name__ == "__main__":
    main()
