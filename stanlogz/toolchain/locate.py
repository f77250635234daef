"""Where the offline Stan toolchain lives: stanc, headers and libraries from the httpstan wheel,
and a C++ compiler."""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import importlib.util
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..errors import ToolchainError

#: Bumped whenever the build recipe or the C++ layer changes incompatibly.
RECIPE_VERSION = "1"

CXXFLAGS = [
    "-std=c++17",
    "-O3",
    "-fPIC",
    "-DSTAN_THREADS",
    "-D_REENTRANT",
    "-DBOOST_DISABLE_ASSERTS",
    "-DBOOST_PHOENIX_NO_VARIADIC_EXPRESSION",
    "-w",
]
LIBS = ["-ltbb", "-lsundials_cvodes", "-lsundials_idas", "-lsundials_kinsol",
        "-lsundials_nvecserial"]

SOURCE_DIR = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Toolchain:
    """Paths and versions of everything a build uses."""

    stanc: Path
    include_dir: Path
    lib_dir: Path
    cxx: str
    cxx_version: str
    stanc_version: str
    httpstan_version: str
    bridgestan_version: tuple[int, int, int]

    @property
    def is_gcc(self) -> bool:
        """Whether the compiler is GCC (precompiled headers are only used with GCC)."""
        v = self.cxx_version.lower()
        return "clang" not in v and ("g++" in v or "gcc" in v or "free software" in v)

    def cxxflags(self) -> list[str]:
        """Compiler flags for every translation unit."""
        major, minor, patch = self.bridgestan_version
        return [
            *CXXFLAGS,
            f"-DSTANLOGZ_BS_MAJOR={major}",
            f"-DSTANLOGZ_BS_MINOR={minor}",
            f"-DSTANLOGZ_BS_PATCH={patch}",
            f"-I{self.include_dir}",
        ]

    def ldflags(self) -> list[str]:
        """Linker flags for a model library."""
        return ["-shared", f"-L{self.lib_dir}", *LIBS, f"-Wl,-rpath,{self.lib_dir}"]

    def fingerprint(self) -> str:
        """Hash of everything model-independent that affects a build: compiler, versions,
        flags and the contents of the headers and libraries (:func:`content_manifest`), but no
        install path, so every virtual environment with the same toolchain shares one build."""
        h = hashlib.sha256()
        major, minor, patch = self.bridgestan_version
        for part in (
            RECIPE_VERSION,
            self.cxx,
            self.cxx_version,
            self.stanc_version,
            self.httpstan_version,
            content_manifest(self.include_dir, self.lib_dir),
            " ".join(CXXFLAGS),
            f"bridgestan {major}.{minor}.{patch}",
            " ".join(LIBS),
        ):
            h.update(part.encode())
            h.update(b"\0")
        for name in ("bridge.cpp", "pch.hpp"):
            h.update((SOURCE_DIR / name).read_bytes())
        return h.hexdigest()


#: Headers whose contents identify the versions of Stan, Stan Math, Boost, Eigen and Sundials.
VERSION_HEADERS = ("stan/version.hpp", "stan/math/version.hpp", "boost/version.hpp",
                   "Eigen/src/Core/util/Macros.h", "sundials/sundials_config.h")


@functools.lru_cache(maxsize=8)
def content_manifest(include_dir: Path, lib_dir: Path) -> str:
    """Hash of what the toolchain's headers and libraries are, not where they are: the version
    headers' contents and every library file's name and size."""
    h = hashlib.sha256()
    for rel in VERSION_HEADERS:
        p = include_dir / rel
        h.update(rel.encode() + b"\0" + (p.read_bytes() if p.is_file() else b"missing") + b"\0")
    if lib_dir.is_dir():
        for p in sorted(lib_dir.iterdir()):
            if p.is_file():
                h.update(f"{p.name}\0{p.stat().st_size}\0".encode())
    return h.hexdigest()


def httpstan_dir() -> Path:
    """Directory of the installed httpstan package (no import needed)."""
    spec = importlib.util.find_spec("httpstan")
    if spec is None or not spec.submodule_search_locations:
        raise ToolchainError("httpstan is not installed: pip install httpstan==4.13.0")
    return Path(list(spec.submodule_search_locations)[0])


def _bridgestan_version() -> tuple[int, int, int]:
    try:
        parts = importlib.metadata.version("bridgestan").split(".")
        return int(parts[0]), int(parts[1]), int("".join(c for c in parts[2] if c.isdigit()) or 0)
    except (importlib.metadata.PackageNotFoundError, ValueError, IndexError):
        return (2, 9, 0)


def find_compiler() -> str:
    """The C++ compiler: ``$CXX`` if set, else g++ or clang++ on PATH."""
    cxx = os.environ.get("CXX")
    if cxx:
        found = shutil.which(cxx)
        if found is None:
            raise ToolchainError(
                f"no C++ compiler found: CXX={cxx} is not an executable; "
                "install g++ (apt-get install g++) or set CXX to a working compiler"
            )
        return found
    for name in ("g++", "clang++", "c++"):
        found = shutil.which(name)
        if found:
            return found
    raise ToolchainError(
        "no C++ compiler found: install g++ (apt-get install g++) or set CXX"
    )


@functools.lru_cache(maxsize=8)
def _version_of(exe: str, flag: str = "--version") -> str:
    try:
        out = subprocess.run([exe, flag], capture_output=True, text=True, timeout=60)
    except OSError as exc:
        raise ToolchainError(f"cannot run {exe}: {exc}") from exc
    text = (out.stdout or out.stderr).strip()
    if out.returncode != 0 or not text:
        first = text.splitlines()[0] if text else f"exit status {out.returncode}"
        raise ToolchainError(f"{exe} {flag} failed: {first}")
    return text.splitlines()[0]


def find_toolchain() -> Toolchain:
    """Locate stanc, the Stan headers and libraries, and the C++ compiler."""
    root = httpstan_dir()
    stanc = root / "stanc"
    include_dir = root / "include"
    lib_dir = root / "lib"
    if not stanc.is_file() or not os.access(stanc, os.X_OK):
        raise ToolchainError(f"stanc not found or not executable at {stanc}; reinstall httpstan")
    if not (include_dir / "stan" / "model" / "model_header.hpp").is_file():
        raise ToolchainError(f"Stan headers not found under {include_dir}; reinstall httpstan")
    if not any(lib_dir.glob("libtbb.so*")):
        raise ToolchainError(f"libtbb not found under {lib_dir}; reinstall httpstan")
    cxx = find_compiler()
    try:
        httpstan_version = importlib.metadata.version("httpstan")
    except importlib.metadata.PackageNotFoundError:
        httpstan_version = "unknown"
    return Toolchain(
        stanc=stanc,
        include_dir=include_dir,
        lib_dir=lib_dir,
        cxx=cxx,
        cxx_version=_version_of(cxx),
        stanc_version=_version_of(str(stanc)),
        httpstan_version=httpstan_version,
        bridgestan_version=_bridgestan_version(),
    )
