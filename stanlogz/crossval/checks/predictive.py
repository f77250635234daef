"""Predictive checks from PSIS-LOO weights: LOO-PIT with a uniformity test, E_loo (LOO
predictive mean, variance and quantiles of any quantity), LOO point-prediction metrics, and
the CRPS and SCRPS scores (Bolin & Wallin 2023).

Inputs are arrays: ``log_w`` ``(S, N)`` PSIS log weights of the leave-one-out posteriors
(``stanlogz.arviz_compat.psislw`` of −log-lik, transposed to draws × observations; they need
not be normalized), ``y`` ``(N,)`` the observations and ``y_rep`` ``(S, N)`` posterior-predictive
draws (one per posterior draw and observation).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats
from scipy.special import logsumexp

from ... import arviz_compat
from ..._util.gpd import KHAT_BAD
from ...errors import InputError
from .pit_null import calibrated_p_value


def loo_log_weights(log_lik: Any, r_eff: float = 1.0) -> np.ndarray:
    """PSIS log weights ``(S, N)`` of the leave-one-out posteriors (normalized per column) from
    the pointwise log-likelihood ``(S, N)``."""
    ll = np.asarray(log_lik, dtype=float)
    if ll.ndim != 2 or ll.shape[0] < 2:
        raise InputError(f"log-likelihood must be (draws, observations), got {ll.shape}")
    lw, _ = arviz_compat.psislw(-ll.T, r_eff=r_eff)
    return np.asarray(lw, dtype=float).T


def loo_log_weights_khat(log_lik: Any, r_eff: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """:func:`loo_log_weights` and each observation's Pareto k̂ ``(N,)``."""
    ll = np.asarray(log_lik, dtype=float)
    if ll.ndim != 2 or ll.shape[0] < 2:
        raise InputError(f"log-likelihood must be (draws, observations), got {ll.shape}")
    lw, k = arviz_compat.psislw(-ll.T, r_eff=r_eff)
    return np.asarray(lw, dtype=float).T, np.asarray(k, dtype=float).ravel()


def _weights(log_w: Any, n_obs: int | None = None) -> np.ndarray:
    lw = np.asarray(log_w, dtype=float)
    if lw.ndim != 2 or (n_obs is not None and lw.shape[1] != n_obs):
        raise InputError(f"log weights must be (draws, {n_obs or 'observations'}), got "
                         f"{lw.shape}")
    if not np.all(np.isfinite(lw) | (lw == -np.inf)):
        raise InputError("log weights must be finite or -inf")
    return np.exp(lw - logsumexp(lw, axis=0, keepdims=True))


def _check(y: Any, y_rep: Any) -> tuple[np.ndarray, np.ndarray]:
    yv = np.asarray(y, dtype=float).ravel()
    yr = np.asarray(y_rep, dtype=float)
    if yr.ndim != 2 or yr.shape[1] != yv.size:
        raise InputError(f"y_rep must be (draws, {yv.size}) for {yv.size} observations, got "
                         f"{yr.shape}")
    if not (np.all(np.isfinite(yv)) and np.all(np.isfinite(yr))):
        raise InputError("y and y_rep must be finite")
    return yv, yr


def is_discrete(y: np.ndarray, y_rep: np.ndarray) -> bool:
    """Whether the outcome takes integer values only (observations and draws)."""
    return bool(np.all(y == np.round(y)) and np.all(y_rep == np.round(y_rep)))


def loo_pit(log_w: Any, y: Any, y_rep: Any, *, seed: int | None = None,
            discrete: bool | None = None) -> np.ndarray:
    """LOO-PIT values P_loo(ỹ_i ≤ y_i | y_−i) = Σ_s w_is 1[y_rep_si ≤ y_i].

    For discrete outcomes (``discrete=None``: integer data and draws) the randomized PIT
    P(ỹ < y_i) + u · P(ỹ = y_i) with u ~ U(0, 1) (seeded), which is uniform under the model.
    PIT values are kept within half the largest weight of 0 and 1 (the draws' resolution).
    """
    yv, yr = _check(y, y_rep)
    w = _weights(log_w, yv.size)
    if w.shape[0] != yr.shape[0]:
        raise InputError(f"{w.shape[0]} weight draws but {yr.shape[0]} y_rep draws")
    below = np.sum(w * (yr < yv), axis=0)
    equal = np.sum(w * (yr == yv), axis=0)
    if discrete is None:
        discrete = is_discrete(yv, yr)
    # an observation beyond every draw gets half the largest weight, not exactly 0 or 1: the
    # draws resolve the PIT only to that step (an exact 0 or 1 would be an infinitely strong
    # rejection of uniformity); likewise a randomized PIT whose observed value no draw hit
    half = 0.5 * np.max(w, axis=0)
    if discrete:
        u = np.random.default_rng(seed).uniform(size=yv.size)
        return np.clip(below + u * equal, half, 1.0 - half)
    return np.clip(below + equal, half, 1.0 - half)


