"""Cross-validation benchmark: PSIS-LOO, its fix-ups and unbiased CV against closed forms.

    nice -n 10 python3 -m benchmarks.cv [--seed 1] [--splits 400] [--quick]

Problems (all with exact references; Rischard, Jacob & Pillai 2018 §3.3):

* stack loss (n = 21), linear regression with flat beta and p(sigma^2) ∝ 1/sigma^2: every
  leave-one-out predictive is a Student-t, so elpd_loo and the CV objective are exact (paper:
  CI [2.78, 2.82] for the objective);
* mammals (n = 62, log brain on log body, same model), n_T = 31: the log-score CV objective
  (paper: 33.97 ± 0.1) and the expected squared prediction error (paper: CI [32.79, 33.03]);
  references average the exact per-split values over 20,000 random splits (Monte Carlo se
  printed);
* normal mean with one far outlier (normal_mean.stan, normal_outlier.data.json): PSIS k-hat > 1.

Prints: the estimate, its se, the error against the reference, wall seconds and cost per fixed
point / per CV replicate; then the time of PSIS-LOO on 4,000 draws x 1,000 observations.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # shared box: one BLAS thread

import argparse  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
from scipy import stats  # noqa: E402

import stanlogz  # noqa: E402
from benchmarks._common import ROOT  # noqa: E402
from examples.loo_cross_validation import exact_log_predictive  # noqa: E402
from stanlogz import arviz_compat  # noqa: E402
from stanlogz.crossval.elpd.psis import psis_loo, relative_efficiency  # noqa: E402
from stanlogz.report.output import format_table  # noqa: E402

EX = ROOT / "stan_models" / "examples"
LINREG = EX / "linear_regression.stan"


def normal_loo_terms(d: dict) -> np.ndarray:
    y = np.asarray(d["y"], dtype=float)
    out = []
    for i in range(y.size):
        rest = np.delete(y, i)
        prec = 1 / d["prior_sd"] ** 2 + rest.size / d["sigma"] ** 2
        mean = rest.sum() / d["sigma"] ** 2 / prec
        out.append(stats.norm(mean, np.sqrt(1 / prec + d["sigma"] ** 2)).logpdf(y[i]))
    return np.array(out)


def loo_rows(name: str, model: object, data: object, exact: np.ndarray, seed: int,
             threshold: float | None) -> list[list]:
    rows = []
    draws = stanlogz.sample(model, seed=seed)
    for fix in ("none", "exact", "ups"):
        t0 = time.perf_counter()
        r = stanlogz.loo(model, data, draws=draws, fix=fix, seed=seed + 1, k_threshold=threshold)
        wall = time.perf_counter() - t0
        fixed = ", ".join(f"{f.index + 1}: {f.elpd:.3f}±{f.mcse:.3f} (exact {exact[f.index]:.3f},"
                          f" PSIS {f.psis_elpd:.3f})" for f in r.fixed) or "-"
        per_fix = (f"{np.mean([f.seconds for f in r.fixed]):.2f} s, "
                   f"{np.mean([f.n_gradient_evals + f.n_evals for f in r.fixed]):.0f} evals"
                   if r.fixed else "-")
        rows.append([name, f"psis+{fix}" if fix != "none" else "psis", r.elpd_loo, r.se,
                     r.elpd_loo - exact.sum(), round(float(r.khat.max()), 2), fixed, per_fix,
                     round(wall, 2)])
    return rows


def cv_row(name: str, model: object, data: object, n_valid: int, splits: int, truth: float,
           truth_se: float, seed: int, criterion: str = "log") -> list:
    t0 = time.perf_counter()
    c = stanlogz.cv(model, data, n_valid=n_valid, splits=splits, seed=seed, criterion=criterion)
    wall = time.perf_counter() - t0
    covered = c.ci[0] <= truth <= c.ci[1]
    return [name, n_valid, splits, c.estimate, c.estimate_mcse, f"[{c.ci[0]:.3f}, {c.ci[1]:.3f}]",
            f"{truth:.4f} ± {truth_se:.4f}", "yes" if covered else "NO",
            round(c.tail_k, 2), f"{(c.n_evals) / splits:.0f}", c.n_evals_tuning, round(wall, 1)]


def expected_squared_error(X: np.ndarray, y: np.ndarray, valid: list[int]) -> float:
    """E[sum_V (y_j - y_rep_j)^2 | y_T] for linear_regression.stan: sigma^2 | y_T is
    inverse-gamma((n_T - K)/2, RSS/2) and beta | sigma^2, y_T ~ N(b, sigma^2 (X_T'X_T)^-1)."""
    t = np.setdiff1d(np.arange(y.size), valid)
    xt, yt, xv, yv = X[t], y[t], X[valid], y[valid]
    b = np.linalg.lstsq(xt, yt, rcond=None)[0]
    e_s2 = float(np.sum((yt - xt @ b) ** 2)) / (t.size - X.shape[1] - 2)
    lev = np.einsum("ij,ij->i", xv, np.linalg.solve(xt.T @ xt, xv.T).T)
    return float(np.sum(e_s2 * (1 + lev) + (xv @ b - yv) ** 2))


def mammals_reference(X: np.ndarray, y: np.ndarray, n_valid: int, n_splits: int,
                      seed: int, criterion: str) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    splits = [sorted(rng.choice(y.size, n_valid, replace=False)) for _ in range(n_splits)]
    if criterion == "log":
        vals = [-exact_log_predictive(X, y, v) for v in splits]
    else:
        vals = [expected_squared_error(X, y, v) for v in splits]
    return float(np.mean(vals)), float(np.std(vals, ddof=1) / np.sqrt(n_splits))


def psis_speed(seed: int) -> list[list]:
    rng = np.random.default_rng(seed)
    mu = rng.normal(size=(4, 1000, 1))
    ll = stats.norm(mu, 1.0).logpdf(rng.normal(size=1000)).reshape(4000, 1000)
    t0 = time.perf_counter()
    ours = psis_loo(ll, r_eff=relative_efficiency(mu))  # ArviZ's r_eff, as az.loo uses
    t_ours = time.perf_counter() - t0
    idata = arviz_compat.from_dict({"posterior": {"mu": mu[..., 0]},
                                    "log_likelihood": {"y": ll.reshape(4, 1000, 1000)}})
    t0 = time.perf_counter()
    ref = arviz_compat.loo(idata)
    t_az = time.perf_counter() - t0
    return [["stanlogz psis_loo", round(t_ours, 3), ours.elpd_i.sum()],
            [f"arviz {arviz_compat.arviz().__version__} loo", round(t_az, 3), ref["elpd"]]]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--splits", type=int, default=400)
    ap.add_argument("--quick", action="store_true", help="fewer splits, no mammals CV")
    args = ap.parse_args()
    splits = 100 if args.quick else args.splits

    stack = json.loads((EX / "stackloss.data.json").read_text())
    xs, ys = np.asarray(stack["X"]), np.asarray(stack["y"])
    stack_exact = np.array([exact_log_predictive(xs, ys, [i]) for i in range(stack["N"])])
    stack_model = stanlogz.StanModel.from_file(LINREG, stack)
    outlier = json.loads((EX / "normal_outlier.data.json").read_text())
    normal_model = stanlogz.StanModel.from_file(EX / "normal_mean.stan", outlier)

    rows = loo_rows("stackloss (k>0.7)", stack_model, stack, stack_exact, args.seed, None)
    rows += loo_rows("stackloss (k>0.5)", stack_model, stack, stack_exact, args.seed, 0.5)
    rows += loo_rows("normal outlier", normal_model, outlier, normal_loo_terms(outlier),
                     args.seed, None)
    print(format_table(["problem", "method", "elpd_loo", "se", "error", "max k", "fixed points",
                        "per fix", "s"], rows,
                       title="PSIS-LOO and fix-ups against the closed form (error = estimate - "
                       "exact; PSIS se excludes its Monte Carlo error, as in loo/ArviZ)"))
    print()

    cv_rows = [cv_row("stackloss LOO", stack_model, stack, 1, splits, -stack_exact.mean(), 0.0,
                      args.seed)]
    if not args.quick:
        mam = json.loads((EX / "mammals.data.json").read_text())
        xm, ym = np.asarray(mam["X"]), np.asarray(mam["y"])
        mam_model = stanlogz.StanModel.from_file(LINREG, mam)
        for crit in ("log", "squared_error"):
            ref, ref_se = mammals_reference(xm, ym, 31, 20000, args.seed, crit)
            cv_rows.append(cv_row(f"mammals n_T=31 {crit}", mam_model, mam, 31, splits, ref,
                                  ref_se, args.seed, crit))
    print(format_table(["problem", "n_V", "splits", "cv", "mc se", "95% CI", "reference",
                        "covers", "tail k", "evals/rep", "tuning evals", "s"], cv_rows,
                       title="Unbiased CV against closed forms; Rischard, Jacob & Pillai (2018): "
                       "stack loss CI [2.78, 2.82]; mammals log score 33.97 ± 0.1, squared error "
                       "[32.79, 33.03]"))
    print()
    print(format_table(["PSIS-LOO, 4000 draws x 1000 observations", "seconds", "elpd"],
                       psis_speed(args.seed)))


if __name__ == "__main__":
    main()
