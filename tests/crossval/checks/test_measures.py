"""Predictive measures by LOO weights (stanlogz.crossval.checks.measures) against closed forms:
RPS/SRPS of known categorical distributions (the ECDF form Σ_k (F(k) − 1[y ≤ k])² and
E|X − X'| = 2 Σ_k F(k)(1 − F(k))), loo's unweighted PWM estimator, Brier of known probability
vectors, accuracies of known predictions with loo's se formulas, MSE/MAE/RMSE/R² with loo's
delta-method se, CRPS/SCRPS equal to the existing loo_crps (itself ArviZ's loo_score), custom
measures, and the Monte Carlo se against the spread of the estimates over independent draw
sets.

Agreement with arviz-stats (CRPS/SCRPS, MAE/MSE/RMSE, accuracies) is checked to 1e-10 against
stored reference values in test_arviz_agreement.py; the rest are closed forms.

Stochastic assertions state their failure probability and use fixed seeds.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from stanlogz.crossval.checks.measures import CustomMeasure, elpd_measure, loo_measures
from stanlogz.crossval.checks.predictive import loo_crps, loo_log_weights
from stanlogz.errors import InputError


def _by_name(ms):
    return {m.name: m for m in ms}


def _cdf_rps(pmf: np.ndarray, y: int) -> float:
    """Σ_k (F(k) − 1[y ≤ k])² over categories 1..K (Epstein's RPS, unnormalized)."""
    f = np.cumsum(pmf)
    k = np.arange(1, pmf.size + 1)
    return float(np.sum((f - (y <= k)) ** 2))


def test_rps_of_a_weighted_categorical_equals_the_cdf_form() -> None:
    # S = K draws, one per category, weighted by the pmf: the LOO predictive is that pmf
    pmfs = np.array([[0.1, 0.2, 0.3, 0.4], [0.5, 0.25, 0.15, 0.1], [0.05, 0.05, 0.8, 0.1]])
    y = np.array([3.0, 1.0, 4.0])
    draws = np.tile(np.arange(1.0, 5.0)[:, None], (1, 3))
    ms = _by_name(loo_measures(np.log(pmfs.T), y, draws, ["rps", "srps", "crps", "scrps"]))
    for i, pmf in enumerate(pmfs):
        f = np.cumsum(pmf)
        exx = 2 * np.sum(f * (1 - f))                       # E|X − X'| of the pmf
        exy = float(np.sum(pmf * np.abs(np.arange(1, 5) - y[i])))
        rps = _cdf_rps(pmf, int(y[i]))
        assert exy - 0.5 * exx == pytest.approx(rps, abs=1e-12)
        # the plug-in (ArviZ) CRPS is exactly −RPS; loo's RPS divides E|X − X'| by 1 − Σ w²
        assert ms["crps"].pointwise[i] == pytest.approx(-rps, abs=1e-12)
        exx_c = exx / (1 - np.sum(pmf**2))
        assert ms["rps"].pointwise[i] == pytest.approx(exy - 0.5 * exx_c, abs=1e-12)
        assert ms["srps"].pointwise[i] == pytest.approx(-exy / exx_c - 0.5 * math.log(exx_c),
                                                        abs=1e-12)
        assert ms["scrps"].pointwise[i] == pytest.approx(-exy / exx - 0.5 * math.log(exx),
                                                         abs=1e-12)
    assert ms["rps"].loss and not ms["srps"].loss and not ms["crps"].loss
    assert ms["rps"].estimate == pytest.approx(ms["rps"].pointwise.mean(), abs=1e-14)
    assert ms["rps"].se == pytest.approx(np.std(ms["rps"].pointwise, ddof=1) / math.sqrt(3))


def test_rps_with_equal_weights_is_loos_unweighted_pwm_estimator() -> None:
    rng = np.random.default_rng(3)
    s, n = 50, 6
    yr = rng.integers(1, 6, size=(s, n)).astype(float)
    y = rng.integers(1, 6, size=n).astype(float)
    ms = _by_name(loo_measures(np.zeros((s, n)), y, yr, ["rps", "srps"]))
    coef = 2 * (2 * np.arange(1, s + 1) - s - 1) / (s - 1)   # loo's .exx_pwm, no weights
    exx = np.mean(np.sort(yr, axis=0) * coef[:, None], axis=0)
    exy = np.mean(np.abs(yr - y), axis=0)
    np.testing.assert_allclose(ms["rps"].pointwise, exy - 0.5 * exx, atol=1e-12)
    np.testing.assert_allclose(ms["srps"].pointwise, -exy / exx - 0.5 * np.log(exx),
                               atol=1e-12)


def test_crps_and_scrps_equal_the_existing_loo_crps() -> None:
    rng = np.random.default_rng(5)
    s, n = 300, 10
    theta = rng.normal(0.2, 0.3, size=s)
    y = rng.normal(size=n)
    lw = loo_log_weights(-0.5 * (y[None] - theta[:, None]) ** 2)
    yr = theta[:, None] + rng.normal(size=(s, n))
    ms = _by_name(loo_measures(lw, y, yr, ["crps", "scrps"]))
    ref = loo_crps(lw, y, yr)
    np.testing.assert_allclose(ms["crps"].pointwise, ref.crps_i, atol=1e-12)
    np.testing.assert_allclose(ms["scrps"].pointwise, ref.scrps_i, atol=1e-12)
    assert ms["crps"].se == pytest.approx(ref.crps_se, rel=1e-12)


def test_brier_accuracy_and_balanced_accuracy_of_known_predictions() -> None:
    p = np.array([0.9, 0.2, 0.6, 0.4, 0.7, 0.1, 0.55])
    y = np.array([1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0])
    mu = np.tile(p, (8, 1))                    # constant draws: the LOO mean is p, no MC error
    ms = _by_name(loo_measures(np.zeros_like(mu), y, None, ["brier", "acc", "bacc"], mu=mu))
    assert ms["brier"].estimate == pytest.approx(np.mean((p - y) ** 2), abs=1e-14)
    assert ms["brier"].mcse < 1e-15
    hit = ((p > 0.5) == (y == 1)).astype(float)             # 1, 1, 0, 1, 1, 0, 1
    assert ms["acc"].estimate == pytest.approx(5 / 7)
    assert ms["acc"].se == pytest.approx(math.sqrt(5 / 7 * 2 / 7 / 7))
    acc0, acc1 = hit[y == 0].mean(), hit[y == 1].mean()   # 2/3 and 3/4
    assert ms["bacc"].estimate == pytest.approx((acc0 + acc1) / 2)
    assert ms["bacc"].se == pytest.approx(
        math.sqrt(acc0 * (1 - acc0) / 3 + acc1 * (1 - acc1) / 4) / 2)
    assert ms["bacc"].pointwise.sum() == pytest.approx(ms["bacc"].estimate)
    assert ms["acc"].mcse == 0.0 and ms["bacc"].mcse == 0.0


def test_categorical_brier_and_accuracy_from_class_probabilities() -> None:
    pk = np.array([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.1, 0.2, 0.7], [0.4, 0.35, 0.25]])
    y = np.array([1.0, 3.0, 3.0, 2.0])
    probs = np.tile(pk[None], (5, 1, 1))
    ms = _by_name(loo_measures(np.zeros((5, 4)), y, None, ["brier", "acc", "bacc"],
                               probs=probs))
    onehot = np.eye(3)[(y - 1).astype(int)]
    assert ms["brier"].estimate == pytest.approx(np.mean(np.sum((pk - onehot) ** 2, axis=1)))
    assert ms["acc"].estimate == pytest.approx(0.5)       # hits at 1 and 3
    assert ms["bacc"].estimate == pytest.approx((1.0 + 0.5 + 0.0) / 3)
    # the same classes from draws of the categories themselves, weighted by the pmf
    draws = np.tile(np.arange(1.0, 4.0)[:, None], (1, 4))
    from_draws = _by_name(loo_measures(np.log(pk.T), y, draws, ["brier", "acc"]))
    assert from_draws["brier"].estimate == pytest.approx(ms["brier"].estimate, abs=1e-12)
    assert from_draws["acc"].estimate == ms["acc"].estimate


