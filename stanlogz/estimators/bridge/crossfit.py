"""Cross-fitting for gbs: K folds of the draws, each bridged with a flow fitted to the others.

Two orientations (fit on one half, bridge with the other, and swapped) estimate a fit-dependent
error from one difference: a one-degree-of-freedom spread, so when that error dominates, ±2 se
covers the truth only about 70-80% of the time. With K >= 3 folds (contiguous blocks in time of
every chain) there are K estimates whose spread has K - 1 degrees of freedom; the result's
interval then uses Student-t quantiles with K - 1 degrees of freedom.
"""

from __future__ import annotations

import math

import numpy as np

from ...errors import InputError


def fold_orientations(chains: np.ndarray, folds: int, min_per_fold: int
                      ) -> list[tuple[np.ndarray, np.ndarray]]:
    """``(fit, bridge)`` pairs: fold k (the k-th of ``folds`` contiguous blocks of every chain)
    is the bridge side, the other folds (concatenated per chain) fit the flow."""
    n = chains.shape[1] // folds
    if folds < 3 or chains.shape[0] * n < min_per_fold:
        raise InputError(f"too few draws for {folds} folds: each fold has "
                         f"{chains.shape[0] * n}, need at least {min_per_fold} for dimension "
                         f"{chains.shape[2]}" if folds >= 3 else "cross-fitting needs folds >= 3")
    blocks = [chains[:, k * n:(k + 1) * n] for k in range(folds)]
    return [(np.concatenate([b for j, b in enumerate(blocks) if j != k], axis=1), blocks[k])
            for k in range(folds)]


def combine_folds(estimates: list[float], ses: list[float]
                  ) -> tuple[float, float, float, float | None]:
    """log Z, its se, a z-score of the folds' disagreement and the se's degrees of freedom.

    The mean of the K fold estimates; its se is the larger of the bridges' own (sqrt of the sum
    of squares over K) and the folds' spread (sd / sqrt K), which also holds a fit-dependent
    error. When the spread decides, the se has K - 1 degrees of freedom (else None: the bridges'
    se are large-sample). The z-score is Cochran's Q (chi-square with K - 1 degrees of freedom
    when the bridges' se are right) mapped to a normal deviate.
    """
    from scipy import stats

    e, s = np.asarray(estimates, dtype=float), np.asarray(ses, dtype=float)
    k = e.size
    own = float(math.sqrt(np.sum(s**2)) / k)
    spread = float(np.std(e, ddof=1) / math.sqrt(k))
    se = max(own, spread)
    df = float(k - 1) if spread > own else None
    if np.all(s > 0):
        w = 1.0 / s**2
        q = float(np.sum(w * (e - np.sum(w * e) / np.sum(w)) ** 2))
        z = float(stats.norm.isf(max(stats.chi2.sf(q, k - 1), 1e-300) / 2))
    else:
        z = math.inf if np.ptp(e) > 0 else 0.0
    return float(e.mean()), se, z, df
