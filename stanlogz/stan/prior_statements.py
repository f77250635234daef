"""Prior statements of a Stan program read for what they say beyond normalization: how far a
proper prior lets an unbounded parameter's draws reach (:func:`prior_reach`, for the runaway-draws
check) and the program's log prior as a Stan expression (:func:`lprior_expression`, for the
``lprior`` line a refusal shows). Both use the parsing of :mod:`.priors`."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from .code import _block, strip_comments
from .priors import _BOX_TYPES, _declarations, _frozen, _mentions, _split_top, _statements, evaluate

#: Tail probability whose quantiles bound where a proper prior puts its draws (a normal's
#: ±6.4 sd): unconstrained draws beyond them are not a sign of impropriety.
PRIOR_TAIL = 1e-10


def prior_reach(code: str, data: Mapping[str, Any] | str | None = None) -> dict[str, float]:
    """How far from 0 the draws of each unbounded parameter with a proper prior may reach: the
    larger |quantile| at :data:`PRIOR_TAIL` and 1 − :data:`PRIOR_TAIL` of its prior, for
    parameters without bounds whose prior is one whole-variable statement (``alpha ~
    normal(m, 100)``, ``target += normal_lpdf(alpha | m, 100)``) with arguments known from
    literals or data. A draw of a parameter with a proper prior is not a runaway however wide
    that prior is (a regression intercept under N(0, 100)); parameters not listed are unknown."""
    if isinstance(data, str):
        data = json.loads(data or "{}")
    data = dict(data or {})
    code = strip_comments(code)
    params, model = _block(code, "parameters"), _block(code, "model") or ""
    out: dict[str, float] = {}
    if params is None:
        return out
    stmts = _statements(model)
    for d in _declarations(params, data):
        if d.has_bounds or d.kind not in _BOX_TYPES:
            continue
        on_it = [st for st in stmts if _mentions(st.lhs, d.name)]
        if len(on_it) != 1 or on_it[0].lhs != d.name or not on_it[0].simple \
                or on_it[0].truncated:
            continue
        args = [evaluate(a, data) for a in _split_top(on_it[0].args)] \
            if on_it[0].args.strip() else []
        if any(a is None for a in args):
            continue
        dist = _frozen(on_it[0].dist, args)  # type: ignore[arg-type]
        if dist is None:
            continue
        with np.errstate(all="ignore"):
            reach = max(abs(float(dist.ppf(PRIOR_TAIL))), abs(float(dist.ppf(1 - PRIOR_TAIL))))
        if math.isfinite(reach):
            out[d.name] = reach
    return out


def lprior_expression(code: str, max_len: int = 240) -> str | None:
    """The program's log prior density as a Stan expression (``normal_lpdf(mu | 0, 5) +
    ...``), for a refusal to show the ``lprior`` line a user can paste: None unless every
    parameter has one whole-variable untruncated prior statement (or the sum is longer than
    ``max_len``)."""
    code = strip_comments(code)
    params, model = _block(code, "parameters"), _block(code, "model") or ""
    if params is None:
        return None
    stmts = _statements(model)
    terms = []
    for d in _declarations(params, {}):
        on_it = [st for st in stmts if _mentions(st.lhs, d.name)]
        if len(on_it) != 1 or on_it[0].lhs != d.name or not on_it[0].simple \
                or on_it[0].truncated:
            return None
        args = " ".join(on_it[0].args.split())
        terms.append(f"{on_it[0].dist}_lpdf({d.name}{' | ' + args if args else ''})")
    text = " + ".join(terms)
    return text if terms and len(text) <= max_len else None
