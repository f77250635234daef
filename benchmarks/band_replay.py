"""The k̂ band's difference estimator (stanlogz/crossval/psis_loo/band_refit.py) replayed on
radon_county_intercept, whose exact pointwise LOO is known (benchmarks/data/corpus_loo_refs.json):
its refits are replaced by the exact values plus Gaussian noise of a refit's Monte Carlo se
(``--refit-se``), so that many samples per set of draws cost no NUTS run.

Two sources of posterior draws:

- ``exact``: independent draws of the exact posterior (sigma_y from its quadrature on a grid,
  then the coefficients from their Gaussian given it): PSIS's own bias, no sampler in it;
- ``nuts``: default ``stanlogz.loo`` draws (``fix="none"``, ``verify=0``; cached under
  ``--cache``), one set per seed.

For each set of draws the values above k̂ 0.7 and the three one-house counties take their exact
values (as the fix-ups and the own-parameter refits do), then the band is left as PSIS gives it
("before": its half-sample bias estimate in the mc se, as loo did; "skipped": with the band's
bias estimate ``band_refit.band_bias`` in the mc se too, as loo does where the refits cost too
much) or corrected ("after"), with ``--samples`` random samples each; z = (total − exact) /
claimed mc se.

    python3 -m benchmarks.band_replay --source exact --sets 40
    python3 -m benchmarks.band_replay --source nuts --sets 15
"""

from __future__ import annotations

import argparse
import functools
import json
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._common import ROOT
from benchmarks.corpus import CORPUS
from benchmarks.corpus_coverage import load_data
from benchmarks.corpus_loo_exact import _radon_county, _range
from stanlogz.crossval.psis_loo.band_refit import BAND_LOW, band_bias

FOLDER = "radon_mn-radon_county_intercept"
#: the unsampled band values' PSIS se and bias estimate stay in the total's mc se (as loo
#: does); --drop-band-se leaves them out (the variant measured first)
KEEP_BAND_SE = True
ONE_HOUSE = [462, 508, 890]  # 0-based: the counties with one house (refit exactly by loo)


@functools.cache
def _sigma_grid() -> tuple[Any, np.ndarray, np.ndarray]:
    """The model, and the posterior of log sigma_y on a grid (values, probabilities)."""
    m = _radon_county(load_data(FOLDER))

    def logpost(u: float) -> float:
        h = float(np.exp(u))
        return m.at(h)[0] + float(m.log_prior(np.array(h))) + u

    lo, hi = _range(logpost)
    u = np.linspace(lo, hi, 301)
    lp = np.array([logpost(x) for x in u])
    return m, u, np.exp(lp - lp.max())


def exact_draws(s: int, rng: np.random.Generator) -> np.ndarray:
    """``s`` independent draws of the exact posterior: the log-likelihood matrix (s, N)."""
    m, u, p = _sigma_grid()
    us = rng.choice(u, size=s, p=p / p.sum()) + (u[1] - u[0]) * (rng.random(s) - 0.5)
    sg = np.exp(us)
    xtx, xty = m.X.T @ m.X, m.X.T @ m.y
    beta = np.empty((s, m.X.shape[1]))
    for t, sd in enumerate(sg):
        a = xtx / sd**2 + m.prec0
        chol = np.linalg.cholesky(a)
        beta[t] = (np.linalg.solve(a, xty / sd**2)
                   + np.linalg.solve(chol.T, rng.standard_normal(a.shape[0])))
    mean = beta @ m.X.T
    return -0.5 * np.log(2 * np.pi) - np.log(sg)[:, None] - 0.5 * ((m.y - mean) / sg[:, None])**2


def nuts_draws(seed: int, cache: Path) -> tuple[np.ndarray, float, int]:
    """Default loo's NUTS draws at ``seed``: log-likelihood (S, N), r_eff, chains (cached)."""
    f = cache / f"radon_ll_{seed}.npz"
    if not f.exists():
        import stanlogz
        from stanlogz.crossval.observations.pointwise import PointwiseLogLik
        r = stanlogz.loo(str(CORPUS / FOLDER / "model.stan"), str(CORPUS / FOLDER / "data.json"),
                         seed=seed, fix="none", verify=0)
        pw = PointwiseLogLik(r.program, r.data, r.observations, "auto")
        ll = pw.columns(np.arange(r.n_obs), r.draws.flat_unconstrained())
        cache.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(f, ll=ll, r_eff=r.r_eff, chains=r.draws.n_chains)
    z = np.load(f)
    return z["ll"], float(z["r_eff"]), int(z["chains"])


