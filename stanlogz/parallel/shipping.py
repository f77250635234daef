"""Compiled model libraries on cluster workers, without a rebuild on each.

A pickled :class:`stanlogz.stan.model.StanModel` carries a :class:`LibraryRef` (the library's cache
key and file name) and its data, never C pointers. Where it is unpickled, the library is looked
up by key in that machine's build cache (a cache shared with the client is found at once);
when it is missing, its bytes are fetched once from the client through the function installed
with :func:`fetching` and kept in the local cache, content-addressed by the key.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import os
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ..errors import StanlogzError
from ..toolchain.cache import cache_root, file_lock, staging_dir

_CACHE_DIR = re.compile(r"^(?P<name>.+)-(?P<key>[0-9a-f]{24})$")


@dataclass(frozen=True)
class LibraryRef:
    """A model library by content: ``key`` (the build cache key, or a hash of the file for a
    library outside the cache), the cache folder and file names, and where the client had it."""

    key: str
    folder: str
    filename: str
    origin: str
    content_hashed: bool = False


Fetch = Callable[[LibraryRef], bytes]
_COLLECT: contextvars.ContextVar[dict[str, tuple[LibraryRef, Path]] | None] = \
    contextvars.ContextVar("stanlogz_ship_collect", default=None)
_FETCH: contextvars.ContextVar[Fetch | None] = contextvars.ContextVar("stanlogz_ship_fetch",
                                                                       default=None)
_hashes: dict[str, tuple[int, int, str]] = {}
_lock = threading.Lock()


def _file_key(path: Path) -> str:
    st = path.stat()
    with _lock:
        known = _hashes.get(str(path))
        if known and known[:2] == (st.st_mtime_ns, st.st_size):
            return known[2]
    key = hashlib.sha256(path.read_bytes()).hexdigest()[:24]
    with _lock:
        _hashes[str(path)] = (st.st_mtime_ns, st.st_size, key)
    return key


def library_ref(path: str | os.PathLike[str]) -> LibraryRef:
    """The reference a pickled model carries for the library at ``path``; noted for shipping
    while :func:`collecting` is active."""
    path = Path(path).resolve()
    found = _CACHE_DIR.match(path.parent.name)
    if found and path.parent.parent.name == "models" and \
            path.name == f"lib{found['name']}.so":
        ref = LibraryRef(found["key"], path.parent.name, path.name, str(path))
    else:
        key = _file_key(path)
        ref = LibraryRef(key, f"{path.stem}-{key}", path.name, str(path), content_hashed=True)
    seen = _COLLECT.get()
    if seen is not None:
        seen.setdefault(ref.key, (ref, path))
    return ref


@contextlib.contextmanager
def collecting() -> Iterator[dict[str, tuple[LibraryRef, Path]]]:
    """Within the body, every library referenced by a pickled model is noted (key -> (ref,
    path on this machine)), so a cluster executor can offer its bytes to the workers."""
    seen: dict[str, tuple[LibraryRef, Path]] = {}
    token = _COLLECT.set(seen)
    try:
        yield seen
    finally:
        _COLLECT.reset(token)


@contextlib.contextmanager
def fetching(fetch: Fetch) -> Iterator[None]:
    """Within the body, a library missing from this machine's cache is obtained by
    ``fetch(ref) -> bytes`` (once: it is then kept in the cache)."""
    token = _FETCH.set(fetch)
    try:
        yield
    finally:
        _FETCH.reset(token)


def _cache_path(ref: LibraryRef) -> Path:
    return cache_root() / ("shipped" if ref.content_hashed else "models") / ref.folder / \
        ref.filename


def cached_library(ref: LibraryRef) -> Path | None:
    """The library's path in this machine's cache (or, for a library kept outside the cache, at
    its original place with the same content), or ``None``."""
    local = _cache_path(ref)
    if local.is_file():
        return local
    origin = Path(ref.origin)
    if ref.content_hashed and origin.is_file() and _file_key(origin) == ref.key:
        return origin
    return None


def resolve_library(ref: LibraryRef) -> Path:
    """A loadable path of the library ``ref`` on this machine: from the cache, else fetched
    (through :func:`fetching`) and stored in the cache atomically."""
    found = cached_library(ref)
    if found is not None:
        return found
    fetch = _FETCH.get()
    root = cache_root()
    if fetch is None:
        raise StanlogzError(f"model library {ref.filename} (key {ref.key}) is not in the build "
                            f"cache {root} of this machine; share the cache (STANLOGZ_CACHE) "
                            "or run through stanlogz's cluster executor, which sends it")
    final = _cache_path(ref)
    data = fetch(ref)  # outside the lock: a fetch may wait on other units of this worker
    if ref.content_hashed and hashlib.sha256(data).hexdigest()[:24] != ref.key:
        raise StanlogzError(f"model library {ref.filename} arrived corrupted")
    # the build of the same program takes the same lock (toolchain.build: "model-<key>")
    with file_lock(root, f"{'ship' if ref.content_hashed else 'model'}-{ref.key}"):
        if final.is_file():
            return final
        final.parent.parent.mkdir(parents=True, exist_ok=True)
        with staging_dir(root, final.parent) as tmp:
            (tmp / ref.filename).write_bytes(data)
            os.chmod(tmp / ref.filename, 0o755)
    return final
