"""How many threads the native density calls use."""

from __future__ import annotations

import os


def n_threads() -> int:
    """Threads for the native density calls (``STANLOGZ_THREADS``, default: the CPU count)."""
    env = os.environ.get("STANLOGZ_THREADS", "")
    return max(1, int(env)) if env.isdigit() else max(1, os.cpu_count() or 1)