def replay(ll: np.ndarray, r_eff: float, chains: int, exact: np.ndarray, samples: int,
           refit_se: float, rng: np.random.Generator
           ) -> tuple[float, float, list[tuple[float, float]]]:
    """z before, z of the band left as PSIS gives it with its bias estimate in the mc se
    (loo's error bar where the refits cost too much), and (z, se of the band) after for each
    of ``samples`` random samples."""
    from stanlogz.crossval.elpd.psis import psis_loo
    from stanlogz.crossval.fixups.fixups import FixedPoint, fixed_variance
    from stanlogz.crossval.psis_loo.band_refit import correct_band

    ps = psis_loo(ll, r_eff, chains=chains, keep_above=-np.inf)
    k = ps.khat.copy()
    k[ONE_HOUSE] = np.inf
    top = [int(i) for i in np.nonzero(k > 0.7)[0]]

    def point(i: int, noise: float) -> FixedPoint:
        return FixedPoint(index=i, elpd=float(exact[i]) + noise, mcse=refit_se, method="exact",
                          khat=float(k[i]), psis_elpd=float(ps.elpd_i[i]), n_gradient_evals=0,
                          n_evals=0, seconds=0.0)

    base = [point(i, 0.0) for i in top]
    claimed = float(np.hypot(ps.total_mcse(top), ps.total_bias(top)))
    err = ps.elpd_i.sum() - ps.elpd_i[top].sum() + exact[top].sum() - exact.sum()
    before = err / claimed
    band = np.nonzero((k >= BAND_LOW) & (k <= 0.7))[0]
    skipped = err / np.hypot(claimed, band_bias(ps.mcse_i[band], k[band]))
    out = []
    for _ in range(samples):
        fixed, band = correct_band(
            np.arange(k.size), k, ps.elpd_i, list(base),
            lambda idx: ([point(int(i), float(rng.normal(0.0, refit_se))) for i in idx], []),
            threshold=0.7, refit_seconds=1.0, rng=rng, psis_mcse=ps.mcse_i, claimed=claimed)
        e = ps.elpd_i.copy()
        for f in fixed:
            e[f.index] = f.elpd
        done = sorted({f.index for f in fixed})
        se_band = 0.0
        if band is not None:
            for o, v in band.shifts.items():
                e[o] += v
            if not KEEP_BAND_SE:
                done = sorted(set(done) | set(band.unsampled))
            se_band = band.se
        mc = np.sqrt(ps.total_mcse(done)**2 + ps.total_bias(done)**2
                     + fixed_variance([f for f in fixed if f.index not in top]) + se_band**2)
        out.append(((e.sum() - exact.sum()) / mc, se_band))
    return float(before), float(skipped), out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--source", choices=("exact", "nuts"), default="exact")
    ap.add_argument("--sets", type=int, default=40, help="sets of draws (nuts: seeds 1..)")
    ap.add_argument("--draws", type=int, default=4000, help="exact draws per set")
    ap.add_argument("--samples", type=int, default=50, help="band samples per set")
    ap.add_argument("--refit-se", type=float, default=0.02)
    ap.add_argument("--drop-band-se", action="store_true",
                    help="leave the unsampled band values' PSIS se out of the total's")
    ap.add_argument("--strata", default=None, help="the band's k-hat edges, e.g. 0.3,0.5")
    ap.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "stanlogz_band_replay",
                    help="NUTS draws' log-likelihood per seed (about 11 MB each)")
    a = ap.parse_args(argv)
    import stanlogz.crossval.psis_loo.band_refit as band_refit
    global KEEP_BAND_SE
    KEEP_BAND_SE = not a.drop_band_se
    if a.strata:
        band_refit.STRATA = tuple(float(x) for x in a.strata.split(","))
    exact = np.asarray(json.loads((ROOT / "benchmarks" / "data" / "corpus_loo_refs.json")
                                  .read_text())[FOLDER]["elpd_i"])
    zb, zs, za, ses = [], [], [], []
    for j in range(a.sets):
        rng = np.random.default_rng(1000 + j)
        if a.source == "exact":
            ll, r_eff, chains = exact_draws(a.draws, rng), 1.0, 4
        else:
            ll, r_eff, chains = nuts_draws(j + 1, a.cache)
        b, skip, after = replay(ll, r_eff, chains, exact, a.samples, a.refit_se, rng)
        zb.append(b)
        zs.append(skip)
        za += [z for z, _ in after]
        ses += [s for _, s in after]
        print(f"set {j + 1}: z before {b:+.2f}, after mean {np.mean([z for z, _ in after]):+.2f}",
              flush=True)
    zb, zs, za = np.array(zb), np.array(zs), np.array(za)
    print(f"| {a.source} draws | sets | z mean | rms z | max abs z | share abs z > 2 | "
          f"share abs z > 4 | band se |\n|---|---|---|---|---|---|---|---|")
    print(f"| before | {zb.size} | {zb.mean():+.2f} | {np.sqrt(np.mean(zb**2)):.2f} | "
          f"{np.abs(zb).max():.2f} | {np.mean(np.abs(zb) > 2):.3f} | "
          f"{np.mean(np.abs(zb) > 4):.3f} | 0 |")
    print(f"| skipped (band bias estimate in the mc se) | {zs.size} | {zs.mean():+.2f} | "
          f"{np.sqrt(np.mean(zs**2)):.2f} | {np.abs(zs).max():.2f} | {np.mean(np.abs(zs) > 2):.3f} "
          f"| {np.mean(np.abs(zs) > 4):.3f} | 0 |")
    print(f"| after ({a.samples} samples per set) | {zb.size} | {za.mean():+.2f} | "
          f"{np.sqrt(np.mean(za**2)):.2f} | {np.abs(za).max():.2f} | {np.mean(np.abs(za) > 2):.3f} "
          f"| {np.mean(np.abs(za) > 4):.4f} | {np.mean(ses):.2f} |")


if __name__ == "__main__":
    main()
