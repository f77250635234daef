"""UPS benchmark: logistic regression of Rischard, Jacob & Pillai (2018, §3.2.1).

    nice -n 10 python3 -m benchmarks.ups [--replicates 100] [--workers 2] [--quick] [--stan]

n = 1000, p = 7, covariates N(0, 1), beta* = (0, 0.1, ..., 0.6), prior N(0, 10 I) (synthetic data,
fixed seed). UPS runs along the geometric path Laplace → posterior with coupled RWMH
(reflection-maximal coupling, proposal covariance V/p, chains started from the Laplace
approximation), in two tunings:

* ``paper``: k, m from pilot meeting times at the path's ends (eq. 11, m ≈ 5k), q uniform;
* ``tuned``: the full §2.4.3 procedure (10-interval grid, per-lambda moments, q ∝ sqrt(m2)).

References: the Laplace approximation, importance sampling from the Laplace Gaussian (many draws,
vectorized) and GBS on posterior draws from a long HMC run. With ``--stan`` the same model is
compiled as a Stan program and UPS runs on it too. Evaluations count log-density (UPS: path)
evaluations plus gradient evaluations.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # shared box: one BLAS thread

import argparse  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
from scipy import special  # noqa: E402

from stanlogz.densities.fits import laplace_base  # noqa: E402
from stanlogz.estimators.ups.ups import ups, ups_estimate  # noqa: E402
from stanlogz.mcmc import hmc  # noqa: E402
from stanlogz.mcmc.paths import base_to_target_path  # noqa: E402
from stanlogz.report.output import format_table  # noqa: E402

N, P, PRIOR_VAR = 1000, 7, 10.0
BETA_STAR = np.arange(P) / 10.0

STAN_CODE = """
data { int<lower=0> n; int<lower=1> p; matrix[n, p] X; array[n] int<lower=0, upper=1> y; }
parameters { vector[p] beta; }
model { beta ~ normal(0, sqrt(10)); y ~ bernoulli_logit(X * beta); }
"""


class LogisticTarget:
    """Log posterior (prior normalized, likelihood exact) of Bayesian logistic regression."""

    def __init__(self, X: np.ndarray, y: np.ndarray) -> None:
        self.X, self.y = X, y.astype(float)
        self._c = -0.5 * P * math.log(2 * math.pi * PRIOR_VAR)

    @property
    def dim(self) -> int:
        return P

    def log_density_many(self, bs: np.ndarray) -> np.ndarray:
        bs = np.atleast_2d(bs)
        eta = bs @ self.X.T
        ll = eta @ self.y - np.logaddexp(0.0, eta).sum(axis=1)
        return ll + self._c - 0.5 * np.sum(bs**2, axis=1) / PRIOR_VAR

    def log_density(self, b: np.ndarray) -> float:
        eta = self.X @ b
        return float(eta @ self.y - np.logaddexp(0.0, eta).sum()
                     + self._c - 0.5 * (b @ b) / PRIOR_VAR)

    def log_density_gradient(self, b: np.ndarray) -> tuple[float, np.ndarray]:
        eta = self.X @ b
        lp = eta @ self.y - np.logaddexp(0.0, eta).sum() + self._c - 0.5 * (b @ b) / PRIOR_VAR
        return float(lp), self.X.T @ (self.y - special.expit(eta)) - b / PRIOR_VAR


def make_data(seed: int = 2018) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((N, P))
    y = (rng.uniform(size=N) < special.expit(X @ BETA_STAR)).astype(int)
    return X, y


def importance_sampling(target, base, n: int, seed: int) -> tuple[float, float, int, float]:
    """log Z by IS from the base Gaussian, with a delta-method standard error."""
    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    lw = []
    for _ in range(n // 20000):
        xs = base.sample(rng, 20000)
        lw.append(target.log_density_many(xs) - base.log_density_many(xs))
    lw = np.concatenate(lw)
    mx = lw.max()
    w = np.exp(lw - mx)
    est = mx + math.log(w.mean())
    se = w.std(ddof=1) / math.sqrt(w.size) / w.mean()
    return est, se, lw.size, time.perf_counter() - t0


def hmc_draws(target, base, seed: int, chains: int = 4, n: int = 2000) -> tuple[np.ndarray, int]:
    """Posterior draws from long HMC runs (metric from the Laplace covariance), warmup dropped."""
    rng = np.random.default_rng(seed)
    inv_metric = np.diag(base.cov)
    out = []
    for _ in range(chains):
        s = hmc.init(base.sample(rng, 1)[0], target.log_density_gradient)
        xs = []
        for i in range(n + 500):
            s, _ = hmc.step(rng, s, target.log_density_gradient, 0.25, 6, inv_metric)
            if i >= 500:
                xs.append(s.position)
        out.append(xs)
    return np.array(out), chains * (n + 500) * 6


def run_ups(path, base, name: str, args, **kw) -> list:
    t0 = time.perf_counter()
    r = ups(path, n_replicates=args.replicates, seed=args.seed, n_workers=args.workers,
            kernel="rwmh", coupling="reflection", **kw)
    wall = time.perf_counter() - t0
    ms = r.meeting_summary()
    note = (f"k={int(r.k.max())} m={int(r.m.max())} tau q99={ms['q99']:.0f} "
            f"tuning evals={r.n_evals_tuning}")
    print(f"  {name}: {r.estimate:.4f} ± {r.se:.4f} [{r.ci[0]:.4f}, {r.ci[1]:.4f}] {wall:.1f}s",
          flush=True)
    return [name, r.estimate, r.se, r.ci[1] - r.ci[0], wall, r.n_evals + r.n_evals_tuning, note]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--replicates", type=int, default=100)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--quick", action="store_true", help="paper tuning only, fewer pilots")
    ap.add_argument("--stan", action="store_true", help="also run UPS on the Stan program")
    args = ap.parse_args()

    X, y = make_data()
    target = LogisticTarget(X, y)
    t0 = time.perf_counter()
    base, log_z_laplace = laplace_base(target, np.zeros(P))
    t_lap = time.perf_counter() - t0
    path = base_to_target_path(base, target)
    rows = [["laplace", log_z_laplace, float("nan"), float("nan"), t_lap, 0, "mode + FD Hessian"]]

    print("importance sampling reference ...", flush=True)
    n_is = 200_000 if args.quick else 1_000_000
    est, se, n, wall = importance_sampling(target, base, n_is, seed=7)
    rows.append(["IS (Laplace q)", est, se, 2 * 1.96 * se, wall, n, f"{n} draws"])

    print("UPS ...", flush=True)
    n_pilot = 50 if args.quick else 100
    rows.append(run_ups(path, base, "UPS paper", args, grid=[0.0, 1.0], n_pilot=n_pilot,
                        adapt=False, q="uniform"))
    if not args.quick:
        rows.append(run_ups(path, base, "UPS tuned", args, grid=10, n_pilot=50))

    try:
        from stanlogz.estimators.bridge.bridge import gbs
    except ImportError:
        gbs = None
    if gbs is not None:
        print("GBS on long-run HMC draws ...", flush=True)
        t0 = time.perf_counter()
        draws, n_hmc = hmc_draws(target, base, seed=3)
        t_hmc = time.perf_counter() - t0
        t0 = time.perf_counter()
        g = gbs(target, draws, seed=5)
        wall = time.perf_counter() - t0
        rows.append(["GBS", g.log_z, g.log_z_se, 2 * 1.96 * g.log_z_se, wall, g.n_evals,
                     f"+ HMC draws: {draws.shape[0]}x{draws.shape[1]}, {n_hmc} grads, "
                     f"{t_hmc:.1f}s"])
        if not args.quick:
            print("UPS registry adapter on the same draws ...", flush=True)
            t0 = time.perf_counter()
            u = ups_estimate(target, draws, seed=args.seed, n_replicates=args.replicates,
                             n_workers=args.workers)
            wall = time.perf_counter() - t0
            lo, hi = u.diagnostics["ci"]
            rows.append(["UPS adapter", u.log_z, u.log_z_se, hi - lo, wall, u.n_evals,
                         "draws-Gaussian base, defaults (grid 10, q tuned)"])

    if args.stan:
        from stanlogz.stan.model import StanModel

        print("Stan program ...", flush=True)
        t0 = time.perf_counter()
        model = StanModel.from_code(STAN_CODE, {"n": N, "p": P, "X": X.tolist(),
                                                "y": y.tolist()}, name="ups_logistic")
        print(f"  build/load {time.perf_counter() - t0:.1f}s; log density at 0: "
              f"stan {model.log_density(np.zeros(P)):.6f} python "
              f"{target.log_density(np.zeros(P)):.6f}", flush=True)
        sbase, _ = laplace_base(model, np.zeros(P))
        rows.append(run_ups(base_to_target_path(sbase, model), sbase, "UPS paper (Stan)", args,
                            grid=[0.0, 1.0], n_pilot=n_pilot, adapt=False, q="uniform"))

    print()
    load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
    print(f"load average at the end (1, 5, 15 min): {load} on {os.cpu_count()} cores")
    print(format_table(
        ["method", "log Z", "se", "95% CI width", "wall s", "evals", "notes"], rows,
        title=f"Logistic regression n={N}, p={P} (UPS: {args.replicates} replicates, "
              f"{args.workers} workers)",
    ))


if __name__ == "__main__":
    main()
