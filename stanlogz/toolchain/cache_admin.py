"""Listing, bounding and clearing the build cache (:func:`~stanlogz.toolchain.cache.cache_root`):
what ``stanlogz cache`` shows and does, and the size bound applied after every new build."""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError
from .cache import file_lock

#: Default bound on the cache's size; ``$STANLOGZ_CACHE_MAX_GB`` overrides it.
DEFAULT_MAX_GB = 8.0


@dataclass(frozen=True)
class CacheEntry:
    """One cached build: a model library or a model-independent runtime (``base``)."""

    kind: str  # "model" or "base"
    name: str
    path: Path
    bytes: int
    last_used: float  # seconds since the epoch

    @property
    def lock_key(self) -> str:
        """The lock a build of this entry holds (see :mod:`stanlogz.toolchain.build`)."""
        if self.kind == "base":
            return "base-" + self.name
        return "model-" + self.name.rsplit("-", 1)[-1]


def _size(path: Path) -> int:
    total = 0
    for dirpath, _, files in os.walk(path):
        for f in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(dirpath, f)).st_size
    return total


def cache_entries(root: Path) -> list[CacheEntry]:
    """Every cached build under ``root``, least recently used first."""
    out = []
    for kind, sub in (("base", "base"), ("model", "models")):
        folder = root / sub
        if not folder.is_dir():
            continue
        for p in folder.iterdir():
            if p.is_dir():
                with contextlib.suppress(OSError):
                    out.append(CacheEntry(kind, p.name, p, _size(p), p.stat().st_mtime))
    return sorted(out, key=lambda e: e.last_used)


def mark_used(path: Path) -> None:
    """Record that a cached build was used now (its folder's time orders pruning)."""
    with contextlib.suppress(OSError):
        os.utime(path)


def max_cache_bytes() -> int:
    """The cache's size bound in bytes: ``$STANLOGZ_CACHE_MAX_GB`` (default 8 GB)."""
    raw = os.environ.get("STANLOGZ_CACHE_MAX_GB")
    try:
        gb = float(raw) if raw else DEFAULT_MAX_GB
    except ValueError:
        raise InputError(f"STANLOGZ_CACHE_MAX_GB must be a number of gigabytes, not {raw!r}"
                         ) from None
    if not gb > 0:
        raise InputError(f"STANLOGZ_CACHE_MAX_GB must be positive, not {raw!r}")
    return int(gb * 1e9)


def remove_entry(root: Path, entry: CacheEntry) -> bool:
    """Delete one cached build under its build lock (a process that has the library loaded keeps
    its mapping); whether it was removed."""
    with file_lock(root, entry.lock_key):
        if not entry.path.exists():
            return False
        shutil.rmtree(entry.path, ignore_errors=True)
        return not entry.path.exists()


def prune_cache(root: Path, max_bytes: int, keep: tuple[Path, ...] = ()) -> list[CacheEntry]:
    """Remove least recently used builds until the cache holds at most ``max_bytes``; the paths
    in ``keep`` (the build just made and the runtime it links) stay. Returns what was removed."""
    entries = cache_entries(root)
    total = sum(e.bytes for e in entries)
    kept = {Path(k).resolve() for k in keep}
    removed = []
    for e in entries:
        if total <= max_bytes:
            break
        if e.path.resolve() in kept:
            continue
        if remove_entry(root, e):
            total -= e.bytes
            removed.append(e)
    return removed


def clear_cache(root: Path, kind: str = "all") -> list[CacheEntry]:
    """Remove every cached build (``kind`` "all", "model" or "base"); returns what was removed."""
    if kind not in ("all", "model", "base"):
        raise InputError(f"unknown cache kind {kind!r}: use all, model or base")
    return [e for e in cache_entries(root)
            if (kind == "all" or e.kind == kind) and remove_entry(root, e)]


def age_text(seconds_since_epoch: float) -> str:
    """How long ago, in words (``3 h``, ``2 d``)."""
    dt = max(0.0, time.time() - seconds_since_epoch)
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if dt >= size:
            return f"{dt / size:.0f} {unit}"
    return f"{dt:.0f} s"
