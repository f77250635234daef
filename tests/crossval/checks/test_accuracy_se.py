"""The se of accuracy and balanced accuracy (stanlogz.crossval.checks.measures._accuracy):
loo's binomial se plus a term for predicted classes that may flip, in closed form on
constructed predictives.

Lockstep case: every observation's predictive comes from the same draws (one shared
parameter, equal weights), so all predictions flip together with probability
q = Φ(−margin / sd) (margin and sd of the shared draws), and the flip term is
√(q(1 − q)) · |Σ_i flip_i| / N, flip_i = −1 for a hit, +1 for a miss that the flip turns
into a hit (binary: every miss; categorical: a miss whose category is the runner-up), 0 else.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from stanlogz.crossval.checks.measures import loo_measures


def _shared(draws: np.ndarray, n: int) -> np.ndarray:
    return np.repeat(draws[:, None], n, axis=1)


def test_binary_lockstep_flip_term_in_closed_form() -> None:
    s = 400
    m = np.linspace(0.35, 0.85, s)                     # P(y = 1) draws, mean 0.6
    y = np.array([1.0] * 7 + [0.0] * 3)                 # 7 hits, 3 misses at p > 0.5
    acc = loo_measures(np.zeros((s, 10)), y, None, ["acc"], mu=_shared(m, 10))[0]
    sd = math.sqrt(np.mean((m - m.mean()) ** 2))
    q = stats.norm.sf(abs(m.mean() - 0.5) / sd)
    se_b = math.sqrt(0.7 * 0.3 / 10)
    se_f = math.sqrt(q * (1 - q)) * abs(-7 + 3) / 10
    assert acc.estimate == 0.7
    assert abs(acc.se_parts["se_binomial"] - se_b) < 1e-12
    assert abs(acc.se_parts["se_flip"] - se_f) < 1e-12
    assert acc.se == acc.se_parts["se_binomial"]  # loo's number under its name
    assert abs(acc.se_parts["se_flip_aware"] - math.hypot(se_b, se_f)) < 1e-12


def test_far_from_the_boundary_the_se_is_loos() -> None:
    s = 400
    m = np.linspace(0.85, 0.95, s)                      # margin 0.4, sd 0.03: q ~ 1e-39
    y = np.array([1.0] * 8 + [0.0] * 2)
    acc, bacc = loo_measures(np.zeros((s, 10)), y, None, ["acc", "bacc"], mu=_shared(m, 10))
    assert abs(acc.se - math.sqrt(0.8 * 0.2 / 10)) < 1e-15
    # bacc: classes 0 (accuracy 0 over 2) and 1 (accuracy 1 over 8): loo's per-class se is 0
    assert bacc.estimate == 0.5 and abs(bacc.se) < 1e-15


def test_categorical_flip_counts_only_the_runner_up() -> None:
    s = 300
    t = np.linspace(-1.0, 1.0, s)
    p = np.stack([0.45 + 0.1 * t, 0.35 - 0.1 * t, np.full(s, 0.2)], axis=1)   # (S, K)
    probs = np.repeat(p[:, None, :], 8, axis=1)          # (S, N, K) shared
    y = np.array([1, 1, 1, 2, 2, 3, 3, 3], dtype=float)  # 3 hits, 2 runner-up, 3 others
    acc = loo_measures(np.zeros((s, 8)), y, None, ["acc"], probs=probs)[0]
    diff = p[:, 0] - p[:, 1]
    sd = math.sqrt(np.mean((diff - diff.mean()) ** 2))
    q = stats.norm.sf(diff.mean() / sd)
    assert abs(acc.estimate - 3 / 8) < 1e-15
    assert abs(acc.se_parts["se_flip"] - math.sqrt(q * (1 - q)) * abs(-3 + 2) / 8) < 1e-12