#: Uniformity tests of PIT values by the names ``pit_uniformity`` takes.
UNIFORMITY_TESTS = ("pot", "ks")


@dataclass
class UniformityTest:
    """A test of PIT values against U(0, 1): ``"pot"`` (pointwise order tests combined by the
    Cauchy combination test; ``statistic`` is the combined Cauchy statistic) or ``"ks"``
    (Kolmogorov–Smirnov; ``statistic`` is the KS distance)."""

    statistic: float
    p_value: float
    n: int
    test: str = "ks"
    #: observations (0-based) left out of the test (unreliable PIT values)
    excluded: list[int] | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serializable dict."""
        name = {"ks": "kolmogorov-smirnov", "pot": "pointwise-order-cauchy"}[self.test]
        return {"test": name, "statistic": self.statistic, "p_value": self.p_value,
                "n": self.n, "excluded": [i + 1 for i in self.excluded or []]}


def cauchy_combination(p_values: np.ndarray) -> tuple[float, float]:
    """Cauchy combination (Liu & Xie 2020) of p-values with any dependence: the statistic
    T = mean tan((1/2 − p_i) π) and its p-value 1/2 − arctan(T) / π."""
    p = np.clip(np.asarray(p_values, dtype=float), 1e-300, 1.0 - 1e-15)
    t = float(np.mean(np.tan((0.5 - p) * np.pi)))
    return t, float(min(1.0, max(0.0, 0.5 - math.atan(t) / math.pi)))


def pit_uniformity(pit: Any, test: str = "pot", p_loo: float | None = None) -> UniformityTest:
    """Test of the PIT values against U(0, 1) (NaN values are left out). ``"pot"``: the i-th
    smallest of n uniforms is Beta(i, n − i + 1); each order statistic's two-sided p-value
    under that Beta, combined by the Cauchy combination test, which stays valid under the
    order statistics' dependence (Tesso & Vehtari's pointwise order tests). ``"ks"``: the
    Kolmogorov–Smirnov test, which has almost no power for LOO-PIT (the values of a
    well-specified model are negatively dependent, so it rejects far less often than its
    level). A small p-value says the predictive distributions are miscalibrated (a U shape:
    too narrow; a hump: too wide; a slope: biased). The ``"pot"`` p-value is calibrated by
    simulation (:mod:`stanlogz.crossval.checks.pit_null`): for LOO-PIT values pass the model's
    ``p_loo``, whose dependence it then accounts for; without it the values are taken as
    independent (e.g. PIT of held-out data)."""
    if test not in UNIFORMITY_TESTS:
        raise InputError(f"uniformity test must be one of {', '.join(UNIFORMITY_TESTS)}, got "
                         f"{test!r}")
    p = np.asarray(pit, dtype=float).ravel()
    p = p[np.isfinite(p)]
    if p.size < 2:
        raise InputError("a uniformity test needs at least two PIT values")
    if test == "ks":
        r = stats.kstest(p, "uniform")
        return UniformityTest(float(r.statistic), float(r.pvalue), int(p.size), "ks")
    u = np.sort(p)
    i = np.arange(1, u.size + 1)
    cdf = stats.beta.cdf(u, i, u.size - i + 1)
    return pot_from_pointwise(2.0 * np.minimum(cdf, 1.0 - cdf), p_loo)


def pot_from_pointwise(p_values: Any, p_loo: float | None = None) -> UniformityTest:
    """The ``"pot"`` test of :func:`pit_uniformity` from the order statistics' pointwise
    p-values, in any order (e.g. ``pit_tests(...)["pot"].pointwise_p`` without its NaNs, so
    that the order statistics' Beta p-values are computed once): their untruncated Cauchy
    combination, calibrated for LOO-PIT dependence."""
    pv = np.asarray(p_values, dtype=float).ravel()
    stat, _ = cauchy_combination(pv)
    return UniformityTest(stat, calibrated_p_value(stat, pv.size, p_loo), int(pv.size), "pot")


@dataclass
class LooExpectation:
    """E_loo of a quantity per observation: mean, variance, quantiles, with Monte Carlo se of
    the mean (importance-sampling se Σ_s w_s² (x_s − mean)², draws taken as independent; NaN
    where the weights' Pareto k̂ exceeds 0.7, loo's threshold: no se holds there) and the
    weights' ``khat`` (None when not given)."""

    mean: np.ndarray
    variance: np.ndarray
    quantiles: dict[float, np.ndarray]
    mean_mcse: np.ndarray
    khat: np.ndarray | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serializable dict."""
        return {"mean": self.mean.tolist(), "variance": self.variance.tolist(),
                "mean_mcse": [None if not np.isfinite(v) else float(v) for v in self.mean_mcse],
                "khat": None if self.khat is None else
                [None if not np.isfinite(k) else float(k) for k in self.khat],
                "quantiles": {str(q): v.tolist() for q, v in self.quantiles.items()}}


def weighted_quantile(values: np.ndarray, weights: np.ndarray, q: float) -> float:
    """The q-quantile of the weighted sample: the smallest value whose cumulative weight is at
    least q (the inverse of the weighted ECDF)."""
    order = np.argsort(values, kind="stable")
    cum = np.cumsum(weights[order])
    j = int(np.searchsorted(cum, q * cum[-1] * (1 - 1e-12), side="left"))
    return float(values[order][min(j, values.size - 1)])


def e_loo(log_w: Any, values: Any, quantiles: tuple[float, ...] = (0.05, 0.5, 0.95),
          khat: Any = None) -> LooExpectation:
    """Leave-one-out predictive mean, variance and quantiles of ``values`` ``(S, N)`` (e.g.
    y_rep or any generated quantity with one entry per observation); ``khat``, the Pareto k̂
    of each observation's weights, withholds the mean's Monte Carlo se (NaN) where it
    exceeds 0.7."""
    x = np.asarray(values, dtype=float)
    w = _weights(log_w, x.shape[1] if x.ndim == 2 else None)
    if x.shape != w.shape:
        raise InputError(f"values {x.shape} and log weights {w.shape} differ in shape")
    if any(not 0 < q < 1 for q in quantiles):
        raise InputError(f"quantiles must be in (0, 1), got {quantiles}")
    mean = np.sum(w * x, axis=0)
    var = np.sum(w * (x - mean) ** 2, axis=0)
    mcse = np.sqrt(np.sum(w**2 * (x - mean) ** 2, axis=0))
    qs = {q: np.array([weighted_quantile(x[:, i], w[:, i], q) for i in range(x.shape[1])])
          for q in quantiles}
    k = None
    if khat is not None:
        k = np.asarray(khat, dtype=float).ravel()
        if k.shape != mcse.shape:
            raise InputError(f"khat {k.shape} and the observations {mcse.shape} differ in shape")
        mcse = np.where(k > KHAT_BAD, np.nan, mcse)
    return LooExpectation(mean, var, qs, mcse, k)


@dataclass
class Metric:
    """A LOO point-prediction metric with its standard error over observations."""

    name: str
    estimate: float
    se: float

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serializable dict."""
        return {"metric": self.name, "estimate": self.estimate, "se": self.se}


def loo_metrics(log_w: Any, y: Any, y_rep: Any, *, n_boot: int = 1000,
                seed: int | None = None) -> list[Metric]:
    """Point-prediction metrics of the LOO predictive mean μ_i = E_loo[ỹ_i]: MAE, RMSE and
    R² = 1 − Σ(y − μ)² / Σ(y − ȳ)² for any outcome; for a binary outcome (0/1) also accuracy
    and balanced accuracy of the prediction 1[μ_i > 0.5].

    se: MAE sd(|e|)/√N; RMSE by the delta method from MSE's sd(e²)/√N; accuracy
    √(a(1 − a)/N); balanced accuracy from the two class rates' binomial se; R² the sd over
    ``n_boot`` Bayesian-bootstrap reweightings of the observations (seeded).
    """
    yv, yr = _check(y, y_rep)
    mu = e_loo(log_w, yr, quantiles=()).mean
    n = yv.size
    if n < 2:
        raise InputError("loo metrics need at least two observations")
    err = yv - mu
    mae = float(np.mean(np.abs(err)))
    mse = float(np.mean(err**2))
    rmse = math.sqrt(mse)
    se_mse = float(np.std(err**2, ddof=1) / math.sqrt(n))
    sst = np.sum((yv - yv.mean()) ** 2)
    out = [Metric("mae", mae, float(np.std(np.abs(err), ddof=1) / math.sqrt(n))),
           Metric("rmse", rmse, se_mse / (2 * rmse) if rmse > 0 else 0.0)]
    if sst > 0:
        b = np.random.default_rng(seed).dirichlet(np.ones(n), size=max(n_boot, 2))
        ybar = b @ yv
        r2_boot = 1 - (b @ err**2) / np.sum(b * (yv[None, :] - ybar[:, None]) ** 2, axis=1)
        out.append(Metric("r2", float(1 - np.sum(err**2) / sst), float(np.std(r2_boot,
                                                                             ddof=1))))
    if np.all(np.isin(yv, (0.0, 1.0))) and np.all(np.isin(yr, (0.0, 1.0))):
        pred = (mu > 0.5).astype(float)
        acc = float(np.mean(pred == yv))
        out.append(Metric("accuracy", acc, math.sqrt(acc * (1 - acc) / n)))
        rates, var = [], 0.0
        for c in (0.0, 1.0):
            m = yv == c
            if m.any():
                r = float(np.mean(pred[m] == c))
                rates.append(r)
                var += r * (1 - r) / m.sum()
        out.append(Metric("balanced_accuracy", float(np.mean(rates)),
                          math.sqrt(var) / len(rates)))
    return out


def _weighted_mean_abs_pairs(x: np.ndarray, w: np.ndarray) -> float:
    """Σ_s Σ_t w_s w_t |x_s − x_t| for normalized weights, in O(S log S)."""
    order = np.argsort(x, kind="stable")
    xs, ws = x[order], w[order]
    below = np.cumsum(ws) - ws  # weight strictly before each sorted draw
    above = 1.0 - below - ws
    return float(2 * np.sum(ws * xs * (below - above)))


@dataclass
class CrpsResult:
    """Mean CRPS and SCRPS over observations (positively oriented: higher is better) with
    their se over observations, and the pointwise values."""

    crps: float
    crps_se: float
    scrps: float
    scrps_se: float
    crps_i: np.ndarray
    scrps_i: np.ndarray

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serializable dict."""
        return {"crps": self.crps, "crps_se": self.crps_se, "scrps": self.scrps,
                "scrps_se": self.scrps_se, "crps_i": self.crps_i.tolist(),
                "scrps_i": self.scrps_i.tolist()}


def loo_crps(log_w: Any, y: Any, y_rep: Any) -> CrpsResult:
    """LOO CRPS and SCRPS (Bolin & Wallin 2023), positively oriented as in the paper:
    CRPS_i = ½ E|X − X'| − E|X − y_i| and SCRPS_i = −E|X − y_i| / E|X − X'| − ½ log E|X − X'|,
    with X, X' independent draws of the LOO predictive (PSIS-weighted y_rep; E|X − X'| over
    all weighted pairs). Means over observations, se = sd / √N."""
    yv, yr = _check(y, y_rep)
    w = _weights(log_w, yv.size)
    if w.shape != yr.shape:
        raise InputError(f"{w.shape[0]} weight draws but {yr.shape[0]} y_rep draws")
    n = yv.size
    exy = np.sum(w * np.abs(yr - yv), axis=0)
    exx = np.array([_weighted_mean_abs_pairs(yr[:, i], w[:, i]) for i in range(n)])
    crps_i = 0.5 * exx - exy
    if np.any(exx <= 0):
        raise InputError("SCRPS needs predictive draws that vary for every observation")
    scrps_i = -exy / exx - 0.5 * np.log(exx)
    return CrpsResult(float(crps_i.mean()), _mean_se(crps_i), float(scrps_i.mean()),
                      _mean_se(scrps_i), crps_i, scrps_i)


def _mean_se(v: np.ndarray) -> float:
    return float(np.std(v, ddof=1) / math.sqrt(v.size)) if v.size > 1 else float("nan")
