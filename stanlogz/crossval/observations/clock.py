"""The clock of a long pointwise pass (the conditional log-likelihood's O(N²·S) pass, the
density-difference pass of a costly program): observations done, the time left, and a budget
that stops the pass cleanly (:class:`PassBudget`: how far it got and how long the rest would
take)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

import numpy as np

from ..._util.progress import Progress, duration, steps, time_left
from ...errors import InputError

#: Seconds between the plain progress lines of a long pass (the first after ``FIRST_S``).
EVERY_S = 10.0
FIRST_S = 3.0
#: Observations done before the time left is estimated.
MIN_ESTIMATE = 3
#: A pass with more time left than this, over at least twice ``SUBSAMPLE_HINT`` observations,
#: names subsampling once (posteriordb sat-hier_2pl: 19,200 observations, 13 minutes).
HINT_S = 300.0
SUBSAMPLE_HINT = 1000


def robust_time_left(times: Sequence[float], total: int) -> float:
    """Seconds left after the steps that took ``times`` (seconds each), of ``total``: the
    rate so far with the slowest step counted as a median one (the first observation pays the
    one-time costs, and one wide conditional on quadrature can take as long as a dozen
    Gaussian ones; at N = 1000 the plain rate after it overestimated the pass 14-fold)."""
    t = np.asarray(times, dtype=float)
    return time_left(float(t.sum() - t.max() + np.median(t)), t.size, total)


class PassBudget(InputError):
    """The conditional pass spent its time budget before the last observation."""


class PassClock:
    """Observations of a long pass counted through ``progress``: a bar (tqdm shows the rate
    and the time left) when the callback draws bars, else a line with the time left every
    ``EVERY_S`` seconds. ``budget``: seconds after which :meth:`update` raises
    :class:`PassBudget` (None: no limit). ``clock`` is the time source (seconds). Threads
    that share the pass may call :meth:`update` at once."""

    def __init__(self, progress: Progress, total: int, desc: str,
                 budget: float | None = None,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        self.total, self.desc, self.clock, self.done = total, desc, clock, 0
        self.budget = budget
        self.steps = steps(progress, total, desc, unit="obs")
        self.t0 = self.last = clock()
        self.next = self.t0 + FIRST_S
        self.times: list[float] = []
        self.hinted = False
        self._lock = threading.Lock()

    def update(self, n: int = 1) -> None:
        """``n`` more observations done; :class:`PassBudget` once the budget is spent."""
        with self._lock:
            self._update(n)

    def _update(self, n: int) -> None:
        self.done += n
        now = self.clock()
        self.times.extend([(now - self.last) / n] * n)
        self.last = now
        if self.budget is not None and now - self.t0 > self.budget and self.done < self.total:
            left = duration(time_left(now - self.t0, self.done, self.total))
            raise PassBudget(
                f"the {self.desc} stopped at its budget of {self.budget:g} s after "
                f"{self.done}/{self.total} observations (about {left} more at this rate); "
                "raise the budget (--cond-budget), or estimate elpd_loo from m observations "
                "drawn at random (--subsample m)")
        line = None
        if not self.steps.drawn and now >= self.next and self.done < self.total:
            self.next = now + EVERY_S
            line = self.line(now - self.t0)
        self.steps.update(line, n)

    def line(self, elapsed: float) -> str:
        """The plain progress line after ``elapsed`` seconds (the time left once
        ``MIN_ESTIMATE`` observations are done)."""
        head = f"{self.desc}: {self.done}/{self.total} observations in {duration(elapsed)}"
        if self.done < MIN_ESTIMATE:
            return f"{head}, estimating the time left"
        left = robust_time_left(self.times, self.total)
        line = f"{head}, about {duration(left)} left"
        if not self.hinted and left > HINT_S and self.total >= 2 * SUBSAMPLE_HINT:
            self.hinted = True
            line += (f" (--subsample {SUBSAMPLE_HINT} would estimate elpd_loo from "
                     f"{SUBSAMPLE_HINT} observations drawn at random, with its se, in a "
                     "fraction of the time)")
        return line

    def close(self) -> None:
        """The pass is over."""
        self.steps.close()
