"""Coverage of log Z's se where the posterior has modes that NUTS's chains do not move
between (:mod:`stanlogz.draws.mode_search`, :mod:`stanlogz.estimators.modewise`).

``python3 -m benchmarks.evidence_modes_coverage [--seeds S] [--method gbs] [--out FILE]``

The program is ``stan_models/tests/mixture_uneven.stan`` on the data of
:mod:`benchmarks.modes_spread_coverage` (two unit normal components with unordered means, 10
observations near -3 and 10 near 3, mixing weight 0.5), with the prior means 0 and 0 (two
modes alike) and -2 and 2 (weights 0.72 and 0.28). The exact log Z is the same quadrature
over a grid of the two means. The third case (``--cases 2``) is
``stan_models/tests/kfold_far_mode.stan`` (prior modes at 0 and 6, sd 0.4) with two weak
observations, 3 and 3.2 with sd 3: the posterior weighs the modes 0.47 and 0.53, and the
mode at 6 lies outside Stan's inits on (-2, 2); its exact log Z is adaptive quadrature over
theta. Each seed runs ``stanlogz.evidence`` at its defaults; the table counts the seeds
whose chains all sat in one mode, the seeds where the search found a mode, the runs that
hold both modes, the errors' rms and largest |z|, and the share within 1 and 1.96 se. The
seeds are independent: the 95% share's binomial sd over S seeds is sqrt(0.95 * 0.05 / S).
"""

from __future__ import annotations

import json

import numpy as np
from scipy import integrate, stats
from scipy.special import logsumexp

from benchmarks._common import ROOT, seeded_cases
from benchmarks.modes_spread_coverage import PROGRAM, Y, _log_post

FAR = ROOT / "stan_models" / "tests" / "kfold_far_mode.stan"
FAR_DATA = {"N": 2, "y": [3.0, 3.2], "s": [3.0, 3.0], "g": [1, 1]}


def far_log_z() -> float:
    """log Z of ``kfold_far_mode.stan`` on :data:`FAR_DATA`: quadrature over theta (each
    prior component's mass, where the integrand is not negligible, holds the breakpoints)."""
    y, s = np.array(FAR_DATA["y"]), np.array(FAR_DATA["s"])

    def f(t: float) -> float:
        prior = np.logaddexp(np.log(0.5) + stats.norm.logpdf(t, 0, 0.4),
                             np.log(0.5) + stats.norm.logpdf(t, 6, 0.4))
        return float(np.exp(prior + np.sum(stats.norm.logpdf(y, t, s))))

    return float(np.log(integrate.quad(f, -10, 16, points=[0, 6], limit=200,
                                       epsabs=0, epsrel=1e-12)[0]))


def cases() -> list[tuple[str, str, dict, float]]:
    """``(label, program, data, exact log Z)`` of each case."""
    out = []
    for m in (0.0, 2.0):
        out.append((f"prior means {-m + 0.0:g}, {m:g}", str(PROGRAM),
                    {"N": int(Y.size), "y": Y.tolist(), "lambda": 0.5, "m": m},
                    float(logsumexp(_log_post(Y, 0.5, m)))))
    out.append(("far mode (prior modes 0, 6)", str(FAR), FAR_DATA, far_log_z()))
    return out


def main() -> None:
    import stanlogz

    args, chosen = seeded_cases(
        __doc__, cases(), "case | method | seeds | chains all in one mode | search found a "
        "mode | both modes in log Z | rms z | max abs z | within 1 se | within 1.96 se",
        method="gbs")
    for label, program, data, exact in chosen:
        rows = []
        for seed in range(1, args.seeds + 1):
            r = stanlogz.evidence(program, data, seed=seed, method=args.method)
            modes = r.diagnostics.get("modes", [])
            row = {"case": label, "seed": seed, "log_z": r.log_z, "se": r.log_z_se, "exact": exact,
                   "found": r.diagnostics.get("mode_search", {}).get("found", 0),
                   "modes": [g["chains"] for g in modes]}
            rows.append(row)
            if args.out is not None:
                with args.out.open("a") as fh:
                    fh.write(json.dumps(row) + "\n")
        z = np.array([(r["log_z"] - exact) / r["se"] for r in rows])
        # the fit's four chains (1-4) in one group: every chain sat in one mode
        one = sum(1 for r in rows if not r["modes"]
                  or any(set(range(1, 5)) <= set(g) for g in r["modes"]))
        cells = [label, args.method, len(rows), one,
                 sum(r["found"] > 0 for r in rows), sum(len(r["modes"]) == 2 for r in rows),
                 f"{np.sqrt(np.mean(z**2)):.2f}", f"{np.max(np.abs(z)):.1f}"]
        cells += [f"{np.mean(np.abs(z) <= c):.2f}" for c in (1.0, 1.96)]
        print("| " + " | ".join(map(str, cells)) + " |", flush=True)


if __name__ == "__main__":
    main()
