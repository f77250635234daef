"""Bayes factors you can defend: coverage of every standard error the tools report, and their
cost relative to one evidence run.

    PYTHONPATH=$PWD python3 benchmarks/bayes_factor_tools.py            # --quick, a few minutes
    PYTHONPATH=$PWD python3 benchmarks/bayes_factor_tools.py --full     # more seeds

Tables:
1. sensitivity on the conjugate normal (stan_models/tests/normal.stan, closed forms) and the
   one-coefficient logistic regression with a student-t prior (bf_logistic.stan, quadrature):
   for each reported quantity, the fraction of seeds whose |estimate − truth| <= 2 se and 3 se;
2. Savage–Dickey on the regression with nuisance parameters (bf_regression.stan, 1-D
   quadrature truth): the same coverage;
3. calibration of the point-null vs normal-prior pair over 200 simulations, right and with a
   wrong prior scale in the simulations, with the largest |log BF − closed form|;
4. seconds of each tool against one `evidence` run (NUTS + gbs) on the same program.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from benchmarks.truths.bayes_factors.truths import (
    LogisticQuadrature,
    calibration_log_bf,
    derivative,
    normal_elpd_loo,
    normal_log_z,
    regression_log_bf01,
)
from stanlogz import evidence
from stanlogz.bayes_factors.calibrate import calibrate
from stanlogz.bayes_factors.savage_dickey import savage_dickey
from stanlogz.bayes_factors.sensitivity import sensitivity
from stanlogz.stan.model import StanModel

T = Path(__file__).resolve().parents[1] / "stan_models" / "tests"


def _table(title: str, header: list[str], rows: list[list]) -> None:
    print(f"\n{title}")
    w = [max(len(str(h)), *(len(f"{r[i]}") for r in rows)) for i, h in enumerate(header)]
    print("  ".join(str(h).rjust(w[i]) for i, h in enumerate(header)))
    for r in rows:
        print("  ".join(f"{v}".rjust(w[i]) for i, v in enumerate(r)))


def sensitivity_coverage(name: str, data: dict, log_z, elpd, seeds: int) -> None:
    model = StanModel.from_file(T / f"{name}.stan", data)
    z: dict[str, list[float]] = {}
    by_khat: dict[str, list[float]] = {}
    refused: dict[str, int] = {}
    t0 = time.perf_counter()
    for seed in range(seeds):
        r = sensitivity(model, data, seed=1000 + seed)
        truths = {"log_z": log_z, "elpd_loo": elpd}
        for q, f in truths.items():
            for power, s in r.quantities[q].items():
                sc = (lambda a, f=f: f(a, 1.0)) if power == "prior" else (
                    lambda b, f=f: f(1.0, b))
                z.setdefault(f"{q} {power} d/dlog", []).append(
                    (s.derivative - derivative(sc)) / s.derivative_se)
                for key, v in s.at.items():
                    label = f"{q} {power} at {key}"
                    if v["how"] == "refused":
                        refused[label] = refused.get(label, 0) + 1
                        continue
                    z.setdefault(label, []).append((v["value"] - sc(float(key))) / v["se"])
                    if v["how"] == "reweighting":  # by the k̂ of the plain weights
                        band = ("k-hat <= 0.5" if v["khat"] <= 0.5 else "k-hat in (0.5, 0.7]"
                                if v["khat"] <= 0.7 else "k-hat > 0.7")
                        by_khat.setdefault(f"{q} reweighted, {band}", []).append(z[label][-1])
        z.setdefault("elpd_loo at 1", []).append((r.elpd_loo - elpd(1.0, 1.0)) / r.elpd_loo_se)
    rows = []
    for label, zs in z.items():
        a = np.abs(np.asarray(zs))
        rows.append([label, len(zs), refused.get(label, 0), f"{np.mean(a <= 2):.3f}",
                     f"{np.mean(a <= 3):.3f}", f"{np.mean(zs):+.2f}"])
    _table(f"sensitivity se coverage, {name} ({seeds} seeds, 4x1000 draws, "
           f"{time.perf_counter() - t0:.0f} s)",
           ["quantity", "n", "refused", "cover 2se", "cover 3se", "mean z"], rows)
    rows = []
    for label, zs in sorted(by_khat.items()):
        a = np.abs(np.asarray(zs))
        rows.append([label, len(zs), f"{np.mean(a <= 2):.3f}", f"{np.mean(a <= 3):.3f}",
                     f"{np.mean(zs):+.2f}"])
    _table(f"the reweighted values of {name} by their weights' k-hat",
           ["values", "n", "cover 2se", "cover 3se", "mean z"], rows)


def savage_dickey_coverage(seeds: int, nulls: tuple[float, ...] = (0.3, 0.6, 0.9)) -> None:
    d = json.loads((T / "bf_regression.json").read_text())
    model = StanModel.from_file(T / "bf_regression.stan", d)
    rows = []
    by_khat: dict[str, list[float]] = {}
    for b0 in nulls:
        truth = regression_log_bf01(d, b0)
        zs, ses, refused = [], [], 0
        for seed in range(seeds):
            r = savage_dickey(model, d, at={"beta": b0}, seed=2000 + seed)
            k = max(r.posterior.khat, r.prior.khat)
            band = ("k-hat <= 0.5" if k <= 0.5 else "k-hat in (0.5, 0.7]" if k <= 0.7
                    else "k-hat > 0.7")
            if not np.isfinite(r.se):
                refused += 1
                continue
            zs.append((r.log_bf01 - truth) / r.se)
            by_khat.setdefault(band, []).append(zs[-1])
            ses.append(r.se)
        a = np.abs(np.asarray(zs))
        rows.append([f"beta={b0}", f"{truth:.4f}", len(zs), refused,
                     f"{np.mean(ses):.4f}" if ses else "-",
                     f"{np.mean(a <= 2):.3f}" if zs else "-",
                     f"{np.mean(a <= 3):.3f}" if zs else "-",
                     f"{np.mean(zs):+.2f}" if zs else "-"])
    _table("Savage-Dickey log BF01 se coverage, bf_regression (alpha, sigma nuisance)",
           ["null", "truth", "n", "refused", "mean se", "cover 2se", "cover 3se", "mean z"],
           rows)
    rows = [[band, len(zs), f"{np.mean(np.abs(zs) <= 2):.3f}", f"{np.mean(np.abs(zs) <= 3):.3f}",
             f"{np.mean(zs):+.2f}"] for band, zs in sorted(by_khat.items())]
    _table("Savage-Dickey by the larger k-hat of its two sides' density weights",
           ["values", "n", "cover 2se", "cover 3se", "mean z"], rows)


def calibration(n_sims: int) -> None:
    rows = []
    for label, sim in (("right", "bf_normal_prior_sim"),
                       ("wrong prior scale (sim mu ~ N(0, 0.3^2))", "bf_normal_prior_sim_wrong")):
        t0 = time.perf_counter()
        r = calibrate([T / "bf_point_null.stan", T / "bf_normal_prior.stan"],
                      [T / "bf_point_null_sim.stan", T / f"{sim}.stan"],
                      T / "bf_calibrate.json", n_sims=n_sims, seed=29, n_workers=1, chains=2,
                      warmup=300, draws=500)
        err = max(abs(s["log_z"][1] - s["log_z"][0] - calibration_log_bf(s["data"]))
                  for s in r.simulations)
        s = r.summary
        rows.append([label, n_sims, f"{s.mean_post_prob[1]:.3f} ± {s.mean_post_prob_se[1]:.3f}",
                     f"{s.z[1]:+.2f}", "passes" if s.passed else "FAILS", f"{err:.4f}",
                     f"{100 * s.decisive_wrong_rate:.1f}%", f"{time.perf_counter() - t0:.0f}"])
    _table("calibration: point null vs normal prior (prior probs 0.5, 0.5)",
           ["simulations", "n", "mean P(alt|y)", "z", "check", "max |logBF err|",
            "decisive wrong", "seconds"], rows)


def costs() -> None:
    d = json.loads((T / "bf_regression.json").read_text())
    model = StanModel.from_file(T / "bf_regression.stan", d)
    rows = []

    def timed(label: str, fn) -> float:
        t0 = time.perf_counter()
        fn()
        dt = time.perf_counter() - t0
        rows.append([label, f"{dt:.2f}"])
        return dt

    base = timed("evidence (NUTS 4x1000 + gbs)", lambda: evidence(model, seed=1))
    timed("sensitivity (2 fits, gbs, PSIS, Cauchy IS)", lambda: sensitivity(model, d, seed=1))
    timed("savage-dickey beta=0.6 (2 fits, quadrature)",
          lambda: savage_dickey(model, d, at={"beta": 0.6}, seed=1))
    timed("savage-dickey beta=0 --null (4 fits)",
          lambda: savage_dickey(model, d, at={"beta": 0.0}, seed=1,
                                null=T / "bf_regression_null.stan"))
    timed("calibrate point-null pair, 20 sims, 1 worker",
          lambda: calibrate([T / "bf_point_null.stan", T / "bf_normal_prior.stan"],
                            [T / "bf_point_null_sim.stan", T / "bf_normal_prior_sim.stan"],
                            T / "bf_calibrate.json", n_sims=20, seed=1, n_workers=1))
    for r in rows:
        r.append(f"{float(r[1]) / base:.1f}")
    _table("cost relative to one evidence run of bf_regression (calibrate: its own pair)",
           ["tool", "seconds", "x evidence"], rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--full", action="store_true", help="more seeds (about 10x longer)")
    ap.add_argument("--only", choices=["sensitivity", "savage-dickey", "calibrate", "cost"],
                    default=None, help="run one part only")
    ap.add_argument("--nulls", type=float, nargs="+", default=[0.3, 0.6, 0.9],
                    help="Savage-Dickey's null values of beta")
    args = ap.parse_args()
    k = 5 if args.full else 1
    part = lambda name: args.only in (None, name)  # noqa: E731
    if part("sensitivity"):
        normal = json.loads((T / "normal.json").read_text())
        sensitivity_coverage("normal", normal, lambda a, b: normal_log_z(normal, a, b),
                             lambda a, b: normal_elpd_loo(normal, a, b), 40 * k)
        logistic = json.loads((T / "bf_logistic.json").read_text())
        q = LogisticQuadrature(logistic)
        sensitivity_coverage("bf_logistic", logistic, q.log_z, q.elpd_loo, 30 * k)
    if part("savage-dickey"):
        savage_dickey_coverage(20 * k, tuple(args.nulls))
    if part("calibrate"):
        calibration(200)
    if part("cost"):
        costs()


if __name__ == "__main__":
    main()
