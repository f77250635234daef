"""One time budget for a whole run: :func:`time_budget` in Python, the time-budget option
around the whole command on the command line. The long steps (Stan's NUTS, the pointwise
log-likelihood passes) check it while they run; one that would end after it stops early,
cleanly, with one line that says how far it got, how long the whole would take here, and
what fits in the budget (fewer iterations, a subsample of the observations) or what budget
the whole needs.

The budget is process-wide (threads of the same run share it) and the tighter of two nested
budgets holds. Without one, nothing is checked.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import signal
import threading
import time
from collections.abc import Iterator

from ..errors import BudgetSpent, InputError, OverBudget, Route
from .progress import duration

#: The time source of every budget check (seconds; replaced in tests).
clock = time.monotonic
#: A step judged early, on a rate that still counts its slow start (NUTS before a tenth of its
#: warmup: up to 2.6 times the later rate, benchmarks/nuts_eta.py) or on a cost estimate (a
#: pass before it starts), is refused only when it would take this many times the time left.
EARLY_MARGIN = 3.0

_lock = threading.Lock()
_state: dict[str, float | None] = {"deadline": None, "seconds": None, "expired": None,
                                   "reserved": None, "per_draw": None, "wrap_up": None}

_DURATION = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*(s|sec|m|min|h)?\s*$")
_UNIT = {None: 1.0, "s": 1.0, "sec": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}


def check_spent(what: str) -> None:
    """:class:`BudgetSpent` once the run's time budget is spent (nothing without one); its
    line names twice the budget (the step cannot tell how much more it needs)."""
    left = remaining()
    if left is not None and left <= 0:
        raise spent(what)


def spent(what: str) -> BudgetSpent:
    """The :class:`BudgetSpent` of a step the run's time budget ended during ``what``: its
    line names twice the budget."""
    total = budget_seconds() or 0.0
    route = as_option(2 * total)
    return BudgetSpent(f"the time budget of {duration(total)} ran out during {what}; run "
                       f"with {route}", routes=route)


def check_not_cut(draws: object, what: str) -> None:
    """:class:`BudgetSpent` where the budget stopped ``draws``' sampling past its warmup
    (``draws.budget_stop`` set): a fit left with too few draws to bridge from is not done (a
    K-fold refit's few draws were 13 nats off: docs/features/time-budget.md)."""
    stop = getattr(draws, "budget_stop", None)
    if stop:
        raise spent(f"{what} (its sampling stopped after {stop[0]} of {stop[1]} draws per "
                    "chain)")


def positive_seconds(name: str, value: object) -> float | None:
    """``value`` as positive, finite seconds (None stays None): the one check of every time
    limit a caller gives (the pass's ``cond_budget``, moment matching's ``mm_budget``);
    :class:`~stanlogz.errors.InputError` naming ``name`` otherwise."""
    if value is None:
        return None
    try:
        seconds = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        seconds = math.nan
    if isinstance(value, bool) or not (math.isfinite(seconds) and seconds > 0):
        raise InputError(f"{name} must be positive (a number of seconds), got {value!r}")
    return seconds


def parse_duration(text: str | float) -> float:
    """Seconds of a duration written ``600``, ``600s``, ``10m`` or ``1.5h`` (a number alone is
    seconds); :class:`~stanlogz.errors.InputError` for anything else or a duration of 0."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        seconds = float(text)
    else:
        match = _DURATION.match(str(text))
        if match is None:
            raise InputError(f"time budget {text!r} is not a duration: write seconds (600), "
                             "minutes (10m) or hours (1.5h)")
        seconds = float(match.group(1)) * _UNIT[match.group(2)]
    if not math.isfinite(seconds) or seconds <= 0:
        raise InputError(f"time budget must be a positive duration, got {text!r}")
    return seconds


#: A process older than this when its command's budget starts was not started for the command
#: (a long-lived interpreter calling the entry point): its age is not counted.
STARTUP_MAX_S = 30.0


def process_age() -> float:
    """Seconds since this process started (Linux's ``/proc``), at most
    :data:`STARTUP_MAX_S`; 0.0 where unknown or older: what a command's time budget counts
    before its clock starts (the interpreter's start, the imports, the parsing: 2 s of an
    8 s budget on a loaded machine)."""
    try:
        with open("/proc/self/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        age = uptime - int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22: start time
    except (OSError, ValueError, IndexError, AttributeError):
        return 0.0
    return age if 0.0 <= age <= STARTUP_MAX_S else 0.0


@contextlib.contextmanager
def time_budget(seconds: str | float | None, *, spent_before: float = 0.0
                ) -> Iterator[None]:
    """Run a block of stanlogz calls under a time budget.

    Stan's NUTS and the pointwise log-likelihood passes check the budget as they run. One that
    would end after it stops early with :class:`OverBudget`, whose one-line message says how
    far it got, how long the whole would take on this machine, and what fits (fewer
    iterations, fewer draws or a subsample of the observations) or the budget the whole needs.
    Moment matching and the exact refits of ``fix="auto"`` keep within what is left. The
    command line's time-budget option is this budget around the whole command.

    Parameters
    ----------
    seconds : float or str or None
        The budget: seconds, or a duration written ``"600s"``, ``"10m"`` or ``"1.5h"``. None
        sets no budget of its own. Inside an enclosing budget the tighter one holds. The
        budget is process-wide, so threads of the run share it.
    spent_before : float, optional
        Seconds of the budget already spent when the block starts (the command line counts
        its process's start, :func:`process_age`).

    Returns
    -------
    contextlib.AbstractContextManager
        A context manager; the budget holds inside its ``with`` block and is lifted on exit.

    Raises
    ------
    InputError
        ``seconds`` is not a positive duration (raised on entering the block).

    See Also
    --------
    OverBudget : what a step raises when it would overrun the budget.

    Examples
    --------
    >>> import stanlogz
    >>> with stanlogz.time_budget("10m"):  # doctest: +SKIP
    ...     r = stanlogz.loo("model.stan", "data.json", seed=1)
    """
    if seconds is None:
        yield
        return
    total = parse_duration(seconds)
    with _lock:
        saved = {k: _state[k] for k in ("deadline", "seconds")}  # "expired" outlives the block
        _state["expired"] = None
        deadline = clock() + total - max(float(spent_before), 0.0)
        if saved["deadline"] is None or deadline < saved["deadline"]:
            _state.update(deadline=deadline, seconds=total)
    try:
        yield
    finally:
        with _lock:
            _state.update(saved)


#: Budgets carried into this process by units of work of a run elsewhere (:func:`carried`):
#: token -> (deadline on this process's clock, the whole budget); the tightest holds.
_carried: dict[int, tuple[float, float]] = {}


def remaining() -> float | None:
    """Seconds left of the run's time budget (negative once it is spent); None without one."""
    deadline = _state["deadline"]
    if _carried:
        deadline = min([d for d, _ in list(_carried.values())]
                       + ([] if deadline is None else [deadline]))
    return None if deadline is None else deadline - clock()


def ambient() -> dict[str, float] | None:
    """The run's budget as a unit of work sent elsewhere (a Dask worker: another process or
    machine, with its own monotonic clock) carries it: the wall-clock time it ends
    (``time.time()``) and the whole budget in seconds; None without one."""
    left = remaining()
    if left is None:
        return None
    return {"until": time.time() + left, "seconds": float(budget_seconds() or left)}


@contextlib.contextmanager
def carried(budget: dict[str, float] | None) -> Iterator[None]:
    """Inside the block the budget :func:`ambient` took elsewhere holds here too (its end
    read again on this machine's wall clock), together with any of this process's own; the
    tighter holds. Units running at once in one worker each carry theirs. None: nothing."""
    if budget is None:
        yield
        return
    token = id(object())
    with _lock:
        while token in _carried:
            token += 1
        _carried[token] = (clock() + (budget["until"] - time.time()), budget["seconds"])
    try:
        yield
    finally:
        with _lock:
            _carried.pop(token, None)


@contextlib.contextmanager
def reserving(seconds: float | None, per_draw: float = 0.0) -> Iterator[None]:
    """Inside the block, a sampling run keeps more of the budget for what follows its draws,
    beyond its own share: ``seconds``, and ``per_draw`` seconds for each draw it keeps (the
    caller's estimate of its pass). None adds nothing."""
    saved = _state["reserved"], _state["per_draw"]
    _state["reserved"], _state["per_draw"] = (None, None) if seconds is None else (
        float(seconds), float(per_draw))
    try:
        yield
    finally:
        _state["reserved"], _state["per_draw"] = saved


class WrapUp:
    """What :func:`wrapping_up` hands its block: ``fired`` once a step cut its refinement
    short to leave the time kept (:func:`wrap_up_due`)."""

    fired = False


_wrap: list[WrapUp] = []


@contextlib.contextmanager
def wrapping_up(seconds: float | None) -> Iterator[WrapUp]:
    """Inside the block, a step that refines an answer it already has (a flow's next layer)
    stops refining once the budget left is ``seconds`` or less (:func:`wrap_up_due`), the time
    the caller needs to finish with what it has. None, or no budget: nothing is cut."""
    saved = _state["wrap_up"]
    _state["wrap_up"] = None if seconds is None else float(seconds)
    mark = WrapUp()
    _wrap.append(mark)
    try:
        yield mark
    finally:
        _wrap.remove(mark)
        _state["wrap_up"] = saved


def wrap_up_due() -> bool:
    """Whether a refinement should stop now to leave the time :func:`wrapping_up` keeps
    (False without a budget or outside such a block); a True marks the block's ``fired``."""
    keep, left = _state["wrap_up"], remaining()
    if keep is None or left is None or left > keep:
        return False
    if _wrap:
        _wrap[-1].fired = True
    return True


def reserved(draws: int = 0) -> float:
    """Seconds of the budget a sampling run that keeps ``draws`` draws (all chains) keeps
    beyond its share for what follows them (:func:`reserving`)."""
    return (_state["reserved"] or 0.0) + (_state["per_draw"] or 0.0) * draws


def budget_seconds() -> float | None:
    """The whole time budget in force, in seconds (None without one)."""
    if _carried and _state["seconds"] is None:
        return min(list(_carried.values()))[1]
    return _state["seconds"]


def elapsed() -> float:
    """Seconds of the run's time budget spent so far (0 without one)."""
    left, total = remaining(), budget_seconds()
    return 0.0 if left is None or total is None else max(total - left, 0.0)


def left_text(available: float) -> str:
    """``"the 6 min left of the time budget (10 min)"``: what a step had (``available``
    seconds from its start) of the run's budget; ``"the time budget of 10 min"`` when that
    was all of it."""
    total = budget_seconds()
    if total is None or available >= 0.95 * total:
        return f"the time budget of {duration(total or available)} allows"
    return f"the {duration(available)} left of the time budget ({duration(total)})"


def fewer_iterations(seconds_per_iteration: float, available: float, iterations: int,
                     least: int = 200) -> Route | None:
    """The route ``warmup=W, draws=W`` with the iterations per chain (``2W``, whole hundreds,
    at least ``least`` and fewer than ``iterations``) that fit in half of ``available`` seconds when
    each iteration per chain costs ``seconds_per_iteration`` (all chains, or all refits,
    together); None when none fits."""
    fit = int(0.5 * available / seconds_per_iteration) // 100 * 100
    if not least <= fit < iterations:
        return None
    return Route(options={"warmup": fit // 2, "draws": fit // 2},
                 note=f"(about {duration(seconds_per_iteration * fit)} here)")


#: The budget a refusal names for a whole command: WHOLE_MARGIN x what the run has measured
#: (its seconds before the step that refused, the whole step at the rate so far, what its
#: caller priced for after it) plus WHOLE_SLACK_S for what nobody priced (summaries, a
#: fix-up). A flat minute or two on top (before) named 64 s for the README's wells example,
#: whose whole run takes 12-14 s (issue 45: routes 5-45 times too large); a budget that still
#: falls short answers past NUTS's warmup, with the draws (or observations, refits) so far.
WHOLE_MARGIN = 1.3
WHOLE_SLACK_S = 10.0


def whole_budget(step: float, step_elapsed: float, after: float = 0.0) -> float:
    """Seconds of budget the whole command needs, for the refusal of one of its steps: the
    ``step`` whole at the rate measured, the budget spent before the step began (the budget
    spent less the step's ``step_elapsed`` seconds so far: a compile, sampling before a pass)
    and ``after`` seconds priced for what follows it, times ``WHOLE_MARGIN``, plus
    ``WHOLE_SLACK_S``."""
    before = max(elapsed() - step_elapsed, 0.0)
    return WHOLE_MARGIN * (before + step + after) + WHOLE_SLACK_S


def as_option(seconds: float, note: str = "") -> Route:
    """The route of a time budget of ``seconds`` rounded up to whole seconds below 2 min, to
    whole minutes up to 3 h and to hours past that, with ``note`` said after it (a route of
    "1m" for a 3 s budget asked 20 times what was needed: issue 45)."""
    minutes = math.ceil(seconds / 60.0)
    text = (f"{max(1, math.ceil(seconds))}s" if seconds < 120 else
            f"{math.ceil(minutes / 60)}h" if minutes > 180 else f"{minutes}m")
    return Route(options={"time_budget": text}, note=note)


class StepsClock:
    """The time budget of ``total`` equal steps (refits, folds) that each run ``iterations``
    NUTS iterations per chain: :meth:`done` after each one raises :class:`OverBudget` once
    the steps left, at the rate so far, would end after the budget, naming fewer iterations
    per chain that fit in half of it (at least ``min_iterations``), or the budget all the
    steps need."""

    def __init__(self, desc: str, total: int, iterations: int | None = None,
                 min_iterations: int = 200) -> None:
        self.desc, self.total, self.iterations = desc, total, iterations
        self.min_iterations = min_iterations
        self.start = clock()
        self.count = 0
        self._lock = threading.Lock()

    def done(self) -> None:
        """One more step done; :class:`OverBudget` when the rest would overrun."""
        with self._lock:
            self.count += 1
            done = self.count
        left_budget = remaining()
        if left_budget is None or done >= self.total:
            return
        elapsed = clock() - self.start
        per_step = elapsed / done
        left = per_step * (self.total - done)
        if left <= left_budget:
            return
        available = elapsed + max(left_budget, 0.0)
        fewer = (fewer_iterations(per_step * self.total / self.iterations, available,
                                  self.iterations, self.min_iterations)
                 if self.iterations else None)
        routes = [fewer] if fewer else []
        routes.append(as_option(whole_budget(elapsed + left, elapsed), "for all of them"))
        raise OverBudget(
            f"the {self.total} {self.desc} would take about {duration(elapsed + left)} here "
            f"({done} done in {duration(elapsed)}), more than {left_text(available)}; run with "
            + ", or ".join(map(str, routes)), routes=tuple(routes))


def expired() -> bool:
    """Whether :func:`watchdog` stopped the run (the budget ran out in a step that does not
    check it)."""
    return bool(_state["expired"])


@contextlib.contextmanager
def watchdog(grace: float) -> Iterator[None]:
    """The backstop of a run's time budget: ``grace`` seconds after the budget is spent, a
    step that checks no budget (or checked it too late) is interrupted in the main thread
    (``KeyboardInterrupt``, again every few seconds until the run ends), and :func:`expired`
    says it was the budget. Nothing without a budget."""
    import _thread

    left = remaining()
    if left is None:
        yield
        return
    timers: list[threading.Timer] = []
    # set when the run ends: a timer that fires as it ends neither interrupts nor schedules
    # another (one scheduled after the timers were cancelled interrupted whatever ran 5 s
    # later: a test suite's worker crashed in the next test, with "keyboard-interrupt")
    done = threading.Event()

    def fire() -> None:
        if done.is_set():
            return
        _state["expired"] = 1.0
        main = threading.main_thread().ident
        if hasattr(signal, "pthread_kill") and main is not None and \
                signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            # a real signal to the main thread: it also ends a wait on a lock (the results of
            # worker processes), which interrupt_main's flag alone does not (cv under a 20 s
            # budget ran for 10 min with its main thread waiting on a process pool)
            signal.pthread_kill(main, signal.SIGINT)
        else:
            _thread.interrupt_main()
        again = threading.Timer(5.0, fire)  # a step that caught the first one
        again.daemon = True
        timers.append(again)
        again.start()
        if done.is_set():  # the run ended while this one fired: the list was already read
            again.cancel()

    first = threading.Timer(max(left, 0.0) + grace, fire)
    first.daemon = True
    timers.append(first)
    first.start()
    try:
        yield
    finally:
        done.set()
        for t in list(timers):
            t.cancel()
