"""Time and accuracy of leave-one-group-out without refits (``loo --group``) against exact
refits (``kfold --group VAR --k groups``), in one table.

* ``radon``: Minnesota radon (Gelman & Hill 2007; posteriordb's radon_mn data in
  benchmarks/data/radon_mn.json), 919 homes in 85 counties, varying intercepts and a floor
  effect (stan_models/examples/radon_logo.stan); the group integrals are Gaussian, so the
  Laplace value (confirmed by Gauss–Hermite) is used.
* ``poisson``: logo_poisson.stan on 30 simulated groups of 5-7 counts; adaptive Gauss–Hermite.

Each row: one NUTS run on all data (4 x 1000 after 1000 warmup, what ``stanlogz sample``
runs), LOGO on those draws (group values only, then with the observation-level values), and
K-fold with one fold per group (one NUTS refit per group and bridge sampling), all with the
same seed, serially on one core. The agreement column is (logo − kfold) over the root sum of
squares of their Monte Carlo se.

    nice python3 -m benchmarks.logo_speed                 # both (radon's refits: ~15 min)
    nice python3 -m benchmarks.logo_speed --cases poisson --no-kfold
"""

from __future__ import annotations

import argparse
import json
import math
import time

from benchmarks._common import ROOT, STAN_MODELS
from benchmarks.truths.crossval.truths_logo import simulate
from stanlogz.crossval.logo.estimator import logo
from stanlogz.crossval.refit.kfold import kfold
from stanlogz.draws import obtain_draws
from stanlogz.stan.model import StanModel


def case(name: str) -> tuple[StanModel, dict, str]:
    """The program, its data and the group variable of a row."""
    if name == "radon":
        data = json.loads((ROOT / "benchmarks" / "data" / "radon_mn.json").read_text())
        return (StanModel.from_file(STAN_MODELS / "examples" / "radon_logo.stan", data), data,
                "county_idx")
    data = simulate("poisson", 30, 5, 3)
    return StanModel.from_file(STAN_MODELS / "tests" / "logo_poisson.stan", data), data, "g"


def row(name: str, seed: int, with_kfold: bool) -> str:
    """One table row."""
    m, data, group = case(name)
    t0 = time.perf_counter()
    d = obtain_draws(m, None, None, seed=seed)
    t_nuts = time.perf_counter() - t0
    t0 = time.perf_counter()
    r = logo(m, data, group=group, draws=d, pointwise_obs=False, seed=seed)
    t_logo = time.perf_counter() - t0
    t0 = time.perf_counter()
    logo(m, data, group=group, draws=d, pointwise_obs=True, seed=seed)
    t_obs = time.perf_counter() - t0
    how = sorted({g.integration for g in r.groups})
    out = (f"| {name} | {len(r.groups)} | {data['N']} | {t_nuts:.1f} | {t_logo:.1f} "
           f"({t_logo / t_nuts:.1f}x) | {t_obs:.1f} ({t_obs / t_nuts:.1f}x) | "
           f"{r.elpd_logo:.2f} ± {r.mcse_elpd_logo:.3f} | {max(r.khat):.2f} | "
           f"{','.join(how)} |")
    if not with_kfold:
        return out + " - | - | - |"
    t0 = time.perf_counter()
    k = kfold(m, data, k=None, group=group, draws=d, seed=seed)
    t_k = time.perf_counter() - t0 + t_nuts
    z = (r.elpd_logo - k.elpd_kfold) / math.hypot(r.mcse_elpd_logo, k.mc_se)
    return out + (f" {t_k:.0f} ({t_k / t_nuts:.0f}x) | {k.elpd_kfold:.2f} ± {k.mc_se:.3f} "
                  f"| {z:+.2f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default="poisson,radon")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-kfold", action="store_true")
    args = ap.parse_args()
    print("| program | groups | N | NUTS s | logo s | logo + obs values s | elpd_logo ± mc se "
          "| max k̂ | integration | kfold s (incl. NUTS) | elpd_kfold ± mc se | z |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name in args.cases.split(","):
        print(row(name, args.seed, not args.no_kfold), flush=True)


if __name__ == "__main__":
    main()
