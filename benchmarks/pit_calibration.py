"""Level and power of the dependence-aware LOO-PIT tests (POT, PIET, PRIT; Tesso & Vehtari 2026)
beside the pointwise-order Cauchy test that ``loo --pit`` reports and the Kolmogorov–Smirnov
test, on LOO-PIT values computed as ``stanlogz`` computes them: PSIS weights of exact posterior
draws (no Stan), :func:`stanlogz.crossval.checks.predictive.loo_pit`.

Fits (each a new data set from the prior and the model; S posterior draws):

* continuous: y_i ~ N(μ, 1), μ ~ N(0, 1), n observations; exact posterior N(m, v); y_rep from
  the posterior predictive. Misspecified variance: the data's sd is ``sd_true`` (≠ 1), the
  model's 1 (sd > 1: predictions too narrow; sd < 1: too wide).
* discrete: y_i ~ Poisson(λ), λ ~ Gamma(2, 0.5); exact Gamma posterior; the randomized PIT.
  Misspecified variance: negative-binomial data with the same mean and variance λ (1 + λ/r).

Columns: the rejection rate at α = 0.05 of each test — ``pot``, ``piet``, ``prit`` with the
analytic (truncated) Cauchy p-value that R posterior and arviz-stats report, the same with
``_cal`` the p-value calibrated by simulation for the dependence of LOO-PIT values with the
model's p_loo (:mod:`stanlogz.crossval.checks.pit_null`), ``pot_untrunc_cal`` (the existing
``loo --pit`` test: untruncated, calibrated) and ``ks``. A level over R fits has Monte Carlo
sd sqrt(0.05 · 0.95 / R): ±0.0069 at R = 1,000; the [0.04, 0.06] target is ±1.45 sd.

    PYTHONPATH=$PWD nice python3 -m benchmarks.pit_calibration            # 1,000 fits a row
    PYTHONPATH=$PWD nice python3 -m benchmarks.pit_calibration --fits 200 # quick look
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy import special, stats

from stanlogz._util.tables import format_table
from stanlogz.crossval.checks.pit_tests import pit_floor, pit_tests, randomization_widths
from stanlogz.crossval.checks.predictive import loo_log_weights, loo_pit, pit_uniformity

ALPHA = 0.05
COLUMNS = ("pot", "piet", "prit", "pot_cal", "piet_cal", "prit_cal", "pot_untrunc_cal", "ks")


def _p_loo(ll: np.ndarray, lw: np.ndarray) -> float:
    lppd = special.logsumexp(ll, axis=0) - np.log(ll.shape[0])
    elpd = special.logsumexp(ll + lw, axis=0) - special.logsumexp(lw, axis=0)
    return float(np.sum(lppd - elpd))


def normal_fit(rng: np.random.Generator, n: int = 50, s: int = 1000,
               sd_true: float = 1.0) -> tuple[np.ndarray, float, float, None]:
    """LOO-PIT values, p_loo, the PIT's floor (:func:`pit_floor`) and None of one fit of
    y ~ N(μ, 1), μ ~ N(0, 1) to n values of N(μ, sd_true²) (μ from the prior), from S exact
    posterior draws and PSIS weights."""
    mu = rng.normal()
    y = mu + sd_true * rng.normal(size=n)
    v = 1.0 / (1.0 + n)
    draws = v * y.sum() + np.sqrt(v) * rng.normal(size=s)
    ll = -0.5 * (y[None, :] - draws[:, None]) ** 2 - 0.5 * np.log(2 * np.pi)
    y_rep = draws[:, None] + rng.normal(size=(s, n))
    lw = loo_log_weights(ll)
    return loo_pit(lw, y, y_rep, discrete=False), _p_loo(ll, lw), pit_floor(lw), None


def poisson_fit(rng: np.random.Generator, n: int = 50, s: int = 1000, r: float | None = None,
                seed: int = 0) -> tuple[np.ndarray, float, float, np.ndarray]:
    """Randomized LOO-PIT values, p_loo, floor and bar widths of one fit of y ~ Poisson(λ),
    λ ~ Gamma(2, rate 0.5) to n counts (Poisson, or negative binomial with size ``r`` and
    mean λ when ``r`` is given), from S exact posterior draws and PSIS weights."""
    lam = rng.gamma(2.0, 2.0)
    if r is None:
        y = rng.poisson(lam, size=n).astype(float)
    else:
        y = rng.poisson(rng.gamma(r, lam / r, size=n)).astype(float)
    draws = rng.gamma(2.0 + y.sum(), 1.0 / (0.5 + n), size=s)
    ll = stats.poisson.logpmf(y[None, :], draws[:, None])
    y_rep = rng.poisson(np.broadcast_to(draws[:, None], (s, n))).astype(float)
    lw = loo_log_weights(ll)
    return (loo_pit(lw, y, y_rep, seed=seed, discrete=True), _p_loo(ll, lw), pit_floor(lw),
            randomization_widths(lw, y, y_rep))


def rejections(pit: np.ndarray, p_loo: float, floor: float = 0.0,
               widths: np.ndarray | None = None) -> dict[str, bool]:
    """Whether each test of :data:`COLUMNS` rejects uniformity at :data:`ALPHA`."""
    out: dict[str, bool] = {}
    for name, t in pit_tests(pit, p_loo=p_loo, calibrate=True, floor=floor, widths=widths).items():
        out[name] = t.p_value < ALPHA
        out[f"{name}_cal"] = t.p_value_calibrated is not None and t.p_value_calibrated < ALPHA
    out["pot_untrunc_cal"] = pit_uniformity(pit, p_loo=p_loo).p_value < ALPHA
    out["ks"] = pit_uniformity(pit, test="ks").p_value < ALPHA
    return out


SCENARIOS = [("continuous", "well-specified", dict(sd_true=1.0)),
             ("continuous", "data sd 1.3", dict(sd_true=1.3)),
             ("continuous", "data sd 0.75", dict(sd_true=0.75)),
             ("discrete", "well-specified", dict(r=None)),
             ("discrete", "neg-binomial r=3", dict(r=3.0))]


def table(fits: int, n: int, s: int, seed: int, rows_wanted: list[int] | None = None,
          part: int | None = None) -> list[list]:
    """One row per (outcome, scenario) of :data:`SCENARIOS` (those at ``rows_wanted``, 0-based;
    default all): rejection rates over ``fits`` fits (``part``: an independent share of
    them from its own seed stream, for parallel processes whose rates are averaged)."""
    rows = []
    for j, (kind, label, kw) in enumerate(SCENARIOS):
        if rows_wanted is not None and j not in rows_wanted:
            continue
        rng = np.random.default_rng([seed, j] if part is None else [seed, j, part])
        counts = dict.fromkeys(COLUMNS, 0)
        for k in range(fits):
            if kind == "continuous":
                fit = normal_fit(rng, n, s, **kw)
            else:
                fit = poisson_fit(rng, n, s, seed=seed * 100_003 + k + 10_000 * (part or 0),
                                  **kw)
            for c, rej in rejections(*fit).items():
                counts[c] += rej
        rows.append([kind, label] + [counts[c] / fits for c in COLUMNS])
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fits", type=int, default=1000)
    ap.add_argument("--n", type=int, default=50)
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=20261128)
    ap.add_argument("--rows", default=None,
                    help="comma-separated 0-based rows of SCENARIOS (default all; rows are "
                         "independent, so they can run in parallel processes)")
    ap.add_argument("--part", type=int, default=None,
                    help="run an independent share of the fits from seed stream PART (run "
                         "several parts in parallel, with --fits each part's share, and "
                         "average their rates)")
    a = ap.parse_args()
    t0 = time.time()
    wanted = None if a.rows is None else [int(r) for r in a.rows.split(",")]
    rows = table(a.fits, a.n, a.draws, a.seed, wanted, a.part)
    print(f"LOO-PIT tests: rejection rate at alpha = {ALPHA}, {a.fits} fits per row, "
          f"n = {a.n}, S = {a.draws} ({time.time() - t0:.0f} s)")
    print(format_table(["outcome", "data"] + list(COLUMNS), rows))
    se = (ALPHA * (1 - ALPHA) / a.fits) ** 0.5
    print(f"Monte Carlo sd of a level of {ALPHA}: {se:.4f} (binomial, {a.fits} fits)")


if __name__ == "__main__":
    main()
