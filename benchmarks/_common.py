"""Helpers shared by the benchmark scripts."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

#: The repository root (benchmarks are run from it: ``python3 -m benchmarks.NAME``).
ROOT = Path(__file__).resolve().parents[1]
#: The Stan programs shipped with the repository.
STAN_MODELS = ROOT / "stan_models"


def z_cells(z: Sequence[float]) -> str:
    """Markdown cells of a coverage row from z-scores (error / claimed se): mean, rms, max
    |z|, and the shares of |z| above 2 and above 3."""
    import numpy as np

    a = np.asarray(z, dtype=float)
    return (f"{a.mean():+.2f} | {np.sqrt(np.mean(a**2)):.2f} | {np.abs(a).max():.2f} | "
            f"{np.mean(np.abs(a) > 2):.3f} | {np.mean(np.abs(a) > 3):.3f}")
