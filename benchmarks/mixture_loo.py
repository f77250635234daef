"""Mixture importance sampling LOO (stanlogz.crossval.fixups.mixture) against exact LOO on an
influential-point data set: the conjugate normal-mean example (N = 10, σ = 1, prior sd 2) with
its last observation moved to ``y10`` (the farther, the more influential: PSIS k̂ grows past
0.7 and 1). Per case, many seeds give elpd_loo ± mcse from mixture HMC; the table shows the
PSIS error for reference (one seed), the mixture's mean error, the mean mcse, the sd of the
errors, how many runs gave no se (the estimator's terms have Pareto k̂ > 0.7: refused), and
the coverage of ±2 mcse over the runs that gave one, for the total, for the influential
observation, and over every observation's value that got an se ("points"; should be ≥ 0.90).

With ``--mode fixup`` (the default) it measures ``loo(..., fix="mis")`` instead: PSIS-LOO on
fresh NUTS draws per seed, the observations with k̂ above the threshold re-estimated from one
mixture run (the posterior mixed with their leave-one-out posteriors); the table shows how many
points were fixed, the mean error and mean Monte Carlo se of elpd_loo (PSIS part and mixture
part added as independent), and the coverage of ±2 se for the total and for the fixed points.

    PYTHONPATH=. python3 benchmarks/mixture_loo.py [--mode fixup|whole] [--full] [--seed 1]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from benchmarks.truths.crossval.truths import normal_mean_loo as exact_loo
from stanlogz._util.seeds import child_int_seed
from stanlogz._util.tables import format_table
from stanlogz.crossval import loo
from stanlogz.crossval.psis_loo.mixture_loo import mixture_loo
from stanlogz.stan.model import StanModel
from stanlogz.stan.settings import NutsArgs

EX = Path(__file__).resolve().parents[1] / "stan_models" / "examples"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--full", action="store_true", help="200 seeds per case (default 50)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cases", default="5,8,12,16", help="y10 values (--mode fixup)")
    ap.add_argument("--mode", choices=("fixup", "whole"), default="fixup",
                    help="fixup: loo(fix='mis'); whole: mixture_loo of every observation")
    args = ap.parse_args()
    reps = 200 if args.full else 50
    if args.mode == "fixup":
        fixup_table(reps, args.seed, [float(v) for v in args.cases.split(",")])
        return
    settings = NutsArgs(chains=4, warmup=300, draws=1000)
    base = json.loads((EX / "normal_outlier.data.json").read_text())
    rows = []
    for c, y10 in enumerate((5.0, 8.0, 12.0)):
        d = dict(base, y=base["y"][:-1] + [y10])
        m = StanModel.from_file(EX / "normal_mean.stan", d)
        ex = exact_loo(d)
        ps = loo(m, fix="none", seed=child_int_seed(args.seed, 100 + c))
        err, se, err_i, se_i, z_all = [], [], [], [], []
        t0 = time.perf_counter()
        for r in range(reps):
            res = mixture_loo(m, settings=settings, seed=child_int_seed(args.seed, 1000 * c + r))
            err.append(res.elpd_loo - ex.sum())
            se.append(res.mcse_elpd_loo)
            err_i.append(res.elpd_i[-1] - ex[-1])
            se_i.append(res.psis_mcse_i[-1])
            ok = np.isfinite(res.psis_mcse_i)
            z_all += list(np.abs(res.elpd_i - ex)[ok] / res.psis_mcse_i[ok])
        err, se, err_i, se_i = map(np.array, (err, se, err_i, se_i))
        given, given_i = np.isfinite(se), np.isfinite(se_i)
        cover = (float(np.mean(np.abs(err[given]) < 2 * se[given])) if given.any()
                 else float("nan"))
        cover_i = (float(np.mean(np.abs(err_i[given_i]) < 2 * se_i[given_i])) if given_i.any()
                   else float("nan"))
        rows.append([y10, round(float(ps.khat[-1]), 2), round(ps.elpd_loo - ex.sum(), 3), reps,
                     round(float(err.mean()), 3), round(float(np.nanmean(se)), 3)
                     if given.any() else "-", round(float(err.std()), 3),
                     int((~given).sum()), round(cover, 3), int((~given_i).sum()),
                     round(cover_i, 3), len(z_all),
                     round(float(np.mean(np.array(z_all) < 2)), 3) if z_all else "-",
                     round((time.perf_counter() - t0) / reps, 2)])
    print(format_table(["y10", "psis khat", "psis err", "seeds", "mis mean err", "mean mcse",
                        "sd err", "no se", "cover total", "no se y10", "cover y10", "points",
                        "cover points", "s/run"],
                       rows))


def fixup_table(reps: int, seed: int, cases: list[float]) -> None:
    """Coverage of loo(fix="mis") against exact LOO (module docstring)."""
    rows = []
    for c, y10 in enumerate(cases):
        d = json.loads((EX / "normal_outlier.data.json").read_text())
        d = dict(d, y=d["y"][:-1] + [y10])
        m = StanModel.from_file(EX / "normal_mean.stan", d)
        ex = exact_loo(d)
        err, se, n_fixed, z_fixed, refused = [], [], [], [], 0
        t0 = time.perf_counter()
        for r in range(reps):
            res = loo(m, fix="mis", chains=4, warmup=300, n_draws=1000,
                      seed=child_int_seed(seed, 5000 + 1000 * c + r))
            err.append(res.elpd_loo - ex.sum())
            se.append(res.mcse_elpd_loo)
            n_fixed.append(len(res.fixed))
            refused += bool(res.unfixed_bad())
            z_fixed += [abs(f.elpd - ex[f.index]) / f.mcse for f in res.fixed]
        err, se = np.array(err), np.array(se)
        rows.append([y10, reps, round(float(np.mean(n_fixed)), 2), refused,
                     round(float(err.mean()), 3), round(float(se.mean()), 3),
                     round(float(err.std()), 3),
                     round(float(np.mean(np.abs(err) < 2 * se)), 3), len(z_fixed),
                     round(float(np.mean(np.array(z_fixed) < 2)), 3) if z_fixed else "-",
                     round((time.perf_counter() - t0) / reps, 2)])
    print(format_table(["y10", "seeds", "fixed/run", "runs unfixed", "mean err", "mean mcse",
                        "sd err", "cover total", "fixed pts", "cover fixed", "s/run"], rows))


if __name__ == "__main__":
    main()
