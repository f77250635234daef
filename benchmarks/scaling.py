"""Scaling of independent units: local executor vs a Dask LocalCluster, and the scheduler's cost.

    nice -n 5 python3 -m benchmarks.scaling [--replicates 1000] [--chains 256] [--temps 200]

1. UPS on the paper's logistic regression (benchmarks/ups.py: n = 1000, p = 7; Laplace base,
   coupled RWMH, k and m from one pilot, q uniform) with ``--replicates`` replicates, and AIS
   with ``--chains`` chains and ``--temps`` temperatures on the same posterior: wall time and
   efficiency T_serial / (W T_W) with the local executor (serial; W processes) and a
   LocalCluster of W = 1 and 2 single-threaded worker processes. Every configuration must give
   the same estimate bit for bit (checked).
2. The scheduler's overhead per unit: units that sleep 10 ms, 100 ms and 1 s on the 2-worker
   cluster; overhead per unit = (W T_W - N d) / N.
3. On paper: expected wall time and efficiency on 100 workers from the measured per-unit
   overhead and unit durations, and the worker count where the central scheduler saturates.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # one BLAS thread per worker

import argparse  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
from distributed import Client, LocalCluster  # noqa: E402

from benchmarks.ups import LogisticTarget, make_data  # noqa: E402
from stanlogz.densities.fits import laplace_base  # noqa: E402
from stanlogz.estimators.annealing.ais import ais  # noqa: E402
from stanlogz.estimators.ups.ups import ups  # noqa: E402
from stanlogz.mcmc.paths import base_to_target_path  # noqa: E402
from stanlogz.parallel import run_parallel, use_executor  # noqa: E402
from stanlogz.report.output import format_table  # noqa: E402


def _sleep(task: float, rng: np.random.Generator) -> float:
    time.sleep(task)
    return task


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--replicates", type=int, default=1000)
    ap.add_argument("--chains", type=int, default=256)
    ap.add_argument("--temps", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    X, y = make_data()
    target = LogisticTarget(X, y)
    base, _ = laplace_base(target, np.zeros(X.shape[1]))
    path = base_to_target_path(base, target)
    pilot = ups(path, n_replicates=2, seed=0, n_workers=1, grid=[0.0, 1.0], n_pilot=30,
                adapt=False, q="uniform")
    k, m = int(pilot.k.max()), int(pilot.m.max())
    print(f"UPS k={k} m={m} from a 30-chain pilot", flush=True)

    def run_ups(n_workers):
        r = ups(path, n_replicates=args.replicates, seed=args.seed, n_workers=n_workers,
                grid=[0.0, 1.0], k=k, m=m, adapt=False, q="uniform")
        return r.estimate, r.se

    def run_ais(n_workers):
        r = ais(target, base, n_chains=args.chains, n_temps=args.temps, seed=args.seed,
                n_workers=n_workers, schedule="sigmoid")
        return r.log_z, r.log_z_se

    jobs = [(f"UPS, {args.replicates} replicates", run_ups),
            (f"AIS, {args.chains} chains x {args.temps} temps", run_ais)]
    rows, unit_s = [], {}
    for name, job in jobs:
        print(f"{name} ...", flush=True)
        ref, t1 = timed(lambda job=job: job(1))
        unit_s[name] = t1 / (args.replicates if name.startswith("UPS") else args.chains)
        rows.append([name, "local serial", 1, t1, 1.0, f"{ref[0]:.4f} ± {ref[1]:.4f}"])
        out, t = timed(lambda job=job: job(2))
        assert out == ref, (out, ref)
        rows.append([name, "local processes", 2, t, t1 / (2 * t), "same bits"])
        for w in (1, 2):
            with LocalCluster(n_workers=w, threads_per_worker=1, processes=True,
                              dashboard_address=":0", silence_logs=40) as cl, Client(cl) as c:
                c.run(lambda: __import__("stanlogz.estimators.ups.ups"))  # warm imports
                with use_executor(c):
                    out, t = timed(lambda job=job: job(None))
            assert out == ref, (out, ref)
            rows.append([name, "LocalCluster", w, t, t1 / (w * t), "same bits"])
        print(format_table(["job", "executor", "workers", "wall s", "efficiency", "estimate"],
                           rows[-4:]), flush=True)

    print("scheduler overhead per unit (2-worker LocalCluster, units that sleep d) ...",
          flush=True)
    over_rows, overhead = [], {}
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=":0", silence_logs=40) as cl, Client(cl) as c:
        with use_executor(c):
            run_parallel(_sleep, [0.0] * 4, seed=0)  # warm up
            zero_n = 400
            _, zero_wall = timed(lambda: run_parallel(_sleep, [0.0] * zero_n, seed=0))
            over_rows.append(["0 ms", zero_n, zero_wall, 0.0, 1000 * 2 * zero_wall / zero_n,
                              float("nan")])
            for d, n in ((0.01, 400), (0.1, 60), (1.0, 8)):
                _, t = timed(lambda d=d, n=n: run_parallel(_sleep, [d] * n, seed=0))
                o = (2 * t - n * d) / n
                overhead[d] = o
                over_rows.append([f"{1000 * d:.0f} ms", n, t, n * d / 2, 1000 * o,
                                  d / (d + max(o, 0.0))])
    print(format_table(["unit", "units", "wall s", "ideal s", "overhead ms/unit",
                        "efficiency"], over_rows), flush=True)

    # On paper: N units of duration d on W workers, per-unit overhead o (the 10 ms row: comm,
    # pickling, bookkeeping on the worker's side) and a central scheduler that spends s per
    # unit (upper bound: the wall time per unit of 0 ms units, 2 workers). Wall time
    # ~ max(ceil(N / W) (d + o), N s); the scheduler saturates beyond W* = (d + o) / s.
    o = max(overhead[0.01], 0.0)
    sched = zero_wall / zero_n
    paper = []
    for name in unit_s:
        n = args.replicates if name.startswith("UPS") else args.chains
        d = unit_s[name]
        for w in (2, 10, 100):
            wall = max(math.ceil(n / w) * (d + o), n * sched)
            paper.append([name, f"{1000 * d:.1f} ms", w, wall, n * d / (w * wall),
                          round((d + o) / sched)])
    print(format_table(["job", "unit", "workers", "expected wall s", "efficiency", "W*"],
                       paper))
    print(f"o = {1000 * o:.2f} ms per unit, scheduler s <= {1000 * sched:.2f} ms per unit")

if __name__ == "__main__":
    main()
