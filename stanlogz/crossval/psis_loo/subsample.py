"""The difference estimator of elpd_loo from a simple random sample of observations
(Magnusson, Andersen, Jonasson & Vehtari 2020), with the observations whose approximation is
unreliable taken with certainty: :func:`draw_sample`, :func:`subsample_estimates`.

The subsampling se is that of a mean of m sampled differences e_j (exact minus approximate
elpd_j), which are skewed: a few observations the approximation misses by much. As for K-fold
sums, the plain se(mean) is widened by the symmetric bootstrap-t factor of the sampled
differences (:func:`stanlogz.crossval.refit.cv_se.calibration_factor`), so ±2 se is a
bootstrap-t interval; coverage in ``benchmarks/coverage_subsample.py``."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import stats

from ..._util.gpd import KHAT_BAD
from ..elpd.psis import LOGLIK_VAR_HEAVY, PsisLoo
from ..fixups.fixups import FixedPoint
from ..refit.cv_se import LEVEL_2SE, calibration_factor


def draw_sample(approx_khat: np.ndarray, m: int, rng: np.random.Generator,
                approx_var: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``m`` observations: those whose approximation is poor (k̂ above ``KHAT_BAD``, or a
    log-likelihood variance ``approx_var`` above ``LOGLIK_VAR_HEAVY``: heavy ratios whatever
    k̂ reads from the approximation's few draws), the highest k̂ first and at most m // 2, with
    certainty, the rest a simple random sample of the others; returns the sorted indices and
    which of them are certain."""
    k = np.asarray(approx_khat, dtype=float)
    poor = k > KHAT_BAD
    if approx_var is not None:
        poor |= np.asarray(approx_var, dtype=float) > LOGLIK_VAR_HEAVY
    order = np.lexsort((-k, ~poor))  # the poor first, each part by k-hat, highest first
    # their approximation is poor, and left to chance their heavy-tailed differences made the
    # sample variance, and so the subsampling se, unstable
    certain = order[: min(int(np.sum(poor)), m // 2, max(m - 2, 0))]
    rest = np.setdiff1d(np.arange(k.size), certain)
    index = np.sort(np.concatenate([certain, rng.choice(rest, size=m - certain.size,
                                                       replace=False)]))
    return index, np.isin(index, certain)


def subsample_estimates(approx: np.ndarray, index: np.ndarray, elpd_j: np.ndarray,
                        ps: PsisLoo, fixed: list[FixedPoint],
                        certain: np.ndarray | None = None) -> dict[str, float]:
    """The difference estimator of Σ elpd_i around ``approx``: the ``certain`` observations
    of ``index`` as they are, the others a simple random sample (without replacement) of
    the remaining ones; its subsampling se and the between-observation se."""
    n = approx.size
    c = np.zeros(index.size, dtype=bool) if certain is None else np.asarray(certain, bool)
    r = ~c
    n_r, m_r = n - int(c.sum()), int(r.sum())
    rest = np.ones(n, dtype=bool)
    rest[index[c]] = False
    e = elpd_j[r] - approx[index[r]]
    elpd = float(elpd_j[c].sum() + approx[rest].sum() + n_r * e.mean())
    v_plain = float(n_r**2 * (1 - m_r / n_r) * np.var(e, ddof=1) / m_r)
    factor = calibration_factor(e)
    v_sub = v_plain * factor**2
    # Σ elpd_i² by the same estimator; N var_pop(elpd_i) = Σ elpd_i² − (Σ elpd_i)²/N, with
    # (Σ elpd_i)² estimated without bias by elpd² − v_plain.
    sq = float(np.sum(elpd_j[c] ** 2) + np.sum(approx[rest] ** 2)
               + n_r * np.mean(elpd_j[r] ** 2 - approx[index[r]] ** 2))
    se2 = sq - (elpd**2 - v_plain) / n
    p_j = ps.lppd_i - elpd_j
    return {"elpd": elpd, "se": float(math.sqrt(max(se2, 0.0))),
            "subsampling_se": math.sqrt(max(v_sub, 0.0)), "subsampling_factor": factor,
            "p_loo": float(p_j[c].sum() + n_r * p_j[r].mean()),
            "p_loo_se": float(math.sqrt(n * np.var(p_j, ddof=1))),
            "expansion": n_r / m_r}


def widen_few(est: dict[str, Any], m: int) -> None:
    """Widen, in place, the subsampling se of an estimate that is N times the mean of ``m``
    observations drawn at random (no approximation of the rest) by Student's t quantile
    with m - 1 degrees of freedom over the normal's at ±2 se. The bootstrap-t factor (capped
    at 2) cannot see a tail the m missed: on roaches' influential points (N = 262) at m = 20
    the ±2 se interval covered 0.93-0.94 without this (nominal 0.954;
    ``python -m benchmarks.anytime_few_coverage``)."""
    if m < 2:
        return
    t = float(stats.t.ppf(0.5 + LEVEL_2SE / 2, m - 1)) / 2.0
    est["subsampling_se"] *= t
    est["subsampling_factor"] *= t


def final_estimates(est: dict[str, Any], sample_index: np.ndarray, elpd_i: np.ndarray,
                    ps: PsisLoo, fixed: list[FixedPoint]) -> dict[str, float]:
    """The estimates of a subsample or budget-stopped pass ``est`` again, on the values of
    ``sample_index`` as the fix-ups left them (``elpd_i``, ``fixed``): its approximation and
    certain stratum kept, and, where it had no approximation of the rest (``"none"``), its
    se widened again by :func:`widen_few` (the widening was dropped here before: a
    budget-stopped conditional pass's result had the narrower se the benchmark did not
    measure)."""
    certain = est.get("certain")
    out = subsample_estimates(est["approx"], sample_index, elpd_i, ps, fixed, certain)
    if est.get("approximation") == "none":
        m = sample_index.size if certain is None else int((~np.asarray(certain)).sum())
        widen_few(out, int(m))
    return out
