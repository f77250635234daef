"""A Stan program rewritten so that its log density keeps every constant under ``propto=True``.

Stan drops the terms that do not depend on parameters in two places only: ``~`` statements and
``_lupdf`` / ``_lupmf`` calls. :func:`keep_constants` rewrites both: each ``y ~ dist(a, b);``
becomes ``target += dist_lpdf(y | a, b);`` (``_lpmf`` for discrete distributions), each
``_lupdf`` / ``_lupmf`` call its ``_lpdf`` / ``_lpmf`` twin. A truncated statement
``y ~ dist(a) T[L, U];`` stays as it is (Stan's truncation: bounds check and normalizing
cdf terms) and gains ``target += dist_lpdf(y | a) - dist_lupdf(y | a);``, the constant the
statement dropped. The rewritten program's ``propto=True`` density is the original program's
``propto=False`` density, which is what an interpreter offering only ``propto=True`` needs for
evidence. Comments and string literals are blanked first; line breaks are kept, so a
statement may span lines and error positions keep their line numbers.
"""

from __future__ import annotations

import functools
import re

from ..errors import InputError

#: Stan's built-in distributions on integers (``_lpmf``); every other built-in is ``_lpdf``.
DISCRETE = frozenset("""
bernoulli bernoulli_logit bernoulli_logit_glm binomial binomial_logit binomial_logit_glm
beta_binomial beta_neg_binomial hypergeometric categorical categorical_logit
categorical_logit_glm discrete_range ordered_logistic ordered_logistic_glm ordered_probit
neg_binomial neg_binomial_2 neg_binomial_2_log neg_binomial_2_log_glm poisson poisson_log
poisson_log_glm poisson_binomial multinomial multinomial_logit dirichlet_multinomial skellam
""".split())

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

_KEYWORDS = frozenset({"else", "if", "for", "while", "in", "return", "print", "reject",
                       "fatal_error", "target"})

_OPEN = {")": "(", "]": "["}

_CLOSE = {"(": ")", "[": "]"}


def blank_comments(code: str, strings: bool = True) -> str:
    """``code`` with comments and string literals (``strings`` False: comments only)
    replaced by spaces (line breaks kept), so positions in it are positions in ``code``."""
    out = list(code)
    i, n = 0, len(code)
    while i < n:
        two = code[i:i + 2]
        if two == "//" or code[i] == "#" and not code.startswith("#include", i):
            j = code.find("\n", i)
            j = n if j < 0 else j
        elif two == "/*":
            j = code.find("*/", i + 2)
            j = n if j < 0 else j + 2
        elif code[i] == '"':
            j = code.find('"', i + 1)
            j = n if j < 0 else j + 1
            if not strings:
                i = j
                continue
        else:
            i += 1
            continue
        for k in range(i, j):
            if out[k] != "\n":
                out[k] = " "
        i = j
    return "".join(out)


def _match(text: str, at: int, step: int) -> int:
    """Index of the bracket matching the one at ``at``: searching forward (``step`` 1) from an
    opening bracket, back (``step`` -1) from a closing one."""
    inner, outer = ("([", ")]") if step > 0 else (")]", "([")
    depth = 0
    for k in range(at, len(text) if step > 0 else -1, step):
        if text[k] in inner:
            depth += 1
        elif text[k] in outer:
            depth -= 1
            if depth == 0:
                return k
    raise InputError(f"unbalanced brackets {'after' if step > 0 else 'before'} a '~' statement")


def _prev(text: str, k: int) -> int:
    """Index of the last non-space character before ``k`` (-1 if none)."""
    k -= 1
    while k >= 0 and text[k].isspace():
        k -= 1
    return k


def _lhs_start(text: str, tilde: int) -> int:
    """Where the expression left of the ``~`` at ``tilde`` starts: walking back over operands,
    operators, calls and indexing to a ``;``, a brace, a keyword or two operands side by side
    (``for (...) y[n] ~``)."""
    k = _prev(text, tilde)
    start = k + 1
    while k >= 0:
        c = text[k]
        if c in ";{}":
            break
        if c in ")]":
            o = _match(text, k, -1)
            p = _prev(text, o)
            start, k = o, p
            if c == ")" and p >= 0 and (text[p] in ")]"):
                break  # "(...) (...)": a control header, then the operand
            continue
        if c.isalnum() or c == "_" or c == ".":
            j = k
            while j >= 0 and (text[j].isalnum() or text[j] in "_."):
                j -= 1
            word = text[j + 1:k + 1]
            if word in _KEYWORDS:
                break
            start = j + 1
            p = _prev(text, j + 1)
            if p >= 0 and (text[p].isalnum() or text[p] in "_)]"):
                break  # juxtaposed: the thing before ends another construct
            k = p
            continue
        start = k  # an operator: part of the expression
        k = _prev(text, k)
    return start


