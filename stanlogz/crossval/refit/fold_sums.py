"""The Monte Carlo se of a sum over held-out sets that share the full-data draws.

Each set's Σ elpd_i (:func:`~stanlogz.crossval.refit.heldout.heldout_elpd`) is a mixture
importance-sampling estimate from its own training draws and the full-data draws. The training
draws differ between sets, but the full-data draws are the same ones in every set of one K-fold
run, so the sets' errors are correlated through them. Adding the sets' variances misses that
covariance: on roaches' K-fold the sum's z over 30 runs had rms 1.23 against 1.03 for the sets
themselves (``benchmarks/kfold_point_refits.py coverage``). Here each full-data draw's
influence is summed over the sets before its variance is taken.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...estimators.common import autocorr_time


def influence_var(a: np.ndarray) -> float:
    """The variance a per-draw influence ``a`` (``(chains, n)``, already over the proposal's
    count) gives its sum: n τ var(a)."""
    return float(a.size * autocorr_time(a) * np.var(a, ddof=1))


def folds_sum_se(folds: Sequence[Any], joint: bool = False) -> float:
    """se of Σ over ``folds`` (:class:`~stanlogz.crossval.refit.heldout.HeldOut`) of their
    Σ elpd_i (``joint``: of their joint log p(y_V | y_T)): each set's own error (its
    ``elpd_i_mcse``, or ``mcse``, less the parts below), the full-data draws' part summed draw
    by draw over the sets that carry ``full_influence`` (``joint_full_influence``) of one
    shape (the same full draws), and the shared log Z(full) part (``elpd_i_shared_mcse``, or
    ``shared_mcse``), which adds linearly."""
    own, common = 0.0, 0.0
    total: np.ndarray | None = None
    for f in folds:
        se, shared = ((f.mcse, f.shared_mcse) if joint
                      else (f.elpd_i_mcse, f.elpd_i_shared_mcse))
        var = se**2 - shared**2
        a = getattr(f, "joint_full_influence" if joint else "full_influence", None)
        if a is not None and (total is None or a.shape == total.shape):
            var -= influence_var(a)
            total = a.copy() if total is None else total + a
        own += max(var, 0.0)
        common += shared
    full = 0.0 if total is None else influence_var(total)
    return math.sqrt(own + full + common * common)
