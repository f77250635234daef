"""A :class:`~stanlogz.stan.model.StanModel` from whatever a user passes as "the model"."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..errors import InputError
from .backend import load_program
from .inputs import check_stan_file, read_data
from .program import ProgramLike


def load_model(model: ProgramLike, data: Any = None, *, seed: int | None = None,
               progress: Callable[[str], None] | None = None, backend: str | None = None) -> Any:
    """A :class:`stanlogz.stan.model.StanModel` from a model or a ``.stan`` path, with ``data``;
    a path is loaded on ``backend`` (auto, compiled or interpreted; None: ``$STANLOGZ_BACKEND``,
    else ``DEFAULT_BACKEND``: :mod:`stanlogz.stan.backend`)."""
    if isinstance(model, str | os.PathLike):
        path, data = check_stan_file(model), read_data(data)
        return load_program(path, data, backend=backend, seed=seed, progress=progress)
    if not hasattr(model, "log_density_gradient"):
        raise InputError(f"model must be a StanModel or a .stan path, not {type(model).__name__}")
    if data is not None:
        return model.with_data(read_data(data))
    return model


def program_names(models: Sequence[Any], loaded: Sequence[Any]) -> list[str]:
    """The programs' display names: a path's stem, else the built program's name; repeats get
    ``#i`` (their position, from 1)."""
    names = []
    for src, m in zip(models, loaded, strict=True):
        n = Path(src).stem if isinstance(src, str | os.PathLike) else str(getattr(m, "name", "m"))
        names.append(n)
    for i, n in enumerate(names):
        if names.count(n) > 1:
            names[i] = f"{n}#{i + 1}"
    return names
