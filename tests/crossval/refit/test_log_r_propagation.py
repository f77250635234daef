"""The evidence-difference route of K-fold: the error of log r = log Z(full) − log Z(T) moves
the fold's Σ_i log p(y_i | y_T) through the mixture proposal, ∂Σ elpd_i/∂log r times itself,
and the full-data part of it is shared by every fold (heldout._Pointwise, propagate_log_r,
shared_sum_se). Pure numerics: the conjugate normal model θ ~ N(0, τ0²), y_i ~ N(θ, σ²) with
exact posterior draws, so every log Z and log p(y_i | y_T) is closed form."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from stanlogz.crossval.refit.heldout import (
    _Pointwise,
    _Side,
    propagate_log_r,
    shared_sum_se,
)

SIGMA, TAU0 = 1.2, 2.0
_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def _norm_logpdf(x, mean, sd):
    """The normal log density (scipy.stats.norm.logpdf without its per-call overhead, which
    was most of the K-fold test's time)."""
    return -0.5 * ((x - mean) / sd) ** 2 - math.log(sd) - _LOG_SQRT_2PI


class _Instance:
    """log prior + log likelihood of the observations ``y`` (normalized: its integral is the
    evidence of ``y``), at unconstrained θ of shape (n, 1)."""

    def __init__(self, y: np.ndarray) -> None:
        self.y = y

    def log_density_many(self, x: np.ndarray) -> np.ndarray:
        t = x[:, 0]
        return (_norm_logpdf(t, 0.0, TAU0)
                + _norm_logpdf(self.y[None, :], t[:, None], SIGMA).sum(axis=1))


def _posterior(y: np.ndarray) -> tuple[float, float]:
    prec = 1 / TAU0**2 + y.size / SIGMA**2
    return y.sum() / SIGMA**2 / prec, 1 / prec


def _log_z(y: np.ndarray) -> float:
    cov = SIGMA**2 * np.eye(y.size) + TAU0**2
    return float(stats.multivariate_normal.logpdf(y, np.zeros(y.size), cov))


def _fold(y: np.ndarray, v: np.ndarray, rng: np.random.Generator, log_r: float
          ) -> tuple[np.ndarray, float, float, float]:
    """elpd_i, their se with log r fixed, the slope in log r, and the exact Σ elpd_i, from
    4 x 500 exact draws of each posterior (training and full) and the given log r."""
    keep = np.setdiff1d(np.arange(y.size), v)
    full, train = _Instance(y), _Instance(y[keep])
    sides = []
    for inst in (train, full):
        m, var = _posterior(inst.y)
        x = rng.normal(m, math.sqrt(var), (2000, 1))
        sides.append(_Side(x, train.log_density_many(x), full.log_density_many(x), (4, 500)))
    inst = [_Instance(y[np.union1d(keep, [i])]) for i in v]
    pos = [np.array([0])] * v.size
    pt = _Pointwise(inst, pos, np.array([], int), None, np.array([0]), sides, log_r)
    elpd_i, (se, slope) = pt.elpd_i, pt.sum_se()
    m, var = _posterior(y[keep])
    truth = float(stats.norm.logpdf(y[v], m, math.sqrt(SIGMA**2 + var)).sum())
    return elpd_i, se, slope, truth


def test_slope_is_the_derivative_in_log_r() -> None:
    """The analytic ∂Σ elpd_i/∂log r against a central finite difference on the same draws
    (deterministic: the draws are re-made from one seed)."""
    y = np.random.default_rng(1).normal(0.5, SIGMA, 20)
    v = np.arange(6)
    log_r = _log_z(y) - _log_z(y[6:])
    h = 1e-4
    _, _, slope, _ = _fold(y, v, np.random.default_rng(2), log_r)
    up = _fold(y, v, np.random.default_rng(2), log_r + h)[0].sum()
    down = _fold(y, v, np.random.default_rng(2), log_r - h)[0].sum()
    assert slope == pytest.approx((up - down) / (2 * h), rel=1e-6)
    # each observation's derivative is a responsibility-weighted mean in (0, 1): the slope
    # grows with the fold (the issue measured ~0.5 per observation)
    assert 0.5 < slope < v.size


@pytest.mark.slow
@pytest.mark.parametrize("fold_size", [4, 10])
def test_kfold_mcse_with_a_noisy_shared_log_z_matches_the_error(fold_size: int) -> None:
    """K folds whose log r = truth + e_full − e_k (e_full ~ N(0, 0.15²) shared by the folds,
    e_k ~ N(0, 0.05²) each): z = (Σ_k Σ_i elpd_i − truth) / mcse over 150 data sets, with
    mcse = shared_sum_se of propagate_log_r's two parts, as KFoldResult.mcse. With an honest
    se Σ z² ~ χ²_150: outside its 1e-4 / 1 − 1e-4 quantiles (92.7, 223.9) with probability
    2e-4 in all (the errors are sums of many draws' terms, close to normal). The old se (log r
    held fixed, its full-data part subtracted and added once) fails the same bound: its Σ z²
    was 443 here for folds of 4 (sd(error) / old se ≈ 1.7); below 224 it would need a
    4-sd low draw of its scaled χ²."""
    rng = np.random.default_rng(100 + fold_size)
    n, sa, sb = 20, 0.15, 0.05
    k = n // fold_size
    z2_new, z2_old = 0.0, 0.0
    for _ in range(150):
        y = rng.normal(rng.normal(0, TAU0), SIGMA, n)
        folds = rng.permutation(n).reshape(k, fold_size)
        e_full = rng.normal(0, sa)
        est = truth = 0.0
        parts, shared, old = [], [], []
        for v in folds:
            v = np.sort(v)
            keep = np.setdiff1d(np.arange(n), v)
            log_r = _log_z(y) - _log_z(y[keep]) + e_full - rng.normal(0, sb)
            elpd_i, se_fixed, slope, t = _fold(y, v, rng, log_r)
            est += elpd_i.sum()
            truth += t
            own, common = propagate_log_r(se_fixed, slope, math.hypot(sa, sb), sa)
            parts.append(own)
            shared.append(common)
            old.append(se_fixed)
        new_se = shared_sum_se(parts, shared)
        old_se = shared_sum_se(old, [sa] * k)
        z2_new += ((est - truth) / new_se) ** 2
        z2_old += ((est - truth) / old_se) ** 2
    assert 92.7 < z2_new < 223.9, z2_new
    assert z2_old > 223.9, z2_old
