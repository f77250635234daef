"""Coverage of elpd_loo's Monte Carlo se where the posterior has modes that NUTS's chains do
not move between (:mod:`stanlogz.crossval.psis_loo.modes`).

``python3 -m benchmarks.loo_modes_coverage [--seeds S] [--cases 0,1,2] [--out FILE]``

Cases, each against its exact LOO by quadrature (log p(y_i | y_-i) = log Z - log Z_-i):

0. ``stan_models/tests/kfold_far_mode.stan`` (prior modes at 0 and 6, sd 0.4) with ten weak
   observations (sd 10) around 3: the posterior weighs the modes about 0.5 each, and Stan's
   inits on (-2, 2) all fall to 0. Quadrature over theta.
1. and 2. ``stan_models/tests/mixture_uneven.stan`` on :mod:`benchmarks.modes_spread_coverage`'s
   data (two unit normal components with unordered means), prior means -2, 2 (modes that
   swap the labels, weighed 0.72 and 0.28, whose LOO values differ a little) and 0, 0 (modes
   alike). Quadrature over a grid of the two means.

Each seed runs ``stanlogz.loo`` at its defaults; the table counts the runs whose elpd_loo
combines two modes, and gives the errors' rms and largest |z| in units of
``mcse_elpd_loo`` and the share within 1 and 1.96 of it. The seeds are independent: the 95%
share's binomial sd over S seeds is sqrt(0.95 * 0.05 / S).
"""

from __future__ import annotations

import json

import numpy as np
from scipy import integrate, stats
from scipy.special import logsumexp

from benchmarks._common import seeded_cases
from benchmarks.evidence_modes_coverage import FAR
from benchmarks.modes_spread_coverage import PROGRAM, Y, _log_post


def far_data() -> dict:
    """Ten observations 3 + 10 z (z standard normal, seed 0, two decimals), sd 10."""
    rng = np.random.default_rng(0)
    n = 10
    y = (3 + 10 * rng.standard_normal(n)).round(2)
    return {"N": n, "y": y.tolist(), "s": [10.0] * n, "g": [1] * n}


def far_exact(data: dict) -> float:
    """Exact elpd_loo of ``kfold_far_mode.stan`` on ``data``: quadrature over theta."""
    y, s = np.array(data["y"]), np.array(data["s"])

    def log_z(keep: np.ndarray) -> float:
        def f(t: float) -> float:
            prior = np.logaddexp(np.log(0.5) + stats.norm.logpdf(t, 0, 0.4),
                                 np.log(0.5) + stats.norm.logpdf(t, 6, 0.4))
            return float(np.exp(prior + np.sum(stats.norm.logpdf(y[keep], t, s[keep]))))

        return float(np.log(integrate.quad(f, -10, 16, points=[0, 6], limit=200, epsabs=0,
                                           epsrel=1e-12)[0]))

    every = np.arange(y.size)
    full = log_z(every)
    return float(sum(full - log_z(np.delete(every, i)) for i in every))


def mixture_exact(m: float) -> float:
    """Exact elpd_loo of ``mixture_uneven.stan`` on :data:`Y` (weight 0.5, prior means -m,
    m): the grid quadrature of :mod:`benchmarks.modes_spread_coverage`."""
    full = logsumexp(_log_post(Y, 0.5, m))
    return float(sum(full - logsumexp(_log_post(np.delete(Y, i), 0.5, m))
                     for i in range(Y.size)))


def cases() -> list[tuple[str, str, dict, float]]:
    """``(label, program, data, exact elpd_loo)`` of each case."""
    far = far_data()
    out = [("far mode (prior modes 0, 6)", str(FAR), far, far_exact(far))]
    for m in (2.0, 0.0):
        out.append((f"label switching, prior means {-m + 0.0:g}, {m:g}", str(PROGRAM),
                    {"N": int(Y.size), "y": Y.tolist(), "lambda": 0.5, "m": m},
                    mixture_exact(m)))
    return out


def main() -> None:
    import stanlogz

    args, chosen = seeded_cases(
        __doc__, cases(), "case | seeds | two modes in elpd_loo | exact | mean error | rms z | "
        "max abs z | within 1 mcse | within 1.96 mcse")
    for label, program, data, exact in chosen:
        rows = []
        for seed in range(1, args.seeds + 1):
            r = stanlogz.loo(program, data, seed=seed)
            row = {"case": label, "seed": seed, "elpd_loo": r.elpd_loo,
                   "mcse": r.mcse_elpd_loo, "exact": exact,
                   "modes": None if r.modes is None else [m["chains"] for m in r.modes]}
            rows.append(row)
            if args.out is not None:
                with args.out.open("a") as fh:
                    fh.write(json.dumps(row) + "\n")
        err = np.array([r["elpd_loo"] - exact for r in rows])
        z = err / np.array([r["mcse"] for r in rows])
        cells = [label, len(rows), sum(r["modes"] is not None and len(r["modes"]) > 1
                                       for r in rows), f"{exact:.4f}", f"{np.mean(err):+.4f}",
                 f"{np.sqrt(np.nanmean(z**2)):.2f}", f"{np.nanmax(np.abs(z)):.1f}"]
        cells += [f"{np.mean(np.abs(z) <= c):.2f}" for c in (1.0, 1.96)]
        print("| " + " | ".join(map(str, cells)) + " |", flush=True)


if __name__ == "__main__":
    main()
