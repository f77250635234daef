"""Building a Stan program into a cached shared library with the BridgeStan C ABI and
stanlogz's own batched and NUTS entry points."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .._util.progress import Progress, stage
from ..errors import InputError, StanCompileError, ToolchainError
from .cache import cache_root, file_lock, staging_dir
from .cache_admin import mark_used, max_cache_bytes, prune_cache
from .locate import SOURCE_DIR, Toolchain, find_toolchain
from .stanc import run_stanc

_counter_lock = threading.Lock()
_builds = 0


def build_count() -> int:
    """How many model libraries this process has compiled (cache misses)."""
    return _builds


@dataclass(frozen=True)
class BuildResult:
    """A model library in the cache."""

    lib_path: Path
    name: str
    code: str
    key: str
    built: bool  # False when it came from the cache
    seconds: float
    backend: str = "stanlogz"


def sanitize_name(name: str) -> str:
    """A C++-identifier-safe model name."""
    clean = re.sub(r"[^A-Za-z0-9_]", "_", name) or "model"
    if clean[0].isdigit():
        clean = "m_" + clean
    return clean


def _run(cmd: Sequence[str], what: str, cwd: Path | None = None) -> None:
    try:
        proc = subprocess.run(list(cmd), capture_output=True, text=True, cwd=cwd)
    except OSError as exc:
        raise ToolchainError(f"cannot run {cmd[0]}: {exc}") from exc
    if proc.returncode != 0:
        lines = [ln for ln in (proc.stderr or proc.stdout).splitlines() if "error" in ln]
        first = (lines or (proc.stderr or proc.stdout).strip().splitlines() or ["no output"])[0]
        raise StanCompileError(f"C++ {what} failed: {first.strip()}")


def _run_parallel(jobs: Sequence[tuple[Sequence[str], str]]) -> None:
    """Run independent compiler jobs at once; raise the first failure after all finish."""
    errors: list[BaseException] = []

    def one(cmd: Sequence[str], what: str) -> None:
        try:
            _run(cmd, what)
        except BaseException as exc:  # noqa: BLE001 - re-raised below in the caller's thread
            errors.append(exc)

    threads = [threading.Thread(target=one, args=job) for job in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def _use_pch(tc: Toolchain) -> bool:
    return tc.is_gcc and os.environ.get("STANLOGZ_PCH", "1") != "0"


def ensure_base(tc: Toolchain, progress: Progress = None) -> Path:
    """The cached model-independent part (``bridge.o`` and, with GCC, a precompiled header);
    built once per toolchain fingerprint."""
    root = cache_root()
    key = tc.fingerprint()[:20] + ("-pch" if _use_pch(tc) else "")
    final = root / "base" / key
    if (final / "bridge.o").is_file():
        mark_used(final)
        return final
    with file_lock(root, "base-" + key):
        if (final / "bridge.o").is_file():
            return final
        with stage(progress, "building the stanlogz Stan runtime (once per toolchain; 3-7 min "
                   "on 2 busy cores)...", "building the Stan runtime"), \
                staging_dir(root, final) as tmp:
            flags = tc.cxxflags()
            jobs = [([tc.cxx, *flags, "-c", "-x", "c++", str(SOURCE_DIR / "bridge.cpp"), "-o",
                      str(tmp / "bridge.o")], "runtime build")]
            if _use_pch(tc):
                shutil.copy(SOURCE_DIR / "pch.hpp", tmp / "pch.hpp")
                jobs.append(([tc.cxx, *flags, "-x", "c++-header", str(tmp / "pch.hpp"), "-o",
                              str(tmp / "pch.hpp.gch")], "precompiled header build"))
            _run_parallel(jobs)
    # The precompiled header is found by absolute path, so it must be used from its final place.
    return final


def program_key(tc: Toolchain, code: str, include_paths: Sequence[Path], backend: str) -> str:
    """Cache key of a program: its text, flags, compiler and toolchain, and its include paths
    when it has ``#include`` lines (so a copy of the same program elsewhere, a fresh clone or
    another checkout, reuses the build)."""
    h = hashlib.sha256()
    incs = "\n".join(str(p) for p in include_paths) if "#include" in code else ""
    for part in (code, incs, backend, tc.fingerprint()):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:24]


def build(
    source: str | os.PathLike[str],
    *,
    name: str | None = None,
    include_paths: Sequence[str | os.PathLike[str]] = (),
    progress: Progress = None,
    backend: str = "stanlogz",
) -> BuildResult:
    """Compile a Stan program (a ``.stan`` path, or program text) into a cached shared library.

    Returns at once when a library for the same program text, include paths, flags, compiler
    and toolchain is in the cache. ``backend="bridgestan"`` builds with an upstream BridgeStan
    checkout named by ``$BRIDGESTAN`` instead (such libraries have no stanlogz NUTS entry).
    """
    start = time.perf_counter()
    stan_file: Path | None = None
    if isinstance(source, os.PathLike) or (
        isinstance(source, str) and "\n" not in source and source.endswith(".stan")
    ):
        stan_file = Path(source).expanduser().resolve()
        if not stan_file.is_file():
            raise InputError(f"Stan file not found: {stan_file}")
        code = stan_file.read_text()
        name = name or stan_file.stem
        incs = [stan_file.parent, *(Path(p).resolve() for p in include_paths)]
    else:
        code = str(source)
        incs = [Path(p).resolve() for p in include_paths]
    name = sanitize_name(name or "model")
    if backend not in ("stanlogz", "bridgestan"):
        raise InputError(f"unknown build backend {backend!r}: use 'stanlogz' or 'bridgestan'")
    tc = find_toolchain()
    key = program_key(tc, code, incs, backend)
    root = cache_root()
    final = root / "models" / f"{name}-{key}"
    lib = final / f"lib{name}.so"
    if lib.is_file():
        mark_used(final)
        return BuildResult(lib, name, code, key, False, time.perf_counter() - start, backend)
    with file_lock(root, f"model-{key}"):
        if lib.is_file():
            return BuildResult(lib, name, code, key, False, time.perf_counter() - start, backend)
        display = stan_file.name if stan_file else f"{name}.stan"
        with stage(progress, f"compiling {name} (cached build not found)...",
                   f"compiling {name}"), staging_dir(root, final) as tmp:
            (tmp / f"{name}.stan").write_text(code)
            if backend == "bridgestan":
                _build_with_bridgestan(tmp, name, incs)
            else:
                _build_stanlogz(tc, tmp, name, display, incs, progress)
            (tmp / "build.json").write_text(json.dumps({
                "name": name, "key": key, "backend": backend, "cxx": tc.cxx_version,
                "stanc": tc.stanc_version, "seconds": round(time.perf_counter() - start, 2),
            }))
        global _builds
        with _counter_lock:
            _builds += 1
    base = root / "base" / (tc.fingerprint()[:20] + ("-pch" if _use_pch(tc) else ""))
    prune_cache(root, max_cache_bytes(), keep=(final, base))
    return BuildResult(lib, name, code, key, True, time.perf_counter() - start, backend)


def _build_stanlogz(tc: Toolchain, tmp: Path, name: str, display: str,
                    incs: Sequence[Path], progress: Progress) -> None:
    cpp = tmp / f"{name}.cpp"
    run_stanc(tc.stanc, tmp / f"{name}.stan", cpp, class_name=f"{name}_model",
              display_name=display, include_paths=incs)
    base = ensure_base(tc, progress)
    flags = tc.cxxflags()
    if (base / "pch.hpp.gch").is_file():
        flags = [*flags, "-include", str(base / "pch.hpp")]
    obj = tmp / f"{name}.o"
    _run([tc.cxx, *flags, "-c", "-x", "c++", str(cpp), "-o", str(obj)], f"compile of {name}")
    _run([tc.cxx, "-o", str(tmp / f"lib{name}.so"), str(obj), str(base / "bridge.o"),
          *tc.ldflags()], f"link of {name}")
    obj.unlink()


def _build_with_bridgestan(tmp: Path, name: str, incs: Sequence[Path]) -> None:
    home = os.environ.get("BRIDGESTAN")
    if not home or not (Path(home) / "Makefile").is_file():
        raise ToolchainError(
            "backend='bridgestan' needs $BRIDGESTAN set to an upstream BridgeStan checkout "
            f"(got {home!r})"
        )
    import bridgestan

    bridgestan.set_bridgestan_path(home)
    stanc_args = [f"--include-paths={','.join(str(p) for p in incs)}"] if incs else []
    try:
        built = bridgestan.compile_model(tmp / f"{name}.stan", stanc_args=stanc_args)
    except (RuntimeError, ValueError) as exc:
        msg = " ".join(str(exc).split())
        raise StanCompileError(f"BridgeStan build of {name} failed: {msg[:2000]}") from exc
    built = Path(built)
    if built != tmp / f"lib{name}.so":
        os.replace(built, tmp / f"lib{name}.so")
