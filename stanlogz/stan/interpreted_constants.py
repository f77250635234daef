"""The interpreter's density with every constant (its ``propto=False``) and the checks that
compare it with the compiled build.

:func:`constants_kept` gives the program rewritten so that ``propto=True`` keeps every constant
(:func:`~stanlogz.stan.constants.keep_constants`). Where the build cache already holds the
compiled library, the two are compared once at a few points (1e-10 relative) and the verdict is
cached per program text and interpreter build id; a rewrite that disagrees or does not run is
refused (or falls back to compiled under auto), never a silent ``-inf``. The models passed in
are :class:`~stanlogz.stan.interpreted.InterpretedModel` instances (their own type builds the
rewritten one, so this module does not import theirs).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import BackendUnsupported, InputError, Route, StanCompileError
from ..toolchain.interpreter import cached_library, interpreter_id
from .constants import keep_constants
from .inputs import StanJson
from .model import StanModel

#: Relative agreement asked of the rewritten program against the compiled ``propto=False``.
RTOL = 1e-10

#: Unconstrained points of the check: the origin and two fixed draws in (-1, 1)^dim.
_CHECK_SEED = 20261128


def _record_path(code: str) -> Path:
    from ..toolchain import cache_root

    key = hashlib.sha256(f"{code}\0{interpreter_id()}\0constants-v2".encode()).hexdigest()[:24]
    folder = cache_root() / "interpreter"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{key}.json"


def check_points(dim: int) -> np.ndarray:
    """The unconstrained points where the two backends are compared."""
    rng = np.random.default_rng(_CHECK_SEED)
    return np.vstack([np.zeros(dim), rng.uniform(-1, 1, (2, dim))])


def same_transform(model: StanModel, compiled: StanModel) -> bool:
    """Whether the two backends map unconstrained points to the same constrained values (at
    :func:`check_points` and, where the program rejects those, points nearer the origin). The
    interpreter's Stan is newer than the compiled toolchain's: its simplex transform differs,
    so the same unconstrained point is another parameter value. True where no point can be
    compared (nothing says they differ)."""
    k = model.param_num()
    rng = np.random.default_rng(_CHECK_SEED + 1)
    points = np.vstack([check_points(model.dim), 0.1 * rng.uniform(-1, 1, (4, model.dim))])
    compared = 0
    for x in points:
        try:
            a, b = model.constrain(x)[:k], compiled.constrain(x)[:k]
        except Exception:  # noqa: BLE001 - a point the program rejects (either backend)
            continue
        if not np.allclose(a, b, rtol=1e-12, atol=1e-12):
            return False
        compared += 1
        if compared == 3:
            break
    return True


def disagreement(model: Any, full: Any,
                 compiled: StanModel) -> str | None:
    """Why the constant that the interpreter's constants-kept program adds (its density minus
    the original's ``propto=True`` one) differs from the one the compiled program drops
    (``propto=False`` minus ``propto=True``), at :func:`check_points` (None where they agree to
    ``RTOL`` of the density at every point both evaluate). The constant depends on the data
    only, so the comparison holds where the two backends' transforms differ."""
    xs = check_points(model.dim)
    with np.errstate(invalid="ignore"):  # -inf - -inf at a point the program rejects: skipped
        mine = full._native_many(xs) - model._native_many(xs)
        ref_full = compiled.log_density_many(xs, propto=False)
        ref = ref_full - compiled.log_density_many(xs, propto=True)
    for a, b, scale in zip(mine, ref, ref_full, strict=True):
        if np.isfinite(a) and np.isfinite(b) and abs(a - b) > RTOL * max(1.0, abs(scale)):
            return (f"the constant it keeps is {a:.12g} where the compiled program drops "
                    f"{b:.12g}")
    return None


#: Per program text: the constants-kept program's MIR (None where it does not run) and the
#: reason it cannot serve (None where it can), so that data instances (loo's thousands of
#: single-observation instances) rewrite, parse and check once per process.
_kept: dict[str, tuple[str | None, str | None]] = {}

_kept_lock = threading.Lock()


def _kept_program(model: Any) -> tuple[str | None, str | None]:
    """The constants-kept program of ``model``'s text: (its MIR, why it cannot serve)."""
    record_file = _record_path(model.code)
    record = None
    with contextlib.suppress(OSError, ValueError):
        record = json.loads(record_file.read_text())
    reason = record.get("reason") if isinstance(record, dict) else None
    if reason is not None:
        return None, reason
    try:
        full = type(model)(keep_constants(model.code), StanJson(model.data_json),
                                name=model.name, stan_file=model.stan_file, seed=model.seed)
    except (InputError, StanCompileError) as exc:
        return None, f"the program rewritten to keep them does not run ({exc})"
    if record is None:
        lib = cached_library(model.code, model.name, model.include_paths)
        if lib is not None:
            compiled = StanModel(lib, StanJson(model.data_json), name=model.name,
                                 code=model.code, seed=model.seed)
            reason = disagreement(model, full, compiled)
            with contextlib.suppress(OSError):
                tmp = record_file.with_suffix(f".{os.getpid()}.tmp")
                tmp.write_text(json.dumps({"reason": reason, "interpreter": interpreter_id()}))
                os.replace(tmp, record_file)
    return full.mir, reason


def constants_kept(model: Any) -> StanModel:
    """The model serving ``model``'s ``propto=False`` densities: the rewritten program on the
    interpreter (called with ``propto=True``), or the compiled program under auto when the
    rewrite fails or disagrees; :class:`~stanlogz.errors.BackendUnsupported` otherwise."""
    with _kept_lock:
        known = _kept.get(model.code)
    if known is None:
        known = _kept_program(model)
        with _kept_lock:
            _kept[model.code] = known
    mir, reason = known
    if reason is None and mir is not None:
        return type(model)(keep_constants(model.code), StanJson(model.data_json),
                                name=model.name, stan_file=model.stan_file, seed=model.seed,
                                mir=mir)
    if model.auto:
        return model.compiled(f"the density with every constant (propto=False: {reason})")
    route = Route(options={"backend": "compiled"})
    raise BackendUnsupported(
        f"{model.name}: the interpreted backend cannot give the density with every constant "
        f"(propto=False, which evidence needs): {reason}; run with {route}", routes=(route,))
