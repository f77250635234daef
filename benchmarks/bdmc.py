"""BDMC benchmark: gap vs T for AIS/reverse AIS, then the estimator testbed, on simulated data.

Models (stan_models/bdmc/): a 1-d Gaussian mixture with marginalized assignments (``gmm``) and a
low-rank matrix factorization (``lowrank``), the paper's models in small form. With the Stan
toolchain the programs and their simulation programs are compiled; with ``--python`` (or when
``stanlogz.stan.model`` is missing) NumPy versions of the same models are used for the AIS part.

    nice -n 10 python3 -m benchmarks.bdmc [--models gmm,lowrank] [--temps 100,200,400,800]
        [--chains 16] [--estimators gbs,gis,ghm,laplace,bridge-gaussian,ais] [--seed 1]
        [--budgets 3] [--plot-dir DIR]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from pathlib import Path

import numpy as np
from scipy.special import gammaln, logsumexp

from benchmarks._common import ROOT  # noqa: E402
from stanlogz.densities.fits import gaussian_from_draws
from stanlogz.densities.gaussian import GaussianTarget
from stanlogz.estimators.annealing.ais import DEFAULT_INFLATE
from stanlogz.estimators.shortcuts import dynesty_available
from stanlogz.report.output import format_table
from stanlogz.report.testbed_plot import plot_testbed
from stanlogz.testbed import (
    SHORTCUT_ESTIMATORS,
    TestbedOptions,
    TestbedResult,
    bdmc,
    budget_fractions,
    simulate,
    testbed,
)

STAN_DIR = ROOT / "stan_models" / "bdmc"
LOG_2PI = np.log(2 * np.pi)


# ----------------------------------------------------------------- NumPy versions of the models


class GMM:
    """gmm.stan in NumPy: x = (mu_1, log gaps of the ordered means, K-1 softmax logits of w).

    Same density as the Stan program up to the simplex transform (softmax with a fixed last
    logit instead of stick-breaking), so the same log Z.
    """

    def __init__(self, y: np.ndarray, k: int, sigma: float, tau: float) -> None:
        self.y, self.k, self.sigma, self.tau = np.asarray(y, float), k, sigma, tau

    @property
    def dim(self) -> int:
        return 2 * self.k - 1

    def log_density_gradient(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        k, s, t = self.k, self.sigma, self.tau
        xm, xa = x[:k], x[k:]
        mu = xm[0] + np.concatenate([[0.0], np.cumsum(np.exp(xm[1:]))])
        z = np.concatenate([xa, [0.0]])
        log_w = z - logsumexp(z)
        w = np.exp(log_w)
        comp = log_w - 0.5 * ((self.y[:, None] - mu) / s) ** 2 - np.log(s) - 0.5 * LOG_2PI
        lse = logsumexp(comp, axis=1)
        resp = np.exp(comp - lse[:, None])
        lp = (lse.sum() + np.sum(-0.5 * (mu / t) ** 2 - np.log(t) - 0.5 * LOG_2PI)
              + gammaln(2.0 * k) + np.sum(log_w)  # Dirichlet(2): Γ(2K)/Γ(2)^K ∏ w
              + np.sum(xm[1:]) + np.sum(log_w))  # Jacobians: ordered, softmax (∏ w)
        g_mu = (resp * (self.y[:, None] - mu)).sum(0) / s**2 - mu / t**2
        c = resp.sum(0) + 2.0
        g_z = c - w * c.sum()
        tail = np.cumsum(g_mu[::-1])[::-1]
        g = np.concatenate([[g_mu.sum()], np.exp(xm[1:]) * tail[1:] + 1.0, g_z[:-1]])
        return float(lp), g

    def log_density(self, x: np.ndarray) -> float:
        return self.log_density_gradient(x)[0]

    @staticmethod
    def simulate(rng: np.random.Generator, n: int, k: int, sigma: float, tau: float
                 ) -> tuple[GMM, np.ndarray]:
        mu = np.sort(rng.normal(0, tau, k))
        w = rng.dirichlet(2 * np.ones(k))
        y = rng.normal(mu[rng.choice(k, size=n, p=w)], sigma)
        x = np.concatenate([[mu[0]], np.log(np.diff(mu)), np.log(w[:-1] / w[-1])])
        return GMM(y, k, sigma, tau), x


class LowRank:
    """lowrank.stan in NumPy: x = (vec U column-major, vec V column-major, log sigma)."""

    def __init__(self, y: np.ndarray, r: int) -> None:
        self.y, self.r = np.asarray(y, float), r

    @property
    def dim(self) -> int:
        n, m = self.y.shape
        return (n + m) * self.r + 1

    def log_density_gradient(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        n, m = self.y.shape
        r = self.r
        u = x[: n * r].reshape((n, r), order="F")
        v = x[n * r: n * r + r * m].reshape((r, m), order="F")
        ls = x[-1]
        sig2 = np.exp(2 * ls)
        e = self.y - u @ v
        lp = (-0.5 * np.sum(u**2) - 0.5 * np.sum(v**2) - 0.5 * (n + m) * r * LOG_2PI
              - 0.5 * np.sum(e**2) / sig2 - n * m * ls - 0.5 * n * m * LOG_2PI
              - np.log(0.25) - 0.5 * LOG_2PI - 0.5 * ((ls + 1) / 0.25) ** 2)  # lognormal + Jac
        gu = -u + e @ v.T / sig2
        gv = -v + u.T @ e / sig2
        gs = np.sum(e**2) / sig2 - n * m - (ls + 1) / 0.0625
        return float(lp), np.concatenate([gu.ravel(order="F"), gv.ravel(order="F"), [gs]])

    def log_density(self, x: np.ndarray) -> float:
        return self.log_density_gradient(x)[0]

    @staticmethod
    def simulate(rng: np.random.Generator, n: int, m: int, r: int) -> tuple[LowRank, np.ndarray]:
        u, v = rng.standard_normal((n, r)), rng.standard_normal((r, m))
        sigma = np.exp(rng.normal(-1, 0.25))
        y = u @ v + sigma * rng.standard_normal((n, m))
        return LowRank(y, r), np.concatenate([u.ravel(order="F"), v.ravel(order="F"),
                                              [np.log(sigma)]])


def _hmc_draws(target, dim: int, rng: np.random.Generator, n: int = 500,
               chains: int = 4) -> np.ndarray:
    """Posterior draws for the NumPy models: HMC (the AIS kernel at β=1) from Stan's default
    inits, uniform(-2, 2) on the unconstrained scale, one per chain, never from the exact
    sample (which the sandwich uses); the first half of each chain is warmup."""
    from stanlogz.mcmc.annealing import AnnealingPath, annealed_transition, tune_hmc

    inits = rng.uniform(-2.0, 2.0, size=(chains, dim))
    base = GaussianTarget(inits.mean(axis=0), np.eye(dim))
    path = AnnealingPath(base, target)
    tuning, _ = tune_hmc(path, rng, grid=(1.0,), n_iter=200)
    eps, m = tuning.at(1.0)
    out = np.empty((chains, n, dim))
    for c in range(chains):
        pt = path.evaluate(inits[c])
        for i in range(2 * n):
            pt, _, _ = annealed_transition(path, 1.0, pt, rng, eps * rng.uniform(0.9, 1.1), m,
                                           10)
            if i >= n:
                out[c, i - n] = pt.position
    return out


class CollapsedLowRank:
    """lowrank.stan with U integrated out analytically: each row of Y is N(0, VᵀV + σ²I_M).

    x = (vec V column-major, log sigma); same log Z as the full model, 17 dimensions instead of
    37 and no rotation of U to mix over, so BDMC on it gives a reference log Z.
    """

    def __init__(self, y: np.ndarray, r: int) -> None:
        self.y, self.r = np.asarray(y, float), r
        self.s = self.y.T @ self.y

    @property
    def dim(self) -> int:
        return self.r * self.y.shape[1] + 1

    def log_density_gradient(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        n, m = self.y.shape
        v = x[:-1].reshape((self.r, m), order="F")
        ls = x[-1]
        s2 = np.exp(2 * ls)
        c = v.T @ v + s2 * np.eye(m)
        try:
            chol = np.linalg.cholesky(c)
        except np.linalg.LinAlgError:
            return -np.inf, np.zeros(self.dim)
        ci = np.linalg.inv(c)
        lp = (-0.5 * np.sum(ci * self.s) - n * np.sum(np.log(np.diag(chol)))
              - 0.5 * n * m * LOG_2PI - 0.5 * np.sum(v**2) - 0.5 * v.size * LOG_2PI
              - np.log(0.25) - 0.5 * LOG_2PI - 0.5 * ((ls + 1) / 0.25) ** 2)
        g = -0.5 * n * ci + 0.5 * ci @ self.s @ ci  # d lp / d C
        gv = 2 * v @ g - v
        gs = 2 * s2 * np.trace(g) - (ls + 1) / 0.0625
        return float(lp), np.concatenate([gv.ravel(order="F"), [gs]])

    def log_density(self, x: np.ndarray) -> float:
        return self.log_density_gradient(x)[0]


def lowrank_reference(target, x_true: np.ndarray, sim_data: dict, seed: int,
                      n_workers: int | None) -> str:
    """BDMC on the collapsed low-rank model from its prior: a reference log Z."""
    n, m, r = sim_data["N"], sim_data["M"], sim_data["R"]
    y = (np.asarray(json.loads(target.data_json)["Y"], float) if hasattr(target, "data_json")
         else target.y)
    col = CollapsedLowRank(y, r)
    x = np.concatenate([x_true[n * r: n * r + r * m], x_true[-1:]])
    mean, var = np.zeros(col.dim), np.ones(col.dim)
    mean[-1], var[-1] = -1.0, 0.25**2
    t0 = time.perf_counter()
    res = bdmc(col, GaussianTarget(mean, np.diag(var)), x, n_chains=16, n_temps=1000,
               gap_tol=None, seed=seed, n_workers=n_workers)
    return (f"reference (U integrated out, dim {col.dim}, prior path, T=1000, K=16): lower "
            f"{res.lower.log_z:.3f} ± {res.lower.log_z_se:.3f}, upper {res.upper.log_z:.3f} ± "
            f"{res.upper.log_z_se:.3f} ({time.perf_counter() - t0:.0f} s)")


def lowrank_prior(sim_data: dict) -> GaussianTarget:
    """lowrank.stan's prior on its unconstrained space (U, V standard normal, log sigma ~
    N(-1, 0.25^2)): normalized and exactly sampleable, so AIS can anneal prior -> posterior."""
    n, m, r = sim_data["N"], sim_data["M"], sim_data["R"]
    d = (n + m) * r + 1
    mean, var = np.zeros(d), np.ones(d)
    mean[-1], var[-1] = -1.0, 0.25**2
    return GaussianTarget(mean, np.diag(var))


def lowrank_flip(sim_data: dict) -> np.ndarray:
    """Signs that flip the last factor (U[:, R] -> -U[:, R], V[R, :] -> -V[R, :]): a mirror
    symmetry of lowrank.stan's posterior."""
    n, m, r = sim_data["N"], sim_data["M"], sim_data["R"]
    flip = np.ones((n + m) * r + 1)
    flip[(r - 1) * n: r * n] = -1.0  # U[:, R], column-major
    flip[n * r + r - 1: n * r + r * m: r] = -1.0  # V[R, :], column-major
    return flip


