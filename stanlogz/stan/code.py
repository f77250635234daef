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


#: Distributions under which a data value that enters nowhere else makes the log density a
#: quadratic function of it (of every value, for the multivariate ones).
_NORMAL_FAMILY = ("normal", "normal_id_glm", "std_normal", "multi_normal",
                  "multi_normal_cholesky", "multi_normal_prec")


def _matching(text: str, at: int) -> int:
    """Index of the bracket closing the one opening at ``at``."""
    opening = text[at]
    closing = {"(": ")", "[": "]"}[opening]
    depth = 0
    for k in range(at, len(text)):
        depth += (text[k] == opening) - (text[k] == closing)
        if depth == 0:
            return k
    return len(text)


def gaussian_variate(code: str | None, name: str, bounded: bool = False) -> bool:
    """Whether the data variable ``name`` enters ``code``'s density only as the variate of
    normal-family statements added to the target as they are: ``name ~ normal(...);`` (or
    ``name[...]``), ``target += normal_lpdf(name | ...);`` and the ``_lupdf``,
    ``normal_id_glm``, ``std_normal`` and ``multi_normal`` forms, with no truncation, no bound
    on its declaration, and no other mention outside the generated quantities. Then the log
    density is a quadratic function of each of its values at any parameters, exactly, so the
    conditional of one value is Gaussian everywhere (no far mode, no other tail). A textual
    check, conservative: any other use (a lag, a mixture's ``log_sum_exp``, a transform of
    the value, a mention in transformed data) answers False. ``bounded``: a bound on the
    declaration is allowed (the caller normalizes over the bounded range)."""
    code = strip_comments(code)
    word = rf"(?<![\w.]){re.escape(name)}(?!\w)"
    if not code or not re.search(word, code):
        return False
    for header in ("functions", "transformed data", "parameters", "transformed parameters"):
        block = _block(code, header)
        if block is not None and re.search(word, block):
            return False
    for stmt in (_block(code, "data") or "").split(";"):
        if not bounded and re.search(rf"{word}\s*$", stmt.strip()) \
                and re.search(r"<[^;]*(lower|upper)", stmt):
            return False  # a bounded value: its conditional is truncated
    model = model_block(code)
    family = "|".join(_NORMAL_FAMILY)
    start = r"(?:^|(?<=[;{}\)]))\s*"
    forms = (re.compile(rf"{start}(?P<v>{word})\s*(\[[^\]]*\])?\s*~\s*(?:{family})\s*\("),
             re.compile(rf"{start}target\s*\+=\s*(?:{family})_lu?pdf\s*\(\s*(?P<v>{word})"
                        r"\s*(\[[^\]]*\])?\s*[|)]"))
    variates = set()
    for form in forms:
        for m in form.finditer(model):
            call = model.rindex("(", 0, m.start("v")) if form is forms[1] else m.end() - 1
            if not model[_matching(model, call) + 1:].lstrip().startswith(";"):
                return False  # a truncation T[...], or more terms after the call
            variates.add(m.start("v"))
    found = {m.start() for m in re.finditer(word, model)}
    return bool(found) and found == variates
