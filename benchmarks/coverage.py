"""Does gbs's ±2 se cover the error on hard cases? Coverage over seeds against exact log Z.

    nice -n 10 python3 -m benchmarks.coverage [--seeds 20] [--cases t3,funnel,latent200,bimodal]
                                             [--draws 1000]

Every case is a Python target whose log Z is known exactly and which can be sampled exactly, so
the table measures the estimator alone (no sampler bias): 4 chains x ``--draws`` exact draws
per seed, gbs with its default options (validated flow, two orientations, tempered fallback).

  t3         multivariate Student-t, 3 degrees of freedom, 5 dimensions: heavy tails (the
             importance weights of a light-tailed proposal have infinite variance)
  funnel     Neal's funnel, v ~ N(0, 3^2), x_1..5 | v ~ N(0, e^v): scale varies by e^4.5
  latent200  non-centred hierarchical normal with 200 groups (202 parameters) and weak data
             (sigma 2): hundreds of latents with a funnel between log tau and the effects;
             log Z by quadrature of the analytic marginal (stanlogz.densities.gaussian)
  bimodal    equal mixture of N(-3 e_1, I) and N(+3 e_1, I) in 4 dimensions (6 sd apart)
Harder variants (not run by default): t1.5x10 (t with 1.5 degrees of freedom, 10 dimensions:
infinite variance), funnel10 (the funnel in 10 dimensions), bimodal8 (modes 10 sd apart in 8
dimensions).

Columns: mean error, rmse, mean reported se, the share of seeds whose ±2 se covers the truth,
the share whose 95% interval does (Student-t when the se has few degrees of freedom), max
|error| / se, the median Pareto k-hat on each side of the (first) bridge, how often the
tempered bridge ran, and mean seconds per estimate.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # shared box: one BLAS thread

import argparse  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
from scipy import special  # noqa: E402

from stanlogz.densities.gaussian import HierarchicalNormalTarget  # noqa: E402
from stanlogz.errors import StanlogzError  # noqa: E402
from stanlogz.estimators.bridge.bridge import gbs  # noqa: E402

LOG_Z = -3.7  # every constructed case is this constant times a normalized density


class StudentT:
    """exp(LOG_Z) x multivariate t_nu(0, I) in ``dim`` dimensions."""

    has_gradient = False

    def __init__(self, dim: int = 5, nu: float = 3.0) -> None:
        self.dim, self.nu, self.log_z = dim, nu, LOG_Z
        self._c = (special.gammaln((nu + dim) / 2) - special.gammaln(nu / 2)
                   - 0.5 * dim * math.log(nu * math.pi))

    def log_density_many(self, xs: np.ndarray) -> np.ndarray:
        q = np.sum(np.atleast_2d(xs) ** 2, axis=1)
        return LOG_Z + self._c - 0.5 * (self.nu + self.dim) * np.log1p(q / self.nu)

    def log_density(self, x: np.ndarray) -> float:
        return float(self.log_density_many(np.asarray(x)[None])[0])

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        z = rng.standard_normal((n, self.dim))
        return z / np.sqrt(rng.chisquare(self.nu, size=(n, 1)) / self.nu)


class Funnel:
    """exp(LOG_Z) x Neal's funnel: v ~ N(0, 3^2), x_i | v ~ N(0, e^v), i = 1..dim-1."""

    has_gradient = False

    def __init__(self, dim: int = 6) -> None:
        self.dim, self.log_z = dim, LOG_Z

    def log_density_many(self, xs: np.ndarray) -> np.ndarray:
        xs = np.atleast_2d(xs)
        v, x = xs[:, 0], xs[:, 1:]
        c = -0.5 * math.log(2 * math.pi)
        return (LOG_Z + c - math.log(3.0) - 0.5 * (v / 3.0) ** 2
                + np.sum(c - 0.5 * v[:, None] - 0.5 * x * x * np.exp(-v)[:, None], axis=1))

    def log_density(self, x: np.ndarray) -> float:
        return float(self.log_density_many(np.asarray(x)[None])[0])

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        v = 3.0 * rng.standard_normal(n)
        x = rng.standard_normal((n, self.dim - 1)) * np.exp(0.5 * v)[:, None]
        return np.column_stack([v, x])


