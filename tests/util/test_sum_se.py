"""The one between-observation se (ddof 1, as R's loo and ArviZ 1.x) and its wiring into loo,
waic, compare, K-fold and LFO results."""

from __future__ import annotations

import math

import numpy as np
import pytest

import stanlogz
from stanlogz._util.sum_se import arviz0_factor, sum_se
from stanlogz.crossval import loo_compare
from stanlogz.crossval.psis_loo.waic import waic
from stanlogz.crossval.refit.cv_se import calibration_factor


def test_sum_se_is_sqrt_n_times_the_ddof1_sd() -> None:
    v = np.array([1.0, 2.0, 4.0, 7.0])
    # mean 3.5, squared deviations 6.25 + 2.25 + 0.25 + 12.25 = 21, s² = 21 / 3 = 7
    assert sum_se(v) == pytest.approx(math.sqrt(4 * 7.0), rel=1e-14)
    assert sum_se(v) / arviz0_factor(4) == pytest.approx(math.sqrt(4 * 21 / 4), rel=1e-14)
    assert math.isnan(sum_se(np.array([3.0])))


def test_sum_se_squared_is_unbiased_for_n_sigma2() -> None:
    """E[sum_se² / N] = σ² with ddof 1 (ArviZ 0.x's ddof 0 gives (N − 1)/N σ² = 0.75 σ² at
    N = 4). Over 20,000 sets of N = 4 standard normals the mean of s² = χ²_3 / 3 has sd
    sqrt(2/3 / 20000) = 0.0058; |mean − 1| > 0.03 (5.2 sd) has probability < 1e-6, and ddof 0
    (mean 0.75) fails it."""
    rng = np.random.default_rng(40)
    s2 = [sum_se(rng.normal(size=4)) ** 2 / 4 for _ in range(20_000)]
    assert abs(np.mean(s2) - 1.0) < 0.03, np.mean(s2)


def test_every_between_observation_se_uses_it() -> None:
    """sum_se is the se under every loo name (se, p_loo's se, WAIC's se, compare's diff_se,
    also below |elpd_diff| = 4 and at N < 20); the small-N factor goes only into the
    intervals beside them."""
    rng = np.random.default_rng(41)
    ll = rng.normal(-1.0, 0.3, (2000, 30)) + rng.normal(0, 0.5, 30)
    r = stanlogz.loo(ll)
    assert r.se == pytest.approx(sum_se(r.elpd_i), rel=1e-12)
    assert r.p_loo_se == pytest.approx(sum_se(r.lppd_i - r.elpd_i), rel=1e-12)
    iv = r.elpd_loo_interval
    assert iv.high - iv.low == pytest.approx(4 * calibration_factor(r.elpd_i) * r.se, rel=1e-12)
    w = waic(ll)
    assert w.se == pytest.approx(sum_se(w.elpd_i), rel=1e-12)
    for shift, small in ((0.2, True), (2.0, False)):  # elpd_diff about -1 and -60
        r2 = stanlogz.loo(ll + rng.normal(0, shift, 30) - shift**2)
        c = loo_compare([r, r2], ["a", "b"])
        j = 1 - c.best
        d = c.results[j].elpd_i - c.results[c.best].elpd_i
        assert (abs(c.elpd_diff[j]) < 4) == small
        assert c.diff_se[j] == pytest.approx(sum_se(d), rel=1e-12)
        if small:
            assert np.isnan(c.p_worse[j]) and np.all(np.isnan(c.diff_interval[j]))
            assert any("p_worse and diff_interval are not given" in w for w in c.warnings())
        else:
            half = 2 * calibration_factor(d) * sum_se(d)
            assert c.diff_interval[j] == pytest.approx(
                [c.elpd_diff[j] - half, c.elpd_diff[j] + half], rel=1e-12)
    a = r.to_arviz()
    se = float(a.se) if hasattr(a, "se") else float(a["se"])
    assert se == pytest.approx(r.se, rel=1e-12)
    # fewer than 20 observations: loo's diff_se still, but no calibrated interval
    few = [stanlogz.loo(ll[:, :12]), stanlogz.loo(ll[:, :12] - 2.0)]
    c = loo_compare(few, ["a", "b"])
    assert c.elpd_diff[1] == pytest.approx(-24.0)
    assert c.diff_se[1] == pytest.approx(sum_se(few[1].elpd_i - few[0].elpd_i), abs=1e-12)
    assert np.all(np.isnan(c.diff_interval[1]))
    assert any("only 12 observations: diff_se is loo's" in w for w in c.warnings())


def test_loo_display_shows_the_interval_and_few_observations() -> None:
    rng = np.random.default_rng(41)
    ll = rng.normal(-1.0, 0.3, (2000, 12)) + rng.normal(0, 0.5, 12)
    r = stanlogz.loo(ll)
    text = str(r)
    iv = r.elpd_loo_interval
    assert f"95.4% interval for elpd_loo: [{iv.low:.1f}, {iv.high:.1f}]" in text
    assert f"small-N factor {iv.factor:.2f}" in text
    assert "Only 12 observations" in text
    many = stanlogz.loo(rng.normal(-1.0, 0.3, (400, 300)) + rng.normal(0, 0.5, 300))
    assert "Only 300 observations" not in str(many)