def test_point_errors_and_r2_with_loos_delta_method() -> None:
    rng = np.random.default_rng(7)
    n = 9
    y = rng.normal(size=n)
    pred = y + rng.normal(0, 0.5, size=n)
    mu = np.tile(pred, (6, 1))
    ms = _by_name(loo_measures(np.zeros_like(mu), y, None, ["mae", "mse", "rmse", "r2"],
                               mu=mu))
    e2 = (y - pred) ** 2
    mse = e2.mean()
    assert ms["mae"].estimate == pytest.approx(np.mean(np.abs(y - pred)))
    assert ms["mse"].estimate == pytest.approx(mse)
    assert ms["mse"].se == pytest.approx(np.std(e2, ddof=1) / math.sqrt(n))
    assert ms["rmse"].estimate == pytest.approx(math.sqrt(mse))
    assert ms["rmse"].se == pytest.approx(ms["mse"].se / (2 * math.sqrt(mse)))
    sy = (y - y.mean()) ** 2
    vy = sy.mean()
    assert ms["r2"].estimate == pytest.approx(1 - mse / vy)
    # loo's measure_r2: sqrt(t1 + t2 + t3) / mse_y with t's from var/cov over observations
    t1 = np.var(e2, ddof=1) / n
    t2 = -2 * (mse / vy) * np.cov(e2, sy, ddof=1)[0, 1] / n
    t3 = (mse / vy) ** 2 * np.var(sy, ddof=1) / n
    assert ms["r2"].se == pytest.approx(math.sqrt(t1 + t2 + t3) / vy, rel=1e-10)


