"""Coverage of elpd_kfold's Monte Carlo se where each held-out observation has a latent of
its own (the augmented bridge, and each observation's value by importance sampling on the
training draws with its latent drawn from q), against 2-D quadrature.

``python3 -m benchmarks.kfold_latent_coverage [--seeds S] [--cases 0,1] [--out FILE]``

The program is ``stan_models/tests/latent_poisson_lower1.stan`` (one normal latent per Poisson
count, ``int<lower=1> N``, a data array it does not read). Cases:

0. its 12 shipped counts (``latent_poisson_lower1.json``), K = 4;
1. 60 counts simulated once (seed 4: mu 1, tau 0.6), K = 5.

Each seed runs ``stanlogz.kfold`` (4 chains of 1,000 draws after 1,000 warmup, interpreted)
with random folds drawn from the run's seed. The exact values are
:func:`benchmarks.truths.crossval.truths.poisson_lognormal_kfold` on the same folds (each
training set's posterior on a 121 x 121 grid over mu and log tau, 40 Gauss-Hermite nodes over
the latent; 241 points move the 12-count total by 2e-9).

The table gives, per case, the mean error of the total, the rms and largest |z| of the total
in units of its mcse, the share of totals within 1 and 1.96 mcse, the same shares over the
folds one by one (each fold's sum of elpd_i against its mcse), the median mcse and seconds,
and how the folds' log p(y_V | y_T) were estimated. The 95% share's binomial sd over S seeds
is sqrt(0.95 * 0.05 / S).
"""

from __future__ import annotations

import collections
import json
import os
import time

import numpy as np

from benchmarks._common import STAN_MODELS, seeded_cases
from benchmarks.truths.crossval.truths import poisson_lognormal_kfold

PROGRAM = STAN_MODELS / "tests" / "latent_poisson_lower1.stan"
CASES = [("shipped", 4), ("simulated", 5)]


def data(which: str) -> dict:
    """The counts of a case (see the module's docstring)."""
    if which == "shipped":
        return json.loads((STAN_MODELS / "tests" / "latent_poisson_lower1.json").read_text())
    rng = np.random.default_rng(4)
    y = rng.poisson(np.exp(1.0 + 0.6 * rng.standard_normal(60)))
    return {"N": 60, "y": y.tolist(), "x": np.zeros(60).tolist(), "site": [1, 2, 3]}


def main() -> None:
    import stanlogz

    args, cases = seeded_cases(__doc__, CASES, "case | seeds | mean error | rms z | max abs z | "
                               "within 1 | within 1.96 | folds within 1 | folds within 1.96 | "
                               "median mcse | median s | methods")
    os.environ["STANLOGZ_BACKEND"] = "interpreted"
    out = open(args.out, "a") if args.out else None
    for which, k in cases:
        d = data(which)
        y = np.asarray(d["y"])
        model = stanlogz.StanModel.from_file(str(PROGRAM), d)
        errs, zs, fold_zs, mcses, secs = [], [], [], [], []
        methods: collections.Counter[str] = collections.Counter()
        for seed in range(1, int(args.seeds) + 1):
            start = time.perf_counter()
            r = stanlogz.kfold(model, d, k=k, seed=seed)
            secs.append(time.perf_counter() - start)
            exact = poisson_lognormal_kfold(y, np.asarray(r.fold_of))
            err = r.elpd_kfold - float(exact.sum())
            errs.append(err)
            mcses.append(r.mcse)
            zs.append(err / r.mcse)
            folds = []
            for f in r.folds:
                e = float(np.sum(f.elpd_i) - exact[f.index].sum())
                fold_zs.append(e / f.elpd_i_mcse)
                methods[f.method] += 1
                folds.append({"method": f.method, "error": e, "mcse": f.elpd_i_mcse,
                              "refit": int(np.size(f.refit_observations))})
            if out:
                out.write(json.dumps({"case": which, "seed": seed, "elpd": r.elpd_kfold,
                                      "mcse": r.mcse, "exact": float(exact.sum()),
                                      "seconds": secs[-1], "folds": folds}) + "\n")
                out.flush()
        z, fz = np.array(zs), np.array(fold_zs)
        cells = [f"{which}, K = {k}", len(z), f"{np.mean(errs):+.4f}",
                 f"{np.sqrt(np.mean(z**2)):.2f}", f"{np.abs(z).max():.1f}",
                 *(f"{np.mean(np.abs(z) <= c):.2f}" for c in (1, 1.96)),
                 *(f"{np.mean(np.abs(fz) <= c):.2f}" for c in (1, 1.96)),
                 f"{np.median(mcses):.4f}", f"{np.median(secs):.1f}",
                 ", ".join(f"{m} {n}" for m, n in methods.most_common())]
        print("| " + " | ".join(map(str, cells)) + " |", flush=True)


if __name__ == "__main__":
    main()
