"""Progress of counted steps (refits, folds, origins, simulations, NUTS iterations) and of
stages of unknown length (a build), through the ``progress`` callback every workflow takes.

A ``progress`` callback is any ``Callable[[str], None]`` (or None): it gets one line per event,
as it always has. A callback that also has ``bar(total, desc, unit)`` (returning an object with
``update(n)`` and ``close()``, or None for plain lines) and ``spinner(desc)`` (a context
manager) draws bars instead of the counted lines; :class:`stanlogz.report.progress.
TerminalProgress` is one (tqdm bars on a terminal). The workflows use :func:`steps` and
:func:`stage` and never know which they got.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

Progress = Callable[[str], None] | None


def time_left(elapsed: float, done: int, total: int) -> float:
    """Seconds left when ``done`` of ``total`` equal-cost steps took ``elapsed``."""
    return elapsed / max(done, 1) * (total - done)


def duration(seconds: float) -> str:
    """``seconds`` as a person reads a time left: "40 s", "12 min", "3.1 h"."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


class Steps:
    """``total`` counted steps reported through ``progress``: a bar when the callback draws
    bars, else the line given to each :meth:`update` (when there is one). Thread-safe; a copy
    sent to another process reports its lines only (bars stay in the process that opened
    them)."""

    def __init__(self, progress: Progress, total: int | None, desc: str,
                 unit: str = "step") -> None:
        self.progress, self.total, self.desc, self.done = progress, total, desc, 0
        make = getattr(progress, "bar", None)
        self._bar = make(total, desc, unit) if callable(make) else None
        self._lock = threading.Lock()

    @property
    def drawn(self) -> bool:
        """Whether a bar shows the steps (the counted lines are then left out)."""
        return self._bar is not None

    def update(self, line: str | Callable[[int], str] | None = None, n: int = 1) -> None:
        """``n`` more steps done; ``line`` is what a plain callback gets (nothing when None),
        or a function of the number of steps done that gives it."""
        with self._lock:
            self.done += n
            done = self.done
            if self._bar is not None:
                self._bar.update(n)
        if self._bar is None and self.progress and line:
            self.progress(line(done) if callable(line) else line)

    def set(self, done: int, line: str | None = None) -> None:
        """``done`` steps done in all (e.g. iterations polled from a sampler)."""
        with self._lock:
            delta, self.done = done - self.done, done
            if self._bar is not None and delta > 0:
                self._bar.update(delta)
        if self._bar is None and self.progress and line:
            self.progress(line)

    def close(self) -> None:
        """The steps are over (the bar is removed or left, as the callback chose)."""
        with self._lock:
            bar, self._bar = self._bar, None
        if bar is not None:
            bar.close()

    def __enter__(self) -> Steps:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __getstate__(self) -> dict[str, Any]:
        return {"progress": self.progress, "total": self.total, "desc": self.desc,
                "done": self.done}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._bar, self._lock = None, threading.Lock()


def steps(progress: Progress, total: int | None, desc: str, unit: str = "step") -> Steps:
    """:class:`Steps` for ``total`` steps called ``desc`` (use as a context manager)."""
    return Steps(progress, total, desc, unit)


@contextlib.contextmanager
def stage(progress: Progress, line: str, desc: str | None = None) -> Iterator[None]:
    """A step of unknown length: ``line`` through ``progress`` (when given), and a spinner
    with the elapsed time while the body runs when the callback draws one."""
    if progress:
        progress(line)
    spin = getattr(progress, "spinner", None)
    if not callable(spin):
        yield
        return
    with spin(desc or line):
        yield
