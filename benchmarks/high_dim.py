"""Evidence at hundreds of parameters: gbs (default options) against the bridge baselines on
the same NUTS draws, over seeds, on problems whose log Z is known independently.

    nice -n 10 python3 -m benchmarks.high_dim [--seeds 20] [--cases nc100,nc300,c300,...]

Cases (Stan programs in stan_models/highdim/):
  ncJ / cJ   non-centred / centred hierarchical normal with J groups (J + 2 parameters);
             log Z by adaptive quadrature over tau of the analytic marginal
             (stanlogz.densities.gaussian.HierarchicalNormalTarget, checked against the
             Stan program).
  dense500   N(m, L L') in 500 dimensions, eigenvalues 1 .. 1e3, random rotation; log Z = 0.
             Exact draws (NUTS with a diagonal metric needs thousands of leapfrog steps per
             draw here); the table then shows no NUTS time.
  hlogitG    hierarchical logistic regression, G groups x 5 Bernoulli observations (G + 3
             parameters), data simulated from the prior; log Z = midpoint of a BDMC sandwich
             (reverse AIS from the simulating parameters, an exact posterior draw), whose
             bounds are printed and whose half-gap is the reference's own uncertainty.
Every row: mean error, rmse, mean reported se, the fraction of seeds whose +-2 se interval
covers the truth, draws, and the estimator's wall time against the NUTS time (same machine).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # shared box: one BLAS thread

import argparse  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from benchmarks._common import ROOT  # noqa: E402
from stanlogz.densities.gaussian import GaussianTarget, HierarchicalNormalTarget  # noqa: E402
from stanlogz.draws import sample  # noqa: E402
from stanlogz.errors import StanlogzError  # noqa: E402
from stanlogz.estimators import get_method  # noqa: E402
from stanlogz.report.output import format_table  # noqa: E402
from stanlogz.stan.load import load_model  # noqa: E402

METHODS = ("gbs", "bridge-warp3", "bridge-gaussian")
HIGHDIM = ROOT / "stan_models" / "highdim"


def hier_data(j: int, seed: int = 0) -> dict:
    """J groups, sigma_j ~ U(0.5, 2), theta_j ~ N(1, 1), y_j ~ N(theta_j, sigma_j)."""
    rng = np.random.default_rng(seed)
    sigma = rng.uniform(0.5, 2.0, j)
    y = 1.0 + rng.standard_normal(j) + sigma * rng.standard_normal(j)
    return {"J": j, "y": y.tolist(), "sigma": sigma.tolist()}


def dense_target(d: int = 500, seed: int = 0) -> GaussianTarget:
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    cov = (q * np.logspace(0, 3, d)) @ q.T
    return GaussianTarget(rng.standard_normal(d), cov, log_z=0.0)


def hlogit_data(g: int, per_group: int = 5, seed: int = 0) -> tuple[dict, np.ndarray]:
    """Data simulated from hier_logistic.stan's prior and likelihood, and the simulating
    parameters on the unconstrained scale (an exact posterior draw, for BDMC)."""
    rng = np.random.default_rng(seed)
    alpha, beta = 2 * rng.standard_normal(2)
    tau = abs(rng.standard_normal())
    z = rng.standard_normal(g)
    grp = np.repeat(np.arange(g), per_group)
    x = rng.standard_normal(g * per_group)
    eta = alpha + tau * z[grp] + beta * x
    y = (rng.uniform(size=eta.size) < 1 / (1 + np.exp(-eta))).astype(int)
    data = {"N": int(eta.size), "G": g, "g": (grp + 1).tolist(), "x": x.tolist(),
            "y": y.tolist()}
    return data, np.concatenate([[alpha, beta, math.log(tau)], z])


def bdmc_reference(model, theta: np.ndarray, seed: int = 0) -> tuple[float, float, float]:
    """log Z of ``model`` from the BDMC sandwich: forward AIS from a Gaussian fitted to NUTS
    draws (covariance x1.5) and reverse AIS from the simulating parameters; returns the
    midpoint, the lower and the upper bound."""
    from stanlogz.densities.fits import gaussian_from_draws
    from stanlogz.testbed.sandwich import bdmc

    d = sample(model, chains=4, draws=1000, seed=10_000 + seed)
    base = gaussian_from_draws(d.unconstrained, inflate=1.5)
    res = bdmc(model, base, theta, n_chains=16, n_temps=2000, gap_tol=None, seed=seed)
    print(f"# BDMC reference: [{res.lower.log_z:.4f}, {res.upper.log_z:.4f}] valid {res.valid}",
          file=sys.stderr, flush=True)
    return 0.5 * (res.lower.log_z + res.upper.log_z), res.lower.log_z, res.upper.log_z


def run_case(name: str, seeds: int, chains: int, n_draws: int) -> list[list]:
    rows = []
    results: dict[str, list[tuple[float, float, float]]] = {m: [] for m in METHODS}
    nuts_s: list[float] = []
    refused: dict[str, str] = {}
    if name.startswith("dense"):
        target = dense_target(int(name[5:]))
        truth, model = 0.0, target
    elif name.startswith("hlogit"):
        data, theta = hlogit_data(int(name[6:]))
        model = load_model(HIGHDIM / "hier_logistic.stan", data)
        truth, _, _ = bdmc_reference(model, theta)
    else:
        kind, j = ("nc", int(name[2:])) if name.startswith("nc") else ("c", int(name[1:]))
        data = hier_data(j)
        truth = HierarchicalNormalTarget(np.array(data["y"]), np.array(data["sigma"])).log_z
        model = load_model(HIGHDIM / f"hier_normal_{kind}.stan", data)
    for s in range(seeds):
        if isinstance(model, GaussianTarget):  # exact draws
            x = model.sample(np.random.default_rng(s), chains * n_draws).reshape(chains, n_draws,
                                                                              -1)
            nuts_s.append(math.nan)
        else:
            d = sample(model, chains=chains, draws=n_draws, seed=s + 1)
            x = d.unconstrained
            nuts_s.append(d.seconds)
        for m in METHODS:
            t0 = time.perf_counter()
            try:
                r = get_method(m)(model, x, seed=s)
            except StanlogzError as e:  # e.g. too few draws for the method in this dimension
                refused[m] = str(e).splitlines()[0]
                continue
            results[m].append((r.log_z - truth, r.log_z_se, time.perf_counter() - t0))
        g = results["gbs"][-1]
        print(f"# {name} seed {s}: gbs err {g[0]:+.4f} se {g[1]:.4f} ({g[2]:.1f} s), nuts "
              f"{nuts_s[-1]:.1f} s", file=sys.stderr, flush=True)
    dim = x.shape[2]
    for m in METHODS:
        if not results[m]:
            rows.append([name, dim, m, 0, "refused: " + refused.get(m, "?")[:60]] + [""] * 6)
            continue
        a = np.array(results[m])
        err, se, sec = a[:, 0], a[:, 1], a[:, 2]
        rows.append([name, dim, m, len(a), round(float(np.mean(err)), 4),
                     round(float(np.sqrt(np.mean(err**2))), 4), round(float(np.mean(se)), 4),
                     round(float(np.mean(np.abs(err) <= 2 * se)), 2), chains * n_draws,
                     round(float(np.mean(sec)), 2), round(float(np.nanmean(nuts_s)), 2)
                     if not np.all(np.isnan(nuts_s)) else "exact"])
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--cases", default="nc100,c100,nc300,c300,nc1000,dense500")
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--draws", type=int, default=1000, help="draws per chain")
    args = ap.parse_args()
    rows = []
    for name in args.cases.split(","):
        rows += run_case(name.strip(), args.seeds, args.chains, args.draws)
    print(format_table(["case", "dim", "method", "seeds", "mean err", "rmse", "mean se",
                        "cover ±2se", "draws", "est s", "NUTS s"], rows))


if __name__ == "__main__":
    main()
