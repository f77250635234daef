"""Files that are never half-written: written to a temporary name, then moved into place."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import InputError


def write_atomically(path: str | os.PathLike, write: Callable[[Path], Any]) -> None:
    """``write(tmp)`` into a temporary file beside ``path``, then move it into place: ``path`` is
    either complete or untouched (also when ``write`` fails or writes nothing). An OSError
    becomes a one-line InputError."""
    path = Path(path)
    tmp = path.with_name(f".{path.stem}.tmp{os.getpid()}{path.suffix}")
    try:
        write(tmp)
        if not tmp.is_file():
            raise InputError(f"nothing was written for {path}")
        os.replace(tmp, path)
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror or exc}") from None
    finally:
        tmp.unlink(missing_ok=True)


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` to ``path`` atomically (see :func:`write_atomically`)."""
    write_atomically(path, lambda tmp: tmp.write_text(text))
