"""Coverage of evidence, gbs's bridge, kfold and lfo when a time budget stops them (issue 45),
against the value of the unstopped computation: ``python -m benchmarks.anytime_coverage
--command NAME``. Each run samples anew (its own seed) under a budget drawn uniformly from
the command's range; a run the budget stopped (``budget_stop`` set) is scored by
|estimate - reference| <= 2 se, with se the answer's own error bar.

- ``evidence``: bf_regression.stan on N = 2,000 simulated observations, 4 chains x (300 +
  3,000); the reference is the exact log Z (the coefficients integrate out given sigma, then
  1-D quadrature over sigma). The budget stops the sampling (and, where it leaves too little,
  the bridge).
- ``bridge``: gbs alone on exact draws (4 x 1,000) of a banana with a closed-form log Z, under
  a step-count clock (1 ms per target row): every budget in its range stops the bridge (the
  second orientation left out, the flow's layers or its extra samples cut). Seconds per run.
- ``kfold``: normal_mean (N = 10), K = 5, 2 chains x (300 + 4,000); the reference is the
  closed-form K-fold value for the run's folds.
- ``lfo``: ar_nig, PSIS-LFO refitting wherever k̂ > 0 (4 chains x (300 + 1,000)); the
  reference is the unbudgeted run at the same settings and a fixed seed (its refits where
  k̂ > 0), whose own mcse is added to the error bar. An origin whose refit the budget leaves
  out keeps PSIS from the last refit's draws, with PSIS's mcse (NA above the draws' k̂
  threshold, counted apart).
- ``lfo-exact``: ar_nig, exact LFO from t = 20 (20 origins, 21 prefix fits, 2 chains x (300 +
  400)); the reference is the closed form (Normal-inverse-gamma evidence ratios). A budget
  that ends it leaves a random sample of the origins, whose mean times their number is the
  estimate, the sampling error in the mc se.
- ``cv``: unbiased leave-one-out CV (``cv``, n_V = 1) of normal_mean (N = 10), 2 chains x
  (300 + 300), 5,000 splits asked; the reference is the exact objective, the mean over the 10
  observations of -log p(y_i | y_-i) (closed form). The budget leaves the first splits of the
  seeded order; the error bar is their Monte Carlo se.
- ``cv-t``: as ``cv`` on t_location.stan (Student-t(3) noise, one outlier; N = 10); the
  reference is the objective by 1-D quadrature over mu.
- ``ups``: ``evidence --method ups`` of normal_mean (N = 10; 4 chains x (1,000 + 1,000), 100
  replicates, or ``--replicates``: more widen the window of budgets that stop the replicates
  rather than the tuning); the reference is the exact log Z (y ~ N(0, sigma^2 I + prior_sd^2
  11')).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "stan_models" / "examples"
#: Budget ranges (seconds; the bridge's are step-clock seconds).
BUDGETS = {"evidence": (1.5, 5.0), "bridge": (3.0, 12.0), "kfold": (0.8, 3.0),
           "lfo": (0.3, 1.1), "lfo-exact": (0.15, 0.6), "cv": (1.0, 3.0), "cv-t": (1.0, 3.0),
           "ups": (4.0, 8.0)}


def regression_log_z(x: np.ndarray, y: np.ndarray) -> float:
    """log Z of bf_regression.stan: alpha ~ N(0, 2²), beta ~ N(0, 1), sigma ~ half-N(0, 1),
    y ~ N(alpha + beta x, sigma). Given sigma, y ~ N(0, sigma² I + X S X') with X = [1, x] and
    S = diag(4, 1) (Woodbury and the determinant lemma, 2 x 2), then quadrature over sigma."""
    from scipy import integrate

    n = y.size
    X = np.column_stack([np.ones(n), x])
    xtx, xty, yty = X.T @ X, X.T @ y, float(y @ y)
    s_inv = np.diag([1 / 4.0, 1.0])

    def log_lik(sigma: float) -> float:
        s2 = sigma * sigma
        a = s2 * s_inv + xtx
        quad = (yty - xty @ np.linalg.solve(a, xty)) / s2
        logdet = 2 * n * math.log(sigma) + np.linalg.slogdet(
            np.eye(2) + np.diag([4.0, 1.0]) @ xtx / s2)[1]
        return -0.5 * (n * math.log(2 * math.pi) + logdet + quad)

    def log_f(sigma: float) -> float:
        return log_lik(sigma) + math.log(2) - 0.5 * math.log(2 * math.pi) - 0.5 * sigma**2

    grid = np.linspace(1e-3, 5, 4001)
    vals = np.array([log_f(s) for s in grid])
    peak, top = float(grid[np.argmax(vals)]), float(vals.max())
    width = 30 * peak / math.sqrt(n) + 1e-3
    lo, hi = max(peak - width, 1e-9), peak + width
    val, err = integrate.quad(lambda s: math.exp(log_f(s) - top), lo, hi, limit=400,
                              epsabs=0, epsrel=1e-12)
    return top + math.log(val)


def banana(rng: np.random.Generator, tick: list[float]) -> tuple[Any, np.ndarray, float]:
    """exp(c) N(x0; 0, 1) N(x1; x0², Q²) with every target row one tick of the clock, exact
    draws (4 x 1,000) and log Z = c + log(2 pi Q)."""
    from stanlogz.densities.target import FunctionTarget

    c, q = 2.5, 0.3

    def many(x: np.ndarray) -> np.ndarray:
        tick[0] += 1e-3 * x.shape[0]
        return c - 0.5 * x[:, 0] ** 2 - 0.5 * ((x[:, 1] - x[:, 0] ** 2) / q) ** 2

    x0 = rng.standard_normal(4000)
    draws = np.column_stack([x0, x0**2 + q * rng.standard_normal(4000)]).reshape(4, 1000, 2)
    target = FunctionTarget(2, lambda x: float(many(x[None])[0]), log_density_many=many)
    return target, draws, c + math.log(2 * math.pi * q)


def exact_kfold(data: dict, fold_of: np.ndarray) -> float:
    """Σ_i log p(y_i | y_T(i)) of the conjugate normal mean, each fold's posterior closed."""
    from scipy.stats import norm

    y, s, tau = np.array(data["y"]), data["sigma"], data["prior_sd"]
    total = 0.0
    for j in np.unique(fold_of):
        train = y[fold_of != j]
        v = 1.0 / (1.0 / tau**2 + train.size / s**2)
        m = v * train.sum() / s**2
        total += norm.logpdf(y[fold_of == j], m, np.sqrt(s**2 + v)).sum()
    return float(total)


def setup(command: str, replicates: int | None = None) -> tuple[Any, Any]:
    """The command's one run (seed, budget) -> row, and its reference note."""
    import stanlogz
    from stanlogz import NutsArgs, time_budget
    from stanlogz._util import deadline
    from stanlogz.stan.model import StanModel

    if command == "evidence":
        rng = np.random.default_rng(3)
        x = rng.normal(size=2000).round(4)
        y = (0.3 + 0.8 * x + 0.9 * rng.normal(size=2000)).round(4)
        model = StanModel.from_file(ROOT / "stan_models" / "tests" / "bf_regression.stan",
                                    {"N": 2000, "x": x.tolist(), "y": y.tolist()})
        ref = regression_log_z(x, y)
        nuts = NutsArgs(chains=4, warmup=300, draws=3000)

        def one(seed: int, budget: float) -> dict:
            with time_budget(budget):
                r = stanlogz.evidence(model, settings=nuts, seed=seed)
            return {"est": r.log_z, "se": r.log_z_se, "ref": ref, "stop": r.budget_stop}

        return one, f"exact log Z {ref:.6f}"
    if command == "bridge":
        from stanlogz.estimators.bridge.bridge import gbs

        def one(seed: int, budget: float) -> dict:
            now = [0.0]
            deadline.clock = lambda: now[0]  # a step-count clock for this process
            target, draws, ref = banana(np.random.default_rng(seed), now)
            with time_budget(budget):
                r = gbs(target, draws, seed=seed)
            return {"est": r.log_z, "se": r.log_z_se, "ref": ref, "stop": r.budget_stop}

        return one, "exact log Z c + log(2 pi Q)"
    if command == "kfold":
        data = json.loads((EXAMPLES / "normal_mean.data.json").read_text())
        model = StanModel.from_file(EXAMPLES / "normal_mean.stan", data)

        def one(seed: int, budget: float) -> dict:
            with time_budget(budget):
                r = stanlogz.kfold(model, k=5, seed=seed, chains=2, warmup=300, n_draws=4000)
            return {"est": r.elpd_kfold, "se": r.mcse, "ref": exact_kfold(data, r.fold_of),
                    "stop": r.budget_stop}

        return one, "closed-form K-fold of each run's folds"
    if command == "ups":
        from scipy.stats import multivariate_normal

        data = json.loads((EXAMPLES / "normal_mean.data.json").read_text())
        model = StanModel.from_file(EXAMPLES / "normal_mean.stan", data)
        y = np.array(data["y"], dtype=float)
        ref = float(multivariate_normal(np.zeros(y.size), data["sigma"] ** 2 * np.eye(y.size)
                                        + data["prior_sd"] ** 2).logpdf(y))

        def one_ups(seed: int, budget: float) -> dict:
            with time_budget(budget):
                r = stanlogz.evidence(model, method="ups", seed=seed,
                                      **({"n_replicates": replicates} if replicates else {}))
            return {"est": r.log_z, "se": r.log_z_se, "ref": ref, "stop": r.budget_stop,
                    "done": int(r.detail.replicates.size)}

        return one_ups, f"exact log Z {ref:.6f}"
    if command == "cv-t":
        from scipy import integrate, stats

        bench = ROOT / "stan_models" / "bench"
        data = json.loads((bench / "t_location.data.json").read_text())
        model = StanModel.from_file(bench / "t_location.stan", data)
        y = np.array(data["y"], dtype=float)

        def log_evidence(obs: np.ndarray) -> float:
            """log of the integral over mu of N(mu | 0, 5²) prod t3(obs | mu, 1)."""
            def f(mu: float, shift: float) -> float:
                return math.exp(stats.norm.logpdf(mu, 0, 5)
                                + stats.t.logpdf(obs, 3, mu, 1).sum() - shift)

            mode = float(np.median(obs))
            shift = math.log(f(mode, 0.0) or 1e-300)
            val, _ = integrate.quad(f, -40, 40, args=(shift,), points=[mode], limit=400,
                                    epsabs=0, epsrel=1e-11)
            return math.log(val) + shift

        full = log_evidence(y)
        ref = -float(np.mean([full - log_evidence(np.delete(y, i)) for i in range(y.size)]))

        return _cv_run(model, data, ref), f"leave-one-out objective by quadrature {ref:.6f}"
    if command == "cv":
        from scipy.stats import multivariate_normal

        data = json.loads((EXAMPLES / "normal_mean.data.json").read_text())
        model = StanModel.from_file(EXAMPLES / "normal_mean.stan", data)
        y = np.array(data["y"], dtype=float)
        cov = data["sigma"] ** 2 * np.eye(y.size) + data["prior_sd"] ** 2
        ref = -float(np.mean([
            multivariate_normal(np.zeros(y.size), cov).logpdf(y)
            - multivariate_normal(np.zeros(y.size - 1), np.delete(np.delete(cov, i, 0), i, 1))
            .logpdf(np.delete(y, i)) for i in range(y.size)]))

        return _cv_run(model, data, ref), f"exact leave-one-out objective {ref:.6f}"
    from stanlogz.crossval.refit.lfo import lfo

    data = json.loads((EXAMPLES / "ar_nig.data.json").read_text())
    model = StanModel.from_file(EXAMPLES / "ar_nig.stan", data)
    if command == "lfo-exact":
        from .truths.crossval.truths import ar_nig_lfo

        exact = float(ar_nig_lfo(data, 20).sum())
        settings = {"min_train": 20, "ahead": 1, "method": "exact", "chains": 2,
                    "warmup": 300, "n_draws": 400}

        def one_exact(seed: int, budget: float) -> dict:
            with time_budget(budget):
                r = lfo(model, data, seed=seed, **settings)
            return {"est": r.elpd, "se": r.mcse, "ref": exact, "stop": r.budget_stop}

        return one_exact, f"exact LFO by the closed form {exact:.4f}"
    settings = {"min_train": 30, "ahead": 2, "method": "psis", "k_threshold": 0.0,
                "chains": 4, "warmup": 300, "n_draws": 1000}
    full = lfo(model, data, seed=12345, **settings)

    def one(seed: int, budget: float) -> dict:
        with time_budget(budget):
            r = lfo(model, data, seed=seed, **settings)
        se = math.hypot(r.mcse, full.mcse) if np.isfinite(r.mcse) else float("nan")
        stop = r.budget_stop
        if r.warnings and any("time budget ended sampling" in w for w in r.warnings):
            stop = {**(stop or {}), "sampling": True}
        return {"est": r.elpd, "se": se, "ref": full.elpd, "stop": stop}

    return one, f"unbudgeted PSIS-LFO {full.elpd:.4f} (mcse {full.mcse:.4f})"


def _cv_run(model: Any, data: dict, ref: float) -> Any:
    """One budgeted ``cv`` run of ``model`` (2 chains x (300 + 300), 5,000 splits asked)
    against the reference objective ``ref``."""
    import stanlogz
    from stanlogz import time_budget

    def one_cv(seed: int, budget: float) -> dict:
        with time_budget(budget):
            r = stanlogz.cv(model, data, splits=5000, seed=seed, chains=2, warmup=300,
                            n_draws=300)
        return {"est": r.estimate, "se": r.estimate_mcse, "ref": ref,
                "stop": r.budget_stop, "done": int(r.replicates.size)}

    return one_cv


def budgeted_runs(one: Any, budgets: np.ndarray, minutes: float, out: str | None,
                  first: int = 0) -> list[dict]:
    """``one(seed, budget)`` for each budget in turn (seeds from ``1000 + first``) until
    ``minutes`` have passed: its row, or a refused one where the budget ended it before any
    answer, with the budget and the seconds taken; each row is also appended to ``out``."""
    from stanlogz import OverBudget

    rows: list[dict] = []
    t_end = time.perf_counter() + 60 * minutes
    with contextlib.ExitStack() as stack:
        sink = stack.enter_context(open(out, "w")) if out else None
        for run, budget in enumerate(budgets):
            if time.perf_counter() > t_end:
                break
            t0 = time.perf_counter()
            try:
                row = one(1000 + first + run, float(budget))
            except OverBudget as exc:
                row = {"status": "refused", "message": str(exc)}
            row.update(budget=float(budget), seconds=time.perf_counter() - t0)
            rows.append(row)
            if sink:
                sink.write(json.dumps(row, default=str) + "\n")
                sink.flush()
    return rows


def run_command(args: argparse.Namespace) -> None:
    """Run ``args.runs`` budgeted runs of ``args.command`` and print the coverage table."""
    one, note = setup(args.command, replicates=getattr(args, "replicates", None))
    print(f"{args.command}: reference {note}")
    lo, hi = args.budgets or BUDGETS[args.command]
    first = getattr(args, "first", 0)  # a later part: other seeds and budgets
    budgets = np.random.default_rng(99 + first).uniform(lo, hi, size=args.runs)

    def scored(seed: int, budget: float) -> dict:
        row = one(seed, budget)
        row["status"] = "stopped" if row["stop"] else "answered"
        row["z"] = (row["est"] - row["ref"]) / row["se"] if row["se"] > 0 else math.nan
        return row

    table(args.command, budgeted_runs(scored, budgets, args.minutes, args.out, first))


def table(command: str, rows: list[dict]) -> None:
    """One row per group: runs, share stopped, ±2 se coverage with its binomial se."""
    n = len(rows)
    refused = sum(r["status"] == "refused" for r in rows)
    stopped = [r for r in rows if r["status"] == "stopped"]
    print(f"{n} runs, {refused} refused, {len(stopped)} stopped by the budget "
          f"({len(stopped) / max(n, 1):.2f})")
    print("| command | group | runs | ±2 se covers | binomial se | se NA | mean z | sd z | "
          "median se | median s over budget |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    def kind(stop: dict) -> list[str]:
        """What the budget ended: sampling, the bridge, the refits."""
        out = [k for k in ("sampling", "bridge", "pass", "replicates") if stop.get(k)]
        return out + (["refits"] if stop.get("folds_refit") is not None
                      or stop.get("refits_skipped") else []) + (
            ["origins"] if stop.get("origins_exact") is not None else [])

    kinds = sorted({k for r in stopped for k in kind(r["stop"])})
    groups = {"stopped (any)": stopped,
              **{f"{k} stopped": [r for r in stopped if k in kind(r["stop"])]
                 for k in kinds},
              "not stopped": [r for r in rows if r["status"] == "answered"]}
    for name, g in groups.items():
        z = np.array([r["z"] for r in g if np.isfinite(r["z"])])
        na = len(g) - z.size
        if z.size == 0:
            print(f"| {command} | {name} | {len(g)} | | | {na} | | | | |")
            continue
        p = float(np.mean(np.abs(z) <= 2))
        over = np.median([r["seconds"] - r["budget"] for r in g])
        print(f"| {command} | {name} | {len(g)} | {p:.3f} | {math.sqrt(p * (1 - p) / z.size):.3f}"
              f" | {na} | {z.mean():+.2f} | {z.std(ddof=1) if z.size > 1 else math.nan:.2f} | "
              f"{np.median([r['se'] for r in g]):.3g} | {over:+.2f} |")
