"""gbs when a few draws carry its bridge: coverage of the single bridge's ±2 se against an
exact log Z, and of what gbs reports under its fixed rule (fewer than
:data:`~stanlogz.estimators.bridge.tempered.MIN_CARRIERS` draws carrying a side: the tempered
bridge instead).

The case: N(0, S) in ``--dim`` dimensions (S = A A'/d + diag(logspace(-2, 1)); log Z = 0), exact
draws, 4 chains x ``n``. Below 250 draws in a fitting half the flow cannot be validated; with
``--n-layers`` layers asked for it then overfits the draws it is fitted to and, in 88
dimensions, about one draw carries each side of the bridge (the default, no layers, keeps 10
or more). A draw's count is n / (1 + Var f / (E f)^2) over the bridge's terms f on that side.

    python -m benchmarks.bridge_carriers --seeds 15 --draws 60 100 --n-layers 0 2 8
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dim", type=int, default=88)
    ap.add_argument("--seeds", type=int, default=15)
    ap.add_argument("--first-seed", type=int, default=0, help="seeds first-seed, first-seed+1, ...")
    ap.add_argument("--draws", type=int, nargs="+", default=[60, 100])
    ap.add_argument("--n-layers", type=int, nargs="+", default=[0, 2, 8],
                    help="layers asked of the unvalidated flow (0: the default, none)")
    ap.add_argument("--out", default=None, help="JSON lines of every run")
    ap.add_argument("--tempered", default="auto", choices=("auto", "never"),
                    help="gbs's tempered option (never: the single bridge alone)")
    args = ap.parse_args()
    from stanlogz.densities.gaussian import GaussianTarget
    from stanlogz.estimators.bridge.bridge import gbs
    from stanlogz.estimators.bridge.tempered import MIN_CARRIERS

    d = args.dim
    a = np.random.default_rng(0).standard_normal((d, d)) / np.sqrt(d)
    cov = a @ a.T + np.diag(np.logspace(-2, 1, d))
    target, chol = GaussianTarget(np.zeros(d), cov), np.linalg.cholesky(cov)
    out = open(args.out, "a") if args.out else None
    print(f"| draws per chain | layers asked | runs | fewer than {MIN_CARRIERS:.0f} carry it | "
          "single bridge: ±2 se covers | max abs z | reported: ±2 se covers | max abs z | "
          "95% interval covers | median se | median s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for n in args.draws:
        for layers in args.n_layers:
            rows = []
            for s in range(args.first_seed, args.first_seed + args.seeds):
                g = np.random.default_rng(1000 + s)
                x = (g.standard_normal((4 * n, d)) @ chol.T).reshape(4, n, d)
                t0 = time.perf_counter()
                r = gbs(target, x, seed=s, n_layers=layers or None, tempered=args.tempered)
                dg = r.diagnostics
                single = dg.get("single_bridge", {"log_z": r.log_z, "log_z_se": r.log_z_se})
                row = {"dim": d, "n": n, "layers": layers, "seed": s,
                       "carriers": [dg["bridge_carriers_p"], dg["bridge_carriers_q"]],
                       "single": [single["log_z"], single["log_z_se"]],
                       "reported": [r.log_z, r.log_z_se], "tempered": "tempered" in dg,
                       "df": r.log_z_df, "interval": list(r.interval(0.95)),
                       "bounds": ({k: dg["tempered"][k] for k in
                                   ("lower", "lower_se", "upper", "upper_se", "start")}
                                  if "tempered" in dg else None),
                       "seconds": time.perf_counter() - t0}
                rows.append(row)
                if out:
                    out.write(json.dumps(row) + "\n")
                    out.flush()
            zs = np.array([r["single"][0] / r["single"][1] for r in rows])
            zr = np.array([r["reported"][0] / r["reported"][1] for r in rows])
            few = sum(min(r["carriers"]) < MIN_CARRIERS for r in rows)
            print(f"| {n} | {layers} | {len(rows)} | {few} | {np.mean(np.abs(zs) <= 2):.2f} | "
                  f"{np.abs(zs).max():.1f} | {np.mean(np.abs(zr) <= 2):.2f} | "
                  f"{np.abs(zr).max():.1f} | "
                  f"{np.mean([r['interval'][0] <= 0.0 <= r['interval'][1] for r in rows]):.2f} | "
                  f"{np.median([r['reported'][1] for r in rows]):.3f} | "
                  f"{np.median([r['seconds'] for r in rows]):.1f} |", flush=True)


if __name__ == "__main__":
    main()
