"""Is the k̂ band's bias estimate right away from radon? The error bar of a band left as PSIS
gives it (its refits too costly: ``band_refit``'s "skipped"), measured where the exact LOO is
closed-form and the posterior draws are exact, so no sampler error is in it.

The program: J groups of 1–``--max-n`` observations, y_ij ~ N(θ_j, σ), θ_j ~ N(μ, τ), μ ~ N(0,
5²), with σ and τ known, so the posterior of (μ, θ) is Gaussian (exact draws: μ from its
marginal, then each θ_j given it) and y is jointly Gaussian, Σ = σ²I + τ²ZZᵀ + 25·11ᵀ: each
leave-one-out predictive is N(y_i − (Σ⁻¹y)_i / (Σ⁻¹)_ii, 1 / (Σ⁻¹)_ii). Leaving one of n
observations out moves θ_j, so small groups put PSIS values in the band k̂ 0.2–0.7, as radon's
counties do; τ is drawn per data set (0.3–2), so the band's share varies.

Per data set: PSIS-LOO of ``--draws`` exact draws, values above k̂ 0.7 replaced by their exact
values (what loo's refits do), then z = (total − exact total) / mc se with

- ``psis``: the mc se loo claims without the band (PSIS se and half-sample bias estimate);
- ``psis + band bias``: that and the band's bias estimate ``Σ share(k̂_i) × mcse_i``
  (``band_refit.band_bias``) in quadrature, the error bar of a skipped band;
- ``loo's rule``: the bias in it only where it is material (above ``MATERIAL`` × the mc se
  claimed without it), as ``loo`` does: below, the band is neither refit nor widened.

A last row is ``loo`` of a fit without its program (``loo_from_fit``, nothing refit), on the
sets with no k̂ above 0.7 (elsewhere its mc se is NA): its own mc se, which carries the band's
bias where material. Also the band's actual summed error (PSIS − exact over the band) against
its estimate.
``--rates`` measures the shares themselves, per k̂ stratum: the mean of PSIS − exact over the
values of a stratum against their mean pointwise mc se, on these data sets and on
radon_county_intercept's exact draws (``band_replay.exact_draws``), the source of
``BIAS_RATES``.

    python3 -m benchmarks.band_bias_coverage --sets 200                         # coverage
    python3 -m benchmarks.band_bias_coverage --sets 200 --groups 200 --max-n 6 --seed 2
    python3 -m benchmarks.band_bias_coverage --sets 200 --rates                 # the shares
    python3 -m benchmarks.band_bias_coverage --sets 40 --min-n 2 --max-n 2 --tau 3 --seed 9
"""

from __future__ import annotations

import argparse

import numpy as np
from scipy import stats

from benchmarks._common import z_cells
from stanlogz.crossval.elpd.psis import psis_loo
from stanlogz.crossval.psis_loo.band_refit import BAND_LOW, BIAS_RATES, MATERIAL, band_bias
from stanlogz.crossval.psis_loo.fitloo import loo_from_fit

PRIOR_SD_MU = 5.0


