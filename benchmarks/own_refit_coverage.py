"""Coverage of ``loo``'s error bar where observations alone move a parameter (groups of one):
the own-parameter probe finds them from the draws and refits them exactly
(``crossval/psis_loo/own_latent.py``), or withholds the mc se where their refits cost too much.

The program is ``stan_models/shapes/hier_known_scales.stan`` (``int<lower=1> N``, an unused
data array; σ and τ known, so the exact LOO is closed-form: ``band_bias_coverage.exact_loo``).
Each data set has ``--groups`` groups of 1–3 observations (about a third of them alone) and a
wide τ, so PSIS reads the groups of one as far lighter than they are. Per data set, z =
(elpd_loo − exact) / mcse_elpd_loo at loo's defaults, and the z PSIS alone would give with its
own mc se (the values as the draws give them, no fix-up).

    python3 -m benchmarks.own_refit_coverage --sets 30
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from benchmarks._common import z_cells
from benchmarks.band_bias_coverage import exact_loo
from benchmarks.band_bias_loo import PROGRAM


def data_set(rng: np.random.Generator, groups: int, sigma: float, tau: float
             ) -> tuple[dict, np.ndarray, np.ndarray]:
    """The data (1-based groups), the 0-based groups and y."""
    g = np.repeat(np.arange(groups), rng.integers(1, 4, size=groups))
    theta = rng.normal(0, 5) + tau * rng.standard_normal(groups)
    y = theta[g] + sigma * rng.standard_normal(g.size)
    data = {"N": int(g.size), "J": groups, "g": (g + 1).tolist(), "y": y.tolist(),
            "w": rng.standard_normal(g.size).tolist(), "sigma": sigma, "tau": tau}
    return data, g, y


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", type=int, default=30)
    ap.add_argument("--groups", type=int, default=40)
    ap.add_argument("--tau", type=float, default=1.5)
    ap.add_argument("--sigma", type=float, default=1.0)
    a = ap.parse_args(argv)
    import stanlogz

    print("| set | N | groups of one | refit exactly | elpd_loo | exact | mcse_elpd_loo | z | "
          "PSIS alone z | seconds |\n|---|---|---|---|---|---|---|---|---|---|")
    zs, zp = [], []
    for j in range(a.sets):
        data, g, y = data_set(np.random.default_rng([11, j]), a.groups, a.sigma, a.tau)
        exact = float(exact_loo(g, y, a.sigma, a.tau).sum())
        t0 = time.perf_counter()
        r = stanlogz.loo(str(PROGRAM), data, seed=j + 1)
        seconds = time.perf_counter() - t0
        singles = int(np.sum(np.bincount(g) == 1))
        refit = sum(f.method == "exact" for f in r.fixed)
        z = (r.elpd_loo - exact) / r.mcse_elpd_loo
        psis = float(np.sum(r.psis_elpd_i))
        z_psis = (psis - exact) / float(np.sqrt(np.sum(np.asarray(r.psis_mcse_i) ** 2)))
        zs.append(z)
        zp.append(z_psis)
        print(f"| {j} | {g.size} | {singles} | {refit} | {r.elpd_loo:.2f} | {exact:.2f} | "
              f"{r.mcse_elpd_loo:.3f} | {z:+.2f} | {z_psis:+.1f} | {seconds:.0f} |", flush=True)
    z = np.array(zs)
    ok = z[np.isfinite(z)]
    print(f"\n{a.sets} data sets, {a.groups} groups of 1-3, sigma {a.sigma}, tau {a.tau}: "
          f"{z.size - ok.size} with the mc se withheld")
    print("| mc se | z mean | rms z | max abs z | share abs z > 2 | share abs z > 3 |\n"
          "|---|---|---|---|---|---|")
    print(f"| loo (own-parameter observations refit) | {z_cells(ok)} |")
    print(f"| PSIS alone, its own mc se | {z_cells(np.array(zp))} |")


if __name__ == "__main__":
    main()
