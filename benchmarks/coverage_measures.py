"""Coverage of the error bars of the LOO predictive measures (stanlogz.crossval.checks.measures).

Three conjugate models whose posterior is exact, so that no Stan run is needed and the exact
leave-one-out predictive of every observation is in closed form:

* ``continuous``: y ~ N(θ_g, 1) in two groups of 20 (θ = −0.5, 0.8), prior θ_g ~ N(0, 2²);
  measures rps, srps, crps, scrps (from y_rep draws), mae, mse, rmse, r2 (from draws of θ_g);
* ``binary``: y ~ Bernoulli(p_g) in two groups of 30 (p = 0.25, 0.75), prior Beta(1, 1);
  brier, acc, bacc (from draws of p_g) and rps (from y_rep draws);
* ``ordinal``: y ~ Categorical(π_g) on 1..4 in two groups of 30 (π = (.55, .25, .15, .05) and
  its reverse), prior Dirichlet(1, 1, 1, 1); rps, srps (y_rep draws), brier, acc, bacc
  (class probabilities);
* stress rows ``binary, near 0.5`` (p = 0.35, 0.6) and ``ordinal, near ties`` (π = (.4, .3,
  .2, .1) and its reverse): a group whose predicted class is close to the threshold, where
  leaving one observation out flips the predicted class against it (LOO's known pessimism
  for classification) and every observation of the group flips together.

Each data set gets S exact posterior draws, PSIS weights from the pointwise log-likelihood
(:func:`stanlogz.crossval.checks.predictive.loo_log_weights`) and the measures. Coverage of
±2 se for two ses and two targets:

* ``se``: loo's between-observation se (for accuracies loo's binomial se);
* ``se_cal``: ``se_parts["se_calibrated"]`` (:mod:`stanlogz.crossval.checks.measure_se`: the
  jackknife's dependence of the pointwise values through the shared posterior, a small-N
  bootstrap-t factor; for accuracies the flip-aware se);
* ``cond``: the conditional target, stanlogz's target for every cross-validation se (as
  ``elpd_loo_interval``): the expected measure, on new data from the data-generating process,
  of the full-data posterior predictive of this data set (for RMSE, R² and balanced accuracy
  the population analogue: √E[e²], 1 − E[e²]/Var(y), the mean of the class-wise accuracies).
  Closed form for every case (normal integrals, the categorical sums), so it has no Monte
  Carlo error;
* ``avg``: the data-averaged target, that expectation averaged over training sets of N − 1
  (what exact LOO estimates without bias for the means); closed form (normal model, binomial
  enumeration) or a Monte Carlo of 200,000 training sets (ordinal, se of the truth < 0.001).
  Balanced accuracy's is a ratio of expectations, which the sample's ratio estimates with a
  bias (−0.009 for ``ordinal``, −0.04 for ``ordinal, near ties`` over 20,000 data sets);
* ``±2 mcse``: the Monte Carlo se against the same measure of the exact LOO predictives of
  that data set (the error of PSIS with S draws).

The binomial sd of a coverage c over D data sets, √(c(1 − c)/D), is printed (0.013 at 0.95
for 300).

    python3 -m benchmarks.coverage_measures                 # 200 data sets each, S = 1000
    python3 -m benchmarks.coverage_measures --datasets 50   # quicker
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
from scipy import stats

from stanlogz.crossval.checks.measures import loo_measures
from stanlogz.crossval.checks.predictive import loo_log_weights

SQPI = math.sqrt(math.pi)


def _folded_mean(mean: np.ndarray | float, sd: np.ndarray | float) -> np.ndarray:
    """E|Z| for Z ~ N(mean, sd²)."""
    m, s = np.asarray(mean, dtype=float), np.asarray(sd, dtype=float)
    return s * math.sqrt(2 / math.pi) * np.exp(-m**2 / (2 * s**2)) + m * (
        1 - 2 * stats.norm.cdf(-m / s))


def _scores(exy: np.ndarray, exx: np.ndarray) -> dict[str, np.ndarray]:
    return {"rps": exy - 0.5 * exx, "srps": -exy / exx - 0.5 * np.log(exx),
            "crps": 0.5 * exx - exy, "scrps": -exy / exx - 0.5 * np.log(exx)}


def _pmf_scores(pmf: np.ndarray, y: np.ndarray) -> dict[str, np.ndarray]:
    """rps, srps, brier of categorical predictives ``pmf`` (N, K) on categories 1..K at y."""
    k = np.arange(1, pmf.shape[1] + 1)
    exy = np.sum(pmf * np.abs(k[None] - y[:, None]), axis=1)
    f = np.cumsum(pmf, axis=1)
    exx = 2 * np.sum(f * (1 - f), axis=1)
    onehot = (y[:, None] == k[None]).astype(float)
    out = _scores(exy, exx)
    return {"rps": out["rps"], "srps": out["srps"],
            "brier": np.sum((pmf - onehot) ** 2, axis=1)}


def _accuracies(pred: np.ndarray, y: np.ndarray) -> dict[str, float]:
    hit = (pred == y).astype(float)
    classes = np.unique(y)
    return {"acc": float(hit.mean()),
            "bacc": float(np.mean([hit[y == c].mean() for c in classes]))}


class Continuous:
    name = "continuous"
    measures = ["rps", "srps", "crps", "scrps", "mae", "mse", "rmse", "r2"]
    theta = np.array([-0.5, 0.8])
    n_g, prior_sd = 20, 2.0

    def __init__(self) -> None:
        self.g = np.repeat([0, 1], self.n_g)
        prec = 1 / self.prior_sd**2 + self.n_g - 1            # LOO posterior precision
        a = 1 / prec
        s2 = 1 + a
        bias = self.theta * (1 - a * (self.n_g - 1))            # E[y_new − m]
        var_e = 1 + a**2 * (self.n_g - 1)                        # Var[y_new − m]
        exx = 2 * math.sqrt(s2) / SQPI
        e_xy = _folded_mean(bias, np.sqrt(var_e + s2))          # E|X − y_new|
        mse = float(np.mean(bias**2 + var_e))
        var_y = 1 + float(np.var(self.theta))
        t = {k: float(np.mean(v)) for k, v in _scores(e_xy, np.full(2, exx)).items()}
        t.update(mae=float(np.mean(_folded_mean(bias, math.sqrt(var_e)))), mse=mse,
                 rmse=math.sqrt(mse), r2=1 - mse / var_y)
        self.truth = t

    def simulate(self, rng: np.random.Generator, s: int) -> tuple[dict, dict]:
        y = rng.normal(self.theta[self.g], 1.0)
        prec = 1 / self.prior_sd**2 + self.n_g
        sums = np.bincount(self.g, weights=y)
        th = rng.normal(sums / prec, 1 / math.sqrt(prec), size=(s, 2))
        mu = th[:, self.g]
        ll = -0.5 * (y[None] - mu) ** 2
        yr = mu + rng.normal(size=mu.shape)
        got = loo_measures(loo_log_weights(ll), y, yr, self.measures, mu=mu)
        prec_i = prec - 1
        m = (sums[self.g] - y) / prec_i
        sd = math.sqrt(1 + 1 / prec_i)
        exy = sd * (2 * stats.norm.pdf((y - m) / sd) + (y - m) / sd
                    * (2 * stats.norm.cdf((y - m) / sd) - 1))
        ex = {k: float(np.mean(v)) for k, v in _scores(exy, np.full(y.size, 2 * sd / SQPI))
              .items()}
        e = y - m
        mse = float(np.mean(e**2))
        ex.update(mae=float(np.mean(np.abs(e))), mse=mse, rmse=math.sqrt(mse),
                  r2=1 - mse / float(np.mean((y - y.mean()) ** 2)))
        # conditional: the full-data predictive N(m_g, 1 + 1/prec) scored on new y ~ N(θ_g, 1)
        bias = sums / prec - self.theta
        s2 = 1 + 1 / prec
        c = {k: float(np.mean(v)) for k, v in _scores(
            _folded_mean(bias, np.sqrt(s2 + 1)), np.full(2, 2 * math.sqrt(s2) / SQPI)).items()}
        mse_c = float(np.mean(bias**2 + 1))
        c.update(mae=float(np.mean(_folded_mean(bias, 1.0))), mse=mse_c, rmse=math.sqrt(mse_c),
                 r2=1 - mse_c / (1 + float(np.var(self.theta))))
        return {r.name: r for r in got}, ex, c


class Binary:
    measures = ["brier", "acc", "bacc", "rps"]
    n_g = 30

    def __init__(self, p: tuple[float, float] = (0.25, 0.75), name: str = "binary") -> None:
        self.p, self.name = np.array(p), name
        self.g = np.repeat([0, 1], self.n_g)
        k = np.arange(self.n_g)                                   # successes among n_g − 1
        brier, acc, pred1 = [], [], []
        for pg in self.p:
            w = stats.binom.pmf(k, self.n_g - 1, pg)
            q = (1 + k) / (self.n_g + 1)
            brier.append(np.sum(w * (pg * (1 - q) ** 2 + (1 - pg) * q**2)))
            acc.append(np.sum(w * np.where(q > 0.5, pg, 1 - pg)))
            pred1.append(np.sum(w * (q > 0.5)))
        pred1 = np.array(pred1)
        acc1 = np.sum(self.p * pred1) / self.p.sum()
        acc0 = np.sum((1 - self.p) * (1 - pred1)) / (1 - self.p).sum()
        self.truth = {"brier": float(np.mean(brier)), "rps": float(np.mean(brier)),
                      "acc": float(np.mean(acc)), "bacc": float((acc0 + acc1) / 2)}

    def simulate(self, rng: np.random.Generator, s: int) -> tuple[dict, dict]:
        y = (rng.uniform(size=self.g.size) < self.p[self.g]).astype(float)
        k = np.bincount(self.g, weights=y)
        th = rng.beta(1 + k, 1 + self.n_g - k, size=(s, 2))
        mu = th[:, self.g]
        ll = np.where(y[None] == 1, np.log(mu), np.log1p(-mu))
        yr = (rng.uniform(size=mu.shape) < mu).astype(float)
        got = loo_measures(loo_log_weights(ll), y, yr, self.measures, mu=mu)
        q = (1 + k[self.g] - y) / (self.n_g + 1)
        ex = {"brier": float(np.mean((q - y) ** 2)), "rps": float(np.mean((q - y) ** 2)),
              **_accuracies((q > 0.5).astype(float), y)}
        # conditional: the full-data predictive q_g = (1 + k_g) / (n_g + 2) on new y ~ p_g
        qg = (1 + k) / (self.n_g + 2)
        brier = float(np.mean(self.p * (1 - qg) ** 2 + (1 - self.p) * qg**2))
        pred1 = (qg > 0.5).astype(float)
        acc1 = np.sum(self.p * pred1) / self.p.sum()
        acc0 = np.sum((1 - self.p) * (1 - pred1)) / (1 - self.p).sum()
        c = {"brier": brier, "rps": brier, "acc": float(np.mean(np.where(pred1 > 0, self.p,
                                                                         1 - self.p))),
             "bacc": float((acc0 + acc1) / 2)}
        return {r.name: r for r in got}, ex, c


class Ordinal:
    measures = ["rps", "srps", "brier", "acc", "bacc"]
    n_g, k = 30, 4

    def __init__(self, pi: tuple = ((0.55, 0.25, 0.15, 0.05), (0.05, 0.15, 0.25, 0.55)),
                 name: str = "ordinal", n_mc: int = 200_000, seed: int = 99) -> None:
        self.pi, self.name = np.array(pi), name
        self.g = np.repeat([0, 1], self.n_g)
        rng = np.random.default_rng(seed)
        cats = np.arange(1, self.k + 1)
        t = {"rps": 0.0, "srps": 0.0, "brier": 0.0, "acc": 0.0}
        pred_rate = np.zeros((2, self.k))
        for gi, pg in enumerate(self.pi):
            c = rng.multinomial(self.n_g - 1, pg, size=n_mc)
            pmf = (1 + c) / (self.k + self.n_g - 1)
            for yk, py in zip(cats, pg, strict=True):
                sc = _pmf_scores(pmf, np.full(n_mc, float(yk)))
                for name in ("rps", "srps", "brier"):
                    t[name] += 0.5 * py * float(sc[name].mean())
            pred = np.argmax(pmf, axis=1)
            pred_rate[gi] = np.bincount(pred, minlength=self.k) / n_mc
            t["acc"] += 0.5 * float(np.sum(pg * pred_rate[gi]))
        class_acc = np.sum(self.pi * pred_rate, axis=0) / self.pi.sum(axis=0)
        t["bacc"] = float(class_acc.mean())
        self.truth = t

    def simulate(self, rng: np.random.Generator, s: int) -> tuple[dict, dict]:
        cats = np.arange(1, self.k + 1)
        y = np.array([rng.choice(cats, p=self.pi[g]) for g in self.g], dtype=float)
        counts = np.array([np.bincount(y[self.g == g].astype(int) - 1, minlength=self.k)
                           for g in (0, 1)])
        th = np.stack([rng.dirichlet(1 + counts[g], size=s) for g in (0, 1)], axis=1)
        probs = th[:, self.g, :]                                  # (S, N, K)
        ll = np.log(np.take_along_axis(probs, (y.astype(int) - 1)[None, :, None],
                                       axis=2)[..., 0])
        u = rng.uniform(size=probs.shape[:2])
        yr = 1.0 + np.sum(np.cumsum(probs, axis=2) < u[..., None], axis=2)
        got = loo_measures(loo_log_weights(ll), y, yr, self.measures, probs=probs)
        onehot = (y[:, None] == cats[None]).astype(float)
        pmf = (1 + counts[self.g] - onehot) / (self.k + self.n_g - 1)
        ex = {k: float(v.mean()) for k, v in _pmf_scores(pmf, y).items()}
        ex.update(_accuracies(cats[np.argmax(pmf, axis=1)].astype(float), y))
        # conditional: the full-data predictive (1 + counts_g) / (K + n_g) on new y ~ π_g
        pmf_g = (1 + counts) / (self.k + self.n_g)
        c = {"rps": 0.0, "srps": 0.0, "brier": 0.0}
        for yk in cats:
            sc = _pmf_scores(pmf_g, np.full(2, float(yk)))
            for name in c:
                c[name] += float(np.mean(self.pi[:, yk - 1] * sc[name]))
        pred = np.argmax(pmf_g, axis=1)
        hit_rate = self.pi[np.arange(2), pred]
        class_acc = [np.sum(self.pi[:, j] * (pred == j)) / self.pi[:, j].sum()
                     for j in range(self.k)]
        c.update(acc=float(hit_rate.mean()), bacc=float(np.mean(class_acc)))
        return {r.name: r for r in got}, ex, c


def run(n_sets: int, s: int, seed: int) -> list[list]:
    rows = []
    cases = (Continuous(), Binary(), Ordinal(),
             Binary((0.35, 0.6), "binary, near 0.5"),
             Ordinal(((0.4, 0.3, 0.2, 0.1), (0.1, 0.2, 0.3, 0.4)), "ordinal, near ties"))
    for case in cases:
        rng = np.random.default_rng(seed)
        rec = {m: {"est": [], "se": [], "cal": [], "mcse": [], "exact": [], "cond": []}
               for m in case.measures}
        for _ in range(n_sets):
            got, ex, cond = case.simulate(rng, s)
            for m in case.measures:
                rec[m]["est"].append(got[m].estimate)
                rec[m]["se"].append(got[m].se)
                rec[m]["cal"].append(got[m].se_parts["se_calibrated"])
                rec[m]["mcse"].append(got[m].mcse)
                rec[m]["exact"].append(ex[m])
                rec[m]["cond"].append(cond[m])
        for m in case.measures:
            r = {k: np.array(v) for k, v in rec[m].items()}
            row = [case.name, m, float(r["est"].std(ddof=1)), float(r["se"].mean()),
                   float(r["cal"].mean())]
            for target in (r["cond"], case.truth[m]):
                err = np.abs(r["est"] - target)
                row += [float(np.mean(err <= 2 * r["se"])), float(np.mean(err <= 2 * r["cal"]))]
            row.append(float(np.mean(np.abs(r["est"] - r["exact"]) <= 2 * r["mcse"])))
            rows.append(row)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", type=int, default=200)
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    t0 = time.time()
    rows = run(a.datasets, a.draws, a.seed)
    head = ["case", "measure", "sd est", "mean se", "mean se_cal", "cond: ±2 se",
            "cond: ±2 se_cal", "avg: ±2 se", "avg: ±2 se_cal", "±2 mcse"]
    print(f"{a.datasets} data sets per case, S = {a.draws} exact posterior draws, PSIS weights "
          f"({time.time() - t0:.0f} s); binomial sd of a coverage near 0.95: "
          f"{math.sqrt(0.95 * 0.05 / a.datasets):.3f}")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        print("| " + " | ".join([r[0], r[1]] + [f"{v:.4g}" for v in r[2:5]]
                                + [f"{v:.3f}" for v in r[5:]]) + " |")


if __name__ == "__main__":
    main()
