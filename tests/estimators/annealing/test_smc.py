"""Adaptive-tempering SMC: tempering and resampling steps, unbiased Z, the registry method."""

import numpy as np
import pytest

from stanlogz.densities.gaussian import GaussianTarget
from stanlogz.errors import InputError
from stanlogz.estimators import METHODS, get_method
from stanlogz.estimators.annealing.smc import next_beta, smc, systematic_resample
from stanlogz.mcmc.annealing import HMCTuning


def _ess(lw: np.ndarray) -> float:
    w = np.exp(lw - lw.max())
    return float(w.sum() ** 2 / np.sum(w**2))


def test_next_beta_keeps_the_chosen_ess():
    r = np.random.default_rng(0).normal(0.0, 50.0, size=200)
    b = next_beta(r, 0.2, 0.5)
    assert 0.2 < b < 1.0
    assert _ess((b - 0.2) * r) / 200 == pytest.approx(0.5, abs=1e-6)
    # A flat log ratio (base = target) jumps straight to 1; -inf ratios get weight 0.
    assert next_beta(np.zeros(10), 0.3, 0.5) == 1.0
    r[:50] = -np.inf
    b = next_beta(r, 0.0, 0.5)
    assert _ess(np.where(np.isfinite(r), b * r, -np.inf)) / 200 >= 0.5 - 1e-9


def test_systematic_resample_counts():
    # Systematic resampling gives each particle floor(N w) or ceil(N w) copies, exactly.
    rng = np.random.default_rng(1)
    lw = rng.normal(size=50)
    w = np.exp(lw - lw.max())
    w /= w.sum()
    for _ in range(20):
        counts = np.bincount(systematic_resample(lw, rng), minlength=50)
        assert counts.sum() == 50
        assert np.all(counts >= np.floor(50 * w) - 1e-9) and np.all(counts <= np.ceil(50 * w))


@pytest.mark.slow
def test_smc_estimate_of_z_is_unbiased():
    """With a fixed schedule each run's Ẑ is unbiased for Z (Del Moral et al. 2006). 1-d:
    target N(1, 0.5²) with log Z = 0.7, base N(0, 2²), 5 temperatures, 16 particles. z-test over
    400 runs: the runs' Ẑ/Z have relative sd ~0.3 and skewness < 2, so the mean of 400 is close
    to normal and |z| > 4.5 has P < 1e-4."""
    post = GaussianTarget(np.ones(1), np.array([[0.25]]), log_z=0.7)
    base = GaussianTarget(np.zeros(1), np.array([[4.0]]))
    tun = HMCTuning.from_endpoints(np.array([4.0]), np.array([0.25]), 0.8)
    out = smc(post, base, n_particles=16, n_runs=400, betas=np.array([0, 0.05, 0.2, 0.5, 1.0]),
              hmc_steps=3, n_moves=1, tuning=tun, seed=3, n_workers=1)
    z_hat = np.exp(out["run_log_z"] - 0.7)
    z = (z_hat.mean() - 1.0) / (z_hat.std(ddof=1) / np.sqrt(z_hat.size))
    assert abs(z) < 4.5
    assert 0.05 < z_hat.std() < 1.0  # the weights did vary: the test is not vacuous
    assert out["acceptance"] > 0.5


@pytest.mark.slow
def test_smc_method_on_a_gaussian_posterior():
    d = 4
    rng = np.random.default_rng(7)
    a = rng.normal(size=(d, d))
    post = GaussianTarget(rng.normal(size=d), 0.3 * (a @ a.T / d + 0.2 * np.eye(d)), 1.7)
    draws = post.sample(rng, 800).reshape(4, 200, d)
    assert "smc" in METHODS
    r = get_method("smc")(post, draws, seed=2, n_particles=64, n_runs=8, n_workers=1)
    # log Z is the log of the mean of 8 independent unbiased Ẑ; (estimate - truth)/se is close to
    # a t statistic with 7 degrees of freedom (40 seeds: mean 0.0, sd 0.95): P(|t_7| > 8) = 9e-5.
    assert abs(r.log_z - post.log_z) < 8 * r.log_z_se
    assert 0 < r.log_z_se < 0.1 and r.method == "smc"
    assert r.diagnostics["n_runs"] == 8 and len(r.diagnostics["run_log_z"]) == 8
    assert r.diagnostics["betas"][0] == 0.0 and r.diagnostics["betas"][-1] == 1.0
    assert r.n_evals > 8 * 64
    with pytest.raises(InputError):
        smc(post, post, n_runs=1)
    with pytest.raises(InputError):
        smc(post, post, ess_fraction=1.0)
