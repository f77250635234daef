"""Running Stan's NUTS in a worker thread: its output, progress lines and a clean stop on Ctrl-C."""

from __future__ import annotations

import ctypes
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._util import deadline
from .._util.progress import Progress, duration, steps, time_left
from .._util.seeds import int_seed
from ..errors import InitializationError, InputError, StanlogzError, ToolchainError
from .inputs import data_to_json
from .messages import _check, _with_variable, stan_failure_cause
from .program import StanProgram
from .settings import NutsArgs

#: Sampler columns of a CmdStan CSV, in CmdStan's order; the C++ NUTS writes them so too.
SAMPLER_COLUMNS = ("lp__", "accept_stat__", "stepsize__", "treedepth__", "n_leapfrog__",
                   "divergent__", "energy__")


# Progress lines during NUTS: at most one per PROGRESS_INTERVAL_S seconds, each when some chain
# has passed another tenth of its iterations; the sampler thread is polled every _POLL_S.
PROGRESS_INTERVAL_S = 1.0


_POLL_S = 0.05


@dataclass
class NutsOutput:
    """Draws and adaptation results of Stan's NUTS (diagonal metric), one row per kept draw."""

    constrained: np.ndarray  # (chains, draws, param_num(include_tp=True, include_gq=True))
    unconstrained: np.ndarray  # (chains, draws, dim)
    constrained_names: list[str]
    sampler: dict[str, np.ndarray]  # lp__, accept_stat__, ... each (chains, draws)
    step_size: np.ndarray  # (chains,) adapted
    inv_metric: np.ndarray  # (chains, dim) adapted diagonal
    seconds: float
    n_gradient_evals: int  # total leapfrog steps, warmup included
    max_treedepth: int
    seed: int


def _run_stoppable(call: Callable[[], None], stop: ctypes.c_int, poll: Callable[[], None],
                   *, name: str) -> None:
    """Run ``call`` (a blocking library call watching ``stop``) in a worker thread, calling
    ``poll`` while it runs. On an exception here, KeyboardInterrupt included, sets ``stop``,
    waits for ``call`` to return (it writes into the caller's arrays) and re-raises."""
    worker = threading.Thread(target=call, name=name, daemon=True)
    try:
        worker.start()  # inside: a Ctrl-C while the thread starts must stop it too
        while worker.is_alive():
            worker.join(_POLL_S)
            if worker.is_alive():
                poll()
    except BaseException:
        stop.value = 1
        while worker.is_alive():
            try:
                worker.join(_POLL_S)
            except KeyboardInterrupt:
                continue
        raise


def eta_suffix(history: Sequence[tuple[float, int]], now: float, done: int, total: int) -> str:
    """`` — about T left`` at the rate over the later half of the iterations done so far
    (``history``: times and iterations done at earlier lines; all chains together, as they
    share the cores), or nothing until a tenth is done. Early warmup iterations, before the
    step size and metric adapt, take the longest trees: counting them made the time left up to
    2.6 times too long (benchmarks/nuts_eta.py)."""
    if done >= total or done < total / 10:
        return ""
    t0, d0 = next((t, d) for t, d in history if d >= done / 2)
    if done - d0 < total / 20:
        return ""
    left = time_left(now - t0, done - d0, total - d0)
    return f" \N{EM DASH} about {duration(left)} left"


