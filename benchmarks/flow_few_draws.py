"""gbs with too few draws to validate its flow (fewer than 50 held out): coverage of its
+-2 se against an exact log Z, where the flow's proposal is the shrunk Gaussian of the draws
(the default) or, with ``--n-layers 8``, that Gaussian with eight layers fitted on the same
draws without validation (what the default was: the layers overfit and one draw carried the
bridge).

Cases:
  gauss88     N(0, S) in 88 dimensions (S = A A'/88 + diag(logspace(-2, 1))), exact draws,
              4 chains x ``n`` draws; log Z = 0.
  radon26     posteriordb radon_county_intercept without county 26 (105 of its 919 homes; 88
              parameters, alpha_26 then has only its N(0, 10^2) prior): NUTS 4 x ``n``; log Z
              by quadrature (each county's alpha in closed form, a 301 x 301 grid over beta and
              log sigma_y), less log 2 (Stan's sigma_y ~ normal(0, 1) on (0, inf) is not
              renormalized).

    python -m benchmarks.flow_few_draws --seeds 40 --draws 60 100
    python -m benchmarks.flow_few_draws --seeds 20 --draws 100 --n-layers 8
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from scipy import special, stats

RADON = Path("/work/shared/corpus/posteriordb/radon_mn-radon_county_intercept")


def radon_without(county: int) -> tuple[dict, float]:
    """The data without ``county`` and the exact log Z of the program on it."""
    data = json.loads((RADON / "data.json").read_text())
    y, x = np.array(data["log_radon"]), np.array(data["floor_measure"])
    c = np.array(data["county_idx"])
    keep = c != county
    sub = {**data, "N": int(keep.sum()), "county_idx": c[keep].tolist(),
           "floor_measure": x[keep].tolist(), "log_radon": y[keep].tolist()}
    y, x, c = y[keep], x[keep], c[keep]
    # the grid holds the posterior of (beta, log sigma): its edges are 23 or more below the top
    b, u = np.linspace(-1.2, 0.2, 301), np.linspace(np.log(0.6), np.log(0.95), 301)
    bb, uu = np.meshgrid(b, u, indexing="ij")
    s2 = np.exp(2 * uu)
    tot = stats.norm.logpdf(bb, 0, 10) + stats.halfnorm.logpdf(np.exp(uu)) + uu
    for j in np.unique(c):
        r = np.nonzero(c == j)[0]
        e = y[r][None, None, :] - bb[..., None] * x[r][None, None, :]
        ss, t, n, a = np.sum(e**2, -1), np.sum(e, -1), r.size, 100.0
        tot = tot - 0.5 * ((ss - a * t**2 / (s2 + n * a)) / s2 + n * np.log(s2)
                           + np.log1p(n * a / s2) + n * np.log(2 * np.pi))
    log_z = special.logsumexp(tot) + np.log((b[1] - b[0]) * (u[1] - u[0]))
    return sub, float(log_z - np.log(2.0))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=40)
    ap.add_argument("--draws", type=int, nargs="+", default=[60, 100])
    ap.add_argument("--cases", nargs="+", default=["gauss88", "radon26"])
    ap.add_argument("--n-layers", type=int, default=None,
                    help="layers of the unvalidated flow (default: none)")
    args = ap.parse_args()
    import stanlogz
    from stanlogz.densities.gaussian import GaussianTarget
    from stanlogz.estimators.bridge.bridge import gbs
    from stanlogz.stan.model import StanModel
    from stanlogz.stan.settings import NutsArgs

    print("| case | draws per chain | runs | +-2 se covers | mean z | sd z | max abs z | "
          "median se | median draws carrying the bridge (posterior, flow) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for case in args.cases:
        if case == "gauss88":
            rng = np.random.default_rng(0)
            a = rng.standard_normal((88, 88)) / np.sqrt(88)
            cov = a @ a.T + np.diag(np.logspace(-2, 1, 88))
            target, chol, truth = GaussianTarget(np.zeros(88), cov), np.linalg.cholesky(cov), 0.0
        else:
            sub, truth = radon_without(26)
            target = StanModel.from_file(RADON / "model.stan", sub)
        for n in args.draws:
            z, se, eff = [], [], []
            for s in range(args.seeds):
                if case == "gauss88":
                    g = np.random.default_rng(1000 + s)
                    x = (g.standard_normal((4 * n, 88)) @ chol.T).reshape(4, n, 88)
                else:
                    x = stanlogz.sample(target, settings=NutsArgs(draws=n),
                                        seed=1000 + s).unconstrained
                r = gbs(target, x, seed=s, n_layers=args.n_layers)
                dg = r.diagnostics
                z.append((r.log_z - truth) / r.log_z_se)
                se.append(r.log_z_se)
                eff.append((dg["bridge_overlap_p"] * dg["n_p"], dg["bridge_overlap_q"] * dg["n_q"]))
            z_a = np.array(z)
            e = np.median(np.array(eff), axis=0)
            print(f"| {case} | {n} | {len(z)} | {np.mean(np.abs(z_a) <= 2):.3f} | "
                  f"{z_a.mean():+.2f} | {z_a.std(ddof=1):.2f} | {np.abs(z_a).max():.2f} | "
                  f"{np.median(se):.3f} | {e[0]:.1f}, {e[1]:.1f} |", flush=True)


if __name__ == "__main__":
    main()