def data_set(rng: np.random.Generator, groups: int, max_n: int, sigma: float, tau: float,
             min_n: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Group of each observation, and y."""
    sizes = rng.integers(min_n, max_n + 1, size=groups)
    g = np.repeat(np.arange(groups), sizes)
    theta = rng.normal(0.0, PRIOR_SD_MU) + tau * rng.standard_normal(groups)
    return g, theta[g] + sigma * rng.standard_normal(g.size)


def exact_loo(g: np.ndarray, y: np.ndarray, sigma: float, tau: float) -> np.ndarray:
    """The exact pointwise LOO log predictive densities (the joint Gaussian of y)."""
    z = (g[:, None] == g[None, :]).astype(float)
    cov = sigma**2 * np.eye(y.size) + tau**2 * z + PRIOR_SD_MU**2
    prec = np.linalg.inv(cov)
    var = 1.0 / np.diag(prec)
    mean = y - (prec @ y) * var
    return stats.norm.logpdf(y, mean, np.sqrt(var))


def posterior_draws(g: np.ndarray, y: np.ndarray, sigma: float, tau: float, s: int,
                    rng: np.random.Generator) -> np.ndarray:
    """``s`` exact posterior draws of θ ``(s, J)``: μ from its marginal, then θ_j | μ."""
    groups = int(g.max()) + 1
    n = np.bincount(g, minlength=groups).astype(float)
    ybar = np.bincount(g, weights=y, minlength=groups) / n
    v = tau**2 + sigma**2 / n  # ybar_j | μ ~ N(μ, v_j)
    prec_mu = 1.0 / PRIOR_SD_MU**2 + np.sum(1.0 / v)
    mu = (np.sum(ybar / v) / prec_mu) + rng.standard_normal(s) / np.sqrt(prec_mu)
    prec_t = 1.0 / tau**2 + n / sigma**2  # θ_j | μ, y
    mean_t = (mu[:, None] / tau**2 + (n * ybar / sigma**2)[None, :]) / prec_t
    return mean_t + rng.standard_normal((s, groups)) / np.sqrt(prec_t)


def one_set(rng: np.random.Generator, groups: int, max_n: int, draws: int,
            threshold: float = 0.7, min_n: int = 1, sigma: float = 1.0,
            tau: float | None = None) -> dict[str, float]:
    """One data set (τ drawn log-uniform on 0.3–2 unless given): the z's and the band's error."""
    tau = float(np.exp(rng.uniform(np.log(0.3), np.log(2.0)))) if tau is None else tau
    g, y = data_set(rng, groups, max_n, sigma, tau, min_n)
    exact = exact_loo(g, y, sigma, tau)
    theta = posterior_draws(g, y, sigma, tau, draws, rng)
    ll = stats.norm.logpdf(y[None, :], theta[:, g], sigma)
    ps = psis_loo(ll, 1.0, chains=4, keep_above=-np.inf)
    top = np.nonzero(ps.khat > threshold)[0]
    band = np.nonzero((ps.khat >= BAND_LOW) & (ps.khat <= threshold))[0]
    total = ps.elpd_i.sum() - ps.elpd_i[top].sum() + exact[top].sum()
    claimed = float(np.hypot(ps.total_mcse(top), ps.total_bias(top)))
    bias = band_bias(ps.mcse_i[band], ps.khat[band])
    err = total - exact.sum()
    # loo of a fit (no program: nothing refit) where no k-hat is above the threshold: its own
    # mc se, which carries the band's bias where material (loo_from_fit); NaN elsewhere
    fit = loo_from_fit(ll.reshape(4, -1, y.size)) if top.size == 0 else None
    return {"z_fit": np.nan if fit is None else (fit.elpd_loo - exact.sum()) / fit.mcse_elpd_loo,
            "tau": tau, "n": float(y.size), "band": float(band.size), "top": float(top.size),
            "err": float(err), "claimed": claimed, "bias_est": bias,
            "band_err": float(np.sum(ps.elpd_i[band] - exact[band])),
            "z_psis": float(err / claimed), "z_with": float(err / np.hypot(claimed, bias)),
            "z_loo": float(err / (np.hypot(claimed, bias) if bias > MATERIAL * claimed
                                  else claimed))}


def _shares(sets: list[tuple[object, np.ndarray]]) -> list[tuple[float, int, float, float]]:
    """Per ``BIAS_RATES`` stratum: its edge, values, mean PSIS − exact, mean mcse_i."""
    edges = [e for e, _ in BIAS_RATES] + [0.7]
    err: dict[float, list[float]] = {e: [] for e in edges[:-1]}
    mc: dict[float, list[float]] = {e: [] for e in edges[:-1]}
    for ps, exact in sets:
        for lo, hi in zip(edges, edges[1:], strict=False):
            m = (ps.khat >= lo) & (ps.khat < hi)
            err[lo] += (ps.elpd_i[m] - exact[m]).tolist()
            mc[lo] += ps.mcse_i[m].tolist()
    return [(e, len(err[e]), float(np.mean(err[e])), float(np.mean(mc[e])))
            for e in edges[:-1] if err[e]]


def rates(n_sets: int, groups: int, max_n: int, draws: int, seed: int) -> None:
    """Print the measured share of each k̂ stratum on both programs."""
    import json

    from benchmarks._common import ROOT
    from benchmarks.band_replay import FOLDER, exact_draws

    normal = []
    for j in range(n_sets):
        rng = np.random.default_rng([seed, j])
        sigma, tau = 1.0, float(np.exp(rng.uniform(np.log(0.3), np.log(2.0))))
        g, y = data_set(rng, groups, max_n, sigma, tau)
        theta = posterior_draws(g, y, sigma, tau, draws, rng)
        ps = psis_loo(stats.norm.logpdf(y[None, :], theta[:, g], sigma), 1.0, chains=4)
        normal.append((ps, exact_loo(g, y, sigma, tau)))
    ref = np.asarray(json.loads((ROOT / "benchmarks" / "data" / "corpus_loo_refs.json")
                                .read_text())[FOLDER]["elpd_i"])
    radon = [(psis_loo(exact_draws(draws, np.random.default_rng(1000 + j)), 1.0, chains=4), ref)
             for j in range(20)]
    print("| program | k-hat from | values | mean PSIS - exact | mean mcse_i | share | "
          "BIAS_RATES |\n|---|---|---|---|---|---|---|")
    table = dict(BIAS_RATES)
    for name, sets in (("hierarchical normal", normal), ("radon_county_intercept", radon)):
        for e, n, d, s in _shares(sets):
            print(f"| {name} | {e:.1f} | {n} | {d:+.4f} | {s:.4f} | {d / s:.2f} | "
                  f"{table[e]:.2f} |")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", type=int, default=200)
    ap.add_argument("--groups", type=int, default=120)
    ap.add_argument("--max-n", type=int, default=4)
    ap.add_argument("--min-n", type=int, default=1, help="smallest group (2: none alone)")
    ap.add_argument("--sigma", type=float, default=1.0)
    ap.add_argument("--tau", type=float, default=None, help="fixed (default: drawn, 0.3-2)")
    ap.add_argument("--draws", type=int, default=4000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rates", action="store_true", help="measure the shares per k-hat stratum")
    a = ap.parse_args(argv)
    if a.rates:
        rates(a.sets, a.groups, a.max_n, a.draws, a.seed)
        return
    rows = []
    for j in range(a.sets):
        rows.append(one_set(np.random.default_rng([a.seed, j]), a.groups, a.max_n, a.draws,
                            min_n=a.min_n, sigma=a.sigma, tau=a.tau))
    cols = {k: np.array([r[k] for r in rows]) for k in rows[0]}
    print(f"{a.sets} data sets, {a.groups} groups of {a.min_n}-{a.max_n}, sigma {a.sigma}, tau "
          f"{'0.3-2' if a.tau is None else a.tau}, {a.draws} exact draws; "
          f"N mean {cols['n'].mean():.0f}, band values mean {cols['band'].mean():.0f}, "
          f"above 0.7 mean {cols['top'].mean():.1f}")
    print(f"band error: mean {cols['band_err'].mean():+.3f} (sd {cols['band_err'].std():.3f}); "
          f"bias estimate mean {cols['bias_est'].mean():.3f}; ratio of means "
          f"{cols['band_err'].mean() / cols['bias_est'].mean():.2f}")
    print("| mc se | z mean | rms z | max abs z | share abs z > 2 | share abs z > 3 |")
    print("|---|---|---|---|---|---|")
    for name, key in (("psis (band bias not in it)", "z_psis"),
                      ("psis + band bias estimate", "z_with"),
                      ("loo's rule: the bias in it where material", "z_loo")):
        print(f"| {name} | {z_cells(cols[key])} |")
    fit = cols["z_fit"][np.isfinite(cols["z_fit"])]
    if fit.size:
        print(f"| loo of a fit, the {fit.size} sets with no k-hat above 0.7 | {z_cells(fit)} |")


if __name__ == "__main__":
    main()
