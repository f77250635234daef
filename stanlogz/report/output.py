"""Thin reporting layer: progress on stderr, tables or one JSON object on stdout."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from .._util.files import write_atomically  # noqa: F401 - commands import it from here
from .._util.jsonable import json_value
from .._util.tables import format_cell as _cell  # noqa: F401 - the old name
from .._util.tables import format_table
from .progress import TerminalProgress


class Reporter:
    """Where a command's output goes. In JSON mode only :meth:`emit_json` writes to stdout."""

    def __init__(self, json_mode: bool = False, quiet: bool = False) -> None:
        self.json_mode = json_mode
        self.quiet = quiet
        self._t0 = time.perf_counter()
        #: The ``progress`` callback handed to the workflows: ``report.progress(message)`` is
        #: a timed line on stderr (none when quiet); on a terminal, and not in JSON mode,
        #: it also draws tqdm bars for counted steps (:mod:`.progress`).
        self.progress = TerminalProgress(quiet=quiet, bars=False if json_mode else None,
                                         start=self._t0)

    def warn(self, message: str) -> None:
        """A warning on stderr (always shown)."""
        self.progress.write(f"stanlogz: warning: {message}")

    def text(self, message: str = "") -> None:
        """Human-readable output on stdout (nothing in JSON mode)."""
        if not self.json_mode:
            print(message, flush=True)

    def table(self, header: Sequence[str], rows: Sequence[Sequence[Any]], title: str = "") -> None:
        """An aligned text table on stdout (nothing in JSON mode)."""
        if self.json_mode:
            return
        self.text(format_table(header, rows, title))

    def emit_json(self, obj: Any) -> None:
        """The command's single JSON object on stdout (only in JSON mode)."""
        if self.json_mode:
            print(json.dumps(json_value(obj), indent=2), flush=True)
