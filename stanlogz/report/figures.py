"""The one place stanlogz loads matplotlib: every figure is drawn off-screen (Agg) into a file."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def pyplot() -> Any:
    """``matplotlib.pyplot`` with the non-interactive Agg backend (figures go to files)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save(fig: Any, path: str | Path, dpi: float | None = 110) -> Path:
    """Lay out ``fig``, write it to ``path`` (format from the suffix) and close it."""
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, dpi=dpi)
    pyplot().close(fig)
    return out
