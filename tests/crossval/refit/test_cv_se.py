"""Standard errors of K-fold and LFO sums (stanlogz.crossval.refit.cv_se) against exact truths by
simulation, BMA weights with an unknown log Z se, the pointwise-order LOO-PIT test's level and
power, LOO-PIT with unreliable weights, and the Monte Carlo se of K-fold's pointwise values
(exact posterior draws of ``normal.stan``).

Every stochastic assertion states its failure probability (each <= 1e-4) and uses a fixed
seed; coverage assertions are binomial: with n simulations and true coverage c, the observed
rate has sd sqrt(c (1 − c) / n), and each bound sits >= 4.5 sd from the rate measured with
many more simulations in benchmarks/coverage_cv.py.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from benchmarks.truths.crossval.truths import normal_mean_kfold_data
from stanlogz.api import posterior_probs
from stanlogz.crossval.checks.checks import predictive_checks
from stanlogz.crossval.checks.predictive import cauchy_combination, pit_uniformity
from stanlogz.crossval.observations.observations import find_observations
from stanlogz.crossval.refit.cv_se import calibration_factor, kfold_se, lfo_effective_n, lfo_se
from stanlogz.crossval.refit.heldout import heldout_elpd
from stanlogz.crossval.select.weights import bma_weights


def _kfold_normal(rng: np.random.Generator, n: int, k: int) -> tuple[np.ndarray, np.ndarray,
                                                                       float]:
    """Exact K-fold values of y_i ~ N(μ, 1), μ ~ N(0, 1) and the truth: the full-data
    posterior predictive's expected log score on n new observations."""
    return normal_mean_kfold_data(rng, n, k, lambda r, m: r.normal(size=m), 1.0)


def test_kfold_se_covers_the_expected_log_score_at_small_n() -> None:
    rng = np.random.default_rng(11)
    hit_new = hit_between = 0
    n_sims = 400
    for _ in range(n_sims):
        e, fold, truth = _kfold_normal(rng, 20, 2)
        err = abs(e.sum() - truth)
        hit_new += err <= 2 * kfold_se(e, fold)
        sums = np.bincount(fold, weights=e)
        hit_between += err <= 2 * math.sqrt(2 * np.var(sums))
    # measured 0.936 (N = 20, K = 2, 1000 sims); sd at 400 sims 0.012: 0.88 is 4.6 sd below
    # (P < 4e-6). The between-fold se measured 0.54: sd 0.025, 0.75 is 8 sd above.
    assert hit_new / n_sims >= 0.88
    assert hit_between / n_sims <= 0.75


def test_kfold_se_structure() -> None:
    rng = np.random.default_rng(12)
    e = rng.normal(size=30)
    loo_folds = np.arange(30)
    # one observation per fold: no between-fold excess, only the calibrated pointwise se
    assert kfold_se(e, loo_folds) == pytest.approx(
        calibration_factor(e) * math.sqrt(30 * np.var(e, ddof=1)))
    # folds with large offsets: the fold-aware se is at least the between-fold spread
    fold = np.arange(30) % 3
    shifted = e + np.array([-5.0, 0.0, 5.0])[fold]
    sums = np.bincount(fold, weights=shifted)
    assert kfold_se(shifted, fold) >= math.sqrt(3 * np.var(sums, ddof=1)) - 1e-9
    assert kfold_se(e[:1], fold[:1]) != kfold_se(e[:1], fold[:1])  # NaN for one value
    # calibration: at least 1, and close to 1 for many symmetric values
    assert calibration_factor(rng.normal(size=3000)) == pytest.approx(1.0, abs=0.05)
    assert calibration_factor(e) >= 1.0


def test_lfo_se_covers_overlapping_windows() -> None:
    rng = np.random.default_rng(13)
    n, start, m, n_sims = 60, 10, 8, 300
    origins = np.arange(start, n - m + 1)
    one = np.ones(m)
    hit_new = hit_naive = 0
    for _ in range(n_sims):
        mu = rng.normal()
        y = mu + rng.normal(size=n)
        e, tr = np.empty(origins.size), np.empty(origins.size)
        for j, t in enumerate(origins):
            v = 1 / (1 + t)
            cov = np.eye(m) + v
            ci = np.linalg.inv(cov)
            logdet = np.linalg.slogdet(cov)[1]
            r = y[t:t + m] - v * y[:t].sum()
            e[j] = -0.5 * (m * math.log(2 * math.pi) + logdet + r @ ci @ r)
            tr[j] = -0.5 * (m * math.log(2 * math.pi) + logdet + np.trace(ci)
                            + (mu - v * y[:t].sum()) ** 2 * one @ ci @ one)
        err = abs(e.sum() - tr.sum())
        hit_new += err <= 2 * lfo_se(e, m)
        hit_naive += err <= 2 * math.sqrt(e.size * np.var(e))
    # measured 0.953 (1000 sims); sd at 300 sims 0.012: 0.89 is 5 sd below (P < 3e-7). The
    # naive se measured 0.44: sd 0.029, 0.6 is 5.5 sd above.
    assert hit_new / n_sims >= 0.89
    assert hit_naive / n_sims <= 0.6


def test_lfo_se_structure() -> None:
    e = np.random.default_rng(14).normal(size=40)
    # one-step windows are independent: the calibrated pointwise se with n − 1 in the variance
    t2 = stats.t.ppf(stats.norm.cdf(2.0), 39) / 2
    assert lfo_se(e, 1) == pytest.approx(max(calibration_factor(e), t2)
                                         * math.sqrt(40 * np.var(e, ddof=1)))
    assert lfo_effective_n(40, 1) == pytest.approx(40.0)
    # n = 3 origins of 8-step windows are worth fewer than two forecasts: no se
    assert math.isnan(lfo_se(e[:3], 8))
    assert lfo_se(e, 4) > lfo_se(e, 1)


