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
    #: (draws kept, draws asked) per chain when the time budget ended sampling after the
    #: warmup (:class:`_BudgetWatch`); None when the run went to its end
    budget_stop: tuple[int, ...] | None = None


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
#: Until a tenth of the warmup is done, a run is refused only when its warmup would take
#: EARLY_MARGIN times the time it has (the one margin of every early judgement).
EARLY_MARGIN = deadline.EARLY_MARGIN
#: Iterations per chain named as the smallest route (half warmup, half draws).
MIN_ROUTE_ITERATIONS = 200
#: Seconds between two checks of the budget (closer to the stop point, every poll).
CHECK_S = 0.5
#: The part of the time budget a run must leave for what follows its draws (loo's pass,
#: evidence's bridge), when the caller gives no estimate of it.
RESERVE = 0.1
#: Draws per chain after the warmup that a run must be able to reach before the point where
#: the reserve starts; a run that cannot is refused while still in warmup.
MIN_DRAWS = 25


def budget_stop_warning(kept: int, asked: int, chains_kept: int | None = None,
                        chains: int | None = None) -> str:
    """The warning of a run that the time budget ended after ``kept`` of ``asked`` draws
    per chain (of ``chains_kept`` of its ``chains``, the others still in warmup)."""
    those = ("" if chains_kept is None else
             f" of {chains_kept} of {chains} chains (the others were still in warmup)")
    return (f"the time budget ended sampling after {kept} of {asked} draws per chain{those}; "
            "ESS and mcse count only these")


def budget_stop_dict(stop: tuple[int, ...]) -> dict[str, int]:
    """A run's ``budget_stop`` for JSON: ``draws_kept``, ``draws_asked`` (per chain) and,
    where chains still in warmup were left out, ``chains_kept`` and ``chains``."""
    out = {"draws_kept": int(stop[0]), "draws_asked": int(stop[1])}
    if len(stop) > 2:
        out.update(chains_kept=int(stop[2]), chains=int(stop[3]))
    return out


