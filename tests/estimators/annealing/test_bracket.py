"""Reverse SMC (back from posterior draws) and the forward/reverse sandwich of SMC's log Z."""

import math

import numpy as np
import pytest
from scipy import stats

from stanlogz.densities.gaussian import GaussianTarget
from stanlogz.estimators.annealing.bracket import bracket, reverse_runs
from stanlogz.mcmc.annealing import AnnealingPath, HMCTuning


def _path():
    # The base is narrower than the posterior, so the reverse weights (q/p)^Δβ stay light-tailed
    # (from a wider base they are heavy-tailed and a z-test on their mean is not valid).
    post = GaussianTarget(np.ones(1), np.array([[0.25]]), log_z=0.7)
    base = GaussianTarget(np.array([0.8]), np.array([[0.16]]))
    tun = HMCTuning.from_endpoints(np.array([0.16]), np.array([0.25]), 0.8)
    return post, AnnealingPath(base, post), tun


def test_reverse_runs_are_unbiased_for_one_over_z():
    """Started at exact posterior draws, each reverse run's exp(-log Z_run) is unbiased for 1/Z.
    1-d: target N(1, 0.5²) with log Z = 0.7, base N(0.8, 0.4²), 5 temperatures, 16 particles.
    z-test over 400 runs: Z/Ẑ has relative sd ~0.08 and skewness ~ -0.2 (checked on 4 seeds),
    so the mean of 400 is close to normal and |z| > 4.5 has P < 1e-4."""
    post, path, tun = _path()
    # A pool far larger than the 6,400 starts, so the runs are (nearly) independent.
    starts = post.sample(np.random.default_rng(5), 400_000)
    runs = reverse_runs(path, np.array([0, 0.05, 0.2, 0.5, 1.0]), tun, np.ones(3, dtype=int),
                        starts, n_particles=16, n_runs=400, hmc_steps=3, n_moves=1, seed=4,
                        n_workers=1)
    inv = np.exp(0.7 - runs)
    z = (inv.mean() - 1.0) / (inv.std(ddof=1) / math.sqrt(inv.size))
    assert abs(z) < 4.5
    assert 0.02 < inv.std() < 0.3  # the weights did vary: the test is not vacuous


def test_bracket_holds_the_runs_means_and_their_se():
    fwd = np.array([-0.4, -0.2, -0.3, -0.1])  # mean -0.25, se of the mean 0.0645
    rev = np.array([0.3, 0.1, 0.2, 0.2])  # mean 0.2, se 0.0408
    b = bracket(fwd, rev)
    assert b.lower == pytest.approx(-0.25) and b.upper == pytest.approx(0.2)
    assert b.lower_se == pytest.approx(math.sqrt(np.var(fwd, ddof=1) / 4))
    assert b.upper_se == pytest.approx(math.sqrt(np.var(rev, ddof=1) / 4))
    assert b.consistent and b.gap == pytest.approx(0.45)
    lo, hi = b.interval(0.95, 3)
    q = stats.t.ppf(0.975, 3)
    assert lo == pytest.approx(-0.25 - q * b.lower_se) and hi == pytest.approx(0.2 + q * b.upper_se)
    # Bounds crossed by far more than their Monte Carlo se: inconsistent.
    assert not bracket(fwd + 2.0, rev).consistent


def test_bracket_interval_covers_lognormal_runs():
    # Runs as SMC's CLT has them, 8 a side: forward log Z_hat ~ N(-s^2/2, s^2), reverse
    # ~ N(+s^2/2, s^2) (log Z = 0). Each end misses with probability at most 0.025 (exactly
    # 0.025 for s -> 0), so coverage >= 0.95; over 4000 sets the Monte Carlo sd of a coverage
    # of 0.95 is 0.0034, and >= 0.94 fails with probability < 1e-3 for a true 0.95 and < 1e-9
    # at the s = 1 value (~0.99).
    rng = np.random.default_rng(3)
    for s in (0.05, 1.0):
        f = rng.normal(-0.5 * s * s, s, (4000, 8))
        r = rng.normal(0.5 * s * s, s, (4000, 8))
        iv = np.array([bracket(a, b).interval(0.95, 7) for a, b in zip(f, r, strict=True)])
        assert np.mean((iv[:, 0] <= 0) & (iv[:, 1] >= 0)) >= 0.94


def test_smc_estimate_reports_the_forward_runs_and_both_bounds():
    d = 4
    rng = np.random.default_rng(7)
    a = rng.normal(size=(d, d))
    post = GaussianTarget(rng.normal(size=d), 0.3 * (a @ a.T / d + 0.2 * np.eye(d)), 1.7)
    draws = post.sample(rng, 800)
    from stanlogz.estimators.annealing.smc import forward_log_z, smc_estimate

    r = smc_estimate(post, draws, seed=2, n_particles=64, n_runs=8, n_workers=1)
    dg = r.diagnostics
    assert len(dg["reverse_run_log_z"]) == 8 and dg["bounds_consistent"]
    fwd = forward_log_z(np.array(dg["run_log_z"]))
    # The se is t-calibrated (±1.96 se is the t_7 interval), so no df rides along.
    assert (r.log_z, r.log_z_se) == pytest.approx(fwd[:2]) and r.log_z_df is None
    b = bracket(np.array(dg["run_log_z"]), np.array(dg["reverse_run_log_z"]))
    assert (dg["lower_bound"], dg["upper_bound"]) == pytest.approx((b.lower, b.upper))
    assert dg["bracket_interval"] == pytest.approx(list(b.interval(0.95, 7)))
    # log Z = mean + s^2/2 lies above the forward runs' mean
    assert r.log_z >= dg["lower_bound"]
    # On an easy 4-d Gaussian the runs are nearly lognormal with sd ~0.05: the error is t_7-like
    # in se units, and |t_7| > 8 has probability 9e-5.
    assert abs(r.log_z - post.log_z) < 8 * r.log_z_se
    # Each bound's mean is off its expectation (on the right side of log Z) by t_7 noise:
    # beyond q = t_7 quantile 1 - 5e-5 with probability 5e-5 per end, 1e-4 for both.
    q = stats.t.isf(5e-5, 7)
    assert b.lower - q * b.lower_se < post.log_z < b.upper + q * b.upper_se


def test_smc_estimate_without_the_reverse_runs_has_no_bounds():
    post = GaussianTarget(np.zeros(2), np.eye(2), 0.4)
    draws = post.sample(np.random.default_rng(1), 400)
    from stanlogz.estimators.annealing.smc import smc_estimate

    r = smc_estimate(post, draws, seed=3, n_particles=32, n_runs=4, n_workers=1,
                     reverse=False)
    assert "upper_bound" not in r.diagnostics and "reverse_run_log_z" not in r.diagnostics
    # exact lognormal-CLT estimate of the 4 runs, t_3: |t_3| > 47 has probability < 1e-4
    assert abs(r.log_z - 0.4) < 47 * r.log_z_se
