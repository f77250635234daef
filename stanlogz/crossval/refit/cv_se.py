"""Intervals and standard errors of cross-validation sums that cover their target at small N:
PSIS-LOO, WAIC and paired differences (:func:`elpd_interval`, beside loo's se
:func:`~stanlogz._util.sum_se.sum_se`, which stays under loo's names), K-fold (:func:`kfold_se`)
and leave-future-out with M-step windows (:func:`lfo_se`).

What the se is an se *of*: the data-sampling error of the CV sum as an estimate of the expected
log score, on new data from the data-generating process, of the predictions it scores — for
K-fold, Σ_i E_ỹ log p(ỹ_i | y) of the full-data posterior predictive; for LFO, Σ_t E_ỹ log
p(ỹ_{t+1:t+M} | y_{1:t}) of the forecasts made at the same origins. The Monte Carlo error of
the CV values themselves is a separate ``mcse``.

Three corrections to loo's sqrt(N var(elpd_i)), each measured in ``benchmarks/coverage_cv.py``:

* **small-N calibration** (:func:`calibration_factor`): log predictive densities are skewed, and
  their sample variance is correlated with their sum, so ±2 se undercovers at N = 20 (87%). The
  interval of :func:`elpd_interval` (and the K-fold and LFO se) widens ±2 se by the symmetric
  bootstrap-t factor q/2 (q the 95.45% quantile of
  |mean* − mean| / se* over resamples of the pointwise values; at least 1), so ±2 se is a
  bootstrap-t interval (second-order accurate for two-sided coverage); and by the same factor
  with the lowest values' tail replaced by a fitted Pareto tail, when that is larger
  (:mod:`stanlogz.crossval.refit.cv_tail`: heavy-tailed misspecification covered 87–92% without it);
  the factor is capped at :data:`MAX_FACTOR`: one value far below the rest makes every resample
  that misses it look like a many-se error (×109 at N = 10, ×3.8 at N = 1,000 with one value
  100 below values of sd 0.5), while a cap of 2 left the coverage of ±2 se on the data sets
  of ``benchmarks/coverage_ddof.py`` (800 per row) within 0.01 of the uncapped one from
  N = 20 on, and within 0.035 at N = 10;
* **fold-aware variance** (K-fold): every fold's values share one training posterior, so the
  fold sums vary more than the pointwise variance says (2 folds: 56% with the between-fold se,
  90% with the pointwise one); the excess of the between-fold variance over the pointwise one,
  when positive, is added;
* **overlapping windows** (LFO, M > 1): log p(y_{t+1:t+M} | y_{1:t}) = Σ_j log p(y_{t+j} |
  y_{1:t+j−1}), so consecutive origins share up to M − 1 one-step terms and their covariance
  at lag h is (1 − h/M) var when the one-step terms are uncorrelated with equal variance. The
  variance of the sum is the larger of that (with the variance corrected for the centring of
  correlated values) and the rectangular-kernel HAC estimate with M − 1 lags; the se is
  multiplied by the Student-t factor of the effective number of origins n²/Σ_{t,t'} w_{tt'}.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from scipy import stats

from ..._util.sum_se import sum_se
from .cv_tail import tail_factor

#: Resamples of the bootstrap-t calibration and the (fixed) seed they are drawn with, so the se
#: is a deterministic function of the values.
N_BOOT = 2000
BOOT_SEED = 20250425
#: Above this many values the calibration is skipped (its correction is O(1/N)).
MAX_CALIBRATED = 5000
#: The largest calibration factor (module docstring).
MAX_FACTOR = 2.0
#: Two-sided level of "±2 se": P(|Z| <= 2).
LEVEL_2SE = 2 * stats.norm.cdf(2.0) - 1


def calibration_factor(values: np.ndarray) -> float:
    """The symmetric bootstrap-t factor (1 to :data:`MAX_FACTOR`) by which sd(values)·sqrt(N)
    is widened so that the sum ± 2 se covers with probability P(|Z| <= 2) (module docstring):
    the larger of the plain one and the one with a Pareto lower tail
    (:func:`stanlogz.crossval.refit.cv_tail.tail_factor`)."""
    v = np.asarray(values, dtype=float).ravel()
    n = v.size
    if n < 3 or n > MAX_CALIBRATED or not np.all(np.isfinite(v)):
        return 1.0
    rng = np.random.default_rng(BOOT_SEED)
    mean = v.mean()
    t = np.empty(N_BOOT)
    rows = max(1, min(N_BOOT, 2_000_000 // n))
    for a in range(0, N_BOOT, rows):
        b = v[rng.integers(0, n, (min(rows, N_BOOT - a), n))]
        sd = b.std(axis=1, ddof=1)
        dev = np.abs(b.mean(axis=1) - mean)
        with np.errstate(divide="ignore", invalid="ignore"):
            t[a:a + b.shape[0]] = np.where(sd > 0, dev / sd * math.sqrt(n), 0.0)
    return min(MAX_FACTOR, max(1.0, float(np.quantile(t, LEVEL_2SE)) / 2.0, tail_factor(v)))


@dataclass(frozen=True)
class ElpdInterval:
    """A calibrated interval for a cross-validation sum (or paired difference): ``low`` to
    ``high`` at the nominal two-sided ``level``, from loo's se times the small-N ``factor``.
    Not an se: the factor makes ``estimate ± 2 × factor × se`` a symmetric bootstrap-t interval
    whose coverage is measured in ``benchmarks/coverage_ddof.py`` (docs/error-bars.md)."""

    low: float
    high: float
    level: float
    factor: float

    def __iter__(self) -> Iterator[float]:
        yield self.low
        yield self.high

    def to_dict(self) -> dict[str, float]:
        """``{"low", "high", "level", "factor"}``."""
        return {"low": self.low, "high": self.high, "level": self.level, "factor": self.factor}


def elpd_interval(values: np.ndarray, total: float | None = None,
                  n_obs: int | None = None) -> ElpdInterval:
    """The calibrated interval ``total ± 2 c sqrt(N var(values))`` of Σ_i values_i (elpd_loo,
    elpd_waic, a paired difference), c the small-N :func:`calibration_factor` (1 to
    :data:`MAX_FACTOR`), at level P(|Z| <= 2) = 0.954. ``total`` defaults to the sum of the
    values; ``n_obs`` scales a sample of m values to N observations (the se is sqrt(N var));
    NaN bounds for fewer than two values."""
    v = np.asarray(values, dtype=float).ravel()
    n = v.size if n_obs is None else int(n_obs)
    centre = float(v.sum()) if total is None else float(total)
    se = sum_se(v) * math.sqrt(n / v.size) if v.size else float("nan")
    c = calibration_factor(v)
    half = 2.0 * c * se
    return ElpdInterval(low=centre - half, high=centre + half, level=float(LEVEL_2SE),
                        factor=float(c))


def kfold_se(elpd_i: np.ndarray, fold_of: np.ndarray) -> float:
    """se of Σ_i elpd_i from K-fold (or grouped, or leave-one-out) cross-validation: the
    calibrated pointwise variance plus the between-fold excess (module docstring); NaN for
    fewer than two observations."""
    e = np.asarray(elpd_i, dtype=float).ravel()
    n = e.size
    if n < 2 or not np.all(np.isfinite(e)):
        return float("nan")
    within = n * float(np.var(e, ddof=1))
    folds = np.asarray(fold_of, dtype=int).ravel()
    _, inv = np.unique(folds, return_inverse=True)
    sizes = np.bincount(inv).astype(float)
    sums = np.bincount(inv, weights=e)
    excess = 0.0
    if sizes.size > 1:
        # Σ_k (F_k − n_k ē)², scaled to be unbiased for N σ² when folds add nothing
        ss = float(np.sum((sums - sizes * e.mean()) ** 2))
        between = ss * n / (n - float(np.sum(sizes**2)) / n)
        excess = max(0.0, between - within)
    c = calibration_factor(e)
    return float(math.sqrt(c**2 * within + excess))


def window_weights(n: int, ahead: int) -> np.ndarray:
    """w_{tt'} = max(0, 1 − |t − t'| / M): the correlation of M-step windows made of
    uncorrelated one-step terms, ``(n, n)``."""
    i = np.arange(n)
    return np.maximum(0.0, 1.0 - np.abs(i[:, None] - i[None, :]) / max(int(ahead), 1))


def lfo_effective_n(n: int, ahead: int) -> float:
    """n² / Σ w_{tt'}: the number of independent origins n M-step windows are worth."""
    return float(n**2 / window_weights(n, ahead).sum()) if n > 0 else 0.0


def lfo_se(elpd_t: np.ndarray, ahead: int) -> float:
    """se of Σ_t elpd_t over leave-future-out origins with ``ahead``-step windows (module
    docstring); NaN when the origins are worth fewer than two independent ones."""
    e = np.asarray(elpd_t, dtype=float).ravel()
    n = e.size
    if n < 2 or not np.all(np.isfinite(e)):
        return float("nan")
    m = max(1, min(int(ahead), n))
    w = window_weights(n, m)
    sw = float(w.sum())
    n_eff = n**2 / sw
    if n_eff < 2.0:
        return float("nan")
    centring = 1.0 - sw / n**2  # E[sample variance] = γ0 (1 − Σw / n²) for this correlation
    d = e - e.mean()
    gamma0 = float(np.mean(d**2)) / centring
    v_model = gamma0 * sw
    v_hac = float(np.sum(d**2)) + 2.0 * sum(float(d[:n - h] @ d[h:]) for h in range(1, m))
    v = max(v_model, v_hac / centring)
    t_factor = float(stats.t.ppf(stats.norm.cdf(2.0), max(n_eff - 1.0, 1.0))) / 2.0
    factor = max(calibration_factor(e), t_factor)
    return float(factor * math.sqrt(v))
