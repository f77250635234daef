"""Coverage of subsampling LOO's standard error (``loo(..., subsample=m)``).

Roaches-like influential Poisson regression (stan_models/tests/roaches_sim.json, N = 262; ~5% of
the observations have k̂ > 0.5) against its exact elpd_loo by quadrature (the truth and its cache
are those of ``benchmarks/coverage_loo_mcse.py``). Each NUTS seed (4 x 1000 draws) is subsampled
with several subsample seeds; the error of the estimate counts against
hypot(subsampling_se, mcse_elpd_loo), the se the result reports for the total. The row
``plain`` divides out the bootstrap-t factor (``subsampling_factor``), which is what stanlogz
reported before it. A cell's Monte Carlo sd is about sqrt(c (1 − c) / n) (±1.1% at 0.95 with
400 replicates; replicates of one NUTS seed share its Monte Carlo error, so slightly more).

    PYTHONPATH=$PWD nice python3 -m benchmarks.coverage_subsample            # 40 x 10 (~15 min)
    PYTHONPATH=$PWD nice python3 -m benchmarks.coverage_subsample --m 50 --nuts-seeds 20
"""

from __future__ import annotations

import argparse
import json
import math
import time

import numpy as np

from benchmarks.coverage_loo_mcse import INFLUENTIAL, PROGRAM, truth
from stanlogz._util.tables import format_table
from stanlogz.crossval import loo
from stanlogz.draws import sample
from stanlogz.stan.model import StanModel
from stanlogz.stan.settings import NutsArgs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nuts-seeds", type=int, default=40)
    ap.add_argument("--sub-seeds", type=int, default=10, help="subsamples per NUTS run")
    ap.add_argument("--first-seed", type=int, default=500)
    ap.add_argument("--m", type=int, nargs="+", default=[100], help="subsample sizes")
    args = ap.parse_args()
    data = json.loads(INFLUENTIAL.read_text())
    exact = float(truth(data).sum())
    model = StanModel.from_file(PROGRAM, data)
    settings = NutsArgs(chains=4, warmup=1000, draws=1000)
    rec: dict[int, list[tuple[float, float, float]]] = {m: [] for m in args.m}
    t0 = time.perf_counter()
    for seed in range(args.first_seed, args.first_seed + args.nuts_seeds):
        d = sample(model, settings, seed=seed)
        for m in args.m:
            for sub in range(args.sub_seeds):
                r = loo(model, data, draws=d, seed=1000 * seed + sub, subsample=m)
                plain = r.subsampling_se / r.subsampling_factor
                rec[m].append((r.elpd_loo - exact, math.hypot(r.subsampling_se, r.mcse_elpd_loo),
                               math.hypot(plain, r.mcse_elpd_loo)))
        print(f"NUTS seed {seed}: {time.perf_counter() - t0:.0f} s", flush=True)
    rows = []
    for m, vals in rec.items():
        err, se, se_plain = np.array(vals).T
        rows.append([m, err.size] + [round(float(x), 3) for x in (
            err.mean(), err.std(ddof=1), se_plain.mean(), np.mean(np.abs(err) <= 2 * se_plain),
            se.mean(), np.mean(np.abs(err) <= 2 * se))])
    print(format_table(["m", "replicates", "mean err", "sd err", "plain se", "plain cover",
                        "se", "cover"], rows,
                       title=f"subsampling LOO, influential roaches-like data (N = 262): coverage "
                       f"of ±2 se ({time.perf_counter() - t0:.0f} s)"))


if __name__ == "__main__":
    main()
