"""Figures for cross-validation results: k̂ and pointwise elpd for LOO, replicates for CV,
pointwise elpd with ±2 Monte Carlo se for K-fold and leave-future-out, and the LOO-PIT."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import InputError
from .figures import pyplot as _pyplot
from .figures import save

if TYPE_CHECKING:
    from ..crossval.checks.checks import PredictiveChecks
    from ..crossval.psis_loo.result import LooResult
    from ..crossval.refit.kfold import KFoldResult
    from ..crossval.refit.lfo_result import LfoResult
    from ..crossval.refit.unbiased import CVResult


def plot_loo(result: LooResult, path: str | Path) -> Path:
    """Two panels: Pareto k̂ per observation with the threshold, and pointwise elpd (PSIS) with
    the fixed values and their ±2 se marked."""
    plt = _pyplot()
    obs = result.index + 1  # every observation, or the subsampled ones
    fig, (ax_k, ax_e) = plt.subplots(1, 2, figsize=(12, 4.2))
    bad = result.khat > result.threshold
    ax_k.scatter(obs[~bad], result.khat[~bad], s=14, color="C0", label="k̂ ≤ threshold")
    ax_k.scatter(obs[bad], result.khat[bad], s=24, color="C3", marker="x", label="k̂ > threshold")
    ax_k.axhline(result.threshold, color="C3", ls="--", lw=1,
                 label=f"threshold {result.threshold:.2f}")
    ax_k.axhline(1.0, color="0.5", ls=":", lw=1)
    ax_k.set_xlabel("observation")
    ax_k.set_ylabel("Pareto k̂")
    ax_k.set_title(f"{result.model}: PSIS diagnostics")
    ax_k.legend(fontsize=8)
    ax_e.scatter(obs, result.psis_elpd_i, s=14, color="C0", label="PSIS")
    if result.fixed:
        idx = np.array([f.index for f in result.fixed])
        ax_e.errorbar(idx + 1, [f.elpd for f in result.fixed],
                      yerr=[2 * f.mcse for f in result.fixed], fmt="o", color="C3", ms=5,
                      capsize=3, label=f"fixed ({result.fix}), ±2 mc se")
    ax_e.set_xlabel("observation")
    ax_e.set_ylabel("elpd_i = log p(y_i | y_-i)")
    ax_e.set_title(f"elpd_loo = {result.elpd_loo:.2f} ± {result.se:.2f}")
    ax_e.legend(fontsize=8)
    return save(fig, path)


def plot_cv(result: CVResult, path: str | Path) -> Path:
    """Two panels: each split's replicate against the split (the CI band drawn), and against λ."""
    plt = _pyplot()
    reps = result.replicates
    fig, (ax_s, ax_l) = plt.subplots(1, 2, figsize=(12, 4.2))
    for ax, x, label in ((ax_s, np.arange(1, reps.size + 1), "split"),
                         (ax_l, result.lambdas, "λ")):
        ax.scatter(x, reps, s=10, alpha=0.7)
        ax.axhline(result.estimate, color="C3", lw=1.2, label=f"mean {result.estimate:.3f}")
        ax.axhspan(*result.ci, color="C3", alpha=0.15,
                   label=f"{100 * result.ci_level:.0f}% CI")
        ax.set_xlabel(label)
        ax.set_ylabel("-log p(y_V | y_T) replicate")
        ax.legend(fontsize=8)
    ax_s.set_title(f"{result.model}: unbiased CV, n_V = {result.n_valid}")
    ax_l.set_title("replicates against λ")
    return save(fig, path)


def plot_kfold(result: KFoldResult, path: str | Path) -> Path:
    """Two panels: log p(y_i | y_T) per observation coloured by fold, and each fold's
    contribution with ±2 Monte Carlo se."""
    plt = _pyplot()
    fig, (ax_i, ax_f) = plt.subplots(1, 2, figsize=(12, 4.2))
    obs = np.arange(1, result.n_obs + 1)
    ax_i.scatter(obs, result.elpd_i, c=result.fold_of, cmap="tab10", s=16)
    ax_i.set_xlabel("observation")
    ax_i.set_ylabel("log p(y_i | y_T)")
    ax_i.set_title(f"{result.model}: {result.scheme}, {result.k} folds")
    folds = np.arange(1, result.k + 1)
    se = np.array([f.elpd_i_mcse for f in result.folds])
    ax_f.errorbar(folds, result.fold_elpd, yerr=2 * se, fmt="o", ms=4, capsize=3)
    ax_f.set_xlabel("fold")
    ax_f.set_ylabel("Σ log p(y_i | y_T) over the fold (±2 MC se)")
    ax_f.set_title(f"elpd_kfold = {result.elpd_kfold:.2f} ± {result.se:.2f}")
    return save(fig, path)


def plot_lfo(result: LfoResult, path: str | Path) -> Path:
    """Two panels: log p(y_{t+1:t+M} | y_{1:t}) per forecast origin (±2 Monte Carlo se) with the
    refits marked, and the PSIS k̂ per origin with the threshold."""
    plt = _pyplot()
    fig, (ax_e, ax_k) = plt.subplots(1, 2, figsize=(12, 4.2))
    t = result.origins
    ax_e.errorbar(t, result.elpd_t, yerr=2 * result.mcse_t, fmt="o", ms=3, capsize=2)
    for r in result.refits:
        ax_e.axvline(r, color="0.8", lw=0.8, zorder=0)
    ax_e.set_xlabel("forecast origin t (observations used)")
    ax_e.set_ylabel(f"log p(y[t+1:t+{result.ahead}] | y[1:t])")
    ax_e.set_title(f"{result.model}: {result.method} LFO, {len(result.refits)} fits")
    ax_k.scatter(t, result.khat_t, s=14)
    if np.isfinite(result.k_threshold):
        ax_k.axhline(result.k_threshold, color="C3", ls="--", lw=1)
    ax_k.set_xlabel("forecast origin t")
    ax_k.set_ylabel("Pareto k̂ (blank: fit at t)")
    return save(fig, path)


def plot_pit(checks: PredictiveChecks, path: str | Path) -> Path:
    """ECDF of the LOO-PIT values of ``checks`` minus the uniform CDF with the 99% simultaneous
    band and the observations that drive a POT rejection marked
    (:func:`stanlogz.report.plotting.plot_loo_pit`), and their histogram."""
    from .plotting import plot_loo_pit

    if checks.pit is None:
        raise InputError("no LOO-PIT values to plot (ask for the PIT check)")
    p = np.sort(checks.pit[np.isfinite(checks.pit)])  # NaN: k-hat too high, left out
    n = p.size
    plt = _pyplot()
    fig, (ax_e, ax_h) = plt.subplots(1, 2, figsize=(11, 4))
    plot_loo_pit(checks, ax=ax_e)
    ax_h.hist(p, bins=min(20, max(5, n // 5)), range=(0, 1), density=True, color="C0")
    ax_h.axhline(1.0, color="C3", ls="--", lw=1)
    ax_h.set_xlabel("LOO-PIT")
    return save(fig, path, dpi=None)
