"""Coverage of the se of elpd_logo over groups (loo's sqrt(G var(elpd_g))) and of the calibrated
interval beside it (``LogoResult.elpd_logo_interval``: elpd_logo ± 2 × small-count factor × se,
level 0.954, the factor of ``elpd_loo_interval``), at few groups, against exact truths.

Model: varying intercepts with a normal likelihood, σ and τ known, μ ~ N(0, 5²):
a_g ~ N(μ, τ²), y_gj ~ N(a_g, σ²), j = 1..n_g (n_g = 4, 5, 6 in turn). The group mean ȳ_g is
N(μ, v_g) with v_g = τ² + σ²/n_g given μ, so every quantity is closed form:

* pointwise values: the exact leave-one-group-out log p(y_g | y₋g) (the within-group residual
  term and ȳ_g's normal predictive under μ | y₋g), so there is no Monte Carlo error;
* **conditional** target: Σ_g E log p(ỹ_g | y), the expected log score of the full-data
  posterior predictive on a new group of each group's size drawn from the data-generating
  process (a log normal density is quadratic, so only the mean and variance of ỹ_g's terms
  enter: exact for any data-generating process);
* **data-averaged** target: G × E[the same score per group at G − 1 training groups] (what
  exact LOGO estimates without bias), by 20,000 data sets per row.

Data: from the model (μ0 = 0.5, τ = 0.8, σ = 1); group effects from a scaled t₃ with the same
variance (heavy tails, the model's variance right); group effects with twice the model's
variance (τ misspecified). Columns: ``±2 se`` (loo's se, nominal 0.954), the interval's
coverage (nominal 0.954) and its mean factor. Monte Carlo sd of a cell ≈ sqrt(c (1 − c) /
sims) (±0.005 at 0.95 for 2,000 sims).

    PYTHONPATH=$PWD nice python3 -m benchmarks.logo_interval --tau known     # ~3 min
    PYTHONPATH=$PWD nice python3 -m benchmarks.logo_interval --tau unknown --sims 1000
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
from scipy import special, stats

from stanlogz._util.sum_se import sum_se
from stanlogz._util.tables import format_table
from stanlogz.crossval.refit.cv_se import elpd_interval

MU0, TAU, SIGMA, S_MU = 0.5, 0.8, 1.0, 5.0
CASES = ("model right", "effects t_3", "effects var x2")
#: τ unknown (half-N(0, 1) prior, integrated on a grid): the normal cases only (the expected
#: score over a new group's mean is then a Gauss–Hermite integral)
TAU_CASES = ("tau unknown, model right", "tau unknown, effects var x2")


def group_sizes(g: int) -> np.ndarray:
    """4, 5, 6, 4, 5, 6, ... observations per group."""
    return 4 + np.arange(g) % 3


def simulate(case: str, g: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Group means ȳ_g and within-group sums of squares Σ_j (y_gj − ȳ_g)² of one data set."""
    n = group_sizes(g)
    if case == "model right":
        a = MU0 + TAU * rng.standard_normal(g)
    elif case == "effects t_3":  # t_3 has variance 3
        a = MU0 + TAU * rng.standard_t(3, g) / math.sqrt(3.0)
    else:
        a = MU0 + math.sqrt(2.0) * TAU * rng.standard_normal(g)
    ybar = a + SIGMA / np.sqrt(n) * rng.standard_normal(g)
    ss = SIGMA**2 * rng.chisquare(n - 1)
    return ybar, ss


def effect_var(case: str) -> float:
    """The true variance of a group effect."""
    return 2.0 * TAU**2 if case == "effects var x2" else TAU**2


def _resid(n: np.ndarray, ss: np.ndarray) -> np.ndarray:
    """log p(y_g | ȳ_g) (the within-group part of the group's normal likelihood)."""
    return (-(n - 1) / 2 * math.log(2 * math.pi * SIGMA**2) - 0.5 * np.log(n)
            - ss / (2 * SIGMA**2))


def exact_logo(ybar: np.ndarray, ss: np.ndarray) -> np.ndarray:
    """log p(y_g | y₋g) of every group (closed form)."""
    n = group_sizes(ybar.size)
    v = TAU**2 + SIGMA**2 / n
    prec = 1 / S_MU**2 + np.sum(1 / v) - 1 / v
    mean = (np.sum(ybar / v) - ybar / v) / prec
    s2 = v + 1 / prec
    return _resid(n, ss) - 0.5 * np.log(2 * math.pi * s2) - (ybar - mean) ** 2 / (2 * s2)


