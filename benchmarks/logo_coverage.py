"""Coverage of the Monte Carlo se of leave-one-group-out without refits
(stanlogz.crossval.logo).

Each seed is a fresh NUTS run (4 x 1000 draws after 1000 warmup) on one fixed data set per
program; the rows count how often the estimate lies within ±2 reported Monte Carlo se of the
exact value (benchmarks/truths/crossval/truths_logo.py: (μ, τ) quadrature), for the total
elpd_logo (``mcse_elpd_logo``) and for every group value (its ``mcse``), and give the ratio of
the estimates' sd over the seeds to the mean reported se (1 when the se is right):

* ``normal``: logo_normal.stan, 8 groups of 4-6 observations (simulate("normal", 8, 4, 11):
  one group far from the rest, k̂ 0.35-0.96 over seeds, refit exactly with the default fix
  whenever its k̂ is above 0.4);
* ``poisson``: logo_poisson.stan, 8 groups of 5-7 counts (simulate("poisson", 8, 5, 1)).

    nice python3 -m benchmarks.logo_coverage --seeds 60            # both programs
    nice python3 -m benchmarks.logo_coverage --seeds 60 --fix none  # PSIS values only
    nice python3 -m benchmarks.logo_coverage --cases poisson --seeds 50 --draws 250
    nice python3 -m benchmarks.logo_coverage --cases normal --first-seed 1100 --save /tmp/run

The last row of each program counts the groups by their k̂ band (kept with their PSIS value)
and the refit groups; ``--save`` writes every seed's values (for diagnosis) to an .npz file.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from benchmarks._common import STAN_MODELS
from benchmarks.truths.crossval.truths_logo import exact_logo, simulate
from stanlogz.crossval.logo.estimator import logo
from stanlogz.stan.model import StanModel
from stanlogz.stan.settings import NutsArgs

CASES = {"normal": ("logo_normal.stan", (8, 4, 11)), "poisson": ("logo_poisson.stan", (8, 5, 1))}


def run(kind: str, seeds: int, fix: str, nuts: NutsArgs | None = None,
        k_threshold: float | None = None, save: str | None = None, first_seed: int = 1000
        ) -> list[str]:
    """The coverage rows of one program."""
    stan, (j, n_per, data_seed) = CASES[kind]
    data = simulate(kind, j, n_per, data_seed)
    truth = exact_logo(kind, data)
    m = StanModel.from_file(STAN_MODELS / "tests" / stan, data)
    tot, tot_se, grp, grp_se, secs, refits, khat = [], [], [], [], [], 0, []
    psis, refit, ierr = [], [], []
    for s in range(seeds):
        t0 = time.perf_counter()
        r = logo(m, data, group="g", seed=first_seed + s, fix=fix, pointwise_obs=False,
                 settings=nuts, k_threshold=k_threshold)
        secs.append(time.perf_counter() - t0)
        tot.append(r.elpd_logo)
        tot_se.append(r.mcse_elpd_logo)
        grp.append(r.elpd_g)
        grp_se.append([g.mcse for g in r.groups])
        refits += sum(g.method == "refit" for g in r.groups)
        khat.append(r.khat)
        psis.append([g.psis_elpd for g in r.groups])
        refit.append([g.method == "refit" for g in r.groups])
        ierr.append([g.integration_error for g in r.groups])
    if save:
        np.savez(f"{save}_{kind}.npz", truth=truth, tot=tot, tot_se=tot_se, grp=grp,
                 grp_se=grp_se, khat=khat, psis=psis, refit=refit, ierr=ierr, secs=secs)
    tot, tot_se = np.array(tot), np.array(tot_se)
    grp, grp_se = np.array(grp), np.array(grp_se)
    cov_t = np.mean(np.abs(tot - truth.sum()) <= 2 * tot_se)
    cov_g = np.mean(np.abs(grp - truth) <= 2 * grp_se)
    ratio_t = np.sqrt(np.mean((tot - truth.sum()) ** 2)) / np.mean(tot_se)
    ratio_g = np.sqrt(np.mean((grp - truth) ** 2, axis=0)) / np.mean(grp_se, axis=0)
    per = np.mean(np.abs(grp - truth) <= 2 * grp_se, axis=0)
    mk = np.mean(khat, axis=0)
    detail = "; ".join(f"{c:.2f} (k̂ {k:.2f})" for c, k in zip(per, mk, strict=True))
    bands = []
    kh, rf = np.array(khat), np.array(refit, dtype=bool)
    hit = np.abs(grp - truth) <= 2 * grp_se
    for lo, hi in ((-np.inf, 0.3), (0.3, 0.5), (0.5, 0.7), (0.7, np.inf)):
        m = (kh > lo) & (kh <= hi) & ~rf
        if m.any():
            bands.append(f"k̂ {'' if lo < 0 else f'{lo}'}–{'' if hi > 1 else f'{hi}'}: "
                         f"{np.mean(hit[m]):.3f} ({m.sum()})")
    if rf.any():
        bands.append(f"refit: {np.mean(hit[rf]):.3f} ({rf.sum()})")
    return [f"| {kind} | total | {seeds} | {cov_t:.3f} | {ratio_t:.2f} | {np.mean(tot_se):.4f} "
            f"| {np.mean(tot) - truth.sum():+.4f} | {np.median(secs):.1f} |",
            f"| {kind} | groups ({j} per seed) | {seeds * j} | {cov_g:.3f} | "
            f"{ratio_g.min():.2f}-{ratio_g.max():.2f} | {np.mean(grp_se):.4f} | "
            f"{np.mean(grp - truth):+.4f} | refits: {refits} |",
            f"| {kind} | each group: coverage (mean k̂) | {seeds} | {detail} | | | | |",
            f"| {kind} | groups by k̂ band: coverage (n) | {seeds * j} | {'; '.join(bands)} "
            "| | | | |"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=60)
    ap.add_argument("--fix", default="auto", choices=("auto", "none"))
    ap.add_argument("--cases", default="normal,poisson")
    ap.add_argument("--draws", type=int, default=1000, help="post-warmup draws per chain (4)")
    ap.add_argument("--k-threshold", type=float, default=None, help="refit groups above it")
    ap.add_argument("--first-seed", type=int, default=1000, help="seeds first-seed, ...")
    ap.add_argument("--save", default=None, help="write the per-seed values to SAVE_KIND.npz")
    args = ap.parse_args()
    nuts = NutsArgs(draws=args.draws)
    print("| program | what | n | coverage ±2 se | rmse / mean se | mean se | mean error "
          "| seconds per run |")
    print("|---|---|---|---|---|---|---|---|")
    for kind in args.cases.split(","):
        for row in run(kind, args.seeds, args.fix, nuts, args.k_threshold, args.save,
                       args.first_seed):
            print(row, flush=True)


if __name__ == "__main__":
    main()
