"""Where units of work run: the executor in force and whether the code runs inside a unit."""

from __future__ import annotations

import contextvars
from typing import Any

#: The executor run_parallel sends units to (None: the local one).
_EXECUTOR: contextvars.ContextVar[Any] = contextvars.ContextVar("stanlogz_executor", default=None)
#: True while a unit runs on a cluster worker: units started from inside a unit run serially
#: there (the worker's threads are the parallelism; worker processes may not fork pools).
_INSIDE_UNIT: contextvars.ContextVar[bool] = contextvars.ContextVar("stanlogz_inside_unit",
                                                                    default=False)
