"""Calibration of the pointwise-order Cauchy test of LOO-PIT values
(:func:`stanlogz.crossval.checks.predictive.pit_uniformity`).

The Cauchy combination's analytic p-value is exact only in the extreme tail; at α = 0.05 the
test of LOO-PIT values of a well-specified model rejected 0–1% of the time. Two reasons: the
order statistics' p-values are strongly dependent, and LOO-PIT values are negatively dependent
(the leave-one-out residuals of a model with p parameters satisfy p linear constraints, e.g.
they sum to about zero with an intercept), so they spread more evenly than independent
uniforms. The statistic's null distribution is therefore simulated (fixed seed, cached): the
exact LOO-PIT values Φ(e_i / √(1 − h_ii)) of a Gaussian linear model with known noise, a flat
prior and p = round(p_loo) coefficients (an intercept and p − 1 normal covariates; p = 0:
independent uniforms), for the same n. The p-value is the simulated tail probability where at
least :data:`MIN_TAIL` null statistics exceed the observed one; beyond, the analytic Cauchy
tail times the ratio of simulated to analytic tail at that point.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from scipy import special, stats

#: Null data sets simulated per (n, p), and their fixed seed. The null's own Monte Carlo error
#: moves a test's level: its 95% point from 2,000 sets put PIET's and PRIT's level at 0.055 and
#: 0.057 (against 40,000 sets); at 20,000 the level's sd from it is sqrt(.05 · .95 / 20,000)
#: ≈ 0.0015. :func:`null_size` lowers the count for long inputs (memory).
N_NULL = 20_000
NULL_SEED = 20251127
#: The most values (sets × n) one simulated null holds.
MAX_NULL_VALUES = 10_000_000
#: Simulated exceedances below which the tail is extrapolated.
MIN_TAIL = 20


def pot_statistics(u: np.ndarray) -> np.ndarray:
    """The pointwise-order Cauchy statistic of each row of PIT values ``u`` ``(m, n)``."""
    s = np.sort(np.atleast_2d(u), axis=1)
    n = s.shape[1]
    i = np.arange(1, n + 1)
    cdf = special.betainc(i, n - i + 1, s)
    p = np.clip(2.0 * np.minimum(cdf, 1.0 - cdf), 1e-300, 1.0 - 1e-15)
    return np.mean(np.tan((0.5 - p) * np.pi), axis=1)


def null_size(n: int) -> int:
    """Null sets simulated for ``n`` values: :data:`N_NULL`, fewer (at least 2,000) where
    N_NULL · n would exceed :data:`MAX_NULL_VALUES`."""
    return int(max(2000, min(N_NULL, MAX_NULL_VALUES // max(n, 1))))


def _null_pit(rng: np.random.Generator, n: int, p: int, m: int) -> np.ndarray:
    if p <= 0:
        return rng.random((m, n))
    out = np.empty((m, n))
    chunk = max(1, 2_000_000 // (n * p))
    for a in range(0, m, chunk):
        k = min(chunk, m - a)
        x = np.concatenate([np.ones((k, n, 1)), rng.standard_normal((k, n, p - 1))], axis=2)
        q, _ = np.linalg.qr(x)                                  # (k, n, p), batched
        y = rng.standard_normal((k, n))
        e = y - np.einsum("knp,kp->kn", q, np.einsum("knp,kn->kp", q, y))
        h = np.sum(q * q, axis=2)
        out[a:a + k] = stats.norm.cdf(e / np.sqrt(np.maximum(1.0 - h, 1e-12)))
    return out


@lru_cache(maxsize=64)
def null_statistics(n: int, p: int) -> np.ndarray:
    """Sorted null statistics for ``n`` LOO-PIT values of a model with ``p`` parameters."""
    rng = np.random.default_rng([NULL_SEED, n, p])
    return np.sort(pot_statistics(_null_pit(rng, n, p, null_size(n))))


def effective_params(n: int, p_loo: float | None) -> int:
    """round(p_loo), at least 0 and at most n / 2 (None: 0, independent values)."""
    if p_loo is None or not math.isfinite(p_loo):
        return 0
    return int(min(max(0, round(p_loo)), n // 2))


def calibrated_p_value(statistic: float, n: int, p_loo: float | None = None) -> float:
    """The p-value of the pointwise-order Cauchy ``statistic`` of ``n`` PIT values under the
    simulated null (module docstring)."""
    return tail_p_value(statistic, null_statistics(int(n), effective_params(int(n), p_loo)))


@lru_cache(maxsize=2)
def null_pit(n: int, p: int) -> np.ndarray:
    """The simulated null LOO-PIT values ``(null_size(n), n)`` of a model with ``p`` parameters
    (module docstring; its own seed stream, apart from :func:`null_statistics`')."""
    rng = np.random.default_rng([NULL_SEED, n, p, 1])
    return _null_pit(rng, n, p, null_size(n))


def grid_floor(floor: float) -> float:
    """``floor`` rounded up to a grid of 8 steps per decade (0 stays 0), so that nearby floors
    share one simulated null."""
    if not floor > 0:
        return 0.0
    return float(min(0.25, 10.0 ** (math.ceil(math.log10(floor) * 8 - 1e-9) / 8)))


def tail_p_value(statistic: float, null: np.ndarray) -> float:
    """Simulated upper-tail probability of ``statistic`` with the analytic Cauchy tail
    extrapolated beyond the :data:`MIN_TAIL` largest null values (module docstring)."""
    analytic = float(stats.cauchy.sf(statistic))
    above = int(null.size - np.searchsorted(null, statistic, side="left"))
    if above >= MIN_TAIL:
        return (above + 1) / (null.size + 1)
    t_q = float(null[null.size - MIN_TAIL])
    ratio = (MIN_TAIL + 1) / (null.size + 1) / float(stats.cauchy.sf(t_q))
    return float(min(1.0, analytic * ratio))


def randomized_null(u: np.ndarray, widths: np.ndarray, seed: int = 0) -> np.ndarray:
    """Null values ``u`` ``(m, n)`` as a randomized PIT with the observed bar widths
    ``widths`` ``(n,)`` (P(ỹ_i = y_i), 0 for a continuous outcome): each value is replaced by a
    uniform draw on the bar of width w_i that holds it, the bars tiling [0, 1] from a random
    offset. Uniform values stay uniform; the randomization weakens their dependence as a
    discrete outcome's randomized LOO-PIT is weakened (seeded)."""
    rng = np.random.default_rng([NULL_SEED, 2, seed])
    w = np.broadcast_to(np.clip(np.asarray(widths, dtype=float), 0.0, 1.0), u.shape)
    safe = np.where(w > 0, w, 1.0)
    off = rng.random(u.shape) * safe
    lo = np.floor((u + off) / safe) * safe - off
    a, b = np.maximum(lo, 0.0), np.minimum(lo + safe, 1.0)
    return np.where(w > 0, a + rng.random(u.shape) * (b - a), u)


@lru_cache(maxsize=2)
def randomized_null_pit(n: int, p: int, widths: tuple[float, ...]) -> np.ndarray:
    """The simulated null LOO-PIT values randomized with the bar ``widths`` (cached)."""
    return randomized_null(null_pit(n, p), np.array(widths))
