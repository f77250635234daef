"""Which density backend serves a program: compiled (C++ through BridgeStan's ABI) or
interpreted (stanli, no build).

``backend="auto"`` runs the interpreter where the program parses there and each operation
needs only what it offers; otherwise (a parse failure, ``jacobian=False``, a time budget on
NUTS, a rewrite that does not keep the constants) the compiled program serves, with one note
naming why. ``"interpreted"`` refuses what the interpreter lacks in one line
(:class:`~stanlogz.errors.BackendUnsupported`); ``"compiled"`` is stanlogz's original path.
The interpreter's density with every constant: :mod:`stanlogz.stan.interpreted_constants`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import InputError, StanCompileError, ToolchainError
from ..toolchain.interpreter import STANLI_VERSION
from .interpreted import InterpretedModel
from .interpreted_constants import check_points, constants_kept, same_transform
from .model import StanModel
from .settings import BACKENDS, default_backend

__all__ = ["check_points", "constants_kept", "load_program", "resolve_backend",
           "same_transform"]


def resolve_backend(backend: str | None) -> str:
    """``backend`` checked (None: ``$STANLOGZ_BACKEND``, else ``DEFAULT_BACKEND``)."""
    backend = default_backend() if backend is None else backend
    if backend not in BACKENDS:
        raise InputError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    return backend


def load_program(path: Path, data: Any, *, backend: str | None, seed: int | None,
                 progress: Callable[[str], None] | None) -> StanModel:
    """The ``.stan`` file at ``path`` with ``data`` on the chosen backend (one note on
    ``progress`` saying which served and, under auto, why it fell back)."""
    backend = resolve_backend(backend)
    if backend == "compiled":
        return StanModel.from_file(path, data, seed=seed, progress=progress)
    try:
        model = InterpretedModel(path.read_text(), data, name=path.stem, stan_file=path.resolve(),
                                 seed=seed, auto=backend == "auto", progress=progress)
    except (StanCompileError, ToolchainError) as exc:
        if backend == "interpreted":
            raise
        if progress:
            progress(f"note: {path.stem}: compiled backend ({exc})")
        return StanModel.from_file(path, data, seed=seed, progress=progress)
    if progress:
        progress(f"{model.name}: interpreted backend (stanli {STANLI_VERSION}, no C++ build)")
    return model
