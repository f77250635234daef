"""PSIS-LOO against exact leave-one-out refits on posteriordb's seeds and surgical (issue 26).

Both programs (stan_models/posteriordb, no log_lik) have binomial counts with one random effect
b[i] per observation, so ``loo`` integrates b[i] out of each observation's term
(``log_lik_source == "integrated"``) and averages 1/p(y_i | θ) by PSIS, while ``kfold`` with
K = N refits the program without observation i and bridges the two posteriors (b[i]
integrated out). Both estimate the same exact elpd_loo = Σ_i log p(y_i | y₋ᵢ) of the same data,
and neither has a bias beyond Monte Carlo error (PSIS at k̂ < 0.7; the refits are exact), so
their difference should be zero up to the combined Monte Carlo se sqrt(mcse_loo² +
mcse_kfold²): |z| ≤ 3 holds with probability 0.997 under a normal error. The data's se
(about 3-6) is shared by both and does not enter. ``mcse_loo`` is the joint delta-method se
of the sum (stanlogz.crossval.psis_loo.sum_mcse, which accounts for the observations sharing
the draws); loo's reported √Σ mcse_i² is printed beside it. Per seed, the observation with
the largest |elpd_loo_i − elpd_kfold_i| / sqrt(mcse_i² + se_i²) is named. With three or more
seeds a second table sets each estimate's spread over seeds beside its mean reported se (on
seeds K-fold's mc se, which takes the folds as independent, is too small: every fold re-uses
the one full-data run; see docs/features/conditional-loo.md).

    PYTHONPATH=. python3 benchmarks/loo_vs_kfold_latents.py           # quick: one seed
    PYTHONPATH=. python3 benchmarks/loo_vs_kfold_latents.py --full    # three seeds
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from stanlogz.crossval.observations.integrated import IntegratedSource
from stanlogz.crossval.psis_loo.loo import loo
from stanlogz.crossval.psis_loo.sum_mcse import sum_mcse
from stanlogz.crossval.refit.kfold import kfold
from stanlogz.stan.model import StanModel
from stanlogz.stan.settings import NutsArgs

PDB = Path(__file__).resolve().parents[1] / "stan_models" / "posteriordb"
#: (program, observation size variable)
PROGRAMS = {"seeds": "I", "surgical": "N"}


def joint_mcse(model: StanModel, data: dict, res) -> float:
    """Monte Carlo se of Σ_i elpd_loo_i: the delta-method se over the shared draws of ``res``
    for the PSIS points, with the fix-ups' own se (independent refits) added in quadrature."""
    fixed = np.zeros(res.n_obs, dtype=bool)
    fixed[[f.index for f in res.fixed]] = True
    src = IntegratedSource(model, data, res.observations)
    unc = res.draws.unconstrained
    ll = src.columns(np.flatnonzero(~fixed), unc.reshape(-1, unc.shape[2]))
    psis = sum_mcse(ll.reshape(unc.shape[0], unc.shape[1], -1))
    return float(np.sqrt(psis**2 + sum(f.mcse**2 for f in res.fixed)))