class _BudgetWatch:
    """Keeps a NUTS run within the run's time budget (:mod:`stanlogz._util.deadline`).

    The run goes on while it can end before the point where the reserve for what follows
    starts (``reserve`` seconds, or ``RESERVE`` of the budget and what the caller reserved:
    :func:`~stanlogz._util.deadline.reserving`). Once every chain is past its
    warmup and that point is reached, :meth:`check` returns True: the caller stops the chains
    and keeps the draws so far. While a chain is still in warmup, :meth:`check` raises
    :class:`~stanlogz._util.deadline.OverBudget` when the warmup (and ``MIN_DRAWS`` draws)
    cannot end before that point, naming fewer iterations that fit, or the budget the whole
    run needs."""

    def __init__(self, name: str, chains: int, warmup: int, draws: int,
                 reserve: float | None = None) -> None:
        self.name, self.chains, self.warmup, self.draws = name, chains, warmup, draws
        self.total = chains * (warmup + draws)
        self.reserve = reserve
        self.start = deadline.clock()
        self.last = self.start
        #: (time, iterations of each chain) at each check
        self.history: list[tuple[float, np.ndarray]] = [(self.start, np.zeros(chains, int))]
        self.stopped = False
        #: the chains a stop keeps (those with draws when others were still in warmup)
        self.keep: np.ndarray | None = None

    def _reserve(self, kept: int) -> float:
        """Seconds kept for what follows ``kept`` draws (all chains)."""
        if self.reserve is not None:
            return self.reserve
        return RESERVE * (deadline.budget_seconds() or 0.0) + deadline.reserved(kept)

    def check(self, iterations: np.ndarray) -> bool:
        """Whether to stop the chains now and keep their draws (every chain past warmup at
        the reserve point); :class:`OverBudget` while in a warmup that cannot end in time."""
        left_budget = deadline.remaining()
        if left_budget is None or self.stopped:
            return self.stopped
        now = deadline.clock()
        its = np.array(iterations, dtype=np.int64)  # read once: the sampler keeps counting
        # chains with MIN_DRAWS draws while others are still in warmup (more chains than
        # cores: the later ones start when earlier ones end) are an answer already
        ready = its >= self.warmup + min(MIN_DRAWS, self.draws)
        some = ready.any() and int(its.min()) <= self.warmup
        # the draws kept (the same number for every chain kept)
        kept = (int(ready.sum()) * (int(its[ready].min()) - self.warmup) if some else
                self.chains * max(int(its.min()) - self.warmup, 0))
        least = self.chains * min(MIN_DRAWS, self.draws)
        # seconds before the reserve point (what follows the draws kept, at least MIN_DRAWS)
        usable = left_budget - self._reserve(max(kept, least))
        if now - self.last < CHECK_S and usable > 2 * CHECK_S:
            return False
        self.last = now
        self.history.append((now, its))
        if int(its.sum()) >= self.total:
            return False
        slowest = int(its.min())
        if slowest > self.warmup:  # every chain has draws: keep them from the reserve point on
            # (into the reserve while fewer than MIN_DRAWS, up to the end of the budget)
            few = slowest - self.warmup < min(MIN_DRAWS, self.draws)
            if usable > 0 or (few and left_budget > 0):
                return False
            if slowest - self.warmup < 2:
                raise self._refusal(now, its, None)
            self.stopped = True
            return True
        if some:  # the laggards' warmup may still end; else keep the chains with draws
            if usable > 0:
                return False
            self.keep, self.stopped = ready, True
            return True
        if usable <= 0:
            raise self._refusal(now, its, None)
        need = self._warmup_left(now, its)
        margin = EARLY_MARGIN if slowest < self.warmup / 10 else 1.0
        if need is not None and need > margin * usable:
            raise self._refusal(now, its, need)
        return False

    def _warmup_left(self, now: float, its: np.ndarray) -> float | None:
        """Seconds until every chain has ``MIN_DRAWS`` draws, at the rate of all chains
        together over the later half of their iterations (None before the slowest chain has
        done 20). The chains share the cores: a chain that lags while the others run gets
        their share once they are done, so the iterations left of all chains count, at the
        rate of all (the lagging chain's own rate made a 2 s run look 4 times longer)."""
        if int(its.min()) < 20:
            return None
        done = int(its.sum())
        t0, d0 = next((t, int(h.sum())) for t, h in self.history if h.sum() >= done / 2)
        if done - d0 < 10 or now <= t0:
            t0, d0 = self.start, 0
        rate = (done - d0) / max(now - t0, 1e-9)
        need = np.maximum(self.warmup + min(MIN_DRAWS, self.draws) - its, 0).sum()
        return float(need) / rate

    def _refusal(self, now: float, its: np.ndarray, left: float | None) -> deadline.OverBudget:
        """The refusal in warmup: how far the run got, its whole time here, and what fits."""
        elapsed = now - self.start
        done = int(its.sum())
        per_iteration = elapsed / max(done, 1)  # seconds per iteration, all chains together
        whole = per_iteration * self.total
        available = elapsed + max(deadline.remaining() or 0.0, 0.0)
        # half of the budget for sampling, the rest for what follows its draws; where the
        # caller estimated that (per draw kept), each iteration counts its share of it too
        rate = per_iteration * self.chains + deadline.reserved(self.chains) / 2 - \
            deadline.reserved(0) / 2
        room = available - deadline.reserved(0)
        fewer = deadline.fewer_iterations(rate, room, self.warmup + self.draws,
                                          MIN_ROUTE_ITERATIONS)
        routes = [fewer] if fewer else []
        whole_run = deadline.whole_budget(whole, elapsed,
                                          deadline.reserved(self.chains * self.draws))
        routes.append(deadline.as_option(whole_run, "for the whole run"))
        return deadline.OverBudget(
            f"sampling {self.name} would take about {duration(whole)} here "
                f"({self.chains} chains x {self.warmup + self.draws} iterations; {done} of "
                f"{self.total} done in {duration(elapsed)}, "
                f"{'still in warmup' if its.min() <= self.warmup else 'too few draws'}), more than "
                f"{deadline.left_text(available)}; run with " + ", or ".join(map(str, routes)),
                routes=tuple(routes))


