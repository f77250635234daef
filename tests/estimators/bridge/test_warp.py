"""Warped bridge sampling between two posteriors (stanlogz.estimators.bridge.warp) against
closed-form normalizers, and its use for a held-out observation far from the rest
(stanlogz.crossval.refit.heldout, method "auto" -> "warped-bridge").

Stochastic checks are z-tests at 4.5 se (6.8e-6 each for an honest se) with fixed seeds; each
test states its union bound."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from stanlogz.crossval.observations.observations import find_observations
from stanlogz.crossval.refit.heldout import heldout_elpd
from stanlogz.errors import EstimationError, InputError
from stanlogz.estimators.bridge.warp import warped_bridge

NORMAL = Path(__file__).resolve().parents[3] / "stan_models" / "examples" / "normal_mean.stan"


def _gauss(mean: np.ndarray, cov: np.ndarray, log_z: float):
    """An unnormalized Gaussian density with normalizer exp(log_z)."""
    dist = stats.multivariate_normal(mean, cov)
    return lambda x: dist.logpdf(x) + log_z


def test_far_apart_gaussians_give_their_log_ratio() -> None:
    """Two 3-D Gaussians 8 sds apart with different scales: the plain bridge has no overlap,
    the warped one recovers log Z_a − log Z_b = 2.5 − (−1) within 4.5 se; light-tailed
    weights. 3 seeds: failure probability 3 × 6.8e-6."""
    ma, mb = np.array([8.0, 0.0, -3.0]), np.zeros(3)
    ca = np.diag([0.5, 2.0, 1.0])
    cb = np.array([[1.0, 0.3, 0.0], [0.3, 1.0, 0.2], [0.0, 0.2, 1.5]])
    for seed in range(3):
        rng = np.random.default_rng(seed)
        xa = rng.multivariate_normal(ma, ca, (4, 500))
        xb = rng.multivariate_normal(mb, cb, (4, 500))
        w = warped_bridge(_gauss(ma, ca, 2.5), _gauss(mb, cb, -1.0), xa, xb)
        assert abs(w.log_r - 3.5) < 4.5 * w.se, (w.log_r, w.se)
        assert max(w.khat) <= 0.5 and w.n_evals == 4 * 2000  # light: heldout takes it


def test_given_densities_are_used_and_bad_draws_refused() -> None:
    rng = np.random.default_rng(4)
    xa, xb = rng.normal(1, 1, (2, 300, 2)), rng.normal(0, 2, (2, 300, 2))
    la, lb = _gauss(np.ones(2), np.eye(2), 0.0), _gauss(np.zeros(2), 4 * np.eye(2), 0.0)
    w = warped_bridge(la, lb, xa, xb, la(xa.reshape(-1, 2)), lb(xb.reshape(-1, 2)))
    assert w.n_evals == 2 * 600 and w.log_r == pytest.approx(
        warped_bridge(la, lb, xa, xb).log_r, abs=1e-12)
    with pytest.raises(InputError, match="one dim"):
        warped_bridge(la, lb, xa, xb[..., :1])
    with pytest.raises(EstimationError, match="covariance"):  # fewer draws than dim + 2
        warped_bridge(la, lb, xa[:, :1], xb)


def test_a_far_observation_held_out_alone_takes_the_warped_bridge(compiled) -> None:
    """The normal mean (σ = 1) with one observation at 12 held out: the posteriors with and
    without it are 4 sds apart, the plain bridge's k̂ exceeds 0.5 and the warped bridge gives
    log p(y_1 | y_-1) within 4.5 se of the closed form. 3 seeds: failure probability
    2.1e-5."""
    y = np.random.default_rng(0).normal(0.5, 1.0, 30)
    y[0] = 12.0
    d = {"N": 30, "y": y.tolist(), "sigma": 1.0, "prior_sd": 2.0}
    m = compiled(NORMAL, d)
    prec = 1 / 4 + 29
    truth = stats.norm(y[1:].sum() / prec, math.sqrt(1 + 1 / prec)).logpdf(y[0])
    for seed in range(3):
        h = heldout_elpd(m, d, find_observations(d), [0], seed=seed, chains=4, warmup=500,
                         draws=1000)
        assert h.method == "warped-bridge", (h.method, h.khat)
        assert abs(h.elpd - truth) < 4.5 * h.mcse, (h.elpd, truth, h.mcse)
    with pytest.raises(InputError, match="same parameters"):
        heldout_elpd(compiled("eight_schools"), _schools(), find_observations(_schools()), [0],
                     method="warped-bridge", seed=1, chains=2, warmup=200, draws=200)


def _schools() -> dict:
    return {"J": 8, "y": [28, 8, -3, 7, -1, 1, 18, 12], "sigma": [15, 10, 16, 11, 9, 11, 10, 18]}
