"""Reverse SMC (back from posterior draws) and the forward/reverse sandwich of SMC's log Z."""

import math

import numpy as np
import pytest

from stanlogz.densities.gaussian import GaussianTarget
from stanlogz.estimators.smc_reverse import reverse_runs, sandwich
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


def test_sandwich_averages_agreeing_directions_and_widens_otherwise():
    # Agreeing: the mean of the two and the se of that mean.
    z, se, gap, agree = sandwich((1.0, 0.1), (1.1, 0.1))
    assert agree and z == pytest.approx(1.05) and se == pytest.approx(0.5 * math.sqrt(0.02))
    assert gap == pytest.approx(0.1)
    # Disagreeing (gap 1 > 2 * 0.141): the middle, with half the gap inside the se, so the
    # ±2 se interval holds both ends of the sandwich.
    z, se, gap, agree = sandwich((0.0, 0.1), (1.0, 0.1))
    assert not agree and z == pytest.approx(0.5)
    assert se == pytest.approx(math.sqrt(0.005 + 0.25))
    assert z - 2 * se < 0.0 and z + 2 * se > 1.0


def test_smc_estimate_reports_both_directions():
    d = 4
    rng = np.random.default_rng(7)
    a = rng.normal(size=(d, d))
    post = GaussianTarget(rng.normal(size=d), 0.3 * (a @ a.T / d + 0.2 * np.eye(d)), 1.7)
    draws = post.sample(rng, 800)
    from stanlogz.estimators.smc import smc_estimate

    r = smc_estimate(post, draws, seed=2, n_particles=64, n_runs=8, n_workers=1)
    dg = r.diagnostics
    assert len(dg["reverse_run_log_z"]) == 8
    assert r.log_z == pytest.approx(0.5 * (dg["forward_log_z"] + dg["reverse_log_z"]))
    # Each direction is a mean of 8 nearly unbiased runs on an easy 4-d Gaussian:
    # |estimate - truth| < 8 se fails with P < 1e-4 (t with 7 dof) for each.
    assert abs(dg["forward_log_z"] - post.log_z) < 8 * dg["forward_se"]
    assert abs(dg["reverse_log_z"] - post.log_z) < 8 * dg["reverse_se"]
    assert abs(r.log_z - post.log_z) < 8 * r.log_z_se
