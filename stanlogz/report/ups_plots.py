"""The UPS paper's diagnostic figures for one :class:`~stanlogz.estimators.ups.ups.UPSResult`."""

from __future__ import annotations

from pathlib import Path as FilePath
from typing import TYPE_CHECKING

import numpy as np

from .figures import pyplot

if TYPE_CHECKING:
    from ..estimators.ups.ups import UPSResult


def plot_ups(result: UPSResult, path: str | FilePath) -> FilePath:
    """Write a three-panel figure to ``path``: pilot meeting times per lambda (violins, with k),
    sqrt(m2(lambda)) with the proposal density q(lambda), and the replicates against lambda.
    """
    plt = pyplot()

    tun = result.tuning
    grid = tun.grid
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))

    ax = axes[0]
    taus = tun.pilot_meeting_times
    if taus.size:
        pos = np.arange(grid.size)
        ax.violinplot([t for t in taus], positions=pos, showextrema=False)
        ax.plot(pos, tun.k, "k-", lw=1.2, label="k_λ")
        ax.set_xticks(pos, [f"{g:.2g}" for g in grid], rotation=45)
        ax.legend()
    else:
        ax.hist(result.meeting_times, bins=30)
        ax.set_xlabel("replicate meeting time")
    ax.set_xlabel("λ")
    ax.set_ylabel("meeting time τ")
    ax.set_title("Meeting times")

    ax = axes[1]
    ax.plot(grid, tun.sqrt_m2, "o-", label="√m2(λ)")
    ax.set_xlabel("λ")
    ax.set_ylabel("√m2(λ)")
    ax2 = ax.twinx()
    dens = tun.q_mass / np.diff(grid)
    ax2.stairs(dens, grid, color="C1", label="q(λ)")
    ax2.set_ylabel("q(λ)")
    ax.set_title("Second moments and q")
    ax.legend(loc="upper left")
    ax2.legend(loc="upper right")

    ax = axes[2]
    ax.scatter(result.lambdas, result.replicates, s=6, alpha=0.5)
    ax.axhline(result.estimate, color="k", lw=1, label=f"mean {result.estimate:.4g}")
    ax.axhspan(*result.ci, color="C3", alpha=0.2, label=f"{100 * result.ci_level:.0f}% CI")
    ax.set_xlabel("λ")
    ax.set_ylabel("Ê(λ)/q(λ)")
    ax.set_title("Replicates")
    ax.legend()

    fig.tight_layout()
    out = FilePath(path)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
