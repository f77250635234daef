"""The full program's log Z shared by every split of one set of full-data draws, and other
checks those splits would each repeat (:class:`SharedEvidence`)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from ...errors import StanlogzError
from ...stan.program import StanProgram


class SharedEvidence:
    """The full program's gbs log Z from the draws shared by all splits, computed once (the
    first split that needs it; thread-safe) with one seed; and :meth:`once`, other checks of
    the full program at those draws that every split would repeat."""

    def __init__(self, seed: int | None) -> None:
        self.seed, self.result, self._lock = seed, None, threading.Lock()
        self._done: dict[Any, BaseException | None] = {}
        self._once_lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        # sent to a cluster: each worker fits once with the same seed (the same value), and
        # runs the checks of :meth:`once` once
        return {"seed": self.seed, "result": self.result}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.seed, self.result, self._lock = state["seed"], state["result"], threading.Lock()
        self._done, self._once_lock = {}, threading.Lock()

    def once(self, key: Any, check: Callable[[], None]) -> None:
        """Run ``check`` (which returns nothing or raises) the first time ``key`` is asked
        for; later calls with that key raise what it raised, or return (thread-safe)."""
        with self._once_lock:
            if key not in self._done:
                try:
                    check()
                    self._done[key] = None
                except StanlogzError as exc:
                    self._done[key] = exc
            failed = self._done[key]
        if failed is not None:
            raise failed

    def __call__(self, full: StanProgram, xf: np.ndarray) -> tuple[Any, bool]:
        """The shared estimate, and whether this call computed it (its cost counts once)."""
        from ...estimators.bridge.bridge import gbs

        with self._lock:
            first = self.result is None
            if first:
                self.result = gbs(full, xf, seed=self.seed)
            return self.result, first