def lowrank_reflected_base(draws: np.ndarray, sim_data: dict) -> GaussianTarget:
    """A Gaussian fitted to the draws and their mirror images (:func:`lowrank_flip`).

    Diagnostic: the plain Gaussian fit favours one of the two mirror-image components of the
    posterior; this one gives both the same mass at every β.
    """
    x = draws.reshape(-1, draws.shape[-1])
    return gaussian_from_draws(np.vstack([x, x * lowrank_flip(sim_data)]),
                               inflate=DEFAULT_INFLATE)


DEFAULT_TEMPS = {"gmm": "100,400,1600", "lowrank": "200,800,3200"}

#: Models whose prior is a normalized Gaussian on the unconstrained space (prior path tables).
PRIORS = {"lowrank": lowrank_prior}

#: Observations per model (BIC's n): what the simulation program generates besides parameters.
N_OBS = {"gmm": lambda d: d["N"], "lowrank": lambda d: d["N"] * d["M"]}

# Covariance widening of the sandwich's own base for models without a known prior: the graded
# "ais" row anneals from the Gaussian fitted to the draws widened by DEFAULT_INFLATE, so a
# sandwich from that same base would grade AIS against itself.
SANDWICH_INFLATE = 3.0


# ----------------------------------------------------------------- the benchmark


