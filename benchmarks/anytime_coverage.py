"""Coverage of the answers a time budget stops (issue 45), for loo (below), and with
``--command`` for evidence, gbs's bridge, kfold, lfo, cv and ups
(:mod:`benchmarks.anytime_commands`).

loo: NUTS past warmup keeps the draws so far, a pointwise pass keeps the observations done
and estimates the rest, or, where every observation fits on fewer draws, runs on those.

A linear regression (regression.stan, N observations simulated once) with the
density-difference log-likelihood (``log_lik="difference"``: a pass of N data instances at
every draw, the part of the run a budget most often ends). The unstopped value is loo of the
same program and data, exact: log Z of all the data less log Z without each observation, by
Woodbury's identity given sigma and quadrature over sigma
(:func:`benchmarks.truths.crossval.truths.regression_loo`; until issue 45's seventh session
it was loo at 4 x 5000 draws, whose own PSIS bias moved every z). Each run samples anew
(its own seed) under a budget drawn uniformly from ``--budgets``; the runs the budget stopped
(sampling, the pass, or both) are scored: |elpd_loo - reference| against its error bar
sqrt(mcse² + subsampling se²).

    python -m benchmarks.anytime_coverage --runs 120 --n 1000 --budgets 1.5 4.5
    python -m benchmarks.anytime_coverage --command evidence --runs 110
    python -m benchmarks.anytime_coverage --program latent --runs 100 --n 200 --budgets 2 6

``--program latent``: latent_poisson_lower1.stan (one normal latent per Poisson count,
``int<lower=1> N``, a data array it does not read), N counts simulated once, the integrated
pass (one Gauss-Hermite quadrature per observation and draw); the exact reference is a 2-D
quadrature over (mu, tau) (:func:`benchmarks.truths.crossval.truths.poisson_lognormal_loo`).
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=120)
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--budgets", type=float, nargs=2, default=None,
                    help="budgets drawn uniformly between these seconds (loo: 1.5 4.5)")
    ap.add_argument("--minutes", type=float, default=15.0, help="stop after this wall time")
    ap.add_argument("--out", default=None, help="JSON lines of every run")
    ap.add_argument("--command", default="loo",
                    choices=("loo", "evidence", "bridge", "kfold", "lfo", "lfo-exact", "cv", "cv-t",
                             "ups"))
    ap.add_argument("--first", type=int, default=0,
                    help="first run's index (another part of a command's runs)")
    ap.add_argument("--program", default="regression", choices=("regression", "latent"),
                    help="loo: regression.stan (t(5) noise, density-difference pass) or "
                    "latent_poisson_lower1.stan (a Poisson count with a normal latent each, "
                    "int<lower=1> N and an unused data array: the integrated pass)")
    ap.add_argument("--replicates", type=int, default=None,
                    help="ups: replicates asked (default: the method's 100)")
    ap.add_argument("--also", nargs="*", default=[],
                    help="loo: --out files of earlier parts, scored with this one")
    args = ap.parse_args()
    from .anytime_commands import budgeted_runs, run_command

    if args.command != "loo":

        run_command(args)
        return

    import stanlogz
    from stanlogz import time_budget
    from stanlogz.stan.model import StanModel

    from .truths.crossval import truths

    if args.program == "latent":  # one latent per observation: the integrated pass
        rng = np.random.default_rng(4)
        y = rng.poisson(np.exp(1.0 + 0.6 * rng.normal(size=args.n)))
        data = {"N": args.n, "y": y.tolist(), "unused": [0.5, 1.5]}
        model = StanModel.from_file(ROOT / "stan_models" / "tests" / "latent_poisson_lower1.stan",
                                    data)
        exact = float(truths.poisson_lognormal_loo(y).sum())
        route = "integrated"
    else:
        rng = np.random.default_rng(8)
        x = rng.normal(size=args.n)
        y = 0.5 + 1.2 * x + 0.8 * rng.standard_t(5, size=args.n)
        data = {"N": args.n, "x": x.round(4).tolist(), "y": y.round(4).tolist()}
        model = StanModel.from_file(ROOT / "stan_models" / "examples" / "regression.stan", data)
        exact = float(truths.regression_loo(data).sum())
        route = "difference"
    ref = SimpleNamespace(elpd_loo=exact, mcse_elpd_loo=0.0)
    print(f"reference: exact elpd_loo {exact:.4f}")
    budgets = np.random.default_rng(99 + args.first).uniform(*(args.budgets or (1.5, 4.5)),
                                                             size=args.runs)

    def one(seed: int, budget: float) -> dict:
        with time_budget(budget):
            r = stanlogz.loo(model, data, log_lik=route, seed=seed)
        stop = r.budget_stop or {}
        if not np.isfinite(r.mcse_elpd_loo):  # loo's NA: no error bar claimed, none scored
            return {"status": "withheld", "sampling": bool(stop.get("sampling")),
                    "pass": bool(stop.get("pass")), "pass_draws": bool(stop.get("pass_draws")),
                    "m": None, "draws": r.n_samples, "elpd": r.elpd_loo, "mcse": None,
                    "subsampling_se": r.subsampling_se, "err": None, "z": None}
        err = math.sqrt(r.mcse_elpd_loo ** 2 + r.subsampling_se ** 2 + ref.mcse_elpd_loo ** 2)
        return {"status": "stopped" if stop else "answered",
                "sampling": bool(stop.get("sampling")), "pass": bool(stop.get("pass")),
                "pass_draws": bool(stop.get("pass_draws")),
                "m": None if r.sample_index is None else int(r.sample_index.size),
                "draws": r.n_samples, "elpd": r.elpd_loo, "mcse": r.mcse_elpd_loo,
                "subsampling_se": r.subsampling_se, "err": err,
                "z": (r.elpd_loo - ref.elpd_loo) / err}

    rows = budgeted_runs(one, budgets, args.minutes, args.out, args.first)
    for part in args.also:  # earlier parts' rows (other --first), scored together
        rows += [json.loads(line) for line in Path(part).read_text().splitlines() if line]
    report(rows, ref)


def report(rows: list[dict], ref) -> None:
    """The coverage table."""
    print(f"{len(rows)} runs; reference elpd_loo {ref.elpd_loo:.3f} (mcse "
          f"{ref.mcse_elpd_loo:.3f})")
    groups = {
        "stopped (any)": [r for r in rows if r["status"] == "stopped"],
        "sampling stopped": [r for r in rows if r.get("sampling")],
        "pass stopped": [r for r in rows if r.get("pass")],
        "both stopped": [r for r in rows if r.get("sampling") and r.get("pass")],
        "pass on thinned draws": [r for r in rows if r.get("pass_draws")],
        "not stopped": [r for r in rows if r["status"] == "answered"],
    }
    print("| runs | n | refused | ±1 err | ±2 err | mean z | sd z | median err | "
          "median m | median draws | median s over budget |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    refused = sum(r["status"] == "refused" for r in rows)
    withheld = sum(r["status"] == "withheld" for r in rows)
    print(f"{withheld} runs withheld their mcse (loo's NA: a k-hat above the threshold); "
          "not scored")
    rows = [r for r in rows if r["status"] != "withheld"]
    groups = {k: [r for r in g if r["status"] != "withheld"] for k, g in groups.items()}
    for name, g in groups.items():
        if not g:
            print(f"| {name} | 0 | | | | | | | | | |")
            continue
        z = np.array([r["z"] for r in g])
        ms = [r["m"] for r in g if r["m"] is not None]
        over = np.median([r["seconds"] - r["budget"] for r in g])
        print(f"| {name} | {len(g)} | {refused if name.startswith('stopped') else ''} | "
              f"{np.mean(np.abs(z) <= 1):.2f} | {np.mean(np.abs(z) <= 2):.2f} | "
              f"{z.mean():+.2f} | {z.std(ddof=1) if len(z) > 1 else float('nan'):.2f} | "
              f"{np.median([r['err'] for r in g]):.3f} | "
              f"{np.median(ms) if ms else float('nan'):.0f} | "
              f"{np.median([r['draws'] for r in g]):.0f} | {over:+.2f} |")


if __name__ == "__main__":
    main()
