"""Why loo's se of the ordinal Brier score undercovers: the dependence of the pointwise LOO values
through the shared posterior, measured with exact closed forms (no draws, no PSIS).

The ``ordinal`` case of ``benchmarks/coverage_measures.py``: y ~ Categorical(π_g) on 1..4 in two
groups of 30, prior Dirichlet(1, 1, 1, 1), exact LOO predictives (1 + counts − e_y) / (K + n − 1).
Per data set: the exact-LOO Brier estimate, loo's se sd(v_i)/√N, the exact delete-one
jackknife se of the whole LOO estimate (each observation j left out of the data, every other
observation's LOO predictive refitted without j: the se that ``se_calibrated`` approximates to
first order from the draws), and both targets: the conditional one (the full-data predictive's
expected Brier on new data, closed form) and the data-averaged one (Monte Carlo of 20,000
training sets; its se is below 0.001). Coverage of ±2 se has binomial sd √(c(1 − c)/D),
0.005 at 0.95 for 2,000 data sets.

    PYTHONPATH=$PWD nice python3 -m benchmarks.measures_jackknife     # 2,000 data sets, ~30 s
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from benchmarks.coverage_measures import Ordinal, _pmf_scores


def run(n_sets: int, seed: int) -> None:
    case = Ordinal(n_mc=20_000)
    rng = np.random.default_rng(seed)
    cats = np.arange(1, case.k + 1)
    k, n = case.k, case.n_g
    rows = []
    for _ in range(n_sets):
        y = np.concatenate([rng.choice(cats, size=n, p=case.pi[g]) for g in (0, 1)]).astype(float)
        counts = np.array([np.bincount(y[case.g == g].astype(int) - 1, minlength=k)
                           for g in (0, 1)])
        onehot = (y[:, None] == cats[None]).astype(float)
        v = _pmf_scores((1 + counts[case.g] - onehot) / (k + n - 1), y)["brier"]
        pmf_g = (1 + counts) / (k + n)
        cond = sum(float(np.mean(case.pi[:, c - 1]
                                 * _pmf_scores(pmf_g, np.full(2, float(c)))["brier"]))
                   for c in cats)
        big_n = y.size
        t_j = np.empty(big_n)
        for j in range(big_n):
            keep = np.arange(big_n) != j
            c2 = counts.copy()
            c2[case.g[j], int(y[j]) - 1] -= 1
            n_train = np.where(case.g == case.g[j], n - 1, n)[keep]
            pm = (1 + c2[case.g[keep]] - onehot[keep]) / (k + n_train - 1)[:, None]
            t_j[j] = _pmf_scores(pm, y[keep])["brier"].mean()
        se_jack = math.sqrt((big_n - 1) / big_n * np.sum((t_j - t_j.mean()) ** 2))
        rows.append((v.mean(), v.std(ddof=1) / math.sqrt(big_n), se_jack, cond))
    est, se, se_jack, cond = np.array(rows).T
    print(f"{n_sets} ordinal data sets; binomial sd of a coverage near 0.95: "
          f"{math.sqrt(0.0475 / n_sets):.3f}")
    print("| target | sd(est − target) / rms loo se | / rms jackknife se | ±2 loo se | "
          "±2 jackknife se |")
    print("|---|---|---|---|---|")
    for name, target in (("conditional", cond), ("data-averaged", case.truth["brier"])):
        d = est - target
        print(f"| {name} | {d.std() / math.sqrt(np.mean(se**2)):.3f} | "
              f"{d.std() / math.sqrt(np.mean(se_jack**2)):.3f} | "
              f"{np.mean(np.abs(d) <= 2 * se):.3f} | {np.mean(np.abs(d) <= 2 * se_jack):.3f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=3)
    a = ap.parse_args()
    run(a.datasets, a.seed)


if __name__ == "__main__":
    main()