class _NutsProgress:
    """Per-chain iteration progress lines for a running NUTS call, throttled."""

    def __init__(self, progress: Callable[[str], None], warmup: int, total: int,
                 start: float) -> None:
        self.progress = progress
        self.warmup = warmup
        self.total = total
        self.last = start
        self.history: list[tuple[float, int]] = []  # (time, iterations done) at each line
        self.reported: list[int] = []

    def poll(self, iterations: np.ndarray) -> None:
        """Report the chains that passed another tenth of their iterations since last time."""
        now = time.perf_counter()
        if now - self.last < PROGRESS_INTERVAL_S:
            return
        done = [int(i) for i in iterations]  # read once: the sampler keeps counting
        if not self.reported:
            self.reported = [0] * len(done)
        tenths = [10 * i // self.total for i in done]
        moved = [c for c, t in enumerate(tenths) if t > self.reported[c]]
        if not moved:
            return
        line = "; ".join(f"chain {c + 1}: iteration {done[c]}/{self.total} "
                         f"({'warmup' if done[c] <= self.warmup else 'sampling'})"
                         for c in moved)
        self.history.append((now, sum(done)))
        self.progress(line + eta_suffix(self.history, now, sum(done), self.total * len(done)))
        for c in moved:
            self.reported[c] = tenths[c]
        self.last = now
#: Until a tenth of the iterations is done, the rate still counts the early warmup's long trees
#: (up to 2.6 times the rate of the rest: benchmarks/nuts_eta.py): a run is stopped then only
#: when it would take this many times the budget left.
EARLY_MARGIN = 3.0
#: Iterations per chain named as the smallest route (half warmup, half draws).
MIN_ROUTE_ITERATIONS = 200
#: Seconds between two checks of the budget.
CHECK_S = 0.5
#: The part of the time budget a run must leave for what follows its draws.
RESERVE = 0.1


class _BudgetWatch:
    """Stops a NUTS run that would end after the run's time budget
    (:mod:`stanlogz._util.deadline`): once the time left at the rate so far exceeds the budget
    left (or the budget is spent), :meth:`check` raises :class:`~stanlogz._util.deadline.
    OverBudget` naming fewer iterations that fit, or the budget the whole run needs."""

    def __init__(self, name: str, chains: int, warmup: int, draws: int) -> None:
        self.name, self.chains, self.warmup, self.draws = name, chains, warmup, draws
        self.total = chains * (warmup + draws)
        self.start = deadline.clock()
        self.history: list[tuple[float, int]] = [(self.start, 0)]

    def check(self, iterations: np.ndarray) -> None:
        left_budget = deadline.remaining()
        if left_budget is None:
            return
        now = deadline.clock()
        if now - self.history[-1][0] < CHECK_S and left_budget > 0:
            return
        done = int(iterations.sum())
        self.history.append((now, done))
        if left_budget <= 0 and done < self.total:
            raise deadline.OverBudget(self._message(now, done, None))
        if done < self.total / 40 or done >= self.total:
            return
        if done < self.total / 10:
            left = time_left(now - self.start, done, self.total)
            if left > EARLY_MARGIN * left_budget:
                raise deadline.OverBudget(self._message(now, done, left))
            return
        t0, d0 = next((t, d) for t, d in self.history if d >= done / 2)
        if done - d0 < self.total / 20:
            return
        left = time_left(now - t0, done - d0, self.total - d0)
        # what follows the draws (loo's pass, evidence's bridge) keeps RESERVE of the budget
        if left > left_budget - RESERVE * (deadline.budget_seconds() or 0.0):
            raise deadline.OverBudget(self._message(now, done, left))

    def _message(self, now: float, done: int, left: float | None) -> str:
        """The refusal: how far the run got, its whole time here, and what fits."""
        elapsed = now - self.start
        per_iteration = elapsed / max(done, 1)  # seconds per iteration, all chains together
        whole = elapsed + (left if left is not None else per_iteration * (self.total - done))
        available = elapsed + max(deadline.remaining() or 0.0, 0.0)
        fewer = deadline.fewer_iterations(per_iteration * self.chains, available,
                                          self.warmup + self.draws, MIN_ROUTE_ITERATIONS)
        routes = [fewer] if fewer else []
        routes.append(f"{deadline.as_option(1.3 * whole + 60)} for the whole run")
        return (f"sampling {self.name} would take about {duration(whole)} here "
                f"({self.chains} chains x {self.warmup + self.draws} iterations; {done} of "
                f"{self.total} done in {duration(elapsed)}), more than "
                f"{deadline.left_text(available)}; run with " + ", or ".join(routes))


def run_nuts(
    model: StanProgram,
    settings: NutsArgs | None = None,
    *,
    seed: int | None = None,
    init: None | Mapping[str, Any] | Sequence[Mapping[str, Any]] = None,
    save_warmup: bool = False,
    progress: Progress = None,
    **overrides: Any,
) -> NutsOutput:
    """Stan's NUTS with diagonal-metric adaptation (CmdStan defaults), chains in parallel, on
    ``model`` (a :class:`~stanlogz.stan.model.StanModel`; this is its ``nuts`` method).

    ``settings`` (a :class:`~stanlogz.stan.settings.NutsArgs`) holds chains, warmup, draws,
    adapt_delta, max_treedepth, init_radius and thin; keyword ``overrides`` of the same names
    replace single fields. With ``save_warmup`` the kept warmup draws come first in every array.
    ``init`` is None (uniform(-init_radius, init_radius) on the unconstrained scale), a dict of
    constrained values for all chains, or one dict per chain. ``progress`` gets a start and
    an end line and, at most once per ``PROGRESS_INTERVAL_S`` seconds, the iteration of
    chains that passed another tenth of their iterations (or one bar of all chains'
    iterations, when it draws bars: :mod:`stanlogz._util.progress`). Ctrl-C
    (KeyboardInterrupt) stops all chains at their next iteration and is re-raised; the draws
    do not depend on either.
    """
    # a NutsArgs from a workflow arrives validated; only direct callers' keywords need it
    args = settings if isinstance(settings, NutsArgs) and not overrides else NutsArgs.of(
        settings, **overrides)
    chains, warmup, draws, thin = args.chains, args.warmup, args.draws, args.thin
    adapt_delta, max_treedepth, init_radius = args.adapt_delta, args.max_treedepth, args.init_radius
    if not model._has_nuts:
        raise ToolchainError(f"{model.lib_path.name} has no stanlogz NUTS entry (built with "
                             "the bridgestan backend or an older stanlogz); rebuild it or "
                             "sample with cmdstanpy instead")
    _check(model._dim > 0, f"{model.name} has no parameters to sample")
    seed = int_seed(seed)
    init_buffers = _init_jsons(init, chains)
    init_array = (ctypes.c_char_p * chains)(*init_buffers) if init_buffers else None
    rows = warmup + draws
    k = model.param_num(True, True)
    d = model._dim
    raw = np.zeros((chains, rows, len(SAMPLER_COLUMNS) + k))
    unc = np.zeros((chains, rows, d))
    step = np.zeros(chains)
    inv_metric = np.zeros((chains, d))
    if progress:
        progress(f"sampling {model.name}: {chains} chains x ({warmup} warmup + {draws} draws)")
    err = ctypes.c_void_p()
    iterations = np.zeros(chains, dtype=np.int64)
    stop = ctypes.c_int(0)
    status: list[int] = []

    def run() -> None:
        status.append(model._lib.slz_nuts_ctl(
            model._ptr, chains, warmup, draws, seed, adapt_delta, max_treedepth, init_radius,
            ctypes.cast(init_array, ctypes.c_void_p) if init_buffers else None,
            raw.ctypes.data, unc.ctypes.data, step.ctypes.data, inv_metric.ctypes.data,
            iterations.ctypes.data, ctypes.byref(stop), ctypes.byref(err)))

    start = time.perf_counter()
    bar = steps(progress, chains * rows, f"NUTS {model.name}", unit="it")
    ticker = (_NutsProgress(progress, warmup, rows, start) if progress and not bar.drawn
              else None)
    watch = _BudgetWatch(model.name, chains, warmup, draws)

    def poll() -> None:
        watch.check(iterations)
        if ticker is not None:
            ticker.poll(iterations)
        elif bar.drawn:
            bar.set(int(iterations.sum()))

    try:
        with bar:
            _run_stoppable(run, stop, poll, name=f"stanlogz-nuts-{model.name}")
            bar.set(int(iterations.sum()))  # the last iterations, after the last poll
    except BaseException:
        if err.value:
            model._take_error(err)
        raise
    seconds = time.perf_counter() - start
    rc = status[0] if status else 2
    if rc == 1:
        log = model._take_error(err)
        raise InitializationError(_init_failure(model, log), log=log.replace(" | ", "\n"))
    if rc:
        log = model._take_error(err)
        raise StanlogzError(f"NUTS failed for {model.name}: {stan_failure_cause(log)}",
                            log=log.replace(" | ", "\n"))
    n_grad = int(raw[:, :, SAMPLER_COLUMNS.index("n_leapfrog__")].sum())
    keep = np.arange(warmup, rows, thin)
    if save_warmup:
        keep = np.concatenate([np.arange(0, warmup, thin), keep])
    raw = raw[:, keep]
    if progress:
        progress(f"sampled {model.name} in {seconds:.2f} s")
    return NutsOutput(
        constrained=np.ascontiguousarray(raw[:, :, len(SAMPLER_COLUMNS):]),
        unconstrained=np.ascontiguousarray(unc[:, keep]),
        constrained_names=model.param_names(True, True),
        sampler={c: np.ascontiguousarray(raw[:, :, i]) for i, c in enumerate(SAMPLER_COLUMNS)},
        step_size=step,
        inv_metric=inv_metric,
        seconds=seconds,
        n_gradient_evals=n_grad,
        max_treedepth=max_treedepth,
        seed=seed,
    )


def _init_jsons(init: Any, chains: int) -> list[bytes] | None:
    if init is None:
        return None
    if isinstance(init, Mapping):
        inits = [init] * chains
    elif isinstance(init, Sequence) and not isinstance(init, str):
        inits = list(init)
        if len(inits) != chains:
            raise InputError(f"init has {len(inits)} entries for {chains} chains")
    else:
        raise InputError("init must be None, a dict of constrained values, or a list of dicts")
    for item in inits:
        if not isinstance(item, Mapping):
            raise InputError("each init must be a dict of constrained values")
    return [data_to_json(i).encode() for i in inits]

def _init_failure(model: StanProgram, message: str) -> str:
    reasons = re.findall(r"Exception:\s*([^|]+)", message)
    reason = (_with_variable(model.code, reasons[-1]) if reasons
              else stan_failure_cause(message))  # each message of the log once
    return (f"NUTS initialization failed for {model.name}: no finite log density and "
            f"gradient in Stan's 100 attempts; reason: {reason}")

