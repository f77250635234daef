"""Rounded constrained draws projected back onto their constraints before unconstraining.

CmdStan writes 6 significant digits by default, so a simplex sums to 1 only within ~1e-6, a
Cholesky factor's rows have unit length only within ~1e-6, two ordered values may tie and a
bounded value may print as its bound; Stan's unconstraining transforms reject (or send to
infinity) all of them. :func:`project_rounded` maps each draw to the nearest valid value of the
parameter's declared type (found in the program's ``parameters`` block):

* ``simplex``: entries clipped to be positive, divided by their sum;
* ``unit_vector``: divided by its norm;
* ``ordered`` / ``positive_ordered``: ties (and a non-positive first value) moved apart by a
  quarter of the rounding unit;
* ``cholesky_factor_corr``: strict upper triangle zeroed, diagonal positive, rows normalized;
  ``cholesky_factor_cov``: upper part zeroed, diagonal positive;
* ``corr_matrix`` / ``cov_matrix``: symmetrized, eigenvalues clipped positive (and rescaled to
  a unit diagonal for a correlation matrix);
* ``lower=`` / ``upper=`` bounds given by a number or a scalar data variable: a value on (or
  past) the bound moved inside by a quarter of the rounding unit.

The largest change over all draws and entries is reported, with the parameter it was in.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..stan.code import parameter_statements
from ..stan.program import StanProgram

#: Declared types whose values must be projected, and how many trailing axes the type has.
TYPES = {"simplex": 1, "unit_vector": 1, "ordered": 1, "positive_ordered": 1,
         "cholesky_factor_corr": 2, "cholesky_factor_cov": 2, "corr_matrix": 2,
         "cov_matrix": 2}

#: Significant digits CmdStan writes by default (``sig_figs = -1``).
CMDSTAN_SIG_FIGS = 6

_TINY = np.finfo(float).tiny


@dataclass(frozen=True)
class Declaration:
    """One parameter's constraint: its type (``TYPES`` or ``"other"``) and numeric bounds."""

    name: str
    kind: str
    lower: float | None = None
    upper: float | None = None


def _split_top(text: str) -> list[str]:
    """``text`` split at commas outside brackets and parentheses."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        depth += {"(": 1, "[": 1, "<": 1, ")": -1, "]": -1, ">": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    return parts + [cur]


def _number(expr: str, data: dict[str, Any]) -> float | None:
    expr = expr.strip()
    try:
        return float(expr)
    except ValueError:
        pass
    neg = expr.startswith("-")
    name = expr[1:].strip() if neg else expr
    value = data.get(name) if re.fullmatch(r"[A-Za-z_]\w*", name) else None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return -float(value) if neg else float(value)
    return None


def declarations(code: str, data: dict[str, Any] | None = None) -> list[Declaration]:
    """The constraints of the parameters declared in ``code`` (bounds that are not a number or
    a scalar data variable are left out)."""
    out = []
    for stmt in parameter_statements(code):
        stmt = " ".join(stmt.split())
        stmt = re.sub(r"^array\s*\[[^\]]*\]\s*", "", stmt)
        m = re.match(r"([A-Za-z_]\w*)\s*(<(?:[^<>]|<[^<>]*>)*>)?\s*(\[[^\]]*\])?\s*"
                     r"([A-Za-z_]\w*)\s*$", stmt)
        if not m:
            continue
        kind, bounds, name = m.group(1), m.group(2), m.group(4)
        lower = upper = None
        if bounds:
            for part in _split_top(bounds[1:-1]):
                key, _, val = part.partition("=")
                if key.strip() == "lower":
                    lower = _number(val, data or {})
                elif key.strip() == "upper":
                    upper = _number(val, data or {})
        out.append(Declaration(name, kind if kind in TYPES else "other", lower, upper))
    return out


def _unit(x: np.ndarray | float, sig_figs: int) -> np.ndarray:
    """The rounding unit of values written with ``sig_figs`` significant digits."""
    a = np.maximum(np.abs(np.asarray(x, dtype=float)), _TINY)
    return 10.0 ** (np.floor(np.log10(a * (1 - 1e-12))) - (sig_figs - 1))


def _ordered(x: np.ndarray, sig_figs: int, positive: bool) -> np.ndarray:
    x = x.copy()
    if positive:
        x[..., 0] = np.where(x[..., 0] > 0, x[..., 0], 0.25 * _unit(x[..., 0], sig_figs))
    for k in range(1, x.shape[-1]):
        prev = x[..., k - 1]
        x[..., k] = np.where(x[..., k] > prev, x[..., k],
                             prev + 0.25 * _unit(prev, sig_figs) + _TINY)
    return x


def _psd(m: np.ndarray, corr: bool) -> np.ndarray:
    m = 0.5 * (m + np.swapaxes(m, -1, -2))
    vals, vecs = np.linalg.eigh(m)
    floor = 1e-12 * np.maximum(np.max(np.abs(vals), axis=-1, keepdims=True), _TINY)
    if np.all(vals > floor):
        out = m
    else:
        vals = np.maximum(vals, floor)
        out = (vecs * vals[..., None, :]) @ np.swapaxes(vecs, -1, -2)
        out = 0.5 * (out + np.swapaxes(out, -1, -2))
    if corr:
        d = np.sqrt(np.diagonal(out, axis1=-2, axis2=-1))
        out = out / d[..., :, None] / d[..., None, :]
        idx = np.arange(out.shape[-1])
        out[..., idx, idx] = 1.0
    return out


def _project(kind: str, x: np.ndarray, sig_figs: int) -> np.ndarray:
    """``x`` (..., trailing axes of ``kind``) projected onto the type's constraint."""
    if kind == "simplex":
        x = np.maximum(x, _TINY)
        return x / x.sum(axis=-1, keepdims=True)
    if kind == "unit_vector":
        return x / np.linalg.norm(x, axis=-1, keepdims=True)
    if kind in ("ordered", "positive_ordered"):
        return _ordered(x, sig_figs, kind == "positive_ordered")
    if kind in ("cholesky_factor_corr", "cholesky_factor_cov"):
        x = np.tril(x)
        k = min(x.shape[-2:])
        idx = np.arange(k)
        x[..., idx, idx] = np.maximum(x[..., idx, idx], _TINY)
        if kind == "cholesky_factor_corr":
            x = x / np.linalg.norm(x, axis=-1, keepdims=True)
        return x
    return _psd(x, corr=kind == "corr_matrix")


