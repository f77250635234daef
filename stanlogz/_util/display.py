"""Printed and notebook displays of results: one mixin gives every result class a loo-style
``repr`` (plain-text tables) and ``_repr_html_`` (the same tables in HTML) from one description,
``Display._display``."""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .tables import format_cell


@dataclass
class Section:
    """One table of a display: a title line (may be empty), column names and rows; a row's first
    cell is its label."""

    title: str
    columns: Sequence[str]
    rows: list[list[Any]]


@dataclass
class View:
    """What a result shows: a headline, its tables and closing notes (warnings, diagnostics)."""

    headline: str
    sections: list[Section] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _text_table(s: Section) -> list[str]:
    cells = [[format_cell(v) for v in row] for row in s.rows]
    cols = list(s.columns)
    widths = [max([len(c)] + [len(r[i]) for r in cells if i < len(r)])
              for i, c in enumerate(cols)]
    lines = [s.title] if s.title else []
    lines.append("  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                           for i, (c, w) in enumerate(zip(cols, widths, strict=True))))
    for r in cells:
        lines.append("  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                               for i, (c, w) in enumerate(zip(r, widths, strict=True))))
    return lines


def render_text(view: View) -> str:
    """The view as plain text: headline, blank-line separated tables, notes."""
    parts = [view.headline]
    for s in view.sections:
        parts.append("\n".join(_text_table(s)))
    if view.notes:
        parts.append("\n".join(view.notes))
    return "\n\n".join(parts)


def render_html(view: View) -> str:
    """The view as an HTML fragment for notebooks."""
    out = [f"<p><b>{html.escape(view.headline)}</b></p>"]
    for s in view.sections:
        if s.title:
            out.append(f"<p>{html.escape(s.title)}</p>")
        head = "".join(f"<th>{html.escape(c)}</th>" for c in s.columns)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(format_cell(v))}</td>" for v in r)
                       + "</tr>" for r in s.rows)
        out.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
    if view.notes:
        out.append("<ul>" + "".join(f"<li>{html.escape(n)}</li>" for n in view.notes)
                   + "</ul>")
    return "".join(out)


class Display:
    """Mixin for result classes: ``repr()`` is a loo-style text summary and notebooks show the
    same tables in HTML. A subclass defines ``_display``; dataclasses using it are declared
    with ``repr=False`` so that the generated ``__repr__`` does not replace this one."""

    def _display(self) -> View:
        raise NotImplementedError

    def __repr__(self) -> str:
        return render_text(self._display())

    def _repr_html_(self) -> str:
        return render_html(self._display())


class Alias(property):
    """A read-only property that is another attribute under a second name; ``canonical`` names
    that attribute and ``scale`` is set where the value is a multiple of it (``looic``)."""

    canonical: str
    scale: float | None


def alias(name: str, doc: str, cast: Callable[[Any], Any] | None = None,
          scale: float | None = None) -> Any:
    """A read-only property that is attribute ``name`` under another name (a loo / ArviZ /
    bridgesampling name): ``cast(value)``, or ``scale * float(value)`` with ``scale``."""

    def get(self: Any) -> Any:
        value = getattr(self, name)
        if scale is not None:
            return scale * float(value)
        return value if cast is None else cast(value)

    prop = Alias(get, doc=doc)
    prop.canonical, prop.scale = name, scale
    return prop


def per_result(name: str, doc: str) -> Any:
    """A read-only property: attribute ``name`` of each of ``self.results``, as an array."""
    return property(lambda self: np.array([getattr(r, name) for r in self.results]), doc=doc)
