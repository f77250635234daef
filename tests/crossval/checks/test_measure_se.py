"""The calibrated se of the LOO predictive measures (stanlogz.crossval.checks.measure_se),
against brute force: the dependence shift R_j against refitting every observation's LOO
predictive without j (exact reweighting), the bootstrap-t factor against exact enumeration of
all resamples, and loo's se left under its name. Coverage: benchmarks/coverage_measures.py."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from stanlogz.crossval.checks.measure_se import (
    bootstrap_t_factor,
    calibrated_se,
    dependence_shift,
)
from stanlogz.crossval.checks.measures import CustomMeasure, loo_measures


def _setup(eps: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Deterministic draws θ_s (normal quantiles), observations y, log-likelihood ε ℓ_j(θ)
    and the LOO log weights −ε ℓ_i."""
    s = 400
    theta = stats.norm.ppf((np.arange(s) + 0.5) / s)
    y = np.array([-1.0, -0.3, 0.2, 0.5, 1.1, 2.0])
    ll = -0.5 * eps * (y[None, :] - theta[:, None]) ** 2
    return theta, y, ll, -ll


def test_dependence_shift_is_the_first_order_leave_two_out_change() -> None:
    # v_i = E_w[(θ − y_i)²] under observation i's LOO weights; without j as well the weights
    # are ∝ w_si / p(y_j | θ_s). R_j = Σ_{i≠j} (v_i without j − v_i), by exact reweighting,
    # against the first-order formula: the error is O(ε²), R_j itself O(ε), so the relative
    # error is O(ε) (3.2% at ε = 0.01, 0.3% at 0.001: the coefficient is about 3).
    for eps, tol in ((1e-2, 5e-2), (1e-3, 5e-3)):
        theta, y, ll, lw = _setup(eps)
        w = np.exp(lw - lw.max(axis=0))
        w /= w.sum(axis=0)
        h = (theta[:, None] - y[None, :]) ** 2
        v = np.sum(w * h, axis=0)
        g = w * (h - v)                                   # ∂v_i / ∂log w_si
        r, _ = dependence_shift(g, w)
        exact = np.zeros(y.size)
        for j in range(y.size):
            for i in range(y.size):
                if i != j:
                    wij = w[:, i] * np.exp(-ll[:, j])
                    exact[j] += np.sum(wij * h[:, i]) / wij.sum() - v[i]
        assert np.max(np.abs(r - exact)) <= tol * np.max(np.abs(exact))


def test_calibrated_se_is_the_jackknife_se_times_the_factor() -> None:
    # the pieces assembled as the module docstring says: u_j = (v_j − v̄) − (R_j − R̄), the
    # variance of u less R's Monte Carlo variance, floored at loo's, times the factor of u
    theta, y, ll, lw = _setup(0.5)
    w = np.exp(lw - lw.max(axis=0))
    w /= w.sum(axis=0)
    h = (theta[:, None] - y[None, :]) ** 2
    v = np.sum(w * h, axis=0)
    g = w * (h - v)
    r, noise = dependence_shift(g, w)
    lwc = np.log(w) - np.log(w).mean(axis=0)
    a = g.sum(axis=1, keepdims=True) - g
    assert abs(noise - np.mean(np.sum((a * lwc) ** 2, axis=0))) < 1e-15
    u = (v - v.mean()) - (r - r.mean())
    var = max(np.var(v, ddof=1), np.var(u, ddof=1) - noise)
    want = bootstrap_t_factor(u) * math.sqrt(var / y.size)
    assert abs(calibrated_se(v - v.mean(), g, w) - want) < 1e-15
    got = loo_measures(lw, y, np.repeat(theta[:, None], y.size, axis=1),
                       [CustomMeasure("sq", lambda yy, yr: (yr - yy) ** 2)])[0]
    assert abs(got.se_parts["se_calibrated"] - want) < 1e-12
    assert abs(got.se - np.std(v, ddof=1) / math.sqrt(y.size)) < 1e-12   # loo's se


def test_bootstrap_t_factor_matches_exact_enumeration() -> None:
    # all 5^5 resamples of 5 values with their multinomial probabilities give the exact
    # bootstrap distribution of |mean* − mean| / se*; its 95.45% quantile halved is the factor.
    # 2,000 resamples estimate that quantile; the tolerance 0.15 is ~3 times the Monte Carlo
    # sd of a sample quantile at this level (√(p(1 − p)/B) / density ≈ 0.05 here).
    v = np.array([0.0, 0.1, 0.3, 0.4, 3.0])               # one large value: factor above 1
    t, p = [], []
    for idx in itertools.product(range(5), repeat=5):
        b = v[list(idx)]
        sd = b.std(ddof=1)
        t.append(abs(b.mean() - v.mean()) / sd * math.sqrt(5) if sd > 0 else 0.0)
        p.append(0.2**5)
    order = np.argsort(t)
    cdf = np.cumsum(np.array(p)[order])
    q = np.array(t)[order][np.searchsorted(cdf, 2 * stats.norm.cdf(2.0) - 1)]
    want = min(2.0, max(1.0, q / 2))
    assert want > 1.2
    assert abs(bootstrap_t_factor(v) - want) < 0.15
    # a symmetric sample at large N: no widening beyond the t quantile's rounding
    assert bootstrap_t_factor(stats.norm.ppf((np.arange(400) + 0.5) / 400)) < 1.06
    assert bootstrap_t_factor(v[:2]) == 1.0


@pytest.mark.parametrize("name", ["rps", "crps", "mae", "mse", "rmse", "r2", "brier", "acc"])
def test_equal_weights_leave_the_dependence_term_out(name: str) -> None:
    # every LOO posterior the same (log weights 0): leaving j out changes nothing, R = 0, and
    # the calibrated se is loo's se times the bootstrap-t factor of the influence
    rng = np.random.default_rng(3)
    s, n = 200, 12
    y = (rng.uniform(size=n) < 0.5).astype(float)
    mu = rng.uniform(0.2, 0.8, size=(s, n))
    yr = (rng.uniform(size=(s, n)) < mu).astype(float)
    m = loo_measures(np.zeros((s, n)), y, yr, [name], mu=mu)[0]
    want = (m.se_parts.get("se_flip_aware") if name == "acc"
            else bootstrap_t_factor(m.influence) * m.se)
    assert abs(m.se_parts["se_calibrated"] - want) < 1e-12
