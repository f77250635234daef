"""Coverage of elpd_kfold's Monte Carlo se where each held-out observation's density is the
whole program (no per-observation terms), with the importance sampling on every draw of each
side or on :data:`stanlogz.crossval.refit.heldout.INSTANCE_DRAWS` of them.

``python3 -m benchmarks.kfold_whole_coverage [--seeds S] [--cases 0,1] [--out FILE]``

The program is ``stan_models/tests/centered_logistic.stan`` (a logistic regression on a
covariate centred in transformed data, as posteriordb's wells programs centre theirs), on
N = 200 simulated observations (fixed, seed 5), K = 5 random folds (the run's seed), 4 chains
of 1,000 draws after 1,000 warmup, interpreted. Cases:

0. every draw of each side (4,000 + 4,000): the estimator before the cap;
1. at most 1,000 of each side, thinned evenly per chain (the default).

The exact K-fold value is 2-D quadrature. Each instance T ∪ {i} centres x on its own mean
m_S; with alpha' = alpha + beta (m_ref - m_S) (Jacobian 1) its likelihood is that of the full
data's centring m_ref, and only the prior moves: p(alpha' - beta (m_ref - m_S)) p(beta). So
log Z(S) = log ∫∫ N(alpha' - beta d_S; 0, 2) N(beta; 0, 2) prod_{j in S} p(y_j | alpha' +
beta (x_j - m_ref)), on a grid of step 0.01 over ±1.5 around the full data's posterior mode
(more than 10 posterior sds of every training set; the trapezoid's error is below 1e-9 on a
smooth integrand that fine), and elpd_i = log Z(T ∪ {i}) - log Z(T).

``--cost`` times instead one fold of posteriordb's wells_interaction_c_model (3,020
households, covariates centred on all the data; K = 10, the fold of seed 1) both ways, in
alternating pairs (``--pairs``, default 2), with one full fit of 4 x (1,000 + 1,000) shared by
them (interpreted): the seconds of ``heldout_elpd`` (the warm refit, the bridge and the
held-out densities), its elpd_i sum and mcse.

Each seed runs ``stanlogz.kfold`` at K = 5. The table gives the mean error, the errors' rms
and largest |z| in units of the run's mcse, the share within 1 and 1.96 mcse, and the median
mcse and seconds. The 95% share's binomial sd over S seeds is sqrt(0.95 * 0.05 / S).
"""

from __future__ import annotations

import json
import os
import sys
import time

import numpy as np
from scipy.special import log_expit, logsumexp

from benchmarks._common import STAN_MODELS, seeded_cases

PROGRAM = STAN_MODELS / "tests" / "centered_logistic.stan"
N, K = 200, 5
CASES = [None, 1000]
STEP, HALF = 0.01, 1.5


def data() -> dict:
    """N observations: x ~ N(3, 1) (4 decimals), y ~ Bernoulli(logit⁻¹(0.3 + 0.8 (x - 3)))."""
    rng = np.random.default_rng(5)
    x = rng.normal(3.0, 1.0, size=N).round(4)
    y = (rng.random(N) < 1 / (1 + np.exp(-(0.3 + 0.8 * (x - 3.0))))).astype(int)
    return {"N": N, "y": y.tolist(), "x": x.tolist()}


class Exact:
    """The exact K-fold values by quadrature (see the module's docstring)."""

    def __init__(self, d: dict) -> None:
        self.x, self.y = np.array(d["x"]), np.array(d["y"])
        self.m_ref = self.x.mean()
        xc = self.x - self.m_ref
        grid = np.arange(-HALF, HALF + STEP / 2, STEP)
        a0, b0 = self._mode(xc)
        self.a, self.b = np.meshgrid(a0 + grid, b0 + grid, indexing="ij")
        eta = self.a.ravel()[None, :] + self.b.ravel()[None, :] * xc[:, None]
        # log p(y_j | alpha', beta) on the grid, one row per observation
        self.ll = np.where(self.y[:, None] == 1, log_expit(eta), log_expit(-eta))

    def _mode(self, xc: np.ndarray) -> tuple[float, float]:
        from scipy.optimize import minimize

        def nlp(p: np.ndarray) -> float:
            eta = p[0] + p[1] * xc
            return -(np.sum(np.where(self.y == 1, log_expit(eta), log_expit(-eta)))
                     - (p[0] ** 2 + p[1] ** 2) / 8)
        return tuple(minimize(nlp, np.zeros(2)).x)

    def log_z(self, members: np.ndarray, ll_sum: np.ndarray) -> float:
        """log Z of the instance on ``members`` whose summed likelihood rows are ``ll_sum``."""
        d = self.m_ref - self.x[members].mean()
        a, b = self.a.ravel(), self.b.ravel()
        prior = -((a - b * d) ** 2 + b**2) / 8 - np.log(8 * np.pi)
        return float(logsumexp(ll_sum + prior) + 2 * np.log(STEP))

    def kfold(self, fold_of: np.ndarray) -> float:
        total = 0.0
        for k in np.unique(fold_of):
            train = np.flatnonzero(fold_of != k)
            base = self.ll[train].sum(axis=0)
            z_t = self.log_z(train, base)
            for i in np.flatnonzero(fold_of == k):
                total += self.log_z(np.append(train, i), base + self.ll[i]) - z_t
        return total