def test_custom_measures_match_the_built_ins() -> None:
    rng = np.random.default_rng(11)
    s, n = 400, 8
    theta = rng.normal(0.1, 0.4, size=s)
    y = rng.normal(size=n)
    lw = loo_log_weights(-0.5 * (y[None] - theta[:, None]) ** 2)
    mu = np.tile(theta[:, None], (1, n))
    ms = _by_name(loo_measures(lw, y, mu, [
        "mse", CustomMeasure("sq", lambda yy, m: (yy - m) ** 2, on="mean"),
        CustomMeasure("e_sq", lambda yy, yr: (yr - yy) ** 2, on="draws", loss=True)]))
    np.testing.assert_allclose(ms["sq"].pointwise, ms["mse"].pointwise, atol=1e-14)
    # central difference of a quadratic is exact up to rounding
    assert ms["sq"].mcse == pytest.approx(ms["mse"].mcse, rel=1e-5)
    w = np.exp(lw - lw.max(axis=0))
    w /= w.sum(axis=0)
    np.testing.assert_allclose(ms["e_sq"].pointwise, np.sum(w * (mu - y) ** 2, axis=0),
                               rtol=1e-12)


@pytest.mark.slow
def test_monte_carlo_se_matches_the_spread_over_draw_sets() -> None:
    # Fixed data, a normal "posterior" θ ~ N(0.1, 0.3²); 250 independent draw sets of S = 400.
    # The sd of each estimate over draw sets is estimated to ~1/sqrt(2·250) = 4.5% relative;
    # measured ratios mcse / sd 0.99-1.05; the bounds 0.75-1.25 are > 5 sd of the ratio's
    # sampling error away (failure probability < 1e-4 over the seven measures).
    rng = np.random.default_rng(2024)
    n, s, reps = 15, 400, 250
    y = rng.normal(0.3, 1.0, size=n)
    y[0] = 2.5                                    # one observation with uneven weights
    names = ["rps", "srps", "crps", "mae", "mse", "rmse", "r2"]
    est = {k: [] for k in names}
    mc = {k: [] for k in names}
    for _ in range(reps):
        theta = rng.normal(0.1, 0.3, size=s)
        lw = loo_log_weights(-0.5 * (y[None] - theta[:, None]) ** 2)
        yr = theta[:, None] + rng.normal(size=(s, n))
        for m in loo_measures(lw, y, yr, names, mu=np.tile(theta[:, None], (1, n))):
            est[m.name].append(m.estimate)
            mc[m.name].append(m.mcse)
    for k in names:
        ratio = np.mean(mc[k]) / np.std(est[k], ddof=1)
        assert 0.75 < ratio < 1.25, (k, ratio)


def test_elpd_measure_and_two_chains() -> None:
    v = np.array([-1.0, -2.0, -0.5, -1.5])
    e = elpd_measure(v, 0.1)
    assert e.estimate == -5.0 and e.se == pytest.approx(math.sqrt(4 * np.var(v, ddof=1)))
    rng = np.random.default_rng(1)
    yr = rng.normal(size=(40, 3))
    one = loo_measures(np.zeros((40, 3)), np.zeros(3), yr, ["rps"])[0]
    two = loo_measures(np.zeros((40, 3)), np.zeros(3), yr, ["rps"], chains=2)[0]
    assert one.estimate == two.estimate and one.mcse > 0 and two.mcse > 0


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"measures": ["nope"]}, "unknown measure 'nope'"),
    ({"measures": ["rps"], "y_rep": None}, "rps needs posterior-predictive draws"),
    ({"measures": ["bacc"], "y": np.ones(4), "y_rep": np.ones((8, 4))},
     "at least two observed classes"),
    ({"measures": ["r2"], "y": np.ones(4)}, "r2 is undefined"),
    ({"measures": ["acc"], "y_rep": np.linspace(0, 1, 32).reshape(8, 4)},
     "need a binary or categorical outcome"),
    ({"measures": ["rps"], "y_rep": np.ones((8, 3))}, "y_rep must be finite (draws"),
    ({"measures": ["rps"], "chains": 3}, "cannot be 3 chains of equal length"),
    ({"measures": [CustomMeasure("c", lambda y, yr: yr[:, :2])]}, "custom measure 'c'"),
])
def test_bad_input_is_one_clear_line(kwargs, message) -> None:
    base = {"log_w": np.zeros((8, 4)), "y": np.array([0.0, 1.0, 2.0, 1.0]),
            "y_rep": np.arange(32.0).reshape(8, 4) % 3}
    base.update(kwargs)
    with pytest.raises(InputError, match=message.replace("(", r"\(")):
        loo_measures(**base)
