"""Where units of work run: the executor in force and whether the code runs inside a unit."""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from typing import Any

from .._util import deadline
from ..errors import speaking_here, voice

#: The executor run_parallel sends units to (None: the local one).
_EXECUTOR: contextvars.ContextVar[Any] = contextvars.ContextVar("stanlogz_executor", default=None)
#: True while a unit runs on a cluster worker: units started from inside a unit run serially
#: there (the worker's threads are the parallelism; worker processes may not fork pools).
_INSIDE_UNIT: contextvars.ContextVar[bool] = contextvars.ContextVar("stanlogz_inside_unit",
                                                                    default=False)


def ambient() -> dict[str, Any]:
    """What a unit of work carries from the run that sends it to another process or machine:
    its time budget (:func:`stanlogz._util.deadline.ambient`) and the voice its messages speak
    in (:func:`stanlogz.errors.voice`)."""
    return {"budget": deadline.ambient(), "voice": voice()}


@contextlib.contextmanager
def carrying(carry: dict[str, Any] | None) -> Iterator[None]:
    """Run a unit under what :func:`ambient` took from its run (None: as it stands here)."""
    carry = carry or {}
    with deadline.carried(carry.get("budget")), speaking_here(carry.get("voice")):
        yield
