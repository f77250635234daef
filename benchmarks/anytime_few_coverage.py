"""Coverage of the estimate an anytime pass gives from few observations and no approximation
of the rest (``approximation: "none"``): elpd_loo is N times the mean of the m observations
done, a simple random sample of the N (the seeded order), with the subsampling se of
:func:`~stanlogz.crossval.psis_loo.subsample.subsample_estimates` (its bootstrap-t factor
included). The pass gets there with m as small as 20 when the budget leaves no more: a
conditional pass thinned so that 20 observations fit (twenty-second session, a hidden
Markov model of 100 steps on the interpreter: m = 26).

The pointwise values are fixed (one loo run per program, all observations), so the full sum
is known exactly and the only error is the sampling of the m observations: each cell draws
``--reps`` subsets without replacement and counts how often the sum lies within 2
subsampling se of the estimate. A cell's Monte Carlo sd is sqrt(c (1 - c) / reps) (0.0028 at
0.95 with 3 x 2,000 replicates).

    PYTHONPATH=$PWD nice python3 -m benchmarks.anytime_few_coverage            # ~2 min
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from stanlogz._util.tables import format_table
from stanlogz.crossval import loo
from stanlogz.crossval.psis_loo.screen import pick
from stanlogz.crossval.psis_loo.subsample import subsample_estimates, widen_few

ROOT = Path(__file__).resolve().parents[1]
#: (label, program, data): a Poisson regression with influential points (heavy lower tail of
#: elpd_i) and the README's logistic regression.
POPULATIONS = (
    ("roaches (N = 262, influential)", "stan_models/tests/roaches_poisson.stan",
     "stan_models/tests/roaches_sim.json"),
    ("wells (N = 3020)", "stan_models/examples/wells_logistic.stan",
     "stan_models/examples/wells.data.json"),
)
M_VALUES = (10, 20, 26, 40, 60)


#: A population no sample of 20 sees reliably: 200 values near -1.2, 5% of them near -12
#: (a rare outlier class). The estimate from m of them has no information on a class it
#: missed, whatever its se: the table shows how far the error bar is then from covering.
RARE = ("synthetic: 5% of 200 at -12 (rare outliers)", None, None)


def pointwise(program: str | None, data: str | None, seed: int
              ) -> tuple[np.ndarray, np.ndarray]:
    """(elpd_i, lppd_i) of every observation: one loo run (no budget), or :data:`RARE`'s."""
    if program is None:
        rng = np.random.default_rng(0)
        e = rng.normal(-1.2, 0.4, 200)
        e[:10] = -12.0 + rng.normal(0.0, 1.0, 10)
        return e, e.copy()
    r = loo(str(ROOT / program), str(ROOT / data), seed=seed, verify=0)
    return np.asarray(r.elpd_i, dtype=float), np.asarray(r.lppd_i, dtype=float)


def screen_of(elpd_i: np.ndarray, proxy: np.ndarray | None) -> np.ndarray:
    """The observations the screen before a budget-stopped pass takes with certainty
    (:func:`~stanlogz.crossval.psis_loo.screen.pick` on ``proxy``, the density difference's
    values; its variance rule needs the draws and is left out here)."""
    return np.zeros(0, dtype=int) if proxy is None else pick(proxy)



def cell(elpd_i: np.ndarray, lppd_i: np.ndarray, m: int, reps: int,
         rng: np.random.Generator, first: np.ndarray | None = None) -> dict[str, float]:
    """Coverage of ±1 and ±2 subsampling se over ``reps`` subsets of ``m`` observations
    (``m`` drawn at random beyond the screened ``first``, taken with certainty)."""
    n = elpd_i.size
    total = float(elpd_i.sum())
    first = np.zeros(0, dtype=int) if first is None else first
    others = np.setdiff1d(np.arange(n), first)
    z = np.empty(reps)
    for r in range(reps):
        index = np.sort(np.concatenate([first, rng.choice(others, size=m, replace=False)]))
        ps = SimpleNamespace(lppd_i=lppd_i[index])
        certain = np.isin(index, first) if first.size else None
        est = subsample_estimates(np.zeros(n), index, elpd_i[index], ps, [], certain)
        widen_few(est, m)  # as anytime_pass does with approximation "none"
        se = est["subsampling_se"]
        z[r] = (est["elpd"] - total) / se if se > 0 else math.inf
    return {"m": m, "cover1": float(np.mean(np.abs(z) <= 1)),
            "cover2": float(np.mean(np.abs(z) <= 2)), "mean_z": float(np.mean(z)),
            "sd_z": float(np.std(z))}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--subset-seeds", type=int, default=3,
                    help="independent streams of subsets per cell (their replicates pooled)")
    ap.add_argument("--screen", action="store_true",
                    help="also with the screen's certain stratum (twenty-fifth session)")
    ap.add_argument("--hmm", type=Path, default=None, metavar="JSON",
                    help="a hidden Markov model's population: `stanlogz loo --json` of "
                         "every observation (its pointwise values)")
    ap.add_argument("--hmm-screened", type=Path, default=None, metavar="JSON",
                    help="a budget-stopped `stanlogz loo --json` of the same program and data "
                         "(its budget_stop.pass.screened: the observations the real screen "
                         "took)")
    args = ap.parse_args(argv)
    rows = []
    pops = [(label, program, data) for label, program, data in (*POPULATIONS, RARE)]
    if args.hmm is not None:
        pops.append(("hmm_gauss, 100 steps, 5 outliers", str(args.hmm), None))
    for label, program, data in pops:
        if program is not None and program.endswith(".json"):
            elpd_i, lppd_i = loo_json(Path(program))
            picked = (np.array(json.loads(args.hmm_screened.read_text())["budget_stop"]["pass"]
                               ["screened"], dtype=int) - 1) if args.hmm_screened else None
        else:
            elpd_i, lppd_i = pointwise(program, data, args.seed)
            # the density difference of a program that factorizes is each elpd_i (at 100
            # draws, about it); the rare class's proxy is noisy (sd 0.5)
            noise = np.random.default_rng(7).normal(0.0, 0.5, elpd_i.size)
            picked = screen_of(elpd_i, elpd_i + (noise if program is None else 0.0))
        rng = np.random.default_rng(args.seed)
        screens = [("none", None)] + ([("screened", picked)] if args.screen else [])
        for name, first in screens:
            for m in M_VALUES:
                c = cell(elpd_i, lppd_i, m, args.reps * args.subset_seeds, rng, first)
                k = 0 if first is None else first.size
                rows.append([label, name if not k else f"{name} ({k})", str(m),
                             f"{c['cover1']:.3f}", f"{c['cover2']:.3f}",
                             f"{c['mean_z']:+.2f}", f"{c['sd_z']:.2f}"])
                print(rows[-1], flush=True)
    print(format_table(["population", "certain", "m (random)", "±1 se covers",
                        "±2 se covers", "mean z", "sd z"], rows))


def loo_json(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """(elpd_i, lppd_i) of a ``stanlogz loo --json`` result of every observation."""
    r = json.loads(path.read_text())
    pw = r["pointwise"]
    e = np.array([p["elpd"] for p in pw], dtype=float)
    return e, e.copy()  # (lppd_i enters p_loo alone, not the coverage)


if __name__ == "__main__":
    main()
