"""Coverage of the Monte Carlo se of leave-one-group-out's observation values
log p(y_i | y₋g(i)), computed at 400 weight-stratified draws per group
(stanlogz.crossval.logo.obs_sample).

* ``picks``: the Poisson random intercept benchmarks/data/logo_pri.stan (30 groups of 5), one
  NUTS run (4 x 1000 draws); its values at every draw (the brute-force estimate the subsample
  replaces) against ``--seeds`` subsamples of the same draws. The subsample's own error is
  estimate − brute force; its se is the reported mcse less the PSIS part in quadrature
  (the brute force's own mcse). Rows: share within ±2 se of that part and of the whole
  reported mcse, and sd(error) / rms(se).
* ``exact``: hier_regression.stan (Gaussian, every scale known: exact p(y_i | y₋g(i)) by
  Gaussian conditioning), ``--seeds`` NUTS runs; estimate − exact against the reported mcse
  (PSIS and subsample together).

    nice python3 -m benchmarks.logo_obs_coverage --seeds 20
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from benchmarks._common import ROOT, STAN_MODELS
from benchmarks.truths.crossval.truths import gaussian_heldout, hier_regression_cov
from stanlogz.crossval.logo import estimator
from stanlogz.crossval.logo.estimator import logo
from stanlogz.draws import obtain_draws
from stanlogz.stan.model import StanModel


def _row(name: str, err: np.ndarray, se: np.ndarray, what: str) -> str:
    ok = np.isfinite(se) & (se > 0)
    e, s = err[ok], se[ok]
    return (f"| {name} | {what} | {e.size} | {np.mean(np.abs(e) < 2 * s):.3f} | "
            f"{np.std(e) / np.sqrt(np.mean(s**2)):.2f} | {np.mean(s):.4f} |")


def picks(seeds: int) -> list[str]:
    """Subsample against every draw, on one set of draws."""
    data = json.loads((ROOT / "benchmarks" / "data" / "logo_pri.json").read_text())
    m = StanModel.from_file(ROOT / "benchmarks" / "data" / "logo_pri.stan", data)
    d = obtain_draws(m, None, None, seed=1)
    keep = estimator.OBS_DRAWS
    estimator.OBS_DRAWS = 10**9  # every draw: the brute-force values
    try:
        brute = logo(m, data, group="grp", draws=d, seed=1)
    finally:
        estimator.OBS_DRAWS = keep
    err, se_all, se_pick = [], [], []
    for s in range(seeds):
        r = logo(m, data, group="grp", draws=d, seed=100 + s)
        err.append(r.elpd_obs - brute.elpd_obs)
        se_all.append(r.mcse_obs)
        se_pick.append(np.sqrt(np.maximum(r.mcse_obs**2 - brute.mcse_obs**2, 0.0)))
    e = np.concatenate(err)
    return [_row("pri (30 x 5 Poisson)", e, np.concatenate(se_pick), "subsample part"),
            _row("pri (30 x 5 Poisson)", e, np.concatenate(se_all), "reported mcse")]


def exact(seeds: int) -> list[str]:
    """Every observation value against Gaussian conditioning, over NUTS runs."""
    path = STAN_MODELS / "examples"
    data = json.loads((path / "hier_regression.data.json").read_text())
    m = StanModel.from_file(path / "hier_regression.stan", data)
    cov, y = hier_regression_cov(data), np.asarray(data["y"])
    err, se = [], []
    for s in range(seeds):
        r = logo(m, data, group="g", seed=2000 + s)
        for g in r.groups:
            if g.method == "refit":
                continue
            train = np.setdiff1d(np.arange(y.size), g.rows)
            want = np.array([gaussian_heldout(y, cov, [i], train) for i in g.rows])
            err.append(r.elpd_obs[g.rows] - want)
            se.append(r.mcse_obs[g.rows])
    return [_row("hier_regression (exact)", np.concatenate(err), np.concatenate(se),
                 "reported mcse")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--cases", default="picks,exact")
    args = ap.parse_args()
    print("| program | against | values | within ±2 se | sd(error) / rms(se) | mean se |")
    print("|---|---|---|---|---|---|")
    t0 = time.process_time()
    for name in args.cases.split(","):
        for line in {"picks": picks, "exact": exact}[name](args.seeds):
            print(line, flush=True)
    print(f"\n{time.process_time() - t0:.0f} CPU s")


if __name__ == "__main__":
    main()
