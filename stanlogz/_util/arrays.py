"""Checked float arrays for public inputs (one-line :class:`~stanlogz.errors.InputError`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import InputError


def finite_array(values: Any, what: str, expected: str,
                 shape_ok: Callable[[tuple[int, ...]], bool]) -> np.ndarray:
    """``values`` as a float array whose shape passes ``shape_ok`` and whose entries are all
    finite; otherwise InputError ``WHAT must be EXPECTED, got shape S`` or ``WHAT has non-finite
    values``."""
    a = np.asarray(values, dtype=float)
    if not shape_ok(a.shape):
        raise InputError(f"{what} must be {expected}, got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise InputError(f"{what} has non-finite values")
    return a


def dimension(dim: Any, what: str) -> int:
    """``dim`` as the dimension of a ``what`` (``"target"``, ``"path"``): an int >= 1, else
    InputError ``WHAT dimension must be >= 1``."""
    if int(dim) < 1:
        raise InputError(f"{what} dimension must be >= 1, got {dim}")
    return int(dim)


def even_rows(n: int, k: int) -> np.ndarray:
    """Up to ``k`` row indices spread evenly over ``n`` rows, first and last included."""
    return np.unique(np.linspace(0, n - 1, min(k, n)).astype(int))
