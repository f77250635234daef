"""The difference estimator of elpd_loo from a simple random sample of observations
(Magnusson, Andersen, Jonasson & Vehtari 2020): :func:`subsample_estimates`."""

from __future__ import annotations

import math

import numpy as np

from .fixups import FixedPoint
from .psis import PsisLoo


def subsample_estimates(approx: np.ndarray, index: np.ndarray, elpd_j: np.ndarray,
                         ps: PsisLoo, fixed: list[FixedPoint]) -> dict[str, float]:
    """The difference estimator of Σ elpd_i around ``approx`` from the simple random sample
    ``index`` (without replacement), its subsampling se, and the between-observation se."""
    n, m = approx.size, index.size
    e = elpd_j - approx[index]
    elpd = float(approx.sum() + n * e.mean())
    v_sub = float(n**2 * (1 - m / n) * np.var(e, ddof=1) / m)
    # Σ elpd_i² by the same estimator; N var_pop(elpd_i) = Σ elpd_i² − (Σ elpd_i)²/N, with
    # (Σ elpd_i)² estimated without bias by elpd² − v_sub.
    sq = float(np.sum(approx**2) + n * np.mean(elpd_j**2 - approx[index] ** 2))
    se2 = sq - (elpd**2 - v_sub) / n
    p_j = ps.lppd_i - elpd_j
    return {"elpd": elpd, "se": float(math.sqrt(max(se2, 0.0))),
            "subsampling_se": math.sqrt(max(v_sub, 0.0)), "p_loo": float(n * p_j.mean()),
            "p_loo_se": float(math.sqrt(n * np.var(p_j, ddof=1))),
            "expansion": n / m}