def _bounded(x: np.ndarray, d: Declaration, sig_figs: int) -> np.ndarray:
    """Values on a bound, or past it by at most one rounding unit, moved inside; values
    further out are left for Stan to reject."""
    if d.lower is not None:
        u = _unit(d.lower, sig_figs)
        x = np.where((x <= d.lower) & (x >= d.lower - u), d.lower + 0.25 * u + _TINY, x)
    if d.upper is not None:
        u = _unit(d.upper, sig_figs)
        x = np.where((x >= d.upper) & (x <= d.upper + u), d.upper - 0.25 * u, x)
    return x


def _within_rounding(new: np.ndarray, old: np.ndarray, sig_figs: int) -> np.ndarray:
    """``new`` where each draw (row) moved by at most 100 rounding units of its largest
    entry, ``old`` elsewhere: a draw that far off the constraint was not rounded, it is
    invalid, and Stan's own check should say so."""
    scale = np.maximum(np.abs(old).max(axis=1, keepdims=True), 1.0)
    ok = np.abs(new - old).max(axis=1, keepdims=True) <= 100 * _unit(scale, sig_figs)
    return np.where(ok, new, old)


def _indices(names: list[str], name: str) -> tuple[list[int], list[tuple[int, ...]]]:
    cols, idx = [], []
    for j, n in enumerate(names):
        if n == name or n.startswith(name + "."):
            cols.append(j)
            idx.append(tuple(int(i) - 1 for i in n[len(name) + 1:].split(".") if i))
    return cols, idx


def project_rounded(theta: np.ndarray, names: list[str], model: StanProgram,
                    sig_figs: int = CMDSTAN_SIG_FIGS) -> tuple[np.ndarray, str | None]:
    """``theta`` (draws, parameters named ``names``) with every constrained parameter of
    ``model`` (its program text) projected onto its constraint, and a note naming the largest
    change when it exceeds floating-point noise (None otherwise)."""
    code = getattr(model, "code", "") or ""
    try:
        data = json.loads(getattr(model, "data_json", "") or "{}")
    except (ValueError, TypeError):
        data = {}
    decls = declarations(code, data if isinstance(data, dict) else {})
    if not decls:
        return theta, None
    out = np.array(theta, dtype=float, copy=True)
    worst, where = 0.0, ""
    for d in decls:
        if d.kind == "other" and d.lower is None and d.upper is None:
            continue
        cols, idx = _indices(names, d.name)
        if not cols:
            continue
        vals = out[:, cols]
        if d.kind != "other":
            ndim = TYPES[d.kind]
            shape = tuple(max(i[a] for i in idx) + 1 for a in range(len(idx[0])))
            if len(shape) < ndim:
                continue
            full = np.zeros((out.shape[0], *shape))
            pos = tuple(np.array(a) for a in zip(*idx, strict=True))
            full[(slice(None), *pos)] = vals
            vals = _within_rounding(_project(d.kind, full, sig_figs)[(slice(None), *pos)],
                                    vals, sig_figs)
        vals = _bounded(vals, d, sig_figs)
        change = np.abs(vals - out[:, cols])
        if change.size and float(change.max()) > worst:
            worst = float(change.max())
            where = names[cols[int(np.argmax(change.max(axis=0)))]]
        out[:, cols] = vals
    if worst <= 1e-12:
        return out, None
    return out, (f"rounded draws were projected back onto their constraints before "
                 f"unconstraining (largest change {worst:.2g}, in {where}); write CSV files "
                 "with more significant digits (sig_figs=18) to avoid it")


def sig_figs_of(config: dict[str, str]) -> int:
    """Significant digits of a CmdStan CSV from its ``sig_figs`` setting (-1: CmdStan's 6)."""
    try:
        s = int(config.get("sig_figs", "-1").split()[0])
    except (ValueError, IndexError):
        return CMDSTAN_SIG_FIGS
    return s if s > 0 else CMDSTAN_SIG_FIGS
