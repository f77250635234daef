"""Old module paths kept importable for one release after a module moved."""

from __future__ import annotations

import importlib
import sys
import warnings


def alias(old: str, new: str) -> None:
    """Make ``old`` the same module object as ``new`` and warn that it moved."""
    warnings.warn(f"{old} moved to {new}; import it from there (the old path goes away in the "
                  "next release)", DeprecationWarning, stacklevel=3)
    sys.modules[old] = importlib.import_module(new)