def setup(name: str, use_python: bool, seed: int, draws: int):
    """(target, NUTS-or-HMC draws, exact posterior sample, label, sampling seconds)."""
    rng = np.random.default_rng(seed)
    sim_data = json.loads((STAN_DIR / f"{name}_sim.data.json").read_text())
    t0 = time.perf_counter()
    if use_python:
        if name == "gmm":
            target, x_true = GMM.simulate(rng, sim_data["N"], sim_data["K"], sim_data["sigma"],
                                          sim_data["tau"])
        else:
            target, x_true = LowRank.simulate(rng, sim_data["N"], sim_data["M"], sim_data["R"])
        d = _hmc_draws(target, x_true.size, rng, n=draws)
        return target, d, x_true, f"{name} (numpy, dim {target.dim})", time.perf_counter() - t0
    from stanlogz import draws as stan_draws
    from stanlogz.stan import model as stan_model

    sim = stan_model.StanModel.from_file(STAN_DIR / f"{name}_sim.stan", sim_data)
    s = simulate(STAN_DIR / f"{name}.stan", sim, seed=seed, sim_data=sim_data)
    d = stan_draws.sample(s.model, chains=4, warmup=1000, draws=draws, seed=seed)
    return (s.model, d.unconstrained, s.x_true, f"{name} (Stan, dim {s.model.dim})",
            time.perf_counter() - t0)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default="gmm,lowrank")
    p.add_argument("--temps", default=None,
                   help="comma-separated T (default per model: gmm 100,400,1600; "
                        "lowrank 200,800,3200)")
    p.add_argument("--chains", type=int, default=16)
    p.add_argument("--estimators", default="gbs,gis,ghm,laplace,bridge-gaussian,ais,smc",
                   help="graded estimators; with a known prior (lowrank) the shortcuts "
                        "bic,hme,lw,nested are added")
    p.add_argument("--draws", type=int, default=1000, help="posterior draws per chain")
    p.add_argument("--workers", type=int, default=None)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--python", action="store_true", help="NumPy models instead of Stan")
    p.add_argument("--no-prior", action="store_true", help="skip the prior-path tables")
    p.add_argument("--no-testbed", action="store_true", help="only the gap-vs-T tables")
    p.add_argument("--gap-tol", type=float, default=1.0,
                   help="a sandwich is valid when not inverted and its gap is below this")
    p.add_argument("--budgets", type=int, default=3,
                   help="testbed cost sweep: each estimator at N costs 1/2^(N-1), ..., 1")
    p.add_argument("--plot-dir", default=None, help="write testbed_<model>.png here")
    args = p.parse_args(argv)
    t_start = time.perf_counter()
    use_python = args.python or importlib.util.find_spec("stanlogz.stan.model") is None
    estimators = [e for e in args.estimators.split(",") if e]
    for name in args.models.split(","):
        temps = [int(t) for t in (args.temps or DEFAULT_TEMPS[name]).split(",")]
        target, draws, x_true, label, t_samp = setup(name, use_python, args.seed, args.draws)
        print(f"\n== {label}: {draws.shape[0]}x{draws.shape[1]} posterior draws "
              f"in {t_samp:.1f} s", flush=True)
        bases = {"gaussian from draws": gaussian_from_draws(draws, inflate=DEFAULT_INFLATE)}
        sim_data = json.loads((STAN_DIR / f"{name}_sim.data.json").read_text())
        if name == "lowrank":
            flipped = target.log_density(x_true * lowrank_flip(sim_data))
            assert np.isclose(flipped, target.log_density(x_true)), "not a symmetry"
            bases["gaussian from draws + mirror images"] = lowrank_reflected_base(draws, sim_data)
        if name in PRIORS and not args.no_prior:
            bases["prior"] = PRIORS[name](sim_data)
        else:
            bases[f"gaussian from draws x{SANDWICH_INFLATE:g}"] = gaussian_from_draws(
                draws, inflate=SANDWICH_INFLATE)
        if name == "lowrank":
            print("  " + lowrank_reference(target, x_true, sim_data, args.seed, args.workers),
                  flush=True)
        for base_name, base in bases.items():
            rows = []
            for t in temps:
                t0 = time.perf_counter()
                res = bdmc(target, base, x_true, n_chains=args.chains, n_temps=t, gap_tol=None,
                           seed=args.seed + t, n_workers=args.workers)
                res.gap_tol = args.gap_tol  # valid: not inverted and the gap below it
                rows.append([t, res.lower.log_z, res.lower.log_z_se, res.upper.log_z,
                             res.upper.log_z_se, res.gap, "yes" if res.valid else "no",
                             res.lower.ess, res.upper.ess, res.lower.acceptance,
                             round(time.perf_counter() - t0, 1), res.n_evals])
                print(f"  T={t}: gap {res.gap:.3f} in {rows[-1][-2]} s", flush=True)
            print(format_table(
                ["T", "lower", "se", "upper", "se", "gap", "valid", "ess lo", "ess up", "accept",
                 "seconds", "evals"], rows,
                f"BDMC gap vs T ({name}, base: {base_name}, K={args.chains} chains each way, "
                f"adaptive schedule; valid: not inverted and gap < {args.gap_tol:g})"))
        if args.no_testbed:
            continue
        # The testbed's sandwich is the last one above: last base (the prior when known, else
        # the widened Gaussian, not the graded "ais" row's base), largest T.
        prior = PRIORS[name](sim_data) if name in PRIORS and not args.no_prior else None
        names = estimators + [e for e in SHORTCUT_ESTIMATORS if prior is not None and (
            e != "nested" or dynesty_available()) and e not in estimators]
        opts = TestbedOptions(seed=args.seed, n_workers=args.workers,
                              budgets=budget_fractions(args.budgets))
        tb: TestbedResult = testbed(target, draws, x_true, names, options=opts, base=base,
                                    sandwich=res, prior=prior, n_obs=N_OBS[name](sim_data))
        print(format_table(list(TestbedResult.HEADER), tb.table_rows(),
                           f"testbed ({name}, BDMC base: {base_name}, T={temps[-1]}; "
                           "error = estimate - midpoint; cost excludes the NUTS draws; "
                           f"sandwich {'valid' if res.valid else 'NOT valid'})"))
        for w in res.warnings:
            print(f"  warning: {w}")
        for r in tb.rows:
            if r.failed:
                print(f"  {r.method} (budget {r.budget:g}) failed: {r.failed}")
        if args.plot_dir:
            out = Path(args.plot_dir) / f"testbed_{name}.png"
            out.parent.mkdir(parents=True, exist_ok=True)
            plot_testbed(tb, out)
            print(f"  plot: {out}")
        sys.stdout.flush()
    print(f"\ntotal {time.perf_counter() - t_start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