def test_bma_weights_propagate_an_unknown_log_z_se() -> None:
    w = bma_weights([0.0, 1.0, 2.0], [0.1, float("nan"), 0.2])
    assert np.all(np.isnan(w.se))  # every probability depends on the unknown log Z
    assert w.details["log_z_se_unknown"] == [1]
    p = np.exp([0.0, 1.0, 2.0]) / np.exp([0.0, 1.0, 2.0]).sum()
    se = np.array([0.1, 0.3, 0.2])
    jac = p[:, None] * (np.eye(3) - p[None, :])
    want = np.sqrt((jac**2) @ se**2)
    assert bma_weights([0.0, 1.0, 2.0], se).se == pytest.approx(want, rel=1e-12)
    # a program with no posterior mass: its unknown se does not matter to the others
    w = bma_weights([0.0, -1e4, 1.0], [0.1, float("nan"), 0.2])
    assert np.all(np.isfinite(w.se))
    probs, probs_se = posterior_probs(np.array([0.0, 1.0]), np.array([float("nan"), 0.1]),
                                      np.array([0.5, 0.5]))
    assert np.all(np.isnan(probs_se)) and probs.sum() == pytest.approx(1.0)


def test_pot_uniformity_test_holds_its_level_and_has_power() -> None:
    rng = np.random.default_rng(15)
    n_sims = 400
    rej = sum(pit_uniformity(rng.uniform(size=50)).p_value < 0.05 for _ in range(n_sims))
    # iid uniforms: measured rejection rate 0.061 at alpha 0.05 (2000 sims); sd 0.012 at 400
    # sims, so 0.12 is 5 sd above (P < 3e-7)
    assert rej / n_sims <= 0.12
    # too narrow a predictive: PIT values of N(0, 1.5²) data under N(0, 1); the test rejects
    # at p < 1e-3 in nearly every data set (measured power 1.0), KS far less often
    pits = [stats.norm.cdf(rng.normal(0, 1.5, 100)) for _ in range(50)]
    assert all(pit_uniformity(p).p_value < 1e-2 for p in pits[:20])
    t, p_value = cauchy_combination(np.array([0.5, 0.5]))
    assert t == pytest.approx(0.0, abs=1e-12) and p_value == pytest.approx(0.5)


def test_loo_pit_leaves_out_observations_with_unreliable_weights() -> None:
    rng = np.random.default_rng(16)
    n, s = 40, 2000
    y = rng.normal(0.0, 1.0, n)
    y[7] = 20.0  # an outlier: its LOO weights have Pareto k-hat 1.15 (far above 0.7)
    prec = 1 / 0.5**2 + n  # mu ~ N(0, 0.5²), sd 1 known: exact posterior draws
    mu = rng.normal(y.sum() / prec, 1 / math.sqrt(prec), s)
    ll = stats.norm.logpdf(y[None, :], mu[:, None], 1.0)
    y_rep = rng.normal(mu[:, None], 1.0, (s, n))
    out = predictive_checks(ll, y_rep, y, metrics=False, crps=False, seed=1)
    assert out.uniformity is not None and 7 in out.uniformity.excluded
    assert math.isnan(out.pit[7]) and np.isfinite(np.delete(out.pit, out.uniformity.excluded)).all()
    assert out.uniformity.n == n - len(out.uniformity.excluded)
    assert any("k-hat > 0.7" in w for w in out.warnings)
    assert out.to_dict()["pit"][7] is None


def test_kfold_pointwise_mcse_matches_the_error(compiled) -> None:
    """Σ_i log p(y_i | y_T) of one fold from exact draws: z = error / elpd_i_mcse over 60 data
    sets. With an honest se Σ z² ~ χ²_60 (a conservative one is smaller): below its 1 − 1e-4
    quantile (107) except with probability 1e-4. The old se (log r taken as known) measured
    sd(error) / se = 1.27 (benchmarks/coverage_cv.py), Σ z² ≈ 97 expected; the new one 1.00
    (this seed: Σ z² = 51); a se 3x too large would give Σ z² ≈ 7, below 20 (the χ²_60 1e-4
    quantile is 27)."""
    sigma, mu0, tau0, n = 1.2, 0.0, 2.0, 20
    base = {"N": n, "sigma": sigma, "mu0": mu0, "tau0": tau0}
    rng = np.random.default_rng(17)
    model = compiled("normal", {**base, "y": [0.0] * n})

    def post(y: np.ndarray) -> tuple[np.ndarray, float, float]:
        prec = 1 / tau0**2 + y.size / sigma**2
        mean = (mu0 / tau0**2 + y.sum() / sigma**2) / prec
        return rng.normal(mean, 1 / math.sqrt(prec), (4, 500, 1)), mean, prec

    z2 = 0.0
    v = np.arange(4)
    for rep in range(60):
        y = rng.normal(rng.normal(mu0, tau0), sigma, n)
        data = {**base, "y": y.tolist()}
        train, mean, prec = post(y[4:])
        h = heldout_elpd(model.with_data(data), data, find_observations(data), v,
                         full_draws=post(y)[0], train_draws=train, seed=rep)
        truth = stats.norm.logpdf(y[v], mean, math.sqrt(sigma**2 + 1 / prec)).sum()
        z2 += ((h.elpd_i.sum() - truth) / h.elpd_i_mcse) ** 2
    assert 20.0 < z2 < 107.0, z2
