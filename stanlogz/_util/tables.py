"""Plain-text tables: aligned columns, numbers to about four significant digits."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def format_cell(v: Any) -> str:
    """A table cell: empty for None, floats to about 4 significant digits."""
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.4g}" if abs(v) < 1e-3 or abs(v) >= 1e5 else f"{v:.4f}".rstrip("0").rstrip(".")
    return str(v)


def format_table(header: Sequence[str], rows: Sequence[Sequence[Any]], title: str = "") -> str:
    """Rows as an aligned plain-text table."""
    cells = [[format_cell(v) for v in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(header)]
    lines = [title] if title else []
    lines.append("  ".join(h.rjust(w) for h, w in zip(header, widths, strict=True)))
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in cells]
    return "\n".join(lines)
