"""The calibrated se of a LOO predictive measure (``se_parts["se_calibrated"]``), beside loo's
between-observation se, which stays under loo's name ``se``.

loo's se, sd(v_i) / √N of the pointwise values v_i, treats them as independent. Two things make
±2 of it undercover at the N of a typical data set (``benchmarks/coverage_measures.py``):

* **dependence through the shared posterior.** Each v_i is scored with the posterior of the
  other N − 1 observations, so observation j enters every other v_i as training data. The
  delete-one jackknife of the whole LOO estimate counts that: leaving j out moves the estimate
  by −(v_j − v̄) / (N − 1) and by R_j / (N − 1), R_j = Σ_{i≠j} (v_i without j − v_i). The
  jackknife variance is then sd(u)² / N with u_j = (v_j − v̄) − (R_j − R̄) in place of v_j − v̄.
  R_j is taken to first order from the draws: leaving j out adds log w_sj (= −log p(y_j | θ_s)
  up to a constant) to the log weights of every other observation, so
  R_j = Σ_s (Σ_{i≠j} g_si) log w_sj, g_si = ∂v_i / ∂log w_si (the draw influence the Monte
  Carlo se is made of). Its Monte Carlo noise, Σ_s ((Σ_{i≠j} g_si) (log w_sj − mean))², is
  subtracted from the variance of u (it is there even where no dependence is), and the result
  is never below loo's variance.
* **skewness at small N.** The pointwise values are skewed (a score near a bound, a squared
  error), and their sd is correlated with their mean; ±2 se is widened by the symmetric
  bootstrap-t factor q / 2 (q the 95.45% quantile of |mean* − mean| / se* over resamples of
  u; 1 to :data:`MAX_FACTOR`), as ``elpd_loo_interval`` does for elpd.

The target is the one of ``elpd_loo_interval``: the expected measure, on new data from the
data-generating process, of the predictive distributions fitted to these data.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from scipy import stats

#: Resamples of the bootstrap-t factor and their fixed seed (the se is a deterministic function
#: of its inputs).
N_BOOT = 2000
BOOT_SEED = 20261128
#: The largest bootstrap-t factor; above this many observations no factor (it is O(1/N)).
MAX_FACTOR = 2.0
MAX_BOOT_N = 1000
_LEVEL_2SE = 2 * stats.norm.cdf(2.0) - 1


@lru_cache(maxsize=2)
def _resample_counts(n: int) -> np.ndarray:
    """How often each of n values is drawn in each of :data:`N_BOOT` resamples ``(N_BOOT, n)``
    (fixed seed: the same for every call with this n)."""
    idx = np.random.default_rng(BOOT_SEED).integers(0, n, (N_BOOT, n))
    rows = np.repeat(np.arange(N_BOOT), n)
    counts = np.bincount(rows * n + idx.ravel(), minlength=N_BOOT * n).reshape(N_BOOT, n)
    counts = counts.astype(float)
    counts.setflags(write=False)
    return counts


def bootstrap_t_factor(values: np.ndarray) -> float:
    """The symmetric bootstrap-t factor q / 2 of the mean of ``values`` (module docstring),
    between 1 and :data:`MAX_FACTOR`; 1 for fewer than 3 or more than :data:`MAX_BOOT_N`
    values."""
    v = np.asarray(values, dtype=float).ravel()
    n = v.size
    if n < 3 or n > MAX_BOOT_N or not np.all(np.isfinite(v)):
        return 1.0
    x = v - v.mean()
    c = _resample_counts(n)
    dev = c @ x / n                                   # mean* − mean of each resample
    var = np.maximum(c @ x**2 - n * dev**2, 0.0) / (n - 1)
    sd = np.sqrt(var)
    tol = 1e-12 * float(np.sqrt(np.mean(x**2)))
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(sd > tol, np.abs(dev) / sd * math.sqrt(n), 0.0)
    return min(MAX_FACTOR, max(1.0, float(np.quantile(t, _LEVEL_2SE)) / 2.0))


def dependence_shift(g: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, float]:
    """R_j (module docstring) ``(N,)`` of pointwise values whose draw influence is ``g``
    ``(S, N)`` under the normalized LOO weights ``w`` ``(S, N)``, and the mean over j of R_j's
    Monte Carlo variance (a draw of weight 0 takes its column's smallest log weight)."""
    with np.errstate(divide="ignore"):
        lw = np.log(w)
    lw = np.where(np.isfinite(lw), lw, np.nan)
    lw = np.where(np.isnan(lw), np.nanmin(lw, axis=0, keepdims=True), lw)
    lw = lw - lw.mean(axis=0, keepdims=True)
    a = g.sum(axis=1, keepdims=True) - g              # Σ_{i≠j} g_si, per draw and j
    r = np.sum(a * lw, axis=0)
    noise = np.sum((a * lw) ** 2, axis=0)
    return r, float(noise.mean())


def calibrated_se(influence: np.ndarray, g: np.ndarray | None, w: np.ndarray,
                  scale: float = 1.0) -> float:
    """The calibrated se of a LOO predictive measure (module docstring).

    Parameters
    ----------
    influence : numpy.ndarray
        Each observation's influence on the estimate ``(N,)`` (estimate ≈ const + its mean;
        v_i − v̄ for a mean of pointwise values v_i).
    g : numpy.ndarray or None
        The pointwise values' draw influence ∂v_i / ∂log w_si ``(S, N)``; None leaves the
        dependence term out.
    w : numpy.ndarray
        The normalized LOO weights ``(S, N)``.
    scale : float
        Carries a change of the pointwise values to the influence's units (the delta method
        of RMSE and R²).

    Returns
    -------
    float
        bootstrap-t factor of u × √(max(var(influence), var(u) − Monte Carlo part) / N), u the
        jackknife influence: never below loo's se.

    Examples
    --------
    >>> import numpy as np
    >>> from stanlogz.crossval.checks.measure_se import calibrated_se
    >>> v = np.linspace(-1.0, 1.0, 50)             # symmetric values, equal weights: loo's se
    >>> w = np.full((10, 50), 0.1)
    >>> se = calibrated_se(v, np.zeros((10, 50)), w)
    >>> bool(abs(se - v.std(ddof=1) / np.sqrt(50)) < 0.05 * se)
    True
    """
    u = np.asarray(influence, dtype=float)
    n = u.size
    var = float(np.var(u, ddof=1))
    if g is not None:
        r, noise = dependence_shift(g, w)
        u = u - scale * (r - r.mean())
        var = max(var, float(np.var(u, ddof=1)) - scale**2 * noise)
    return bootstrap_t_factor(u) * math.sqrt(var / n)