def compare(name: str, seed: int, nuts: NutsArgs) -> dict:
    """loo and kfold --k N of one program at one seed, with the same sampler settings."""
    data = json.loads((PDB / f"{name}.json").read_text())
    model = StanModel.from_file(PDB / f"{name}.stan", data)
    t0 = time.perf_counter()
    lo = loo(model, data, obs=PROGRAMS[name], settings=nuts, seed=seed)
    t1 = time.perf_counter()
    n = lo.n_obs
    kf = kfold(model, data, obs=PROGRAMS[name], k=n, settings=nuts, seed=seed)
    t2 = time.perf_counter()
    mc_loo = joint_mcse(model, data, lo) if lo.log_lik_source == "integrated" else np.nan
    se_i = np.zeros(n)
    for f in kf.folds:
        se_i[f.index] = f.elpd_i_mcse
    z_i = (lo.elpd_i - kf.elpd_i) / np.sqrt(lo.mcse_i**2 + se_i**2)
    worst = int(np.argmax(np.abs(z_i)))
    diff = lo.elpd_loo - kf.elpd_kfold
    return {"name": name, "seed": seed, "source": lo.log_lik_source, "n": n,
            "loo": lo.elpd_loo, "loo_se": lo.se, "mc_sq": lo.mcse_elpd_loo, "mc_joint": mc_loo,
            "kmax": float(np.max(lo.khat)), "kf": kf.elpd_kfold, "kf_se": kf.se,
            "kf_mc": kf.mcse, "diff": diff, "z": diff / np.hypot(mc_loo, kf.mcse),
            "worst": f"{worst + 1}: {lo.elpd_i[worst]:.3f} vs {kf.elpd_i[worst]:.3f} "
                     f"({z_i[worst]:+.1f})",
            "n_big": int(np.sum(np.abs(z_i) > 3)), "divergent": len(kf.warnings),
            "secs": f"{t1 - t0:.0f}+{t2 - t1:.0f}"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--full", action="store_true", help="three seeds instead of one")
    ap.add_argument("--seed", type=int, default=1, help="first seed")
    ap.add_argument("--programs", default="seeds,surgical")
    ap.add_argument("--adapt-delta", type=float, default=0.95,
                    help="NUTS target acceptance (both programs' hierarchical scales diverge "
                         "at 0.8)")
    ap.add_argument("--seeds", type=int, default=None, help="number of seeds (overrides)")
    args = ap.parse_args()
    nuts = NutsArgs(adapt_delta=args.adapt_delta)
    seeds = range(args.seed, args.seed + (args.seeds or (3 if args.full else 1)))
    print(f"loo vs kfold --k N, NUTS {nuts.chains} x ({nuts.warmup} warmup + {nuts.draws} "
          f"draws), adapt_delta {nuts.adapt_delta}; z = diff / sqrt(mcse_loo(joint)^2 + "
          f"mcse_kfold^2); agreement: |z| <= 3")
    head = (f"{'program':9} {'seed':>4} {'elpd_loo':>9} {'se':>5} {'mcse√Σ':>7} {'mcse':>6} "
            f"{'k̂max':>5} {'elpd_kfold':>10} {'se':>5} {'mcse':>6} {'diff':>7} {'z':>6} "
            f"{'|z_i|>3':>7} {'warn':>4}  {'worst i: loo vs kfold (z_i)':30} {'s':>7}")
    print(head)
    print("-" * len(head))
    rows = []
    for name in args.programs.split(","):
        for s in seeds:
            r = compare(name, s, nuts)
            rows.append(r)
            print(f"{r['name']:9} {r['seed']:4d} {r['loo']:9.3f} {r['loo_se']:5.2f} "
                  f"{r['mc_sq']:7.3f} {r['mc_joint']:6.3f} {r['kmax']:5.2f} {r['kf']:10.3f} "
                  f"{r['kf_se']:5.2f} {r['kf_mc']:6.3f} {r['diff']:+7.3f} {r['z']:+6.2f} "
                  f"{r['n_big']:7d} {r['divergent']:4d}  {r['worst']:30} {r['secs']:>7}",
                  flush=True)

    if len(seeds) > 2:
        summary(rows, args.programs.split(","))


def summary(rows: list[dict], names: list[str]) -> None:
    """Across seeds: each estimate's spread against the mean of its reported Monte Carlo se
    (an honest se matches the spread), and the mean difference in units of its se."""
    print("\nacross seeds: sd of the estimates vs the mean reported mc se; mean diff / its se")
    head = (f"{'program':9} {'seeds':>5} {'mean loo':>9} {'sd':>6} {'mcse√Σ':>7} {'mcse':>6} "
            f"{'mean kfold':>10} {'sd':>6} {'mcse':>6} {'mean diff':>9} {'z':>6}")
    print(head)
    print("-" * len(head))
    for name in names:
        rs = [r for r in rows if r["name"] == name]
        lo, kf = np.array([r["loo"] for r in rs]), np.array([r["kf"] for r in rs])
        d = lo - kf
        se_d = d.std(ddof=1) / np.sqrt(d.size)
        print(f"{name:9} {len(rs):5d} {lo.mean():9.3f} {lo.std(ddof=1):6.3f} "
              f"{np.mean([r['mc_sq'] for r in rs]):7.3f} "
              f"{np.mean([r['mc_joint'] for r in rs]):6.3f} {kf.mean():10.3f} "
              f"{kf.std(ddof=1):6.3f} {np.mean([r['kf_mc'] for r in rs]):6.3f} "
              f"{d.mean():+9.3f} {d.mean() / se_d:+6.2f}")


if __name__ == "__main__":
    main()