def _score(case: str, n: np.ndarray, mean: float | np.ndarray, prec: float | np.ndarray
           ) -> np.ndarray:
    """E log p(ỹ | y) of a new group of each size ``n`` under the predictive with μ | y ~
    N(mean, 1/prec) (elementwise)."""
    v = TAU**2 + SIGMA**2 / n
    s2 = v + 1 / prec
    true_var = effect_var(case) + SIGMA**2 / n
    e_resid = (-(n - 1) / 2 * math.log(2 * math.pi * SIGMA**2) - 0.5 * np.log(n)
               - (n - 1) / 2)
    return e_resid - 0.5 * np.log(2 * math.pi * s2) - (true_var + (MU0 - mean) ** 2) / (2 * s2)


def conditional_target(case: str, ybar: np.ndarray) -> float:
    """Σ_g E log p(ỹ_g | y): the full-data predictive scored on new groups of the same sizes."""
    n = group_sizes(ybar.size)
    v = TAU**2 + SIGMA**2 / n
    prec = 1 / S_MU**2 + np.sum(1 / v)
    return float(np.sum(_score(case, n, float(np.sum(ybar / v) / prec), prec)))


def averaged_target(case: str, g: int, rng: np.random.Generator, sims: int = 20_000) -> float:
    """G × E[score per group at G − 1 training groups], each group left out in turn."""
    n = group_sizes(g)
    total = 0.0
    for _ in range(sims):
        ybar, _ss = simulate(case, g, rng)
        v = TAU**2 + SIGMA**2 / n
        prec = 1 / S_MU**2 + np.sum(1 / v) - 1 / v
        mean = (np.sum(ybar / v) - ybar / v) / prec
        total += float(np.sum(_score(case, n, mean, prec)))
    return total / sims


# ----------------------------------------------------------------- τ unknown (half-N(0, 1))

#: log τ grid of the τ-unknown model (τ ~ half-N(0, 1), as logo_normal.stan): the posterior
#: of τ is integrated on it (μ analytically given τ); 241 points from 1e-3 to 8.
LOG_TAU = np.linspace(math.log(1e-3), math.log(8.0), 241)
#: Gauss–Hermite nodes (probabilists') for the expectation over a new group's mean.
GH_Z, GH_W = np.polynomial.hermite_e.hermegauss(60)
GH_W = GH_W / GH_W.sum()


def _tau_terms(ybar: np.ndarray) -> tuple[np.ndarray, ...]:
    """On the τ grid (rows) and per group (columns): v = τ² + σ²/n, each group mean's log
    density term given μ = 0 scale, and the full-data precision and shift of μ | τ."""
    n = group_sizes(ybar.size)
    tau = np.exp(LOG_TAU)
    lp = np.log(2.0) + stats.norm.logpdf(tau) + LOG_TAU  # half-normal, on the log-τ grid
    v = tau[:, None] ** 2 + SIGMA**2 / n[None, :]
    term = -0.5 * np.log(2 * math.pi * v) - 0.5 * ybar**2 / v
    a = 1 / S_MU**2 + np.sum(1 / v, axis=1)
    b = np.sum(ybar / v, axis=1)
    return n, lp, v, term, a, b


