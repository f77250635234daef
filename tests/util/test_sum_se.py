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
from stanlogz.crossval.refit.cv_se import elpd_se


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
    """sum_se is loo's se (``se_loo``, ``diff_se_loo``, p_loo's se); the reported se of an elpd
    sum or difference is it times the small-N factor (elpd_se), and no diff_se is given below
    |elpd_diff| = 4."""
    rng = np.random.default_rng(41)
    ll = rng.normal(-1.0, 0.3, (2000, 30)) + rng.normal(0, 0.5, 30)
    r = stanlogz.loo(ll)
    assert r.se_loo == pytest.approx(sum_se(r.elpd_i), rel=1e-12)
    assert r.se == pytest.approx(elpd_se(r.elpd_i), rel=1e-12)
    assert r.se > r.se_loo  # N = 30: the factor is above 1
    assert r.p_loo_se == pytest.approx(sum_se(r.lppd_i - r.elpd_i), rel=1e-12)
    w = waic(ll)
    assert w.se == pytest.approx(elpd_se(w.elpd_i), rel=1e-12)
    assert w.se_loo == pytest.approx(sum_se(w.elpd_i), rel=1e-12)
    for shift, refused in ((0.2, True), (2.0, False)):  # elpd_diff about -1 and -60
        r2 = stanlogz.loo(ll + rng.normal(0, shift, 30) - shift**2)
        c = loo_compare([r, r2], ["a", "b"])
        j = 1 - c.best
        d = c.results[j].elpd_i - c.results[c.best].elpd_i
        assert (abs(c.elpd_diff[j]) < 4) == refused
        assert c.diff_se_loo[j] == pytest.approx(math.hypot(sum_se(d), c.diff_mcse[j]),
                                                 rel=1e-12)
        if refused:
            assert np.isnan(c.diff_se[j]) and np.isnan(c.p_worse[j])
            assert any("no se" in w for w in c.warnings())
        else:
            assert c.diff_se[j] == pytest.approx(math.hypot(elpd_se(d), c.diff_mcse[j]),
                                                 rel=1e-12)
    a = r.to_arviz()
    se = float(a.se) if hasattr(a, "se") else float(a["se"])
    assert se == pytest.approx(r.se, rel=1e-12)
    # fewer than 20 observations: no se of a difference, however large
    few = [stanlogz.loo(ll[:, :12]), stanlogz.loo(ll[:, :12] - 2.0)]
    c = loo_compare(few, ["a", "b"])
    assert c.elpd_diff[1] == pytest.approx(-24.0) and np.isnan(c.diff_se[1])
    assert any("only 12 observations: no se of elpd_diff" in w for w in c.warnings())


def test_loo_display_names_the_small_n_factor_and_few_observations() -> None:
    rng = np.random.default_rng(41)
    ll = rng.normal(-1.0, 0.3, (2000, 12)) + rng.normal(0, 0.5, 12)
    r = stanlogz.loo(ll)
    text = str(r)
    assert f"small-N factor of {r.se / r.se_loo:.2f} (loo's SE {r.se_loo:.1f})" in text
    assert "Only 12 observations" in text
    many = stanlogz.loo(rng.normal(-1.0, 0.3, (400, 300)) + rng.normal(0, 0.5, 300))
    assert "observations: SE is approximate" not in str(many)
