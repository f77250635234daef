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


def unused_parameters(code: str) -> list[str]:
    """Parameters declared in ``code`` that neither the transformed parameters nor the model
    block mention (a cheap textual check; empty when the program cannot be parsed this way)."""
    code = re.sub(r"/\*.*?\*/", " ", code, flags=re.S)
    code = re.sub(r"//[^\n]*|#[^\n]*", " ", code)
    params = _block(code, "parameters")
    if params is None:
        return []
    names = []
    for stmt in params.split(";"):
        stmt = re.sub(r"<[^<>]*(<[^<>]*>[^<>]*)*>", " ", stmt)  # bounds may nest <...>
        stmt = re.sub(r"\[[^\]]*\]", " ", stmt)
        words = re.findall(r"[A-Za-z_]\w*", stmt)
        if words:
            names.append(words[-1])
    used = " ".join(b or "" for b in (_block(code, "model"),
                                      _block(code, r"transformed\s+parameters")))
    return [n for n in names if not re.search(rf"\b{re.escape(n)}\b", used)]
