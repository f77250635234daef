"""PSIS-LOO at real data sizes: wall time beyond NUTS, peak memory and accuracy.

For simulated logistic and Poisson regressions (3 coefficients) with N observations, each case
runs in a fresh subprocess (so its peak resident memory is its own):

* ``log_lik``: the program has a ``log_lik`` generated quantity (the pointwise values come with
  the draws, as ArviZ / loo users have them);
* ``density``: no ``log_lik``; stanlogz builds the pointwise log-likelihood from the program's
  density on one-observation data instances (O(N·S)), after its validity check;
* ``subsample``: no ``log_lik``, PSIS on ``--m`` observations drawn at random (difference
  estimator around the posterior-mean approximation).

The reference is PSIS on the exact log-likelihood matrix computed in numpy from the draws
(closed-form Bernoulli / Poisson terms), so "err" is what the pointwise machinery adds (should
be ~1e-9), or for ``subsample`` the subsampling error, shown beside its se.

    python3 -m benchmarks.loo_scale                       # N in 100, 1k, 3k, 10k (+100k subsample)
    python3 -m benchmarks.loo_scale --n 100 1000 --families logistic
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import subprocess
import sys
import time

import numpy as np

PROGRAM = """
data {{
  int<lower=1> N;
  vector[N] x1;
  vector[N] x2;
  array[N] int<lower=0{upper}> y;
}}
parameters {{
  real alpha;
  real b1;
  real b2;
}}
model {{
  alpha ~ normal(0, 2.5);
  b1 ~ normal(0, 1);
  b2 ~ normal(0, 1);
  y ~ {family}(alpha + b1 * x1 + b2 * x2);
}}
{gq}
"""
GQ = """generated quantities {{
  vector[N] log_lik;
  for (n in 1:N) log_lik[n] = {family}_lpmf(y[n] | alpha + b1 * x1[n] + b2 * x2[n]);
}}"""
FAMILIES = {"logistic": ("bernoulli_logit", ", upper=1"), "poisson": ("poisson_log", "")}


def simulate(family: str, n: int, seed: int = 1) -> dict:
    rng = np.random.default_rng(seed)
    x1, x2 = rng.normal(size=n), rng.normal(size=n)
    eta = 0.2 + 0.8 * x1 - 0.5 * x2
    y = ((rng.random(n) < 1 / (1 + np.exp(-eta))).astype(int) if family == "logistic"
         else rng.poisson(np.exp(eta)))
    return {"N": n, "x1": x1.round(5).tolist(), "x2": x2.round(5).tolist(), "y": y.tolist()}


def exact_log_lik(family: str, data: dict, coef: np.ndarray) -> np.ndarray:
    from scipy.special import gammaln

    x1, x2, y = (np.asarray(data[k], dtype=float) for k in ("x1", "x2", "y"))
    eta = coef[:, :1] + coef[:, 1:2] * x1 + coef[:, 2:3] * x2
    if family == "logistic":
        return y * eta - np.logaddexp(0.0, eta)
    return y * eta - np.exp(eta) - gammaln(y + 1)


def one_case(family: str, n: int, mode: str, m: int, draws: int) -> dict:
    """Runs in a subprocess: NUTS, then loo, timed; peak memory from getrusage."""
    import arviz  # noqa: F401  (imported before the clock starts: a one-off ~1-2 s)

    from stanlogz.crossval import loo
    from stanlogz.crossval.elpd.psis import psis_loo, relative_efficiency
    from stanlogz.crossval.psis_loo.loo import _posterior_values
    from stanlogz.draws import sample
    from stanlogz.stan.model import StanModel

    fam, upper = FAMILIES[family]
    code = PROGRAM.format(family=fam, upper=upper,
                          gq=GQ.format(family=fam) if mode == "log_lik" else "")
    data = simulate(family, n)
    model = StanModel.from_code(code, data, name=f"{family}_{mode == 'log_lik'}")
    t = time.perf_counter()
    d = sample(model, chains=4, warmup=draws, draws=draws, seed=1)
    nuts_s = time.perf_counter() - t
    t = time.perf_counter()
    r = loo(model, data, draws=d, fix="none", subsample=m if mode == "subsample" else None,
            seed=2)
    loo_s = time.perf_counter() - t
    coef = d.constrained.reshape(-1, d.constrained.shape[2])[:, :3]
    r_eff = relative_efficiency(_posterior_values(d))
    ref_elpd = 0.0
    for a in range(0, n, 1000):  # blocks of columns: the whole matrix is 3.2 GB at N = 100k
        block = {k: data[k][a:a + 1000] for k in ("x1", "x2", "y")}
        ref_elpd += float(psis_loo(exact_log_lik(family, block, coef), r_eff).elpd_i.sum())
    return {"family": family, "n": n, "mode": mode, "nuts_s": nuts_s, "loo_s": loo_s,
            "pointwise_s": r.pointwise_seconds, "elpd": r.elpd_loo, "se": r.se,
            "mcse": r.mcse_elpd_loo, "sub_se": r.subsampling_se, "err": r.elpd_loo - ref_elpd,
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, nargs="+", default=[100, 1000, 3000, 10000])
    ap.add_argument("--big", type=int, default=100000, help="N run with subsampling only")
    ap.add_argument("--m", type=int, default=1000, help="subsample size")
    ap.add_argument("--draws", type=int, default=1000, help="warmup and draws per chain")
    ap.add_argument("--families", nargs="+", default=list(FAMILIES))
    ap.add_argument("--case", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.case:
        family, n, mode = args.case.split(":")
        print(json.dumps(one_case(family, int(n), mode, args.m, args.draws)))
        return
    cases = [(f, n, mode) for f in args.families for n in args.n
             for mode in ("log_lik", "density")]
    cases += [(f, args.big, "subsample") for f in args.families if args.big]
    rows = []
    for f, n, mode in cases:
        out = subprocess.run([sys.executable, __file__, "--case", f"{f}:{n}:{mode}",
                              "--m", str(args.m), "--draws", str(args.draws)],
                             capture_output=True, text=True)
        if out.returncode:
            why = out.stderr.strip().splitlines()[-1:] or [f"exit status {out.returncode}"]
            print(f"{f} {n} {mode}: failed: {why[0]}", file=sys.stderr)
            continue
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
        r = rows[-1]
        print(f"{f:9s} N={n:<7d} {mode:9s} NUTS {r['nuts_s']:7.1f} s  loo {r['loo_s']:6.2f} s  "
              f"peak {r['peak_mb']:6.0f} MB  elpd {r['elpd']:.2f}  err {r['err']:.2e}",
              file=sys.stderr, flush=True)
    print("| family | N | pointwise | NUTS s | loo s (beyond NUTS) | peak MB | elpd_loo | se | "
          "MC se | subsampling se | err vs exact-matrix PSIS |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['family']} | {r['n']:,} | {r['mode']} | {r['nuts_s']:.1f} | "
              f"{r['loo_s']:.2f} | {r['peak_mb']:.0f} | {r['elpd']:.2f} | {r['se']:.2f} | "
              f"{r['mcse']:.3f} | {r['sub_se']:.3f} | {r['err']:.1e} |")
    if rows:
        print(f"\n(err of a full run should be rounding, |err| < 1e-6: "
              f"{all(abs(r['err']) < 1e-6 for r in rows if r['mode'] != 'subsample')}; "
              f"subsample |err| / hypot(subsampling se, MC se) = "
              + ", ".join(f"{abs(r['err']) / math.hypot(r['sub_se'], r['mcse']):.2f}"
                          for r in rows if r["mode"] == "subsample") + ")")


if __name__ == "__main__":
    main()
