"""The offline Stan toolchain: stanc3, Stan headers and libraries from the httpstan wheel, a
C++ compiler, and a per-user build cache.

A build turns a Stan program into a shared library that exposes BridgeStan's C ABI (so the
PyPI ``bridgestan.StanModel`` can load it) plus stanlogz's batched-density and NUTS entry
points. The model-independent C++ (``bridge.cpp``, and with GCC a precompiled header) is
compiled once per toolchain and reused. Libraries are cached under ``$STANLOGZ_CACHE`` (default
``~/.cache/stanlogz``), keyed by program text, include paths, flags, compiler and toolchain
versions; builds are staged in a temporary directory, published with an atomic rename and
serialized across processes with ``fcntl.flock``.

Set ``STANLOGZ_PCH=0`` to build without the (~800 MB) precompiled header. With
``BRIDGESTAN=/path/to/bridgestan`` (an upstream checkout), ``build(..., backend="bridgestan")``
builds through ``bridgestan.compile_model`` instead; such libraries lack the NUTS entry.
"""

from .build import BuildResult, build, build_count, ensure_base, sanitize_name
from .cache import cache_root
from .locate import Toolchain, find_compiler, find_toolchain, httpstan_dir
from .stanc import condense_stanc_error

__all__ = [
    "BuildResult",
    "Toolchain",
    "build",
    "build_count",
    "cache_root",
    "condense_stanc_error",
    "ensure_base",
    "find_compiler",
    "find_toolchain",
    "httpstan_dir",
    "sanitize_name",
]
