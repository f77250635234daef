"""Shared fixtures for tests that need compiled Stan programs.

``compiled(name_or_path, data=None) -> StanModel`` (session-scoped factory fixture):

* ``name_or_path`` is a program name under ``stan_models/tests/`` (``"normal"``,
  ``"transforms"``) or ``stan_models/examples/``, or a path to any ``.stan`` file.
* ``data`` is anything :class:`stanlogz.stan.model.StanModel` accepts; when None, the ``.json`` file
  next to the program (same stem) is used if there is one.
* Each program is compiled at most once per session (and normally not at all: builds live in
  the per-user cache, ``~/.cache/stanlogz`` or ``$STANLOGZ_CACHE``, so CI reuses them across
  runs). Other data for the same program reuses the library via ``with_data``.

``isolated_cache`` (function-scoped) points ``STANLOGZ_CACHE`` at a temporary directory that
shares the already-built model-independent runtime with the user cache, so cache behaviour can
be tested without paying for the runtime build again.

Test programs: ``normal`` (conjugate normal, known sigma; analytic posterior and evidence) and
``transforms`` (interval, simplex, Cholesky-corr, ODE, transformed parameter, GQ).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from stanlogz.stan.inputs import data_to_json
from stanlogz.stan.model import StanModel
from stanlogz.toolchain import cache_root, ensure_base, find_toolchain

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "stan_models"


def resolve_program(name_or_path: str | os.PathLike[str]) -> Path:
    """Path of a test/example program given its name or a path."""
    p = Path(name_or_path)
    if p.suffix == ".stan":
        return p.resolve()
    for sub in ("tests", "examples"):
        cand = MODELS / sub / f"{name_or_path}.stan"
        if cand.is_file():
            return cand
    raise FileNotFoundError(f"no Stan program named {name_or_path!r} under {MODELS}")


@pytest.fixture(scope="session")
def compiled() -> Callable[..., StanModel]:
    """Factory: ``compiled(name_or_path, data=None, seed=1) -> StanModel`` (cached per session
    by program, data and seed; each program is compiled or loaded from the cache once)."""
    libraries: dict[Path, StanModel] = {}
    instances: dict[tuple[Path, str, int], StanModel] = {}

    def make(name_or_path: str | os.PathLike[str], data: Any = None, seed: int = 1) -> StanModel:
        path = resolve_program(name_or_path)
        if data is None and path.with_suffix(".json").is_file():
            data = path.with_suffix(".json")
        key = (path, data_to_json(data), seed)
        if key not in instances:
            if path not in libraries:
                libraries[path] = instances[key] = StanModel.from_file(path, data, seed=seed)
            else:
                first = libraries[path]
                instances[key] = StanModel(first.lib_path, data, name=first.name,
                                           code=first.code, stan_file=path, seed=seed)
        return instances[key]

    return make


@pytest.fixture
def isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh ``STANLOGZ_CACHE`` whose runtime (bridge object, PCH) links to the user cache."""
    base = ensure_base(find_toolchain())
    target = tmp_path / "cache"
    monkeypatch.setenv("STANLOGZ_CACHE", str(target))
    root = cache_root()
    (root / "base" / base.name).symlink_to(base, target_is_directory=True)
    return root
