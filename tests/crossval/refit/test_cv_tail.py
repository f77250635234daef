"""The Pareto lower tail of pointwise CV values: its fit, the se calibration it feeds, its
coverage under heavy-tailed misspecification, and the warning it raises."""

from __future__ import annotations

import math

import numpy as np
import pytest

from benchmarks.truths.crossval.truths import normal_mean_kfold_data
from stanlogz.crossval.refit.cv_se import MAX_FACTOR, calibration_factor, kfold_se
from stanlogz.crossval.refit.cv_tail import gpd_fit, tail_factor, tail_khat, tail_warning


def test_gpd_fit_recovers_shape_and_scale() -> None:
    """2,000 GPD(k = 0.3, σ = 1) draws: the estimator's asymptotic sd is (1 + k)/sqrt(n) = 0.029
    for k and σ sqrt(2 (1 + k) / n) = 0.036 for σ (the prior's pull, (0.5 − k) · 10 / 2010 =
    0.001, is negligible); 0.15 and 0.2 are over 5 sd (failure probability < 1e-6)."""
    u = np.random.default_rng(50).random(2000)
    k, s = 0.3, 1.0
    x = s / k * (u ** (-k) - 1)
    kh, sh = gpd_fit(x)
    assert abs(kh - k) < 0.15 and abs(sh - s) < 0.2, (kh, sh)


def test_tail_khat_and_warning_tell_heavy_from_light_lower_tails() -> None:
    """5,000 values: the lowest 213 are fitted. Lower tail Pareto with k = 1.5: k̂ has sd about
    (1 + k)/sqrt(213) = 0.17 around 1.47 (after the prior), so k̂ <= 0.7 is 4.5 sd away
    (probability < 1e-5); normal values: k̂ near 0 with sd 0.07, above 0.7 never in practice."""
    rng = np.random.default_rng(51)
    heavy = -(rng.random(5000) ** -1.5 - 1) / 1.5
    light = rng.normal(size=5000)
    assert tail_khat(heavy) > 0.7 and tail_khat(light) < 0.3
    msg = tail_warning(heavy, "elpd_kfold")
    assert msg is not None and "k-hat" in msg and "\n" not in msg and "elpd_kfold" in msg
    assert tail_warning(light, "elpd_kfold") is None
    assert tail_factor(light) == pytest.approx(1.0, abs=0.05)
    assert math.isnan(tail_khat(light[:5])) and tail_factor(light[:5]) == 1.0
    assert tail_warning(heavy[:49], "elpd_kfold") is None  # too few values to say


def test_calibration_takes_the_larger_factor_up_to_its_cap() -> None:
    e = -np.random.default_rng(52).standard_t(3, 30) ** 2  # a heavy lower tail
    assert calibration_factor(e) == min(MAX_FACTOR, max(calibration_factor(e), tail_factor(e)))
    assert calibration_factor(e) >= min(MAX_FACTOR, tail_factor(e)) >= 1.0
    # one value far below the rest: uncapped, every resample that misses it would look like a
    # many-se error (factor ~100 here); the cap holds it at MAX_FACTOR
    v = np.random.default_rng(3).normal(-1.4, 0.5, 10)
    v[-1] = -160.0
    assert calibration_factor(v) == MAX_FACTOR


def _kfold_t5(rng: np.random.Generator, n: int, k: int) -> tuple[np.ndarray, np.ndarray, float]:
    """Exact K-fold log p(y_i | y_T) of the sd-1 normal model with a N(0, 1) prior on μ, for
    y = μ + 1.5 t_5, and the truth: the full-data posterior predictive's expected log score on
    n new observations (closed form: the log density is quadratic in ỹ, var ỹ = 3.75)."""
    return normal_mean_kfold_data(rng, n, k, lambda r, m: 1.5 * r.standard_t(5, m), 3.75)


def test_kfold_se_covers_under_heavy_tailed_misspecification() -> None:
    """N = 20, K = 5, noise 1.5 t_5 under a normal model: benchmarks/coverage_cv.py measured
    0.919 over 1,000 data sets (the bootstrap-t without the Pareto tail: 0.873). At 300 data
    sets the sd is 0.016, so 0.85 is 4.4 sd below (failure probability < 1e-5)."""
    rng = np.random.default_rng(53)
    n_sims = 300
    hit = 0
    for _ in range(n_sims):
        e, fold, truth = _kfold_t5(rng, 20, 5)
        hit += abs(e.sum() - truth) <= 2 * kfold_se(e, fold)
    assert hit / n_sims >= 0.85, hit / n_sims
