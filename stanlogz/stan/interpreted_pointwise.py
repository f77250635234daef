"""Batched density-difference terms on the interpreter: many data instances and draws per call.

The density-difference log-likelihood evaluates the program's density (every constant kept)
on one small data instance per observation at every draw: N·S calls of about 0.13 µs of
interpreter work each, but about 0.8 µs from Python (ctypes), which made the pass the bulk of
a first answer. :func:`instance_program` rewrites the program once so that one call does many:
the transformed data, transformed parameters and model blocks (``~`` rewritten to keep every
constant, ``target`` a local sum) become a value-only function ``slz_logp`` of the data and
the parameters, and a generated quantity ``slz_ll`` evaluates it on rows of data instances
(the observation fields cut to the row's observations, the size variable set to its length).
One constrain call per draw then gives the terms of every row, in native code.

``slz_ll`` holds the density of each instance without the Jacobian; the Jacobian is the same
for every instance (the parameter transform does not depend on the data, which the
difference pass checks), so differences between instances equal the per-call path's up to
rounding. :func:`instance_densities` returns None where the rewrite does not compile (a
``_lp`` function call, RNG in transformed data, tuples, ...): the caller keeps the per-call
path.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import InputError, StanCompileError, StanlogzError
from .constants import blank_comments, keep_constants
from .inputs import data_to_json

#: Names the rewrite adds; a program already using the prefix is left to the per-call path.
PREFIX = "slz_"

_BLOCKS = ("functions", "data", "transformed data", "parameters", "transformed parameters",
           "model", "generated quantities")

_VECTORS = ("vector", "simplex", "unit_vector", "sum_to_zero_vector", "ordered",
            "positive_ordered")
_SQUARE = ("cov_matrix", "corr_matrix", "cholesky_factor_corr")
_MATRICES = ("matrix", "cholesky_factor_cov", "column_stochastic_matrix",
             "row_stochastic_matrix", "stochastic_column_matrix", "stochastic_row_matrix",
             "sum_to_zero_matrix", *_SQUARE)
_BASES = ("int", "real", "row_vector", *_VECTORS, *_MATRICES)

_DECL = re.compile(r"\s*(array\s*\[)?")


def _close(text: str, at: int) -> int:
    """Index just past the bracket group opening at ``at`` (``[``, ``(``, ``<`` or ``{``)."""
    pairs = {"[": "]", "(": ")", "<": ">", "{": "}"}
    opening, closing = text[at], pairs[text[at]]
    depth = 0
    for k in range(at, len(text)):
        if text[k] == opening:
            depth += 1
        elif text[k] == closing:
            depth -= 1
            if depth == 0:
                return k + 1
    raise InputError(f"unbalanced '{opening}' in the program")


def split_blocks(code: str) -> dict[str, str]:
    """The program's blocks by name (their text between the braces), comments blanked."""
    text = blank_comments(code)
    out: dict[str, str] = {}
    pattern = re.compile(r"\s*(functions|data|transformed\s+data|parameters|"
                         r"transformed\s+parameters|model|generated\s+quantities)\s*\{")
    k = 0
    while k < len(text):
        m = pattern.match(text, k)
        if m is None:
            if text[k:].strip():
                raise InputError("the program has text outside its blocks")
            break
        name = " ".join(m.group(1).split())
        end = _close(text, m.end() - 1)
        out[name] = text[m.end():end - 1]
        k = end
    return out


def _statements(block: str) -> list[str]:
    """The top-level statements of a block (``;``-ended, or a braced compound/control one)."""
    out, start, k = [], 0, 0
    while k < len(block):
        c = block[k]
        if c in "([":
            k = _close(block, k)
            continue
        if c == "{":
            k = _close(block, k)
            rest = block[k:].lstrip()
            if not rest.startswith("else"):
                out.append(block[start:k])
                start = k
            continue
        if c == ";":
            out.append(block[start:k + 1])
            start = k + 1
        k += 1
    if block[start:].strip():
        out.append(block[start:])
    return [s for s in out if s.strip()]


def _declaration(stmt: str) -> tuple[str, str, str, list[str], str] | None:
    """A top-level declaration read as (array sizes, base type, sizes, names, rest): e.g.
    ``array[N] vector<lower=0>[K] a, b = x;`` gives ``("N", "vector", "K", ["a", "b"], "= x;")``
    (names hold one entry when there is an initial value); None for other statements."""
    m = re.match(r"\s*(?:array\s*(\[))?", stmt)
    assert m is not None
    k, dims = m.end(), ""
    if m.group(1):
        end = _close(stmt, m.start(1))
        dims, k = stmt[m.start(1) + 1:end - 1], end
    b = re.match(r"\s*([A-Za-z_]\w*)", stmt[k:])
    if b is None or b.group(1) not in _BASES:
        return None
    base, k = b.group(1), k + b.end()
    while True:
        rest = stmt[k:].lstrip()
        k = len(stmt) - len(rest)
        if rest.startswith("<"):
            k = _close(stmt, k)
        elif rest.startswith("["):
            end = _close(stmt, k)
            sizes, k = stmt[k + 1:end - 1], end
            break
        else:
            sizes = ""
            break
    tail = stmt[k:].strip().rstrip(";")
    names = [n.strip() for n in tail.split(",")] if "=" not in tail else [tail]
    if not all(re.fullmatch(r"[A-Za-z]\w*(\s*=.*)?", n, flags=re.S) for n in names):
        return None
    return dims, base, sizes, names, tail


def _plain_type(base: str, sizes: str) -> str:
    """The unconstrained local type of a (possibly constrained) declaration."""
    if base in _SQUARE or base == "cholesky_factor_cov" and "," not in sizes:
        return f"matrix[{sizes}, {sizes}]"
    kind = ("vector" if base in _VECTORS else "matrix" if base in _MATRICES else base)
    return f"{kind}[{sizes}]" if sizes else kind


def _argument_type(dims: str, base: str) -> str:
    kind = ("vector" if base in _VECTORS else "matrix" if base in _MATRICES else base)
    return f"array[{',' * dims.count(',')}] {kind}" if dims else kind


def _locals(block: str) -> str:
    """A transformed data/parameters block as function-body statements: each top-level
    declaration without its constraints (locals take none)."""
    out = []
    for stmt in _statements(block):
        decl = _declaration(stmt)
        if decl is None:
            out.append(stmt)
            continue
        dims, base, sizes, names, _ = decl
        head = (f"array[{dims}] " if dims else "") + _plain_type(base, sizes)
        out.append("\n" + "\n".join(f"{head} {n};" for n in names))
    return "".join(out)


def _arguments(block: str) -> list[tuple[str, str]]:
    """(function argument type, name) of each variable a data or parameters block declares."""
    out = []
    for stmt in _statements(block):
        decl = _declaration(stmt)
        if decl is None or "=" in decl[4]:
            raise InputError(f"cannot read the declaration {' '.join(stmt.split())!r}")
        dims, base, _, names, _ = decl
        out.extend((_argument_type(dims, base), n) for n in names)
    return out


def instance_program(code: str, fields: Sequence[str], size_name: str) -> str:
    """The program ``code`` rewritten so that its generated quantity ``slz_ll`` holds the log
    density (every constant, no Jacobian) of the data instances in the rows of the added data
    ``slz_idx`` (1-based observations, ``slz_len`` of them per row); see the module docstring.
    :class:`~stanlogz.InputError` where the program cannot be read this way."""
    if PREFIX in code:
        raise InputError(f"the program already uses names starting with {PREFIX!r}")
    blocks = split_blocks(keep_constants(code))
    data, params = _arguments(blocks.get("data", "")), _arguments(blocks.get("parameters", ""))
    missing = {size_name, *fields} - {n for _, n in data}
    if missing:
        raise InputError(f"the data block does not declare {sorted(missing)}")
    model = re.sub(r"\btarget\s*\(\s*\)", f"{PREFIX}target", blocks.get("model", ""))
    model = re.sub(r"\btarget\s*\+=", f"{PREFIX}target +=", model)
    signature = ", ".join(f"{t} {n}" for t, n in [*data, *params])
    body = (_locals(blocks.get("transformed data", "")) + "\n"
            + _locals(blocks.get("transformed parameters", "")) + "\n"
            f"real {PREFIX}target = 0;\n{{{model}}}\nreturn {PREFIX}target;")
    row = f"{PREFIX}idx[{PREFIX}j, 1:{PREFIX}len[{PREFIX}j]]"
    passed = [f"{PREFIX}len[{PREFIX}j]" if n == size_name else f"{n}[{row}]" if n in fields
              else n for _, n in data] + [n for _, n in params]
    td = blocks.get("transformed data")
    return "\n".join([
        f"functions {{{blocks.get('functions', '')}",
        f"real {PREFIX}logp({signature}) {{{body}}}", "}",
        f"data {{{blocks.get('data', '')}",
        f"int<lower=0> {PREFIX}m; int<lower=0> {PREFIX}k;",
        f"array[{PREFIX}m] int<lower=0, upper={PREFIX}k> {PREFIX}len;",
        f"array[{PREFIX}m, {PREFIX}k] int {PREFIX}idx;", "}",
        *([f"transformed data {{{td}}}"] if td is not None else []),
        f"parameters {{{blocks.get('parameters', '')}}}",
        f"generated quantities {{ vector[{PREFIX}m] {PREFIX}ll;",
        f"for ({PREFIX}j in 1:{PREFIX}m) {PREFIX}ll[{PREFIX}j] = "
        f"{PREFIX}logp({', '.join(passed)}); }}",
    ])


#: Rows (data instances) one batched instance holds at most. The interpreter keeps about
#: 2.4 MB per row for posteriordb 2pl_latent_reg_irt (1.1 GB at 500 rows, 4.7 GB at 2,000,
#: whatever the draws), and its pass over 7,000 observations in one instance per thread was
#: killed for memory at 24 GB. More rows are split over instances built one after another;
#: the build costs about the same per row either way (9 ms a row there).
MAX_ROWS = 256

#: Per (program text, fields, size): the rewritten program's MIR, or None where it fails.
_programs: dict[tuple[str, tuple[str, ...], str], str | None] = {}
_lock = threading.Lock()


def _mir(model: Any, fields: Sequence[str], size_name: str) -> str | None:
    from ..toolchain.interpreter import program_mir

    key = (model.code, tuple(fields), size_name)
    with _lock:
        if key in _programs:
            return _programs[key]
    try:
        mir: str | None = program_mir(instance_program(model.code, fields, size_name),
                                      model.include_paths)
    except (InputError, StanCompileError):
        mir = None
    with _lock:
        _programs[key] = mir
    return mir


def instance_densities(model: Any, data: Mapping[str, Any], fields: Sequence[str],
                       size_name: str, rows: Sequence[Sequence[int]], unc: np.ndarray,
                       threads: int = 1, timing: dict[str, float] | None = None
                       ) -> np.ndarray | None:
    """``(S, len(rows))`` log densities (every constant, no Jacobian) of the interpreted
    ``model`` on the data instances ``rows`` (0-based observations each; the fields cut to
    them, ``size_name`` their count) at the unconstrained draws ``unc`` ``(S, dim)``, the rows
    split over ``threads``; None where the program cannot be evaluated this way (the caller
    uses the per-call path). ``timing`` (one thread) receives the seconds spent building the
    instance (``"build"``) and evaluating it (``"evaluate"``)."""
    mir = _mir(model, fields, size_name)
    if mir is None:
        return None
    parts = max(1, min(threads, len(rows) // 64))
    if parts > 1:  # the native calls release the GIL: one instance per thread
        from concurrent.futures import ThreadPoolExecutor

        cuts = np.linspace(0, len(rows), parts + 1).astype(int)
        with ThreadPoolExecutor(parts) as pool:
            blocks = list(pool.map(lambda ab: instance_densities(
                model, data, fields, size_name, rows[ab[0]:ab[1]], unc, threads=1),
                zip(cuts[:-1], cuts[1:], strict=True)))
        return None if any(b is None for b in blocks) else np.hstack(blocks)
    base = json.loads(data_to_json(data))
    blocks, spent = [], {"build": 0.0, "evaluate": 0.0}
    for a in range(0, len(rows), MAX_ROWS):  # one instance after another: bounded memory
        block = _one_instance(model, base, mir, rows[a:a + MAX_ROWS], unc, spent)
        if block is None:
            return None
        blocks.append(block)
    if timing is not None:
        timing.update(spent)
    return np.hstack(blocks) if blocks else np.zeros((unc.shape[0], 0))


def _one_instance(model: Any, base: dict[str, Any], mir: str, rows: Sequence[Sequence[int]],
                  unc: np.ndarray, spent: dict[str, float]) -> np.ndarray | None:
    """The densities of ``rows`` from one interpreted instance of the rewritten program
    ``mir`` on the data ``base`` (parsed once by the caller); its build and evaluation
    seconds are added to ``spent``."""
    width = max((len(r) for r in rows), default=0)
    idx = [[i + 1 for i in r] + [1] * (width - len(r)) for r in rows]
    extra = {f"{PREFIX}m": len(rows), f"{PREFIX}k": width,
             f"{PREFIX}len": [len(r) for r in rows], f"{PREFIX}idx": idx}
    t0 = time.perf_counter()
    try:
        # the interpreter's slow fallback (often slower than the per-call path) is refused
        inst = type(model)(model.code, {**base, **extra}, name=model.name,
                           stan_file=model.stan_file, seed=model.seed, mir=mir,
                           no_fallback=True)
        if inst.dim != model.dim:
            return None
        t1 = time.perf_counter()
        values = inst.constrain_many(unc, include_gq=True, seed=1)
    except (StanlogzError, RuntimeError, ValueError):
        return None
    spent["build"] += t1 - t0
    spent["evaluate"] += time.perf_counter() - t1
    return values[:, values.shape[1] - len(rows):]