class Bimodal:
    """exp(LOG_Z) x (N(-s e_1, I) + N(s e_1, I)) / 2 in ``dim`` dimensions."""

    has_gradient = False

    def __init__(self, dim: int = 4, shift: float = 3.0) -> None:
        self.dim, self.log_z = dim, LOG_Z
        self.m = np.zeros(dim)
        self.m[0] = shift

    def log_density_many(self, xs: np.ndarray) -> np.ndarray:
        xs = np.atleast_2d(xs)
        c = -0.5 * self.dim * math.log(2 * math.pi)
        a = -0.5 * np.sum((xs - self.m) ** 2, axis=1)
        b = -0.5 * np.sum((xs + self.m) ** 2, axis=1)
        return LOG_Z + c - math.log(2.0) + np.logaddexp(a, b)

    def log_density(self, x: np.ndarray) -> float:
        return float(self.log_density_many(np.asarray(x)[None])[0])

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        sign = np.where(rng.uniform(size=n) < 0.5, -1.0, 1.0)
        return sign[:, None] * self.m + rng.standard_normal((n, self.dim))


def latent(j: int = 200) -> HierarchicalNormalTarget:
    rng = np.random.default_rng(2100)
    sigma = np.full(j, 2.0)
    y = 1.0 + 0.8 * rng.standard_normal(j) + sigma * rng.standard_normal(j)
    return HierarchicalNormalTarget(y, sigma)


CASES = {"t3": StudentT, "funnel": Funnel, "latent200": latent, "bimodal": Bimodal,
         "t1.5x10": lambda: StudentT(dim=10, nu=1.5), "funnel10": lambda: Funnel(dim=10),
         "bimodal8": lambda: Bimodal(dim=8, shift=5.0)}
DEFAULT_CASES = "t3,funnel,latent200,bimodal"


def run_case(name: str, seeds: int, draws: int, folds: int = 2) -> list:
    target = CASES[name]()
    errs, ses, ks_q, ks_p, tempered, secs, failed = [], [], [], [], 0, [], 0
    in95 = []
    for s in range(seeds):
        rng = np.random.default_rng([21, s])
        x = target.sample(rng, 4 * draws).reshape(4, draws, target.dim)
        t0 = time.perf_counter()
        try:
            r = gbs(target, x, seed=1000 + s, folds=folds)
        except StanlogzError as exc:
            failed += 1
            print(f"  {name} seed {s}: {exc}", file=sys.stderr)
            continue
        secs.append(time.perf_counter() - t0)
        errs.append(r.log_z - target.log_z)
        lo, hi = r.interval(0.95)
        in95.append(lo < target.log_z < hi)
        ses.append(r.log_z_se)
        ks_q.append(r.diagnostics.get("pareto_k_q", math.nan))
        ks_p.append(r.diagnostics.get("pareto_k_p", math.nan))
        tempered += "tempered" in r.diagnostics
        print(f"  {name} seed {s}: error {errs[-1]:+.4f}, se {ses[-1]:.4f}, "
              f"k {ks_q[-1]:.2f}/{ks_p[-1]:.2f}, {secs[-1]:.1f} s", file=sys.stderr, flush=True)
    e, se = np.array(errs), np.array(ses)
    ok = np.isfinite(se) & (se > 0)
    cover = float(np.mean(np.abs(e[ok]) < 2 * se[ok])) if ok.any() else math.nan
    return [name, target.dim, len(errs), failed, float(np.mean(e)), float(np.sqrt(np.mean(e**2))),
            float(np.mean(se)), cover, float(np.mean(in95)),
            float(np.max(np.abs(e[ok]) / se[ok])) if ok.any()
            else math.nan, float(np.nanmedian(ks_q)), float(np.nanmedian(ks_p)), tempered,
            float(np.mean(secs))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--cases", default=DEFAULT_CASES, help=f"any of {', '.join(CASES)}")
    ap.add_argument("--draws", type=int, default=1000, help="exact draws per chain (4 chains)")
    ap.add_argument("--folds", type=int, default=2,
                    help="gbs folds: 2 = two orientations (default), >= 3 cross-fitting")
    args = ap.parse_args()
    header = ["case", "dim", "seeds", "failed", "mean err", "rmse", "mean se", "cover 2se",
              "cover 95%",
              "max |z|", "k_q", "k_p", "tempered", "s/est"]
    rows = [run_case(c, args.seeds, args.draws, args.folds) for c in args.cases.split(",")]
    print(f"gbs, folds={args.folds}, 4 x {args.draws} exact draws")
    print(" | ".join(f"{h:>9}" for h in header))
    for r in rows:
        print(" | ".join(f"{v:>9.4f}" if isinstance(v, float) else f"{v!s:>9}" for v in r))


if __name__ == "__main__":
    main()
