"""Reverse SMC (back from posterior draws) and the forward/reverse sandwich of SMC's log Z."""

import math

import numpy as np
import pytest

from stanlogz.densities.gaussian import GaussianTarget
from stanlogz.estimators.annealing.smc_reverse import reverse_runs, sandwich
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


def test_sandwich_is_the_middle_of_the_bracket_with_half_its_width_in_the_se():
    fwd = np.array([-0.4, -0.2, -0.3, -0.1])  # mean -0.25, se of the mean 0.0645
    rev = np.array([0.3, 0.1, 0.2, 0.2])  # mean 0.2, se 0.0408
    z, se, lo, hi, ok = sandwich(fwd, rev)
    assert ok and lo == pytest.approx(-0.25) and hi == pytest.approx(0.2)
    assert z == pytest.approx(-0.025)
    joint2 = np.var(fwd, ddof=1) / 4 + np.var(rev, ddof=1) / 4
    assert se == pytest.approx(math.sqrt(0.225**2 + 0.25 * joint2))
    assert z - 2 * se < lo and z + 2 * se > hi  # ±2 se spans both bounds
    # Bounds crossed by far more than their Monte Carlo se: no se.
    z, se, lo, hi, ok = sandwich(fwd + 2.0, rev)
    assert not ok and math.isnan(se)


def test_smc_estimate_reports_both_directions():
    d = 4
    rng = np.random.default_rng(7)
    a = rng.normal(size=(d, d))
    post = GaussianTarget(rng.normal(size=d), 0.3 * (a @ a.T / d + 0.2 * np.eye(d)), 1.7)
    draws = post.sample(rng, 800)
    from stanlogz.estimators.annealing.smc import smc_estimate

    r = smc_estimate(post, draws, seed=2, n_particles=64, n_runs=8, n_workers=1)
    dg = r.diagnostics
    assert len(dg["reverse_run_log_z"]) == 8 and dg["bounds_consistent"]
    assert r.log_z == pytest.approx(0.5 * (dg["lower_bound"] + dg["upper_bound"]))
    assert r.log_z_se >= 0.5 * (dg["upper_bound"] - dg["lower_bound"])
    # On an easy 4-d Gaussian the runs are nearly lognormal with sd ~0.05; each bound is a mean
    # of 8 runs off the truth by ~sd^2/2 plus t_7-like noise: |estimate - truth| < 8 se fails
    # with P < 1e-4.
    assert abs(dg["forward_log_z"] - post.log_z) < 8 * dg["forward_se"]
    assert abs(r.log_z - post.log_z) < 8 * r.log_z_se
