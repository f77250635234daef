"""Coverage of the Monte Carlo standard errors of PSIS-LOO (stanlogz.crossval.loo, compare).

Each seed draws a fresh NUTS run (4 x 1000 draws after 1000 warmup by default, stanlogz's
NUTS) and the rows count how often the estimate lies within ±2 reported Monte Carlo se of the
exact value for the fixed data set:

* ``elpd_loo influential``: roaches-like Poisson regression (stan_models/tests/roaches_sim.json,
  N = 262, over-dispersed counts: ~5% of the observations have k̂ > 0.5), fix="auto"
  (moment matching above the threshold); se = ``mcse_elpd_loo``. The row ``old rss se`` is the
  root sum of the pointwise se (what stanlogz reported before), for contrast.
* ``elpd_loo well-behaved``: the same program on Poisson counts (roaches_sim_poisson.json).
* ``moment matching``: each moment-matched observation of the influential runs, its value
  against the exact elpd_i with its own se.
* ``subsampling``: subsample=100 observations of the influential data on the same draws (the
  subsample differs with the seed); se = hypot(subsampling_se, mcse_elpd_loo).
* ``elpd_diff``: the influential data's program minus the one without its third covariate (a
  separate NUTS run), against the exact difference; se = ``diff_mcse`` of ``loo_compare``.

Truth: exact log p(y_i | y₋ᵢ) by Gauss-Hermite quadrature (benchmarks/loo_truth.py, 16 nodes per
dimension; 16 and 32 nodes agree to 1e-11 on these data). It is computed once and cached in
benchmarks/data/loo_truth_cache.json, keyed by the SHA-256 of the data JSON (delete the file to
recompute).

    python3 benchmarks/coverage_loo_mcse.py            # --quick: 30 seeds (~10 min of one core)
    python3 benchmarks/coverage_loo_mcse.py --full     # 200 seeds
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import time
from pathlib import Path

import numpy as np

from benchmarks.loo_truth import exact_loo
from stanlogz.crossval import loo, loo_compare
from stanlogz.draws import sample
from stanlogz.stan.model import StanModel
from stanlogz.stan.settings import NutsArgs

ROOT = Path(__file__).resolve().parents[1]
PROGRAM = ROOT / "stan_models" / "tests" / "roaches_poisson.stan"
INFLUENTIAL = ROOT / "stan_models" / "tests" / "roaches_sim.json"
WELL = ROOT / "stan_models" / "tests" / "roaches_sim_poisson.json"
CACHE = Path(__file__).resolve().parent / "data" / "loo_truth_cache.json"


def drop_last_covariate(data: dict) -> dict:
    """The data of the smaller program of the elpd_diff row (third covariate left out)."""
    return dict(data, K=data["K"] - 1, X=[row[:-1] for row in data["X"]])


def truth(data: dict) -> np.ndarray:
    """Exact elpd_i of ``data`` (cached by the data's hash)."""
    key = hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()
    cache = json.loads(CACHE.read_text()) if CACHE.is_file() else {}
    if key not in cache:
        cache[key] = exact_loo(data, nodes=16).tolist()
        CACHE.parent.mkdir(exist_ok=True)
        CACHE.write_text(json.dumps(cache))
    return np.array(cache[key])


def covered(err: float, se: float) -> bool:
    return abs(err) <= 2 * se


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--full", action="store_true", help="200 seeds")
    ap.add_argument("--seeds", type=int, default=None)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--draws", type=int, default=1000, help="draws per chain")
    ap.add_argument("--m", type=int, default=100, help="subsample size")
    ap.add_argument("--k-threshold", type=float, default=None,
                    help="k-hat above which the influential runs fix points (default: loo's)")
    args = ap.parse_args()
    n_seeds = args.seeds or (200 if args.full else 30)
    settings = NutsArgs(chains=4, warmup=1000, draws=args.draws)
    infl = json.loads(INFLUENTIAL.read_text())
    well = json.loads(WELL.read_text())
    small = drop_last_covariate(infl)
    t_infl, t_well, t_small = truth(infl), truth(well), truth(small)
    m_infl = StanModel.from_file(PROGRAM, infl)
    m_well, m_small = m_infl.with_data(well), m_infl.with_data(small)
    rows: dict[str, list[tuple[float, float]]] = {k: [] for k in (
        "elpd_loo influential", "  old rss se (before)", "elpd_loo well-behaved",
        "moment matching (per point)", f"subsampling (m={args.m})", "elpd_diff")}
    t0 = time.perf_counter()
    counts = []
    for seed in range(args.first_seed, args.first_seed + n_seeds):
        d = sample(m_infl, settings, seed=seed)
        a = loo(m_infl, infl, draws=d, seed=seed, k_threshold=args.k_threshold)
        rows["elpd_loo influential"].append((a.elpd_loo - t_infl.sum(), a.mcse_elpd_loo))
        counts.append((np.sum(a.khat > 0.5), np.sum(a.khat > 0.7), a.mcse_bias))
        rows["  old rss se (before)"].append((a.elpd_loo - t_infl.sum(),
                                               float(np.sqrt(np.sum(a.mcse_i**2)))))
        for f in a.fixed:
            if f.method == "mm":
                rows["moment matching (per point)"].append((f.elpd - t_infl[f.index], f.mcse))
        s = loo(m_infl, infl, draws=d, seed=seed, subsample=args.m)
        rows[f"subsampling (m={args.m})"].append(
            (s.elpd_loo - t_infl.sum(), math.hypot(s.subsampling_se, s.mcse_elpd_loo)))
        w = loo(m_well, well, draws=sample(m_well, settings, seed=10_000 + seed), seed=seed)
        rows["elpd_loo well-behaved"].append((w.elpd_loo - t_well.sum(), w.mcse_elpd_loo))
        b = loo(m_small, small, draws=sample(m_small, settings, seed=20_000 + seed), seed=seed)
        c = loo_compare([a, b], ["full", "small"])
        rows["elpd_diff"].append((a.elpd_loo - b.elpd_loo - (t_infl.sum() - t_small.sum()),
                                  float(c.diff_mcse[1 - c.best])))
        print(f"seed {seed}: {time.perf_counter() - t0:.0f} s", flush=True)
    k5, k7, bias = np.mean(counts, axis=0)
    print(f"\n{n_seeds} seeds from {args.first_seed}, 4 x {args.draws} draws; influential data: "
          f"{k5:.1f} observations with k-hat > 0.5, {k7:.1f} > 0.7, mean mcse_bias {bias:.3f}")
    print("coverage of ±2 se (want >= 90%)")
    print(f"{'quantity':30s} {'n':>5s} {'mean err':>9s} {'sd err':>8s} {'mean se':>8s} "
          f"{'cover':>6s}")
    for name, vals in rows.items():
        if not vals:
            print(f"{name:30s} {0:5d}")
            continue
        e, se = np.array(vals).T
        cov = np.mean([covered(x, y) for x, y in vals])
        print(f"{name:30s} {e.size:5d} {e.mean():9.3f} {e.std(ddof=1) if e.size > 1 else 0:8.3f}"
              f" {se.mean():8.3f} {100 * cov:5.1f}%")


if __name__ == "__main__":
    main()