def _log_marginal(term_sum: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """log p(ȳ_S | τ) with μ ~ N(0, S_MU²) integrated out."""
    return term_sum - 0.5 * np.log(S_MU**2 * a) + b**2 / (2 * a)


def _leave_out(ybar: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per left-out group (columns): normalized log weights of the τ grid given the others,
    and μ's precision and mean given τ and the others."""
    n, lp, v, term, a, b = _tau_terms(ybar)
    a_m, b_m = a[:, None] - 1 / v, b[:, None] - ybar / v
    lw = lp[:, None] + _log_marginal(term.sum(axis=1)[:, None] - term, a_m, b_m)
    return n, v, lw - special.logsumexp(lw, axis=0), a_m, b_m / a_m


def exact_logo_tau(ybar: np.ndarray, ss: np.ndarray) -> np.ndarray:
    """log p(y_g | y₋g) of every group with τ unknown (τ grid, μ analytic)."""
    n, v, lw, a_m, mean = _leave_out(ybar)
    s2 = v + 1 / a_m
    lpred = special.logsumexp(lw - 0.5 * np.log(2 * math.pi * s2)
                              - (ybar - mean) ** 2 / (2 * s2), axis=0)
    return _resid(n, ss) + lpred


def _score_tau(case: str, n: np.ndarray, lw: np.ndarray, a: np.ndarray, mean: np.ndarray
               ) -> np.ndarray:
    """E log p(ỹ | y) of a new group of each size ``n`` (columns) under the predictive with τ
    on the grid (log weights ``lw``, rows) and μ | τ ~ N(mean, 1/a): Gauss–Hermite over the
    new group's mean (normal under these cases)."""
    tau2 = np.exp(2 * LOG_TAU)[:, None]
    s2 = tau2 + SIGMA**2 / n[None, :] + 1 / a  # (T, G)
    true_sd = np.sqrt(effect_var(case) + SIGMA**2 / n)  # (G,)
    yt = MU0 + true_sd[None, :] * GH_Z[:, None]  # (Z, G)
    dens = special.logsumexp(lw[None] - 0.5 * np.log(2 * math.pi * s2[None])
                             - (yt[:, None, :] - mean[None]) ** 2 / (2 * s2[None]), axis=1)
    e_resid = (-(n - 1) / 2 * math.log(2 * math.pi * SIGMA**2) - 0.5 * np.log(n)
               - (n - 1) / 2)
    return e_resid + GH_W @ dens


def conditional_target_tau(case: str, ybar: np.ndarray) -> float:
    """Σ_g E log p(ỹ_g | y) with τ unknown."""
    n, lp, _v, term, a, b = _tau_terms(ybar)
    lw = lp + _log_marginal(term.sum(axis=1), a, b)
    lw = (lw - special.logsumexp(lw))[:, None]
    return float(np.sum(_score_tau(case, n, lw, a[:, None], (b / a)[:, None])))


def averaged_target_tau(case: str, g: int, rng: np.random.Generator, sims: int = 4000
                        ) -> float:
    """G × E[score per group at G − 1 training groups] with τ unknown."""
    total = 0.0
    for _ in range(sims):
        ybar, _ss = simulate(case, g, rng)
        n, _v, lw, a_m, mean = _leave_out(ybar)
        total += float(np.sum(_score_tau(case, n, lw, a_m, mean)))
    return total / sims


def table(sims: int, groups: list[int], seed: int = 44,
          cases: tuple[str, ...] = CASES + TAU_CASES) -> list[list]:
    rows = []
    for case in cases:
        known = case in CASES
        base = case if known else case.removeprefix("tau unknown, ")
        for g in groups:
            rng = np.random.default_rng([seed, g, (CASES + TAU_CASES).index(case)])
            avg = (averaged_target(base, g, rng) if known
                   else averaged_target_tau(base, g, rng))
            hit = {"cond 2se": 0, "cond iv": 0, "avg 2se": 0, "avg iv": 0}
            factors = []
            for _ in range(sims):
                ybar, ss = simulate(base, g, rng)
                e = exact_logo(ybar, ss) if known else exact_logo_tau(ybar, ss)
                total, se = float(e.sum()), sum_se(e)
                iv = elpd_interval(e, total)
                factors.append(iv.factor)
                cond = (conditional_target(base, ybar) if known
                        else conditional_target_tau(base, ybar))
                for name, target in (("cond", cond), ("avg", avg)):
                    hit[f"{name} 2se"] += abs(total - target) <= 2 * se
                    hit[f"{name} iv"] += iv.low <= target <= iv.high
            rows.append([case, g, sims, *(round(hit[k] / sims, 3) for k in hit),
                         round(float(np.mean(factors)), 2)])
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sims", type=int, default=2000)
    ap.add_argument("--groups", type=int, nargs="+", default=[5, 8, 12, 20, 40])
    ap.add_argument("--tau", choices=["known", "unknown", "both"], default="both")
    args = ap.parse_args()
    t0 = time.perf_counter()
    cases = {"known": CASES, "unknown": TAU_CASES, "both": CASES + TAU_CASES}[args.tau]
    rows = table(args.sims, args.groups, cases=cases)
    print(format_table(["case", "G", "sims", "cond ±2se", "cond interval", "avg ±2se",
                        "avg interval", "factor"], rows))
    print(f"({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
