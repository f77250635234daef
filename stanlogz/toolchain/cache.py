"""The per-user build cache: location, file locks and atomic publication of build outputs."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from ..errors import ToolchainError

#: Layout version of the cache directory.
LAYOUT = "v1"

_STALE_TMP_SECONDS = 6 * 3600


def cache_root() -> Path:
    """The cache directory: ``$STANLOGZ_CACHE``, else ``$XDG_CACHE_HOME/stanlogz``,
    else ``~/.cache/stanlogz``."""
    env = os.environ.get("STANLOGZ_CACHE")
    if env:
        base = Path(env).expanduser()
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        base = (Path(xdg) if xdg else Path.home() / ".cache") / "stanlogz"
    root = base / LAYOUT
    try:
        for sub in ("models", "base", "locks", "tmp"):
            (root / sub).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ToolchainError(
            f"cannot create the build cache at {root}: {exc.strerror}; set STANLOGZ_CACHE "
            "to a writable directory") from exc
    return root


@contextlib.contextmanager
def file_lock(root: Path, key: str) -> Iterator[None]:
    """Exclusive advisory lock (``fcntl.flock``) named ``key``, held for the ``with`` body."""
    path = root / "locks" / f"{key}.lock"
    with open(path, "a+") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


@contextlib.contextmanager
def staging_dir(root: Path, final: Path) -> Iterator[Path]:
    """A fresh directory to build in; on success of the ``with`` body it is renamed onto
    ``final`` atomically, on failure it is deleted, so the cache never holds partial builds."""
    _clean_stale(root / "tmp")
    tmp = Path(tempfile.mkdtemp(prefix=final.name + ".", dir=root / "tmp"))
    try:
        yield tmp
        if final.exists():  # an incomplete leftover (callers hold the lock): replace it
            shutil.rmtree(final, ignore_errors=True)
        os.replace(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _clean_stale(tmp_root: Path) -> None:
    """Remove staging directories left by builds that were killed hours ago."""
    now = time.time()
    with contextlib.suppress(OSError):
        for entry in tmp_root.iterdir():
            with contextlib.suppress(OSError):
                if now - entry.stat().st_mtime > _STALE_TMP_SECONDS:
                    shutil.rmtree(entry, ignore_errors=True)
