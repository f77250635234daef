"""PSIS-LOO fix-ups for high-k̂ observations of a Poisson regression fitted to over-dispersed
counts: plain PSIS, moment matching (crossval.fixups.moment_match), the exact refit (NUTS on y₋ᵢ +
bridge, crossval.fixups.fixups) and a brute-force long refit (NUTS on y₋ᵢ with many draws; log of
the mean of p(y_i | θ) over them, se from the ESS) as the reference.

Prints one row per observation with k̂ > 0.7 (elpd ± se, seconds; z = difference to the
brute-force value over the combined se) and a summary row.

    python3 -m benchmarks.loo_fixups [--n 150] [--k 15] [--phi 0.7] [--seed 1]
                                     [--brute-draws 5000]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
from scipy.special import logsumexp

from stanlogz import arviz_compat
from stanlogz.crossval.elpd.psis import elpd_mcse, psis_loo, relative_efficiency_pointwise
from stanlogz.crossval.fixups.fixups import FixTask, fix_observation
from stanlogz.crossval.fixups.moment_match import moment_match_observation
from stanlogz.crossval.observations.observations import find_observations
from stanlogz.crossval.observations.pointwise import PointwiseLogLik
from stanlogz.stan.model import StanModel
from stanlogz.stan.settings import NutsArgs

PROGRAM = Path(__file__).resolve().parents[1] / "stan_models" / "bench" / "poisson_glm.stan"


def simulate(n: int, k: int, phi: float, seed: int) -> dict:
    """Negative-binomial counts (dispersion ``phi``) with a log-linear mean in ``k``
    standard-normal predictors: over-dispersed for the Poisson model."""
    rng = np.random.default_rng(seed)
    x = np.round(rng.normal(size=(n, k)), 3)
    mu = np.exp(1.0 + x @ rng.normal(0, 0.3, k))
    y = rng.negative_binomial(phi, phi / (phi + mu))
    return {"N": n, "K": k, "X": x.tolist(), "y": [int(v) for v in y]}


def brute_force(pw: PointwiseLogLik, i: int, draws: int, seed: int
                ) -> tuple[float, float, float, float]:
    """log E[p(y_i | θ)] over a long NUTS run on y₋ᵢ: (elpd, se, k̂ of the p(y_i | θ) values
    (above 0.7 the mean is dominated by a few draws and the reference is unreliable),
    seconds)."""
    t0 = time.perf_counter()
    fit = pw.held_out_model(i).nuts(chains=4, warmup=1000, draws=draws, seed=seed)
    unc = fit.unconstrained
    ll = pw.column(i, unc.reshape(-1, unc.shape[-1])).reshape(unc.shape[:2])
    elpd = float(logsumexp(ll) - math.log(ll.size))
    p = np.exp(ll - ll.max())
    ess = float(arviz_compat.ess_mean(p[..., None])[0])
    se = float(p.std() / p.mean() / math.sqrt(ess))
    _, khat = arviz_compat.psislw(ll.reshape(-1))
    return elpd, se, float(khat), time.perf_counter() - t0


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=150)
    ap.add_argument("--k", type=int, default=15)
    ap.add_argument("--phi", type=float, default=0.7)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--brute-draws", type=int, default=5000)
    ap.add_argument("--max-points", type=int, default=20)
    ap.add_argument("--k-target", type=float, default=0.3,
                    help="k_target of the second moment-matching column")
    args = ap.parse_args(argv)

    data = simulate(args.n, args.k, args.phi, args.seed)
    model = StanModel.from_file(PROGRAM, data)
    t0 = time.perf_counter()
    fit = model.nuts(chains=4, warmup=1000, draws=1000, seed=args.seed)
    nuts_s = time.perf_counter() - t0
    unc = fit.unconstrained
    pw = PointwiseLogLik(model, data, find_observations(data))
    ll = pw.matrix(unc.reshape(-1, model.dim)).reshape(4, 1000, -1)
    r_eff = relative_efficiency_pointwise(ll)
    loo = psis_loo(ll, r_eff=float(r_eff.mean()))
    lw, _ = arviz_compat.psislw(-ll.reshape(-1, args.n).T, r_eff=float(r_eff.mean()))
    psis_se = elpd_mcse(lw, ll.reshape(-1, args.n).T, r_eff)
    bad = [int(i) for i in np.argsort(-loo.khat) if loo.khat[i] > 0.7][: args.max_points]
    print(f"Poisson GLM, N = {args.n}, K = {args.k}, negative-binomial counts (phi = "
          f"{args.phi}), 4 x 1000 NUTS draws ({nuts_s:.1f} s); {len(bad)} of {args.n} "
          f"observations have k-hat > 0.7; reference: NUTS on y_-i, 4 x {args.brute_draws}")
    mm_head = f"{'elpd ± se':>15} {'k':>5} {'evals':>6} {'s':>5} {'z':>5}"
    head = (f"{'obs':>4} {'khat':>5} | {'PSIS elpd ± se':>15} {'z':>5} | mm to 0.7: {mm_head} | "
            f"mm to {args.k_target}: {mm_head} | exact: {'elpd ± se':>15} {'s':>5} {'z':>5} | "
            f"brute: {'elpd ± se':>15} {'k':>5} {'s':>5}")
    print(head)
    print("-" * len(head))
    rng = np.random.default_rng(args.seed)
    rows = []
    for i in bad:
        mms = [moment_match_observation(pw, unc, i, r_eff=float(r_eff[i]), k_threshold=0.7,
                                        k_target=target, log_lik_draws=ll[..., i])
               for target in (None, args.k_target)]
        task = FixTask(index=i, method="exact", khat=float(loo.khat[i]),
                       psis_elpd=float(loo.elpd_i[i]),
                       settings=NutsArgs(chains=4, warmup=1000, draws=1000), ups_options={})
        ex = fix_observation(pw, unc, task, rng)
        b, b_se, b_k, b_s = brute_force(pw, i, args.brute_draws, int(rng.integers(2**31 - 1)))

        def z(v: float, se: float) -> float:
            return (v - b) / math.hypot(se, b_se)  # noqa: B023

        row = {"PSIS": z(loo.elpd_i[i], psis_se[i]), "mm to 0.7": z(mms[0].elpd, mms[0].mcse),
               f"mm to {args.k_target}": z(mms[1].elpd, mms[1].mcse), "exact": z(ex.elpd, ex.mcse),
               "ref_ok": b_k < 0.7, "seconds": [m.seconds for m in mms] + [ex.seconds, b_s],
               "evals": [m.n_evals for m in mms], "ok": [m.khat_after < 0.7 for m in mms]}
        rows.append(row)
        cells = [f"{i + 1:>4} {loo.khat[i]:>5.2f}",
                 f"{loo.elpd_i[i]:>7.3f} ± {psis_se[i]:<5.3f} {row['PSIS']:>5.1f}"]
        cells += [f"{' ' * 11}{m.elpd:>7.3f} ± {m.mcse:<5.3f} {m.khat_after:>5.2f} {m.n_evals:>6} "
                  f"{m.seconds:>5.2f} {zz:>5.1f}"
                  for m, zz in zip(mms, (row["mm to 0.7"], row[f"mm to {args.k_target}"]),
                                   strict=True)]
        cells[-1] = " " * (len(str(args.k_target)) - 3) + cells[-1]
        cells.append(f"{' ' * 7}{ex.elpd:>7.3f} ± {ex.se:<5.3f} {ex.seconds:>5.2f} "
                     f"{row['exact']:>5.1f}")
        cells.append(f"{' ' * 7}{b:>7.3f} ± {b_se:<5.3f} {b_k:>5.2f} {b_s:>5.1f}")
        print(" | ".join(cells), flush=True)
    if not rows:
        return
    print("-" * len(head))
    good = [r for r in rows if r["ref_ok"]]
    print(f"summary over the {len(good)} of {len(rows)} points whose reference is reliable "
          "(brute-force k-hat < 0.7); z = (value - reference) / combined se:")
    for j, name in enumerate(("PSIS", "mm to 0.7", f"mm to {args.k_target}", "exact")):
        zs = np.abs([r[name] for r in good]) if good else np.array([np.nan])
        extra = ""
        if name.startswith("mm"):
            k = j - 1
            extra = (f", k-hat < 0.7 after for {sum(r['ok'][k] for r in rows)} of {len(rows)}, "
                     f"{np.mean([r['evals'][k] for r in rows]):.0f} evals")
        secs = (f", {np.mean([r['seconds'][j - 1] for r in rows]):.2f} s per point"
                if j else "")
        print(f"  {name:<11} |z| mean {zs.mean():.1f}, max {zs.max():.1f}, "
              f"|z| > 3 for {int(np.sum(zs > 3))}{extra}{secs}")
    print(f"  brute force {np.mean([r['seconds'][3] for r in rows]):.1f} s per point")


if __name__ == "__main__":
    sys.exit(main())
