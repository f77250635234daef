"""Particle-population steps that forward and reverse SMC share: the next temperature that
keeps the incremental weights' effective sample size (:func:`next_beta`, Jasra et al. 2011)
and systematic resampling (:func:`systematic_resample`, Kitagawa 1996)."""

from __future__ import annotations

import numpy as np

# Bisection steps for the next β (relative precision 2^-50 of the remaining interval).
_BISECTIONS = 50


def next_beta(log_ratio: np.ndarray, beta: float, ess_fraction: float) -> float:
    """The largest β' in (β, 1] whose incremental weights exp((β'−β) r) keep an effective
    sample size of at least ``ess_fraction`` of the particles (1 when β'=1 already does)."""
    r = np.where(np.isfinite(log_ratio), log_ratio, -np.inf)
    n = r.size

    def ess(delta: float) -> float:
        lw = delta * r
        lw = lw - np.max(lw)
        w = np.exp(lw)
        return float(w.sum() ** 2 / np.sum(w**2)) / n

    if ess(1.0 - beta) >= ess_fraction:
        return 1.0
    lo, hi = 0.0, 1.0 - beta
    for _ in range(_BISECTIONS):
        mid = 0.5 * (lo + hi)
        if ess(mid) >= ess_fraction:
            lo = mid
        else:
            hi = mid
    return beta + max(lo, 1e-12 * (1.0 - beta))


def systematic_resample(log_w: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Indices of a systematic resample of ``len(log_w)`` particles with weights ∝ exp(log_w)
    (non-finite log weights count as zero weight)."""
    log_w = np.where(np.isfinite(log_w), log_w, -np.inf)
    w = np.exp(log_w - np.max(log_w))
    c = np.cumsum(w / w.sum())
    c[-1] = 1.0
    u = (rng.uniform() + np.arange(w.size)) / w.size
    return np.searchsorted(c, u, side="left")
