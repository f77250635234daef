"""Plots of the Bayes-factor tools: log Z and elpd_loo against the prior power α
(:func:`plot_sensitivity`) and the calibration of simulated Bayes factors
(:func:`plot_calibration`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from .figures import pyplot


def plot_sensitivity(result: Any, path: str | Path) -> None:
    """log Z(α) and elpd_loo(α) with ±2 se bands against the prior power α (log axis) for a
    :class:`~stanlogz.bayes_factors.sensitivity.SensitivityResult`."""
    plt = pyplot()

    c = result.curves
    a = np.asarray(c["alpha"])
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6), constrained_layout=True)
    for ax, q, label in ((axes[0], "log_z", "log Z(α)"), (axes[1], "elpd_loo", "elpd_loo(α)")):
        v, se = np.asarray(c[q], float), np.asarray(c[f"{q}_se"], float)
        ax.plot(a, v, "o-", color="C0")
        ax.fill_between(a, v - 2 * se, v + 2 * se, color="C0", alpha=0.25, label="± 2 se")
        ax.axvline(1.0, color="grey", lw=0.8, ls=":")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("prior power α")
        ax.set_ylabel(label)
        ax.legend(loc="best", fontsize=8)
    fig.suptitle(f"{result.model}: power-scaling the prior (p^α renormalized)")
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_calibration(result: Any, path: str | Path) -> None:
    """Histograms of log BF (each program against the first) under each true program, and the
    mean posterior probability of each program (± 2 se) against its prior probability, for a
    :class:`~stanlogz.bayes_factors.calibrate.CalibrationResult`."""
    plt = pyplot()

    lz, truth, s = result.log_z, result.true_model, result.summary
    k = lz.shape[1]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), constrained_layout=True)
    ax = axes[0]
    for t in range(k):
        rows = lz[truth == t]
        for j in range(1, k):
            if rows.size:
                ax.hist(rows[:, j] - rows[:, 0], bins=30, alpha=0.5,
                        label=f"truth {result.models[t]}: {result.models[j]} vs "
                        f"{result.models[0]}")
    ax.axvline(0.0, color="grey", lw=0.8)
    ax.set_xlabel("log Bayes factor")
    ax.set_ylabel("simulations")
    ax.legend(fontsize=7)
    ax = axes[1]
    x = np.arange(k)
    ax.bar(x - 0.2, s.prior_probs, width=0.4, label="prior probability", color="C7")
    ax.bar(x + 0.2, s.mean_post_prob, width=0.4, yerr=2 * np.asarray(s.mean_post_prob_se),
           label="mean posterior probability ± 2 se", color="C0")
    ax.set_xticks(x, result.models, rotation=15, fontsize=8)
    ax.set_ylabel("probability")
    ax.legend(fontsize=7)
    verdict = "passes" if s.passed else "FAILS"
    fig.suptitle(f"Bayes-factor calibration over {lz.shape[0]} simulations: {verdict}")
    fig.savefig(path, dpi=110)
    plt.close(fig)
