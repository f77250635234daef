"""Coverage of ``loo --group`` stopped by a time budget (issue 45): posteriordb
radon_county_intercept (85 counties, 919 homes), leave-one-county-out, each run sampling anew
under a budget drawn uniformly from ``--budgets``, against the exact elpd_logo (each county's
intercept in closed form, then a 2-D quadrature over beta and sigma:
:func:`benchmarks.truths.crossval.truths.radon_county_logo`). Under a budget the groups' pass
runs on fewer draws where all of them would not fit, and the observation-level values are left
out where they would not fit (:mod:`stanlogz.crossval.logo.budget`); a run is scored by
|elpd_logo - exact| <= 2 mcse_elpd_logo.

    python -m benchmarks.logo_budget_coverage --runs 100 --budgets 3 8
    python -m benchmarks.logo_budget_coverage --thinned 30
    python -m benchmarks.logo_budget_coverage --runs 100 --budgets 4.5 6 --first-run 100

(the last: the budgets at which the groups' pass ran on 1,000 draws in the first 100 runs)

``--thinned S``: no budget; S NUTS runs (4 x 1,000 draws each), leave-one-county-out on all
the draws and on 2,000 and 1,000 of them thinned evenly per chain, each scored against the
exact value: whether the pass on fewer draws (what a budget chooses) is itself biased.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
PROGRAM = Path("/work/shared/corpus/posteriordb/radon_mn-radon_county_intercept")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--budgets", type=float, nargs=2, default=(3.0, 8.0))
    ap.add_argument("--first-run", type=int, default=0,
                    help="the first run's index (its seed is 2000 + index; budgets drawn anew)")
    ap.add_argument("--corpus", default=str(PROGRAM), help="the posteriordb program's folder")
    ap.add_argument("--out", default=None, help="JSON lines of every run")
    ap.add_argument("--thinned", type=int, default=0,
                    help="instead: this many NUTS runs scored on all, 2000 and 1000 draws")
    args = ap.parse_args()
    import stanlogz
    from stanlogz import OverBudget, time_budget
    from stanlogz.stan.model import StanModel

    from .truths.crossval.truths import radon_county_logo

    folder = Path(args.corpus)
    data = json.loads((folder / "data.json").read_text())
    model = StanModel.from_file(folder / "model.stan", data)
    exact = float(radon_county_logo(data).sum())
    print(f"exact elpd_logo {exact:.4f}")
    if args.thinned:
        thinned(model, data, exact, args.thinned)
        return
    budgets = np.random.default_rng(7 + args.first_run).uniform(*args.budgets, size=args.runs)
    rows = []
    sink = open(args.out, "w") if args.out else None  # noqa: SIM115 - one file for the run
    for run, budget in enumerate(budgets, start=args.first_run):
        t0 = time.perf_counter()
        try:
            with time_budget(float(budget)):
                r = stanlogz.loo(model, data, group="county_idx", seed=2000 + run)
            stop = r.budget_stop or {}
            mcse = r.mcse_elpd_logo
            row = {"status": "stopped" if stop else "answered", "elpd": r.elpd_logo,
                   "mcse": mcse if math.isfinite(mcse) else None,
                   "z": (r.elpd_logo - exact) / mcse if math.isfinite(mcse) else None,
                   "draws": r.n_samples, "stop": stop}
        except OverBudget as exc:
            row = {"status": "refused", "message": str(exc).splitlines()[0]}
        row.update(budget=float(budget), seconds=time.perf_counter() - t0)
        rows.append(row)
        if sink:
            sink.write(json.dumps(row) + "\n")
            sink.flush()
    report(rows)


def thinned(model: object, data: dict, exact: float, runs: int) -> None:
    """z of elpd_logo on all the draws and on 2000 and 1000 of them, over ``runs`` runs."""
    import stanlogz
    from stanlogz.crossval.logo.estimator import logo

    z: dict[int, list[float]] = {4000: [], 2000: [], 1000: []}
    for run in range(runs):
        d = stanlogz.sample(model, seed=500 + run)
        for m in z:
            r = logo(model, data, group="county_idx", seed=run,
                     draws=d if m == 4000 else d.thinned(m // 4), pointwise_obs=False)
            if math.isfinite(r.mcse_elpd_logo):
                z[m].append((r.elpd_logo - exact) / r.mcse_elpd_logo)
    print(f"{runs} NUTS runs")
    print("| draws | scored | ±2 mcse covers | mean z | sd z |")
    print("|---|---|---|---|---|")
    for m, v in z.items():
        a = np.array(v)
        print(f"| {m} | {a.size} | {np.mean(np.abs(a) <= 2):.3f} | {a.mean():+.2f} | "
              f"{a.std(ddof=1):.2f} |")


def report(rows: list[dict]) -> None:
    """The coverage table."""
    groups = {"stopped (any change)": [r for r in rows if r["status"] == "stopped"],
              "groups on fewer draws": [r for r in rows if r.get("stop", {}).get("pass_draws")],
              "obs values left out": [r for r in rows if r.get("stop", {}).get("obs_values")],
              "not stopped": [r for r in rows if r["status"] == "answered"]}
    refused = sum(r["status"] == "refused" for r in rows)
    print(f"{len(rows)} runs, {refused} refused")
    print("| runs | n | mc se NA | ±2 mcse covers | mean z | sd z | max abs z | median mcse | "
          "median draws | median s over budget |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, g in groups.items():
        z = np.array([r["z"] for r in g if r["z"] is not None])
        if not z.size:
            print(f"| {name} | {len(g)} | {len(g)} | | | | | | | |")
            continue
        print(f"| {name} | {len(g)} | {len(g) - z.size} | {np.mean(np.abs(z) <= 2):.3f} | "
              f"{z.mean():+.2f} | {z.std(ddof=1) if z.size > 1 else float('nan'):.2f} | "
              f"{np.abs(z).max():.2f} | {np.median([r['mcse'] for r in g if r['mcse']]):.3f} | "
              f"{np.median([r['draws'] for r in g]):.0f} | "
              f"{np.median([r['seconds'] - r['budget'] for r in g]):+.2f} |")


if __name__ == "__main__":
    main()
