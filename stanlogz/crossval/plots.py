"""Figures for cross-validation results: k̂ and pointwise elpd for LOO, replicates for CV."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .loo import LooResult
    from .unbiased import CVResult


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


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
                      yerr=[2 * f.se for f in result.fixed], fmt="o", color="C3", ms=5,
                      capsize=3, label=f"fixed ({result.fix}), ±2 se")
    ax_e.set_xlabel("observation")
    ax_e.set_ylabel("elpd_i = log p(y_i | y_-i)")
    ax_e.set_title(f"elpd_loo = {result.elpd_loo:.2f} ± {result.se:.2f}")
    ax_e.legend(fontsize=8)
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


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
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