def _distribution_kind(name: str, user_pmf: set[str], user_pdf: set[str]) -> str:
    if name in user_pmf:
        return "lpmf"
    if name in user_pdf:
        return "lpdf"
    return "lpmf" if name in DISCRETE else "lpdf"


@functools.lru_cache(maxsize=64)
def keep_constants(code: str) -> str:
    """``code`` rewritten so its ``propto=True`` log density keeps every constant (see the
    module's docstring); :class:`~stanlogz.InputError` on a ``~`` statement it cannot read."""
    text = blank_comments(code)
    # what is written out: the same text with its string literals (reject's, print's) kept
    kept = blank_comments(code, strings=False)
    user_pmf = set(re.findall(r"\b([A-Za-z]\w*)_lpmf\s*\(", text))
    user_pdf = set(re.findall(r"\b([A-Za-z]\w*)_lpdf\s*\(", text))
    text, kept = _sub_aligned(r"\b(\w+)_lup([dm])f\s*\(", r"\1_lp\2f(", text, kept)
    pieces: list[str] = []
    done = 0
    for m in re.finditer(r"~", text):
        tilde = m.start()
        if tilde < done:
            continue
        lhs0 = _lhs_start(text, tilde)
        lhs = text[lhs0:tilde].strip()
        name_m = _IDENT.match(text, tilde + 1 + (len(text[tilde + 1:]) -
                                                   len(text[tilde + 1:].lstrip())))
        if not lhs or name_m is None:
            raise InputError(f"cannot read the '~' statement near line "
                             f"{text.count(chr(10), 0, tilde) + 1}")
        name = name_m.group(0)
        paren = name_m.end() + (len(text[name_m.end():]) - len(text[name_m.end():].lstrip()))
        if paren >= len(text) or text[paren] != "(":
            raise InputError(f"cannot read the '~ {name}' statement near line "
                             f"{text.count(chr(10), 0, tilde) + 1}")
        close = _match(text, paren, 1)
        args = text[paren + 1:close].strip()
        end = close + 1
        after = text[end:].lstrip()
        truncated = after.startswith("T") and after[1:].lstrip().startswith("[")
        semi = text.find(";", end)
        if semi < 0:
            raise InputError(f"'~ {name}' statement without ';' near line "
                             f"{text.count(chr(10), 0, tilde) + 1}")
        if truncated:
            t_open = text.index("[", end)
            semi = text.find(";", _match(text, t_open, 1))
        kind = _distribution_kind(name, user_pmf, user_pdf)
        call = f"{name}_{kind}({lhs}{' | ' + args if args else ''})"
        if truncated:
            lucall = f"{name}_lu{kind[1:]}({lhs}{' | ' + args if args else ''})"
            stmt = f"{{ {text[lhs0:semi + 1]} target += {call} - {lucall}; }}"
        else:
            stmt = f"target += {call};"
        pieces.append(kept[done:lhs0])
        # the same number of line breaks, so later line numbers stay
        pieces.append(stmt + "\n" * (text.count("\n", lhs0, semi + 1) - stmt.count("\n")))
        done = semi + 1
    pieces.append(kept[done:])
    return "".join(pieces)


def _sub_aligned(pattern: str, repl: str, text: str, kept: str) -> tuple[str, str]:
    """``re.sub(pattern, repl, text)``, the same spans of ``kept`` (aligned with ``text``)
    replaced alike, so that positions in the two stay aligned."""
    out_text, out_kept, last = [], [], 0
    for m in re.finditer(pattern, text):
        new = m.expand(repl)
        out_text += [text[last:m.start()], new]
        out_kept += [kept[last:m.start()], new]
        last = m.end()
    return "".join(out_text + [text[last:]]), "".join(out_kept + [kept[last:]])
