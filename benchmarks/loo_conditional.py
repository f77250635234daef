"""Coverage of the Monte Carlo se of PSIS-LOO on the conditional log p(y_i | y_-i, theta)
(stanlogz.crossval.observations.conditional: the program's density normalized over y_i, the
observation's latents integrated out) against exact leave-one-out values, over many NUTS seeds and
data sets.

Programs (stan_models/tests): eight schools without log_lik (per-observation latents; fixed
data, quadrature truth), a random-walk state model (linked latents), a multivariate-normal
likelihood with AR(1) errors and an AR(2) series (non-factorized; Gaussian-conditioning and
quadrature truths), binomial random effects (integer data, the latent integrated out by
Gauss-Hermite: the "integrated" source). For each replicate: z = (estimate - truth) / mc se
for elpd_loo and for every pointwise value; the table prints the share with |z| <= 2 (should
be >= 90%; 95% for an exact se), the rms z (1 for an exact se) and the largest k-hat. "sum"
uses sqrt(sum mcse_i^2) as loo reports it; "joint" the delta-method se of the sum
(stanlogz.crossval.psis_loo.sum_mcse), which accounts for the observations sharing the draws; "cover
i" uses PSIS's pointwise mcse, "cover i own" the same delta-method se on each point alone (the
autocorrelation of that point's weights, not the posterior's average relative efficiency).

    PYTHONPATH=. python3 benchmarks/loo_conditional.py            # quick: 12 replicates each
    PYTHONPATH=. python3 benchmarks/loo_conditional.py --full     # 100 replicates each
    PYTHONPATH=. python3 benchmarks/loo_conditional.py --full --pointwise-draws 400

``--pointwise-draws M`` runs the pass and PSIS on M of the 2,000 draws (``loo``'s
``pointwise_draws``: every chain thinned evenly); "cover mcse" is the share of replicates whose
elpd_loo lies within 2 of the reported ``mcse_elpd_loo`` of the truth (the headline's error
bar, which is what thinning widens), among those where it is reported ("withheld": loo's NA,
a k-hat above the threshold with ``fix="none"``).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from benchmarks.truths.crossval import truths_latent as T
from stanlogz.crossval.elpd.routes import ConditionalSource
from stanlogz.crossval.observations.integrated import IntegratedSource
from stanlogz.crossval.psis_loo.loo import loo
from stanlogz.crossval.psis_loo.sum_mcse import sum_mcse
from stanlogz.stan.model import StanModel
from stanlogz.stan.settings import NutsArgs

TESTS = Path(__file__).resolve().parents[1] / "stan_models" / "tests"


def _walk(n: int, rng: np.random.Generator) -> list[float]:
    return (np.cumsum(rng.normal(0, 0.5, n)) + rng.normal(0, 1, n)).round(3).tolist()


def case(name: str, rng: np.random.Generator) -> tuple[str, dict, np.ndarray, np.ndarray]:
    """(program, data, truth, compared observations) for one replicate."""
    if name == "eight_schools":
        data = json.loads((TESTS / "eight_schools.json").read_text())
        return name, data, T.eight_schools_cauchy_loo(data), np.arange(8)
    if name == "rw_states":
        data = {"N": 30, "y": _walk(30, rng), "sigma_x": 0.5, "sigma_y": 1.0}
        truth = T.gaussian_loo(np.array(data["y"]), T.rw_states_cov(data))
        return name, data, truth, np.arange(30)
    if name == "mvn_ar1":
        y = np.array(_walk(40, rng)) + 1.0
        data = {"N": 40, "y": y.round(3).tolist(), "rho": 0.7, "sigma": 1.0}
        return name, data, T.gaussian_loo(y.round(3), T.mvn_ar1_cov(data)), np.arange(40)
    if name == "binom_re":
        n = rng.integers(5, 40, 15)
        y = rng.binomial(n, 1 / (1 + np.exp(-(0.3 + 0.8 * rng.normal(size=15)))))
        data = {"I": 15, "n": n.tolist(), "y": y.tolist(), "sigma": 0.8}
        return name, data, T.binom_re_loo(data), np.arange(15)
    y = np.zeros(40)
    for t in range(2, 40):
        y[t] = 0.5 + 0.5 * y[t - 1] - 0.3 * y[t - 2] + rng.normal()
    data = {"K": 2, "T": 40, "y": y.round(3).tolist(), "sigma": 1.0}
    return "ark", data, T.ark_loo(data), np.arange(2, 40)  # first K: improper conditionals


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--full", action="store_true", help="100 replicates per program")
    ap.add_argument("--reps", type=int, default=None)
    ap.add_argument("--programs", default="eight_schools,rw_states,mvn_ar1,ark,binom_re")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--pointwise-draws", type=int, default=None,
                    help="loo's pointwise_draws: the pass on this many of the draws")
    args = ap.parse_args()
    reps = args.reps or (100 if args.full else 12)
    nuts = NutsArgs(chains=4, warmup=500, draws=500)
    print(f"PSIS-LOO on the conditional log-likelihood: {reps} replicates per program, NUTS "
          f"{nuts.chains} x {nuts.draws} after {nuts.warmup} warmup"
          + (f", the pass on {args.pointwise_draws} of them" if args.pointwise_draws else ""))
    head = (f"{'program':14} {'n':>3} {'reps':>4} {'mean err':>9} {'rms z':>6} "
            f"{'cover sum':>9} {'rms zj':>6} {'cover joint':>11} {'cover i':>8} "
            f"{'cover i own':>11} {'cover mcse':>10} {'rms z mcse':>10} {'withheld':>8} "
            f"{'max k':>6} "
            f"{'s/run':>6}")
    print(head)
    print("-" * len(head))
    for name in args.programs.split(","):
        rng = np.random.default_rng([args.seed, sum(map(ord, name))])
        z_sum, z_joint, z_i, z_own, errs, kmax, secs = [], [], [], [], [], [], []
        z_head: list[float] = []
        model = None
        for r in range(reps):
            prog, data, truth, idx = case(name, rng)
            model = (StanModel.from_file(TESTS / f"{prog}.stan", data) if model is None
                     else model.with_data(data))
            t0 = time.perf_counter()
            res = loo(model, data, fix="none", seed=1000 * args.seed + r,
                      chains=nuts.chains, warmup=nuts.warmup, n_draws=nuts.draws,
                      obs={"eight_schools": "J", "binom_re": "I"}.get(prog), verify=0,
                      pointwise_draws=args.pointwise_draws)
            secs.append(time.perf_counter() - t0)
            err = (res.elpd_i - truth)[idx]
            se_i = res.mcse_i[idx]
            errs.append(err.sum())
            z_sum.append(err.sum() / np.sqrt(np.sum(se_i**2)))
            if len(idx) == len(truth):  # the headline's mc se covers all observations
                z_head.append(err.sum() / res.mcse_elpd_loo)
            src = (ConditionalSource if res.log_lik_source == "conditional"
                   else IntegratedSource)(model, data, res.observations)
            unc = res.draws.unconstrained
            ll = src.columns(idx, unc.reshape(-1, unc.shape[2]))
            ll3 = ll.reshape(unc.shape[0], unc.shape[1], -1)
            z_joint.append(err.sum() / sum_mcse(ll3))
            z_own.extend(err / np.array([sum_mcse(ll3[:, :, [j]]) for j in range(idx.size)]))
            z_i.extend(err / se_i)
            kmax.append(float(res.khat[idx].max()))
        z_sum, z_i, z_joint = np.array(z_sum), np.array(z_i), np.array(z_joint)
        z_own, zh = np.array(z_own), np.array(z_head)
        withheld = int(np.sum(~np.isfinite(zh)))  # loo's NA: a k-hat above the threshold
        zh = zh[np.isfinite(zh)]
        head_cols = (f"{np.mean(np.abs(zh) <= 2):10.0%} {np.sqrt(np.mean(zh**2)):10.2f} "
                     f"{withheld:8d}" if zh.size else f"{'-':>10} {'-':>10} {withheld:8d}")
        print(f"{name:14} {idx.size:3d} {reps:4d} {np.mean(errs):+9.4f} "
              f"{np.sqrt(np.mean(z_sum**2)):6.2f} {np.mean(np.abs(z_sum) <= 2):9.0%} "
              f"{np.sqrt(np.mean(z_joint**2)):6.2f} {np.mean(np.abs(z_joint) <= 2):11.0%} "
              f"{np.mean(np.abs(z_i) <= 2):8.0%} {np.mean(np.abs(z_own) <= 2):11.0%} "
              f"{head_cols} {max(kmax):6.2f} {np.mean(secs):6.1f}",
              flush=True)


if __name__ == "__main__":
    main()
