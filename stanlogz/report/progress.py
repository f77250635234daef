"""Progress on stderr: tqdm bars on a terminal, the plain timed lines elsewhere.

:class:`TerminalProgress` is the ``progress`` callback the commands pass down (as
``report.progress``): called with a message it prints ``[  12.3s] message`` on stderr; its
``bar`` and ``spinner`` (see :mod:`stanlogz._util.progress`) draw tqdm bars when stderr is a
terminal and the output is neither quiet nor JSON, and return nothing otherwise, so
logs, pipes and captured stderr keep the plain lines.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import threading
import time
from collections.abc import Iterator
from typing import IO, Any

#: Seconds between redraws of a bar (and of a spinner's clock).
REFRESH_S = 0.25


def _is_terminal(stream: IO[str]) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _fixed_shape(stream: IO[str]) -> tuple[int, int] | None:
    """None where the terminal reports its size (tqdm follows it), else 80 x 24 (a terminal
    that reports none, e.g. a bare pseudo-terminal, would make tqdm hide its bars)."""
    try:
        size = os.get_terminal_size(stream.fileno())
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return 80, 24
    return None if size.columns >= 20 and size.lines >= 2 else (80, 24)


class TerminalProgress:
    """The ``progress`` callback of a command: plain lines, and bars where they belong.

    ``quiet``: nothing at all. ``bars``: draw bars (default: when ``stream``, stderr unless
    given, is a terminal). A copy made by pickling (a unit of work sent to another process)
    is silent: the process that owns the terminal reports the units."""

    def __init__(self, *, quiet: bool = False, bars: bool | None = None,
                 stream: IO[str] | None = None, start: float | None = None) -> None:
        self.quiet = quiet
        self._stream = stream
        self.bars = (not quiet) and (_is_terminal(self.stream) if bars is None else bars)
        self.start = time.perf_counter() if start is None else start
        self._open: list[Any] = []
        self._lock = threading.Lock()

    @property
    def stream(self) -> IO[str]:
        """Where the progress goes (``sys.stderr`` as it is now, unless given)."""
        return self._stream if self._stream is not None else sys.stderr

    def __call__(self, message: str) -> None:
        """One progress line, ``[elapsed] message`` (printed above any open bar)."""
        if self.quiet:
            return
        self.write(f"[{time.perf_counter() - self.start:7.1f}s] {message}")

    def write(self, text: str) -> None:
        """``text`` on the stream, above any open bar (also under ``quiet``)."""
        if self._open:
            from tqdm import tqdm

            tqdm.write(text, file=self.stream)
        else:
            print(text, file=self.stream, flush=True)

    def bar(self, total: int | None, desc: str, unit: str = "step") -> Any:
        """A tqdm bar for ``total`` steps (None: a counter), or None without bars."""
        if not self.bars:
            return None
        from tqdm import tqdm

        shape = _fixed_shape(self.stream)
        ncols, nrows = shape if shape is not None else (None, None)
        bar = _OwnedBar(self, tqdm(total=total, desc=desc, unit=unit, file=self.stream,
                                   leave=None, dynamic_ncols=shape is None, ncols=ncols,
                                   nrows=nrows, mininterval=REFRESH_S,
                                   position=len(self._open)))
        with self._lock:
            self._open.append(bar)
        return bar

    @contextlib.contextmanager
    def spinner(self, desc: str) -> Iterator[None]:
        """While the body runs, ``desc`` and the elapsed time, redrawn by a thread."""
        bar = self.bar(None, desc, unit="s")
        if bar is None:
            yield
            return
        bar.inner.bar_format = "{desc}: {elapsed}"
        stop = threading.Event()

        def tick() -> None:
            while not stop.wait(REFRESH_S):
                bar.inner.refresh()

        ticker = threading.Thread(target=tick, name="stanlogz-spinner", daemon=True)
        ticker.start()
        try:
            yield
        finally:
            stop.set()
            ticker.join()
            bar.close()

    def _closed(self, bar: Any) -> None:
        with self._lock:
            if bar in self._open:
                self._open.remove(bar)

    def __getstate__(self) -> dict[str, Any]:
        return {"quiet": True, "bars": False, "start": self.start}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(quiet=state["quiet"], bars=state["bars"], start=state["start"])


class _OwnedBar:
    """A tqdm bar that tells its :class:`TerminalProgress` when it closes."""

    def __init__(self, owner: TerminalProgress, inner: Any) -> None:
        self.owner, self.inner = owner, inner

    def update(self, n: int = 1) -> None:
        self.inner.update(n)

    def close(self) -> None:
        self.inner.close()
        self.owner._closed(self)
