"""Coverage of K-fold's estimate of the folds a time budget left without a refit where PSIS
from the full fit cannot serve them (``kfold_time.fill_by_sampling``): the refit folds are a
random sample of a random partition, each fold left gets their elpd per observation times its
size, and its se is the ratio estimator's with the t widening.

The pointwise values are drawn once per replicate (N values, heavy-tailed: a normal body with
a t_3 part, as elpd_i with a few influential points), split into K random folds, and k of them
"refit" (their values known); the table counts how often the true total lies within ±2 se of
the estimate.

    python3 -m benchmarks.kfold_fold_sample --reps 4000
"""

from __future__ import annotations

import argparse

import numpy as np

from stanlogz.crossval.refit.heldout import HeldOut
from stanlogz.crossval.refit.kfold_time import fill_by_sampling


def replicate(rng: np.random.Generator, n: int, n_folds: int, k: int) -> float:
    """z of the estimated total against the true one (the refit folds' values exact)."""
    elpd_i = -1.0 + 0.3 * rng.normal(size=n) - 0.4 * np.abs(rng.standard_t(3, size=n))
    fold_of = rng.permutation(np.arange(n) % n_folds)
    held = [np.flatnonzero(fold_of == j) for j in range(n_folds)]
    nan = float("nan")
    folds: list[HeldOut | None] = [
        HeldOut(index=h, elpd=float(elpd_i[h].sum()), mcse=0.0, method="refit",
                elpd_i=elpd_i[h], elpd_i_mcse=0.0, khat=(nan, nan), n_latent=0,
                n_gradient_evals=0, n_evals=0, seconds=0.0) if j < k else None
        for j, h in enumerate(held)]
    out, _ = fill_by_sampling(held, folds, "test")
    est = sum(float(np.sum(f.elpd_i)) for f in out)
    se = sum(f.elpd_i_shared_mcse for f in out)
    return (est - elpd_i.sum()) / se


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=4000)
    args = ap.parse_args()
    rng = np.random.default_rng(45)
    print("| N | K | folds refit | replicates | ±2 se covers | rms z |")
    print("|---|---|---|---|---|---|")
    for n, n_folds, k in ((262, 10, 3), (262, 10, 5), (262, 10, 8), (3020, 10, 2), (3020, 10, 5),
                          (1000, 20, 10)):
        z = np.array([replicate(rng, n, n_folds, k) for _ in range(args.reps)])
        print(f"| {n} | {n_folds} | {k} | {args.reps} | {np.mean(np.abs(z) <= 2):.3f} | "
              f"{np.sqrt(np.mean(z**2)):.2f} |", flush=True)


if __name__ == "__main__":
    main()