WELLS = STAN_MODELS.parents[1] / "shared" / "corpus" / "posteriordb" / \
    "wells_data-wells_interaction_c_model"


def cost(pairs: int) -> None:
    """One wells fold both ways, alternating (see the module's docstring)."""
    import stanlogz
    from stanlogz.crossval.observations.observations import load_observed
    from stanlogz.crossval.refit import heldout
    from stanlogz.crossval.refit.folds import make_folds
    from stanlogz.crossval.refit.heldout import heldout_elpd

    os.environ["STANLOGZ_BACKEND"] = "interpreted"
    raw = json.loads((WELLS / "data.json").read_text())
    model, d, obs = load_observed(stanlogz.StanModel.from_file(str(WELLS / "model.stan"),
                                                               raw), raw)
    full = stanlogz.sample(model, seed=1)
    fold_of = make_folds(obs.n, 10, np.random.default_rng(1))
    v = np.flatnonzero(fold_of == 0)
    print("| draws a side | seconds | elpd_i sum | mcse |")
    print("|---|---|---|---|")
    for _ in range(pairs):
        for most in (None, 1000):
            heldout.INSTANCE_DRAWS = most
            start = time.perf_counter()
            h = heldout_elpd(model, d, obs, v, full_draws=full, seed=1)
            print(f"| {most or 'all'} | {time.perf_counter() - start:.1f} | "
                  f"{float(np.sum(h.elpd_i)):.3f} | {h.elpd_i_mcse:.4f} |", flush=True)


def main() -> None:
    import stanlogz
    from stanlogz.crossval.refit import heldout

    if "--cost" in sys.argv:
        at = sys.argv.index("--cost")
        pairs = int(sys.argv[at + 2]) if sys.argv[at + 1:at + 2] == ["--pairs"] else 2
        cost(pairs)
        return
    args, cases = seeded_cases(__doc__, CASES, "draws a side | seeds | mean error | rms z | "
                               "max abs z | within 1 | within 1.96 | median mcse | median s")
    d = data()
    exact = Exact(d)
    os.environ["STANLOGZ_BACKEND"] = "interpreted"
    model = stanlogz.StanModel.from_file(str(PROGRAM), d)
    out = open(args.out, "a") if args.out else None
    for most in cases:
        heldout.INSTANCE_DRAWS = most
        errs, zs, mcses, secs = [], [], [], []
        for seed in range(1, int(args.seeds) + 1):
            start = time.perf_counter()
            r = stanlogz.kfold(model, d, k=K, seed=seed)
            secs.append(time.perf_counter() - start)
            truth = exact.kfold(np.asarray(r.fold_of))
            err = r.elpd_kfold - truth
            errs.append(err)
            mcses.append(r.mcse)
            zs.append(err / r.mcse)
            if out:
                out.write(json.dumps({"draws": most, "seed": seed, "elpd": r.elpd_kfold,
                                      "mcse": r.mcse, "exact": truth,
                                      "seconds": secs[-1]}) + "\n")
                out.flush()
        z = np.array(zs)
        cells = [most or "all", len(z), f"{np.mean(errs):+.4f}",
                 f"{np.sqrt(np.mean(z**2)):.2f}", f"{np.abs(z).max():.1f}",
                 *(f"{np.mean(np.abs(z) <= c):.2f}" for c in (1, 1.96)),
                 f"{np.median(mcses):.4f}", f"{np.median(secs):.1f}"]
        print("| " + " | ".join(map(str, cells)) + " |", flush=True)


if __name__ == "__main__":
    main()
