"""The pseudo-marginal chain's figure: traces and autocorrelations of sign x theta."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..pmmh.pseudo_marginal import PseudoMarginalResult
from .figures import pyplot


def plot_pmmh(r: PseudoMarginalResult, path: Path, max_lag: int = 100) -> None:
    """Traces and autocorrelations of sign x theta (as Wei & Murray's (2017) Figures 2 and 3)."""
    plt = pyplot()
    values, names = r.draws.constrained[0], r.draws.constrained_names
    k = len(names)
    fig, axes = plt.subplots(2, k, figsize=(4.0 * k, 5.0), squeeze=False)
    lags = np.arange(min(max_lag, r.n_iter - 1) + 1)
    for j, name in enumerate(names):
        s = values[:, j] * r.signs
        axes[0, j].plot(s, lw=0.5)
        axes[0, j].set_title(f"sign x {name}")
        c = s - s.mean()
        denom = float(np.dot(c, c)) or 1.0
        acf = [float(np.dot(c[: c.size - h], c[h:])) / denom for h in lags]
        axes[1, j].bar(lags, acf, width=1.0)
        axes[1, j].set_xlabel("lag")
        axes[1, j].set_title(f"autocorrelation of sign x {name}")
    fig.tight_layout()
    fig.savefig(path, format=path.suffix.lstrip(".") or "png")
    plt.close(fig)
