"""Cheap textual checks on a Stan program's code (no parser: blocks found by braces)."""

from __future__ import annotations

import re


def _block(code: str, header: str) -> str | None:
    m = re.search(rf"(?:^|[\n}}])\s*{header}\s*\{{", code)
    if not m:
        return None
    depth, i = 1, m.end()
    while i < len(code) and depth:
        depth += {"{": 1, "}": -1}.get(code[i], 0)
        i += 1
    return code[m.end(): i - 1]


def strip_comments(code: str | None) -> str:
    """``code`` with its comments (``/* */``, ``//``, ``#``) blanked out."""
    code = re.sub(r"/\*.*?\*/", " ", code or "", flags=re.S)
    return re.sub(r"//[^\n]*|#[^\n]*", " ", code)


def model_block(code: str | None) -> str:
    """The model block of ``code`` with its comments blanked (empty when there is none)."""
    return _block(strip_comments(code), "model") or ""


def parameter_statements(code: str | None) -> list[str]:
    """The ``;``-separated statements of the parameters block of ``code`` (comments blanked;
    empty when there is no such block)."""
    block = _block(strip_comments(code), "parameters")
    return [] if block is None else block.split(";")


def data_names(code: str | None) -> list[str]:
    """The variables the data block of ``code`` declares, in order (comments blanked; empty when
    there is no data block): the last name of each declaration once its bounds ``<...>`` and
    sizes ``[...]`` are removed (``array[N] real x``, ``vector<lower=0>[N] y``, ``int y[N]``)."""
    block = _block(strip_comments(code), "data")
    if block is None:
        return []
    names = []
    for stmt in block.split(";"):
        stmt = re.sub(r"<[^<>]*(<[^<>]*>[^<>]*)*>", " ", stmt)
        stmt = re.sub(r"\[[^\]]*\]", " ", stmt)
        words = re.findall(r"[A-Za-z_]\w*", stmt)
        if words:
            names.append(words[-1])
    return names


def unused_parameters(code: str) -> list[str]:
    """Parameters declared in ``code`` that neither the transformed parameters nor the model
    block mention (a cheap textual check; empty when the program cannot be parsed this way)."""
    code = strip_comments(code)
    names = []
    for stmt in parameter_statements(code):
        stmt = re.sub(r"<[^<>]*(<[^<>]*>[^<>]*)*>", " ", stmt)  # bounds may nest <...>
        stmt = re.sub(r"\[[^\]]*\]", " ", stmt)
        words = re.findall(r"[A-Za-z_]\w*", stmt)
        if words:
            names.append(words[-1])
    used = " ".join(b or "" for b in (_block(code, "model"),
                                      _block(code, r"transformed\s+parameters")))
    return [n for n in names if not re.search(rf"\b{re.escape(n)}\b", used)]
