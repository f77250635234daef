"""Cross-validation beyond leave-one-out against exact values, over seeds.

1. Eight schools (one latent per school): every leave-one-out term by stanlogz (``kfold`` with
   one school per fold: the augmented bridge) and by PSIS-LOO from the conditional ``log_lik``,
   against 2-D quadrature over (μ, τ).
2. A simulated Gaussian hierarchical regression (new data per seed): leave-one-group-out and
   5-fold elpd_kfold and every fold's joint log p(y_V | y_T) against the closed form.
3. A simulated conjugate AR(2) series per seed: exact and PSIS leave-future-out against the
   normal-inverse-gamma closed form.

Columns: mean |error|, the largest, the mean reported se, and the fraction of estimates within
2 se of the truth (coverage; about 0.95 when the se is honest).

    python3 -m benchmarks.crossval_beyond --seeds 5
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from benchmarks.truths.crossval import truths
from stanlogz import arviz_compat
from stanlogz.crossval.refit.kfold import kfold
from stanlogz.crossval.refit.lfo import lfo
from stanlogz.draws import sample
from stanlogz.report.output import format_table
from stanlogz.stan.model import StanModel

EXAMPLES = Path(__file__).resolve().parents[1] / "stan_models" / "examples"


def row(name: str, err: np.ndarray, se: np.ndarray, seconds: float) -> list:
    err, se = np.asarray(err, float), np.asarray(se, float)
    cover = float(np.mean(np.abs(err) <= 2 * se)) if np.all(np.isfinite(se)) else float("nan")
    return [name, err.size, round(float(np.mean(np.abs(err))), 4),
            round(float(np.max(np.abs(err))), 4), round(float(np.mean(se)), 4),
            round(cover, 3), round(seconds, 1)]


def eight_schools(seeds: list[int], draws: int) -> list[list]:
    d = json.loads((EXAMPLES / "eight_schools.data.json").read_text())
    m = StanModel.from_file(EXAMPLES / "eight_schools.stan", d)
    exact = truths.eight_schools_loo(d)
    errs, ses, tot_err, tot_se, psis_err, psis_tot, secs = [], [], [], [], [], [], 0.0
    for s in seeds:
        t0 = time.perf_counter()
        r = kfold(m, d, k=8, n_draws=draws, adapt_delta=0.95, seed=s)
        secs += time.perf_counter() - t0
        errs.extend(r.elpd_i - exact)
        ses.extend(f.mcse for f in sorted(r.folds, key=lambda f: f.index[0]))
        tot_err.append(r.elpd_kfold - exact.sum())
        tot_se.append(r.mcse)
        fit = sample(m, draws=draws, adapt_delta=0.95, seed=s)
        names = fit.constrained_names
        cols = [names.index(f"log_lik.{j + 1}") for j in range(8)]
        ll = fit.constrained.reshape(-1, len(names))[:, cols]
        lw, _ = arviz_compat.psislw(-ll.T)
        from scipy.special import logsumexp

        psis = logsumexp(lw + ll.T, axis=1)
        psis_err.extend(psis - exact)
        psis_tot.append(psis.sum() - exact.sum())
    return [row("eight schools: exact LOO per school", np.array(errs), np.array(ses), secs),
            row("eight schools: elpd_loo (sum)", np.array(tot_err), np.array(tot_se), secs),
            row("eight schools: PSIS-LOO per school", np.array(psis_err),
                np.full(len(psis_err), np.nan), 0.0),
            row("eight schools: PSIS-LOO sum", np.array(psis_tot),
                np.full(len(psis_tot), np.nan), 0.0)]


def simulate_hier(rng: np.random.Generator) -> dict:
    n, j = 30, 6
    g = np.repeat(np.arange(1, j + 1), n // j)
    x = rng.normal(size=n)
    y = 0.5 + x + rng.normal(0, 1.0, j)[g - 1] + rng.normal(0, 0.8, n)
    return {"N": n, "J": j, "g": g.tolist(), "x": x.tolist(), "y": y.tolist(), "sigma": 0.8,
            "tau": 1.0, "s_ab": 2.0}


def hier(seeds: list[int], draws: int) -> list[list]:
    m = StanModel.from_file(EXAMPLES / "hier_regression.stan",
                            EXAMPLES / "hier_regression.data.json")
    out = []
    for k, label in ((None, "LOGO"), (5, "5-fold")):
        e_sum, s_sum, e_fold, s_fold, secs = [], [], [], [], 0.0
        for s in seeds:
            d = simulate_hier(np.random.default_rng(1000 + s))
            y, cov = np.array(d["y"]), truths.hier_regression_cov(d)
            t0 = time.perf_counter()
            r = kfold(m.with_data(d), d, k=k, group="g" if k is None else None,
                      n_draws=draws, seed=s)
            secs += time.perf_counter() - t0
            each = 0.0
            for f in r.folds:
                t = np.setdiff1d(np.arange(30), f.index)
                each += sum(truths.gaussian_heldout(y, cov, [i], t) for i in f.index)
                e_fold.append(f.elpd - truths.gaussian_heldout(y, cov, f.index))
                s_fold.append(f.mcse)
            e_sum.append(r.elpd_kfold - each)
            s_sum.append(r.mcse)
        out.append(row(f"hier. regression {label}: elpd_kfold", np.array(e_sum),
                       np.array(s_sum), secs))
        out.append(row(f"hier. regression {label}: joint per fold", np.array(e_fold),
                       np.array(s_fold), 0.0))
    return out


def simulate_ar(rng: np.random.Generator) -> dict:
    y = [0.3, -0.2]
    for _ in range(38):
        y.append(0.2 + 0.5 * y[-1] - 0.3 * y[-2] + rng.normal())
    return {"P": 2, "N": 40, "y": y, "b_scale": 1.0, "a0": 3.0, "b0": 2.0}


def ar(seeds: list[int], draws: int) -> list[list]:
    m = StanModel.from_file(EXAMPLES / "ar_nig.stan", EXAMPLES / "ar_nig.data.json")
    out = []
    for method in ("exact", "psis"):
        for start, ahead in ((20, 1), (30, 3)):
            e_t, s_t, e_sum, s_sum, secs, refits = [], [], [], [], 0.0, 0
            for s in seeds:
                d = simulate_ar(np.random.default_rng(2000 + s))
                t0 = time.perf_counter()
                r = lfo(m.with_data(d), d, min_train=start, ahead=ahead, method=method,
                        n_draws=draws, seed=s)
                secs += time.perf_counter() - t0
                truth = truths.ar_nig_lfo(d, start, ahead)
                e_t.extend(r.elpd_t - truth)
                s_t.extend(r.mcse_t)
                e_sum.append(r.elpd_lfo - truth.sum())
                s_sum.append(r.mcse)
                refits += len(r.refits)
            name = f"AR(2) {method} LFO L={start} M={ahead}"
            out.append(row(f"{name}: per origin", np.array(e_t), np.array(s_t), secs))
            out.append(row(f"{name}: sum ({refits} fits)", np.array(e_sum), np.array(s_sum),
                           0.0))
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--draws", type=int, default=1000, help="draws per chain (4 chains)")
    p.add_argument("--parts", default="schools,hier,ar",
                   help="comma-separated subset of schools, hier, ar")
    a = p.parse_args()
    seeds = list(range(1, a.seeds + 1))
    parts = {"schools": eight_schools, "hier": hier, "ar": ar}
    rows = [r for name in a.parts.split(",") for r in parts[name.strip()](seeds, a.draws)]
    print(format_table(["check", "n", "mean |err|", "max |err|", "mean se", "within 2 se",
                        "seconds"], rows,
                       f"cross-validation beyond LOO vs exact values, {a.seeds} seeds"))


if __name__ == "__main__":
    main()
