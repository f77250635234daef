"""The lower tail of pointwise cross-validation values, for the small-N calibration of their
sum's se (:func:`stanlogz.crossval.refit.cv_se.calibration_factor`).

Log predictive densities of a misspecified model have a heavy lower tail (an outlier scores far
below the rest). A bootstrap-t that resamples the observed values cannot see tail events the
sample happens to miss, so with noise 1.5 t_5 under a normal model ±2 se covered 87–92%. Here
the lowest M = ⌈min(0.2 N, 3 √N)⌉ values are replaced by a generalized Pareto tail fitted to
their distances below the next value (Zhang & Stephens 2009, with PSIS's weak prior on the
shape), and the symmetric bootstrap-t factor is computed under that semi-parametric
distribution (the "Pareto-tail bootstrap" of Cornea-Madeira & Davidson 2015), recentred at its
own mean, with k̂ capped at 0.9 (from 4 tail values at N = 20 the fit often exceeds 1 with a
normal likelihood that is right). The fitted shape doubles as a diagnostic: above 0.7 the
values' variance may not exist and no normal-based se is reliable (:func:`tail_warning`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from ..._util.gpd import KHAT_BAD, gpd_fit
from ...errors import option

#: Resamples and the fixed seed of the Pareto-tail bootstrap (the factor is a deterministic
#: function of the values).
N_BOOT = 2000
TAIL_SEED = 20251126
#: Fewest values for that warning: below 50 the tail is fitted to fewer than 10 values and k̂
#: exceeded 0.7 for 12–14% of data sets from a right model (2–3% at N = 50).
MIN_WARN_N = 50
#: The largest shape the bootstrap uses (module docstring).
KHAT_CAP = 0.9
_LEVEL_2SE = 2 * stats.norm.cdf(2.0) - 1


@dataclass(frozen=True)
class LowerTail:
    """A generalized Pareto fit to the ``m`` lowest of ``n`` values: below ``threshold`` by
    GPD(``khat``, ``sigma``)."""

    n: int
    m: int
    threshold: float
    khat: float
    sigma: float


def lower_tail(values: np.ndarray) -> LowerTail | None:
    """The lower-tail fit of ``values``; None for fewer than 10 values or a flat tail."""
    v = np.sort(np.asarray(values, dtype=float).ravel())
    n = v.size
    if n < 10 or not np.all(np.isfinite(v)):
        return None
    m = int(math.ceil(min(0.2 * n, 3 * math.sqrt(n))))
    u = float(v[m])
    x = u - v[:m]
    if np.count_nonzero(x > 0) < 2 or not math.isfinite(float(x.max())):
        return None
    k, sigma = gpd_fit(np.maximum(x, float(x[x > 0].min()) * 1e-6))
    return LowerTail(n, m, u, k, sigma)


def tail_khat(values: np.ndarray) -> float:
    """k̂ of the lower tail of ``values`` (NaN when it cannot be fitted)."""
    t = lower_tail(values)
    return float("nan") if t is None else t.khat


def tail_factor(values: np.ndarray) -> float:
    """The symmetric bootstrap-t factor q/2 (at least 1) under the values with their lower tail
    replaced by the fitted Pareto tail, its shape capped at :data:`KHAT_CAP` (module
    docstring); 1 when no tail can be fitted."""
    v = np.asarray(values, dtype=float).ravel()
    t = lower_tail(v)
    if t is None:
        return 1.0
    n, m, u, k, s = t.n, t.m, t.threshold, min(t.khat, KHAT_CAP), t.sigma
    body = np.sort(v)[m:]
    p_tail = m / n
    mean = (1.0 - p_tail) * float(body.mean()) + p_tail * (u - s / (1.0 - k))
    rng = np.random.default_rng(TAIL_SEED)
    tstat = np.empty(N_BOOT)
    rows = max(1, min(N_BOOT, 2_000_000 // n))
    for a in range(0, N_BOOT, rows):
        r = min(rows, N_BOOT - a)
        uu = rng.random((r, n))
        g = s / k * np.expm1(-k * np.log(uu)) if abs(k) > 1e-9 else -s * np.log(uu)
        b = np.where(rng.random((r, n)) < p_tail, u - g, body[rng.integers(0, body.size, (r, n))])
        sd = b.std(axis=1, ddof=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            tstat[a:a + r] = np.where(sd > 0, np.abs(b.mean(axis=1) - mean) / sd * math.sqrt(n),
                                      0.0)
    return max(1.0, float(np.quantile(tstat, _LEVEL_2SE)) / 2.0)


def tail_warning(values: np.ndarray, what: str) -> str | None:
    """A one-line warning when the lower tail of the pointwise values is so heavy (k̂ > 0.7)
    that the se of their sum ``what`` may undercover; None otherwise, and for fewer than
    :data:`MIN_WARN_N` values."""
    if np.asarray(values).size < MIN_WARN_N:
        return None
    k = tail_khat(values)
    if not k > KHAT_BAD:  # the se of a sum of the values is unreliable above
        return None
    return (f"the pointwise values' lower tail has Pareto k-hat {k:.2f} > {KHAT_BAD}: their "
            f"variance may not exist and the se of {what} may be too small; look for outliers "
            "or a model that fits them (heavier-tailed likelihood)")


def add_cv_warnings(result: Any, values: np.ndarray, name: str,
                    unrefit_mcse: float = 0.0) -> None:
    """Append to ``result.warnings`` the heavy-tail warning of its pointwise ``values`` and a
    warning when its Monte Carlo se is not small against its se (``name``: e.g. elpd_kfold).
    ``unrefit_mcse``: the part of that se from refits the time budget left undone (estimated
    from the others); where it is most of it, the warning names a longer budget, not more
    draws."""
    tail = tail_warning(values, name)
    if tail:
        result.warnings.append(tail)
    if result.mcse > 0.1 * max(result.se, 1.0):
        advice = ("most of it comes from the folds the time budget left unrefit: a longer "
                  f"{option('time_budget')} refits them"
                  if unrefit_mcse**2 > 0.5 * result.mcse**2 else
                  f"run more draws ({option('draws')})")
        result.warnings.append(f"Monte Carlo se {result.mcse:.3f} of {name} is not small "
                               f"against its se {result.se:.3f}; {advice}")
