"""Non-factorized LOO where the density is not Gaussian in y_i
(stanlogz.crossval.observations.nonfactorized):
cost and accuracy of log p(y_i | y_-i, theta) by quadrature over y_i or a sum over its integer
support, and coverage of the Monte Carlo se of elpd_loo against exact leave-one-out values.

Table 1 (per program, at posterior draws from a short NUTS run): how many observations take
each route, mean density instances (nodes) per observation, wall seconds per observation per
1000 draws (STANLOGZ_THREADS threads), the largest reported error bound, and the largest
disagreement with an independent numpy/scipy computation (scipy quad, or an exact numpy sum) on
a few observations and draws (benchmarks.truths.crossval.truths_nonfactorized).

Table 2: PSIS-LOO of the Poisson autoregression (integer y_t entering the rate of y_{t+1}) over
replicates (new data and NUTS seed each) against the exact elpd_loo by grid quadrature over its
two parameters; z = (estimate - truth) / se for the se loo reports (mcse_elpd_loo) and for the
delta-method se of the sum (stanlogz.crossval.psis_loo.sum_mcse); share |z| <= 2 should be >= 90%.

    PYTHONPATH=. python3 benchmarks/loo_nonfactorized.py          # quick: 20 replicates
    PYTHONPATH=. python3 benchmarks/loo_nonfactorized.py --full   # 100 replicates, longer series
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from scipy import special

from benchmarks.truths.crossval import truths_nonfactorized as T
from stanlogz.crossval.observations.nonfactorized import NonFactorizedSource
from stanlogz.crossval.observations.observations import find_observations
from stanlogz.crossval.psis_loo.loo import loo
from stanlogz.crossval.psis_loo.sum_mcse import sum_mcse
from stanlogz.draws import sample
from stanlogz.stan.model import StanModel
from stanlogz.stan.settings import NutsArgs

TESTS = Path(__file__).resolve().parents[1] / "stan_models" / "tests"


def _truth(name: str, data: dict, model: StanModel, x: np.ndarray, i: int) -> float:
    """Independent log p(y_i | y_-i, theta) at one unconstrained draw ``x``."""
    c = dict(zip(model.param_names(), model.constrain_many(x[None, :])[0], strict=True))
    y = np.array(data["y"])
    if name == "garch_like":
        p = {k: c[k] for k in ("mu", "alpha0", "alpha1", "beta1")}
        return T.quad_conditional(lambda z: T.garch_loglik(z, p, data["sigma1"]), y, i)
    if name == "hmm_gauss":
        p = {"theta": [[c["theta.1.1"], c["theta.1.2"]], [c["theta.2.1"], c["theta.2.2"]]],
             "mu": [c["mu.1"], c["mu.2"]]}
        return T.quad_conditional(lambda z: T.hmm_loglik(z, p), y, i)
    us = np.arange(0, int(3 * y.max() + 200))
    z = np.repeat(y[None, :], us.size, axis=0)
    z[:, i] = us
    return float(T.par_loglik(y, c["alpha"], c["beta"])[0]
                 - special.logsumexp(T.par_loglik(z, c["alpha"], c["beta"])))


def cost_table(n: int, draws: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    cases = [("garch_like", T.garch_data(n, rng), "T"), ("hmm_gauss", T.hmm_data(n, rng), "N"),
             ("poisson_ar", T.par_data(n, rng), "T")]
    head = (f"{'program':11} {'N':>4} {'S':>5} {'gauss':>5} {'numeric':>7} {'nodes':>6} "
            f"{'s/obs/1k draws':>14} {'max bound':>9} {'max |err|':>9}")
    print(head)
    print("-" * len(head))
    for name, data, size in cases:
        model = StanModel.from_file(TESTS / f"{name}.stan", data)
        d = sample(model, NutsArgs(chains=1, warmup=300, draws=draws), seed=seed)
        unc = d.flat_unconstrained()
        src = NonFactorizedSource(model, data, find_observations(data, size))
        t0 = time.perf_counter()
        src.matrix(unc)
        secs = time.perf_counter() - t0
        numeric = np.flatnonzero([m in ("quadrature", "sum") for m in src.method])
        check = np.unique(np.linspace(0, n - 1, 4).astype(int))
        rows = np.unique(np.linspace(0, unc.shape[0] - 1, 3).astype(int))
        got = src.columns(check, unc[rows])
        err = max(abs(got[a, b] - _truth(name, data, model, unc[r], int(i)))
                  for a, r in enumerate(rows) for b, i in enumerate(check))
        bound = float(np.max(src.quad.error[numeric])) if numeric.size else 0.0
        nodes = float(np.mean(src.quad.nodes[numeric])) if numeric.size else 0.0
        print(f"{name:11} {n:4d} {unc.shape[0]:5d} {n - numeric.size:5d} {numeric.size:7d} "
              f"{nodes:6.0f} {secs / n * 1000 / unc.shape[0]:14.3f} {bound:9.1e} {err:9.1e}",
              flush=True)


def coverage_table(reps: int, n: int, seed: int) -> None:
    nuts = NutsArgs(chains=4, warmup=300, draws=500)
    head = (f"{'program':11} {'N':>4} {'reps':>4} {'mean err':>9} {'rms z':>6} {'cover':>6} "
            f"{'rms zj':>6} {'cover joint':>11} {'max k':>6} {'s/run':>6}")
    print(head)
    print("-" * len(head))
    rng = np.random.default_rng([seed, 7])
    model = None
    z, zj, errs, kmax, secs = [], [], [], [], []
    for r in range(reps):
        data = T.par_data(n, rng)
        model = (StanModel.from_file(TESTS / "poisson_ar.stan", data) if model is None
                 else model.with_data(data))
        t0 = time.perf_counter()
        res = loo(model, data, obs="T", fix="none", seed=1000 * seed + r, settings=nuts)
        secs.append(time.perf_counter() - t0)
        err = float(res.elpd_loo - np.sum(T.par_exact_loo(data)))
        src = NonFactorizedSource(model, data, res.observations)
        unc = res.draws.unconstrained
        ll = src.matrix(unc.reshape(-1, unc.shape[2])).reshape(unc.shape[0], unc.shape[1], -1)
        errs.append(err)
        z.append(err / res.mcse_elpd_loo)
        zj.append(err / sum_mcse(ll))
        kmax.append(float(res.khat.max()))
    z_a, zj_a = np.array(z), np.array(zj)
    print(f"{'poisson_ar':11} {n:4d} {reps:4d} {np.mean(errs):+9.4f} "
          f"{np.sqrt(np.mean(z_a**2)):6.2f} {np.mean(np.abs(z_a) <= 2):6.0%} "
          f"{np.sqrt(np.mean(zj_a**2)):6.2f} {np.mean(np.abs(zj_a) <= 2):11.0%} "
          f"{max(kmax):6.2f} {np.mean(secs):6.1f}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--full", action="store_true", help="100 replicates, N = 100 series")
    ap.add_argument("--reps", type=int, default=None)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    reps = args.reps or (100 if args.full else 20)
    n_cost = 100 if args.full else 40
    print(f"log p(y_i | y_-i, theta) by quadrature / sums: N = {n_cost}, NUTS 1 x 400 draws")
    cost_table(n_cost, 400, args.seed)
    print()
    n_cov = 30 if args.full else 15
    print(f"PSIS-LOO coverage against the exact elpd_loo: {reps} replicates, NUTS 4 x 500")
    coverage_table(reps, n_cov, args.seed)


if __name__ == "__main__":
    main()
