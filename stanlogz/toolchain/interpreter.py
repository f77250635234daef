"""The interpreted backend's runtime: the ``stanli`` package (stanc3 and stan-math in one shared
library exposing BridgeStan's C ABI), its pinned version, its build id, and Stan programs
turned into its portable form (MIR) in-process, with no C++ build and no cache files.

stanlogz pins one stanli release (:data:`STANLI_VERSION`); another installed version is
refused in one line, and everything cached about the interpreter is keyed on its build id
(:func:`interpreter_id`). :func:`cached_library` finds a program's compiled library when it is
already in the build cache, without building.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.metadata
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import StanCompileError, ToolchainError

#: The one stanli release stanlogz runs (pyproject.toml pins the same).
STANLI_VERSION = "0.24.0"

#: Held while the interpreter builds a model: the batched pass
#: (:mod:`stanlogz.stan.interpreted_pointwise`) sets stanli's process-wide switch refusing its
#: slow fallback for its own build only, so no other build may run meanwhile.
BUILDING = threading.RLock()

#: stanli's switch refusing a program part it cannot compile (else run by its MIR interpreter,
#: far slower); process-wide, so it is set only while :data:`BUILDING` is held.
NO_FALLBACK = "STANLI_NO_INTERPRETER"


@contextlib.contextmanager
def refusing_fallback(on: bool = True) -> Iterator[None]:
    """Inside the block (``on``), stanli refuses a program part it cannot compile instead of
    running it through its MIR fallback; :data:`BUILDING` is held throughout, since the switch
    is process-wide."""
    with BUILDING:
        before = os.environ.get(NO_FALLBACK)
        if on:
            os.environ[NO_FALLBACK] = "1"
        try:
            yield
        finally:
            if before is None:
                os.environ.pop(NO_FALLBACK, None)
            else:
                os.environ[NO_FALLBACK] = before


@functools.lru_cache(maxsize=1)
def stanli_module() -> Any:
    """The imported ``stanli`` package, checked against :data:`STANLI_VERSION`."""
    try:
        version = importlib.metadata.version("stanli")
    except importlib.metadata.PackageNotFoundError:
        raise ToolchainError("the interpreted backend needs the stanli package: "
                             f"pip install stanli=={STANLI_VERSION}") from None
    if version != STANLI_VERSION:
        raise ToolchainError(f"the interpreted backend needs stanli=={STANLI_VERSION}, found "
                             f"{version}: pip install stanli=={STANLI_VERSION}")
    import stanli

    return stanli


def interpreter_id() -> str:
    """The interpreter's identity for cache keys: stanli's version and its runtime's build id."""
    stanli = stanli_module()
    return f"stanli-{stanli.__version__}-{stanli.build_id()}"


def runtime_library() -> Path:
    """The interpreter's shared library (BridgeStan's C ABI; one for every program)."""
    return Path(stanli_module()._runtime_lib_path())


def program_mir(code: str, include_paths: list[Path] | None = None) -> str:
    """The program ``code`` in the interpreter's portable form (stanc3 in-process);
    :class:`~stanlogz.StanCompileError` with the first line of stanc's message where it does
    not parse, type-check or lower (tuples, complex types, ``hmm_marginal``, ...)."""
    stanli = stanli_module()
    try:
        return stanli.stan_to_mir(code, include_paths=[str(p) for p in include_paths or []]
                                  or None)
    except (RuntimeError, ValueError) as exc:
        lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()
                 and not set(ln.strip()) <= set("-^|")]
        head = lines[0] if lines else "unknown error"
        detail = next((ln for ln in lines[1:] if not ln[:1].isdigit()), "")
        raise StanCompileError(f"the interpreter cannot run this program: {head}"
                               + (f" {detail}" if detail else "")) from None


def cached_library(code: str, name: str, include_paths: list[Path]) -> Path | None:
    """The compiled library of ``code`` where the build cache already holds it (no build;
    None when it does not, or when there is no C++ toolchain)."""
    from .build import program_key, sanitize_name
    from .cache import cache_root
    from .locate import find_toolchain

    try:
        key = program_key(find_toolchain(), code, include_paths, "stanlogz")
    except (ToolchainError, OSError):
        return None
    name = sanitize_name(name)
    lib = cache_root() / "models" / f"{name}-{key}" / f"lib{name}.so"
    return lib if lib.is_file() else None

