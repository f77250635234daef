"""The one place stanlogz loads matplotlib: the command line's figures are drawn off-screen (Agg)
into a file; the public plots (:mod:`stanlogz.report.plotting`) use matplotlib's own backend."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def pyplot() -> Any:
    """``matplotlib.pyplot`` with the non-interactive Agg backend (figures go to files)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def user_pyplot() -> Any:
    """``matplotlib.pyplot`` with the backend matplotlib chooses (inline in a notebook, Agg where
    there is no display): the public plots' figures show where the user works."""
    import matplotlib.pyplot as plt

    return plt


def save(fig: Any, path: str | Path, dpi: float | None = 110) -> Path:
    """Lay out ``fig``, write it to ``path`` (format from the suffix) and close it."""
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, dpi=dpi)
    pyplot().close(fig)
    return out
