"""SMC's log Z and se from the runs under the lognormal CLT, the rerun with more particles when
the runs spread, and the refusal of an se when they still do."""

import math

import numpy as np
import pytest

from stanlogz.densities.gaussian import GaussianTarget
from stanlogz.estimators.annealing import smc as smc_module
from stanlogz.estimators.annealing.ais import log_mean_exp_with_se
from stanlogz.estimators.annealing.smc import lognormal_log_z


@pytest.mark.parametrize("sigma", [0.5, 1.0])
def test_lognormal_log_z_covers_where_the_delta_method_does_not(sigma):
    # Runs as SMC's CLT has them: log Z_hat ~ N(log Z - sigma^2/2, sigma^2), 8 runs, log Z = 0.
    # Simulated coverage of ±2 se is ~0.91 for both sigmas (t-like with 7 dof); over 4000 sets
    # its sd is 0.0045, so >= 0.885 fails with probability < 1e-7. The delta-method se of the
    # log mean covers 0.83 at sigma = 1 (below 0.86 with the same margin).
    rng = np.random.default_rng(11)
    sets = rng.normal(-0.5 * sigma**2, sigma, size=(4000, 8))
    est = np.array([lognormal_log_z(r) for r in sets])
    assert np.mean(np.abs(est[:, 0]) <= 2 * est[:, 1]) >= 0.885
    # Nearly unbiased: the mean error over 4000 sets is within 5 of its standard errors.
    assert abs(est[:, 0].mean()) < 5 * est[:, 0].std() / math.sqrt(4000)
    if sigma == 1.0:
        old = np.array([log_mean_exp_with_se(r)[:2] for r in sets])
        assert np.mean(np.abs(old[:, 0]) <= 2 * old[:, 1]) < 0.86


def _fake_smc(spreads):
    """An ``smc`` stand-in whose runs' log Z spread by spreads[i] on its i-th call."""
    calls = []

    def fake(target, base, *, seed=None, n_particles=64, **kw):
        sd = spreads[min(len(calls), len(spreads) - 1)]
        calls.append(n_particles)
        runs = np.array([-1.0, 1.0] * 4) * sd / np.std([-1.0, 1.0] * 4, ddof=1)
        lme, se, ess = log_mean_exp_with_se(runs)
        return {"log_z": lme, "log_z_se": se, "run_log_z": runs, "run_ess": ess,
                "betas": np.array([0.0, 0.5, 1.0]), "tuning": None, "acceptance": 0.8,
                "n_evals": 10}

    return fake, calls


def test_spread_runs_are_rerun_with_more_particles(monkeypatch):
    fake, calls = _fake_smc([1.4, 0.6])
    monkeypatch.setattr(smc_module, "smc", fake)
    t = GaussianTarget(np.zeros(2))
    r = smc_module.smc_estimate(t, t.sample(np.random.default_rng(0), 200), seed=1,
                                reverse=False)
    # 1.4 nats > 1: particles grow by (1.4 / 0.5)^2 ~ 7.8 (at least 2x, at most 8x).
    assert calls == [64, math.ceil(64 * (1.4 / 0.5) ** 2)]
    assert r.diagnostics["particles_tried"] == calls and r.diagnostics["n_particles"] == calls[1]
    assert r.log_z == pytest.approx(lognormal_log_z(np.array(r.diagnostics["run_log_z"]))[0])
    assert math.isfinite(r.log_z_se) and any("rerun with" in w for w in r.warnings)


def test_no_se_when_the_runs_still_spread(monkeypatch):
    fake, calls = _fake_smc([3.0])
    monkeypatch.setattr(smc_module, "smc", fake)
    t = GaussianTarget(np.zeros(2))
    r = smc_module.smc_estimate(t, t.sample(np.random.default_rng(0), 200), seed=1,
                                max_particles=512, reverse=False)
    assert calls == [64, 512] and math.isnan(r.log_z_se)
    assert any("no standard error" in w for w in r.warnings)


@pytest.mark.slow
def test_pilot_rounds_decorrelate_and_are_reused():
    # A 3-d Gaussian posterior far from a wide base: the pilot picks rounds of moves per step
    # until the particles' log ratio decorrelates (or the cap), and the runs reuse them.
    from stanlogz.estimators.annealing.smc import DECORRELATED, smc

    post = GaussianTarget(np.full(3, 2.0), 0.05 * np.eye(3), log_z=0.3)
    base = GaussianTarget(np.zeros(3), 4.0 * np.eye(3))
    out = smc(post, base, n_particles=64, n_runs=2, hmc_steps=3, n_moves=1, max_rounds=6,
              seed=4, n_workers=1)
    rounds = np.asarray(out["rounds"])
    assert rounds.size == out["betas"].size - 2 and rounds.min() >= 1 and rounds.max() <= 6
    assert out["lag_corr"] < DECORRELATED or rounds.max() == 6
    assert rounds.max() > 1  # the pilot did adapt (one round would leave them correlated)
    with_cap_one = smc(post, base, n_particles=64, n_runs=2, hmc_steps=3, n_moves=1,
                       max_rounds=1, seed=4, n_workers=1)
    assert np.all(np.asarray(with_cap_one["rounds"]) == 1)


def test_a_warning_beyond_the_measured_dimension(monkeypatch):
    # The se's coverage is measured up to MEASURED_DIM parameters; above it the result says so
    # (deterministic: the runs are the stand-in's).
    fake, _ = _fake_smc([0.3])
    monkeypatch.setattr(smc_module, "smc", fake)
    for d, warned in ((smc_module.MEASURED_DIM, False), (smc_module.MEASURED_DIM + 1, True)):
        t = GaussianTarget(np.zeros(d))
        r = smc_module.smc_estimate(t, t.sample(np.random.default_rng(0), 2 * d + 8), seed=1,
                                    reverse=False)
        assert any("measured up to" in w for w in r.warnings) is warned