def run_nuts(
    model: StanProgram,
    settings: NutsArgs | None = None,
    *,
    seed: int | None = None,
    init: None | Mapping[str, Any] | Sequence[Mapping[str, Any]] = None,
    save_warmup: bool = False,
    progress: Progress = None,
    reserve: float | None = None,
    warm: Any = None,
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

    Under a run's time budget (:func:`stanlogz.time_budget`) the run keeps ``reserve``
    seconds (default ``RESERVE`` of the budget) for what follows its draws: past the warmup,
    the chains stop at that point and the draws so far are returned (the same number per
    chain; where some chains were still in warmup, those with draws), with ``budget_stop``
    set; the step size is the adapted one and the inverse metric
    is estimated from the kept draws (as Stan regularizes its windows' variances). A run still
    in warmup that cannot end it in time raises
    :class:`~stanlogz._util.deadline.OverBudget` naming fewer iterations that fit.

    ``warm`` (an object with ``step_size`` ``(n,)`` and ``inv_metric`` ``(n, dim)``, a run
    of the same parameters) starts the adaptation from the median of its step sizes and chain
    c from its inverse metric ``c % n`` instead of the unit metric; Stan's adaptation windows
    still run over the ``warmup`` iterations. The chains' inits come from ``init``.
    Its ``windows`` attribute, where it has one (init buffer, term buffer, first metric
    window), replaces CmdStan's 75, 50, 25.
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
    step_in, metric_in = _warm_start(model, warm, chains)
    windows = getattr(warm, "windows", None)
    windows_in = None if windows is None else (ctypes.c_int * 3)(*(int(w) for w in windows))
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
        status.append(model._lib.slz_nuts_run(
            model._ptr, chains, warmup, draws, seed, adapt_delta, max_treedepth, init_radius,
            ctypes.cast(init_array, ctypes.c_void_p) if init_buffers else None, step_in,
            None if metric_in is None else metric_in.ctypes.data, windows_in,
            raw.ctypes.data, unc.ctypes.data, step.ctypes.data, inv_metric.ctypes.data,
            iterations.ctypes.data, ctypes.byref(stop), ctypes.byref(err)))

    start = time.perf_counter()
    bar = steps(progress, chains * rows, f"NUTS {model.name}", unit="it")
    ticker = (_NutsProgress(progress, warmup, rows, start) if progress and not bar.drawn
              else None)
    watch = _BudgetWatch(model.name, chains, warmup, draws, reserve)

    def poll() -> None:
        if watch.check(iterations):
            stop.value = 1  # past warmup at the reserve point: keep the draws so far
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
    budget_stop = None
    if rc == 3 and watch.stopped:
        if err.value:
            model._take_error(err)  # "interrupted": the flag this run set
        n_grad = int(raw[:, :, SAMPLER_COLUMNS.index("n_leapfrog__")].sum())  # every chain's
        mask = watch.keep if watch.keep is not None else np.ones(chains, bool)
        raw, unc, iterations = raw[mask], unc[mask], iterations[mask]
        kept = max(0, int(iterations.min()) - warmup)
        rows, rc = warmup + kept, 0
        budget_stop = (len(range(0, kept, thin)), len(range(0, draws, thin)))
        if not mask.all():
            budget_stop += (int(mask.sum()), chains)
        step = raw[:, rows - 1, SAMPLER_COLUMNS.index("stepsize__")].copy()
        inv_metric = _metric_from_draws(unc[:, warmup:rows])
        if progress:
            progress(budget_stop_warning(*budget_stop))
    if rc == 1:
        log = model._take_error(err)
        raise InitializationError(_init_failure(model, log), log=log.replace(" | ", "\n"))
    if rc:
        log = model._take_error(err)
        raise StanlogzError(f"NUTS failed for {model.name}: {stan_failure_cause(log)}",
                            log=log.replace(" | ", "\n"))
    if budget_stop is None:
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
        budget_stop=budget_stop,
    )


def _warm_start(model: StanProgram, warm: Any, chains: int) -> tuple[float, np.ndarray | None]:
    """The step size (0.0: Stan's default) and ``(chains, dim)`` inverse metrics (None: the
    unit one) a run starts from, from ``warm`` (see :func:`run_nuts`)."""
    if warm is None:
        return 0.0, None
    step = np.asarray(warm.step_size, dtype=float).reshape(-1)
    metric = np.asarray(warm.inv_metric, dtype=float)
    if metric.ndim != 2 or metric.shape[1] != model._dim or step.size < 1 \
            or not (np.all(np.isfinite(metric)) and np.all(metric > 0)) \
            or not (np.all(np.isfinite(step)) and np.all(step > 0)):
        raise InputError(f"warm start of {model.name}: need positive finite step sizes and "
                         f"inverse metrics of shape (n, {model._dim}), got {metric.shape}")
    rows = np.arange(chains) % metric.shape[0]
    return float(np.median(step)), np.ascontiguousarray(metric[rows])


def _metric_from_draws(unc: np.ndarray) -> np.ndarray:
    """The diagonal inverse metric of each chain from its draws ``(chains, n, dim)``: their
    variances, regularized toward 1e-3 as Stan regularizes its adaptation windows' (NaN with
    fewer than two draws). Stan returns no metric for a chain stopped by the flag."""
    n = unc.shape[1]
    if n < 2:
        return np.full((unc.shape[0], unc.shape[2]), np.nan)
    var = unc.var(axis=1, ddof=1)
    return (n / (n + 5.0)) * var + 1e-3 * (5.0 / (n + 5.0))


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

