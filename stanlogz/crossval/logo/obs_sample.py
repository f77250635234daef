"""Observation-level LOGO values from a weighted subsample of the draws.

log p(y_i | y₋g) = log Σ_s w_s p(y_i | φ_s) with w the group's normalized PSIS weights needs
one integral over the group's latents per draw and observation. The sum is a mean under the
weights, so it is estimated from M draws picked with probability w_s (stratified: the draws
ordered by the group's integrated log-likelihood log p(y_g | φ_s), a covariate of
p(y_i | φ_s), then cut into M / 2 strata of equal weight with two independent picks in each).
The estimate (1/M) Σ_m p(y_i | φ_sm) is unbiased for the weighted sum, and the two picks per
stratum give an unbiased estimate of its variance,

    V_pick = (1 / H²) Σ_h (p_h1 − p_h2)² / 4,     H = M / 2 strata,

to which the PSIS error of the weighted sum itself (loo's Σ_s w_s² (p_s − E)² / r_eff,
estimated from the same picks as the mean of w_s (p_s − E)² under them) is added; the total is
carried to the log scale as :func:`~stanlogz.crossval.elpd.psis.elpd_mcse` does. The picks are
shared by the group's observations, so the integrals cost M instead of S draws each
(benchmarks/logo_obs_coverage.py measures the coverage of the se).
"""

from __future__ import annotations

import numpy as np

from ..elpd.psis import log_mean_mcse

#: Draws per group at which the observation values are computed (two per stratum).
OBS_DRAWS = 400


def obs_draws(log_w: np.ndarray, order_by: np.ndarray, m: int, rng: np.random.Generator
              ) -> np.ndarray | None:
    """Indices of ``m`` draws picked by weight (``log_w`` normalized log weights ``(S,)``),
    stratified along ``order_by``: two independent picks in each of ``m // 2`` strata of equal
    weight; ``None`` (use every draw) when there are no more than ``m`` draws.

    Returned in stratum order: picks ``2h`` and ``2h + 1`` share stratum ``h``."""
    s = log_w.size
    if s <= m:
        return None
    h = m // 2
    order = np.argsort(order_by, kind="stable")
    w = np.exp(log_w[order] - np.max(log_w))
    cum = np.cumsum(w)
    cum /= cum[-1]
    u = (np.repeat(np.arange(h), 2) + rng.random(2 * h)) / h
    pos = np.minimum(np.searchsorted(cum, u, side="right"), s - 1)
    return order[pos]


def subsample_parts(log_lik: np.ndarray, w: np.ndarray, r_eff: float
                    ) -> tuple[float, float, float, float]:
    """The pieces of :func:`subsample_value`: log of the picks' mean of p = exp(``log_lik``)
    and, relative to that mean on its scale (p / max p), the mean, the picks' stratified
    variance and the PSIS variance of the weighted mean over every draw."""
    top = float(np.max(log_lik))
    p = np.exp(log_lik - top)
    est = float(np.mean(p))
    pairs = p.reshape(-1, 2)
    h = pairs.shape[0]
    v_pick = float(np.sum((pairs[:, 0] - pairs[:, 1]) ** 2) / 4.0) / h**2
    v_psis = float(np.mean(w * (p - est) ** 2)) / r_eff
    return float(np.log(est) + top), est, v_pick, v_psis


def subsample_value(log_lik: np.ndarray, w: np.ndarray, r_eff: float
                    ) -> tuple[float, float]:
    """log of the weighted mean of p = exp(``log_lik``) from the picks of :func:`obs_draws`
    (``log_lik`` and the picks' normalized weights ``w`` in pick order), and its Monte Carlo
    se: the picks' stratified variance plus the PSIS variance of the weighted mean over every
    draw (divided by ``r_eff``), carried to the log scale as loo's pointwise mcse."""
    value, est, v_pick, v_psis = subsample_parts(log_lik, w, r_eff)
    return value, float(log_mean_mcse(np.array([(v_pick + v_psis) / est**2]))[0])
