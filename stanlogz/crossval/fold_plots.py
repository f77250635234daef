"""Figures for K-fold and leave-future-out results: pointwise elpd with ±2 Monte Carlo se."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .kfold import KFoldResult
    from .lfo import LfoResult


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


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
    se = np.array([f.elpd_i_se for f in result.folds])
    ax_f.errorbar(folds, result.fold_elpd, yerr=2 * se, fmt="o", ms=4, capsize=3)
    ax_f.set_xlabel("fold")
    ax_f.set_ylabel("Σ log p(y_i | y_T) over the fold (±2 MC se)")
    ax_f.set_title(f"elpd_kfold = {result.elpd_kfold:.2f} ± {result.se:.2f}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return Path(path)


def plot_lfo(result: LfoResult, path: str | Path) -> Path:
    """Two panels: log p(y_{t+1:t+M} | y_{1:t}) per forecast origin (±2 Monte Carlo se) with the
    refits marked, and the PSIS k̂ per origin with the threshold."""
    plt = _pyplot()
    fig, (ax_e, ax_k) = plt.subplots(1, 2, figsize=(12, 4.2))
    t = result.origins
    ax_e.errorbar(t, result.elpd_t, yerr=2 * result.mc_se_t, fmt="o", ms=3, capsize=2)
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
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return Path(path)
