"""The between-observation standard error of a sum of pointwise values, the one definition
every "se over observations" in stanlogz uses (elpd_loo, elpd_waic, p_loo, p_waic, K-fold's
pointwise se, LFO's one-step se, the se of elpd differences in ``compare``).

se(Σ_i v_i) = sqrt(N · s²) with s² the sample variance with N − 1 degrees of freedom (ddof 1),
as R's loo and ArviZ 1.x; ArviZ 0.x uses ddof 0, a factor sqrt((N − 1)/N) smaller. Coverage of
both by simulation: ``benchmarks/coverage_ddof.py``.
"""

from __future__ import annotations

import math

import numpy as np

#: Degrees of freedom subtracted in the sample variance of the pointwise values.
DDOF = 1


def sum_se(values: np.ndarray) -> float:
    """sqrt(N var(values, ddof=1)): the se of ``values.sum()`` when the N values are independent
    draws of one distribution; NaN for fewer than two values."""
    v = np.asarray(values, dtype=float).ravel()
    if v.size <= DDOF:
        return float("nan")
    return float(math.sqrt(v.size * np.var(v, ddof=DDOF)))


def arviz0_factor(n: int) -> float:
    """sqrt(N / (N − 1)): stanlogz's (and loo's, ArviZ 1.x's) between-observation se divided by
    ArviZ 0.x's for N values."""
    return math.sqrt(n / (n - 1))
