"""Evidence plot: how well the proposal matches the posterior, and the bridge's log weights."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..densities.fits import as_draw_matrix
from ..errors import InputError
from ..estimators.base import EvidenceResult, FlowDetail
from .figures import pyplot, user_pyplot


def plot_evidence(result: EvidenceResult, draws: np.ndarray, path: str | Path,
                  max_dims: int = 4, seed: int = 0, names: list[str] | None = None) -> Path:
    """Write :func:`evidence_figure` to ``path`` (the plot file of the evidence command;
    :func:`stanlogz.report.plot_evidence` is the public plot)."""
    plt = pyplot()
    fig = evidence_figure(result, draws, max_dims=max_dims, seed=seed, names=names)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def evidence_figure(result: EvidenceResult, draws: np.ndarray, *, max_dims: int = 4,
                    seed: int = 0, names: list[str] | None = None) -> Any:
    """Posterior-draw histograms against the flow's marginals (from flow samples) for the first
    ``max_dims`` coordinates, and histograms of the log weights ``log p - log q`` on the
    posterior and proposal sides (shifted by ``log_z``), as a matplotlib Figure.

    ``result`` is what :func:`~stanlogz.estimators.bridge.bridge.gbs` (or ``gis``/``ghm``) returns:
    its ``detail`` is a :class:`~stanlogz.estimators.base.FlowDetail`.
    ``names`` labels the unconstrained coordinates (e.g. ``StanModel.param_unc_names()``).
    """
    plt = user_pyplot()

    detail = result.detail if isinstance(result.detail, FlowDetail) else FlowDetail(None)
    flow, lw_p, lw_q = detail.flow, detail.log_w_p, detail.log_w_q
    if flow is None and lw_p is None and lw_q is None:
        raise InputError(f"result of {result.method!r} carries no flow or weights to plot")
    x = as_draw_matrix(draws)
    k = min(max_dims, x.shape[1]) if flow is not None else 0
    ncol = k + 1
    fig, axes = plt.subplots(1, ncol, figsize=(3.2 * ncol, 3.0), squeeze=False)
    axes = axes[0]
    if flow is not None:
        xs = flow.sample(np.random.default_rng(seed), max(4 * x.shape[0], 20000))
        for i in range(k):
            ax = axes[i]
            lo, hi = np.quantile(x[:, i], [0.001, 0.999])
            pad = 0.1 * (hi - lo + 1e-12)
            bins = np.linspace(lo - pad, hi + pad, 60)
            ax.hist(x[:, i], bins=bins, density=True, color="0.75", label="posterior draws")
            ax.hist(xs[:, i], bins=bins, density=True, histtype="step", color="C0", lw=1.5,
                    label="flow")
            label = names[i] if names is not None and i < len(names) else f"x[{i}]"
            ax.set_xlabel(f"{label} (unconstrained)")
            ax.set_yticks([])
        axes[0].legend(fontsize=7, loc="upper right")
    ax = axes[-1]
    sides = [(np.ravel(lw) - result.log_z, label, color) for lw, label, color in
             ((lw_p, "posterior draws", "C1"), (lw_q, "proposal draws", "C0")) if lw is not None]
    sides = [(v[np.isfinite(v)], label, color) for v, label, color in sides]
    finite = np.concatenate([v for v, _, _ in sides]) if sides else np.zeros(0)
    if finite.size:
        # the far left tail (proposal draws where p is negligible) would squash the picture
        lo = min(np.quantile(v, 0.01) for v, _, _ in sides if v.size)
        lo = max(lo, float(np.median(finite)) - 15.0)
        bins = np.linspace(lo, max(finite.max(), lo + 1e-6), 60)
        for v, label, color in sides:
            ax.hist(np.clip(v, lo, None), bins=bins, density=True, histtype="step", lw=1.5,
                    color=color, label=label)
    ax.set_xlabel("log p/q - log Z")
    ax.set_yticks([])
    ax.legend(fontsize=7)
    fig.suptitle(f"{result.method}: log Z = {result.log_z:.4f} ± {result.log_z_se:.4f}",
                 fontsize=10)
    return fig
