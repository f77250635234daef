"""Stan's NUTS on an :class:`~stanlogz.stan.interpreted.InterpretedModel`: the interpreter's own
sampler (Stan's diagonal-metric NUTS, CmdStan's defaults and RNG streams), its draws returned as
the compiled sampler's :class:`~stanlogz.stan.nuts.NutsOutput` (constrained columns in
``param_names`` order, unconstrained draws, sampler columns, adapted step sizes and metrics)."""

from __future__ import annotations

import contextlib
import inspect
import io
import threading
import time
from collections.abc import Iterator
from typing import Any

import numpy as np

from .._util import deadline
from .._util.seeds import int_seed
from ..errors import InitializationError, InputError, LostDraws, StanlogzError
from .nuts import (
    SAMPLER_COLUMNS,
    NutsOutput,
    _BudgetWatch,
    _init_jsons,
    _metric_from_draws,
    budget_stop_warning,
    run_nuts,
)
from .settings import NutsArgs

#: Budgeted interpreted runs patch two of stanli's module hooks (its poll of a stop and its
#: per-transition progress print) for the length of the native call: one such run at a time.
_HOOKS = threading.Lock()


class _Budget:
    """A time budget over the interpreter's sampler: the chains' iterations (from stanli's
    per-transition progress hook) checked by the compiled sampler's
    :class:`~stanlogz.stan.nuts._BudgetWatch`, which stops the chains past warmup at the
    reserve point (stanli's poll answers 1) or refuses in a warmup that cannot end in time
    (the refusal is raised once the sampler has returned)."""

    def __init__(self, name: str, args: NutsArgs, reserve: float | None) -> None:
        self.iterations = np.zeros(args.chains, dtype=np.int64)
        self.watch = _BudgetWatch(name, args.chains, args.warmup, args.draws, reserve)
        self.refusal: deadline.OverBudget | None = None

    def poll(self) -> int:
        if self.refusal is not None or self.watch.stopped:
            return 1
        try:
            return 1 if self.watch.check(self.iterations) else 0
        except deadline.OverBudget as exc:  # ctypes would swallow it: raised after the call
            self.refusal = exc
            return 1

    def seen(self, chain_id: int, iteration: int, *_: Any) -> None:
        if 1 <= chain_id <= self.iterations.size:
            self.iterations[chain_id - 1] = iteration

    @contextlib.contextmanager
    def hooked(self, stanli: Any, per_draw: float) -> Iterator[None]:
        """stanli's hooks pointed at this budget while its sampler runs in this thread, with
        ``per_draw`` seconds more kept for each draw (stanlogz unconstrains the draws after
        the call)."""
        owner, budget, base = threading.get_ident(), self, stanli._InterruptWatch

        class Watch(base):  # type: ignore[misc, valid-type]
            def __init__(self) -> None:
                super().__init__()
                self.mine = threading.get_ident() == owner
                if self.mine:
                    self.poll = stanli._SamplePollCallback(
                        lambda _user: 1 if self.tripped else budget.poll())

            def raise_interrupt(self) -> None:
                if self.tripped or not self.mine:  # Ctrl-C: stanli's KeyboardInterrupt
                    super().raise_interrupt()

        base_seconds = deadline.reserved(0)
        with _HOOKS, deadline.reserving(base_seconds,
                                        deadline.reserved(1) - base_seconds + per_draw):
            printer = stanli._print_sample_progress
            stanli._InterruptWatch, stanli._print_sample_progress = Watch, self.seen
            try:
                yield
            finally:
                stanli._InterruptWatch, stanli._print_sample_progress = base, printer


def _flat(name: str) -> str:
    """stanli's ``theta[1,2]`` column name in stanlogz's ``theta.1.2`` style."""
    return name.replace("[", ".").replace(",", ".").replace("]", "")


def _unconstrain_seconds(model: Any, calls: int = 20) -> float:
    """Seconds per draw of turning the sampler's constrained draws back into unconstrained
    ones (timed at the origin, with a margin of 2)."""
    theta = model.constrain(np.zeros(model.dim))[:model.param_num()]
    start = time.perf_counter()
    for _ in range(calls):
        model.unconstrain(theta)
    return 2.0 * (time.perf_counter() - start) / calls


def run_interpreted_nuts(model: Any, settings: NutsArgs | None = None, *,
                         warm: NutsOutput | None = None, **keywords: Any) -> NutsOutput:
    """:func:`stanlogz.stan.nuts.run_nuts`'s contract (its keywords, bound by its own signature,
    and its output) run by the interpreter's sampler. Ctrl-C stops every chain after its
    current transition. ``warm``: a run of the same parameters whose last draws, adapted step
    sizes and metrics start this one's chains (adaptation still runs for ``warmup``
    iterations; measured in ``benchmarks/interpreted_refits.py``)."""
    from ..toolchain.interpreter import stanli_module

    call = inspect.signature(run_nuts).bind(model, settings, **keywords)
    call.apply_defaults()
    given, overrides = call.arguments, call.arguments["overrides"]
    init, save_warmup, progress = given["init"], given["save_warmup"], given["progress"]
    stanli = stanli_module()
    args = settings if isinstance(settings, NutsArgs) and not overrides else NutsArgs.of(
        settings, **overrides)
    if model.dim == 0:
        raise InputError(f"{model.name} has no parameters to sample")
    seed = int_seed(given["seed"])
    inits = None
    if init is not None:
        jsons = _init_jsons(init, args.chains)
        assert jsons is not None
        import json

        inits = np.array([model.unconstrain_dict(json.loads(j)) for j in jsons])
    start_from: dict[str, Any] = {}
    if warm is not None:
        chains = np.arange(args.chains) % warm.unconstrained.shape[0]
        if inits is None:
            inits = np.ascontiguousarray(warm.unconstrained[chains, -1])
        start_from = {"inv_metric": np.ascontiguousarray(warm.inv_metric[chains]),
                      "step_size": float(np.median(warm.step_size))}  # stanli takes one
    if progress:
        progress(f"sampling {model.name}: {args.chains} chains x ({args.warmup} warmup + "
                 f"{args.draws} draws) (interpreted)")
    from ..toolchain.interpreter import BUILDING

    with BUILDING:
        sampler = stanli.Model(mir=model.mir, data=model.data_json,
                               seed=model.seed % (2**31 - 1))
    budget = (_Budget(model.name, args, given["reserve"])
              if deadline.remaining() is not None else None)
    start = time.perf_counter()
    try:
        with contextlib.redirect_stdout(io.StringIO()), (
                budget.hooked(stanli, _unconstrain_seconds(model)) if budget
                else contextlib.nullcontext()):
            fit = sampler.sample(chains=args.chains, seed=seed % (2**31 - 1),
                                 warmup=args.warmup, samples=args.draws,
                                 delta=args.adapt_delta, max_depth=args.max_treedepth,
                                 thin=args.thin, save_warmup=True, inits=inits,
                                 init_radius=args.init_radius, refresh=1 if budget else 0,
                                 # under a budget every chain runs at once (as the compiled
                                 # sampler's): a stop then keeps them all, not the first few
                                 **({"parallel_chains": args.chains} if budget else {}),
                                 **start_from)
    except RuntimeError as exc:
        text = " ".join(str(exc).split())
        if "initial" in text.lower() or "initializ" in text.lower():
            raise InitializationError(f"NUTS initialization failed for {model.name}: {text}",
                                      log=str(exc)) from None
        raise StanlogzError(f"NUTS failed for {model.name}: {text}", log=str(exc)) from None
    seconds = time.perf_counter() - start
    if budget is not None and budget.refusal is not None:
        raise budget.refusal
    names = model.param_names(True, True)
    column = {_flat(n): i for i, n in enumerate(fit.names)}
    missing = [n for n in names if n not in column]
    if missing:
        raise StanlogzError(f"the interpreter's draws of {model.name} lack {missing[:3]}")
    cols = [column[n] for n in names]
    raw = np.asarray(fit.draws())[:, :, cols]
    stats = np.asarray(fit.sampler_stats)
    stat_of = {c: stats[:, :, list(stanli.SAMPLER_COLUMNS).index(c)] for c in SAMPLER_COLUMNS}
    n_warm = len(range(0, args.warmup, args.thin))
    step_size = np.asarray(fit.step_size, dtype=float)
    stop = None
    if budget is not None and budget.watch.stopped:  # past warmup: the draws so far
        its = budget.iterations
        # rows each chain filled (the rest of stanli's buffers are unwritten)
        done = np.array([len(range(0, int(i), args.thin)) if i <= args.warmup else
                         n_warm + len(range(0, int(i) - args.warmup, args.thin)) for i in its])
        n_grad = int(sum(np.nansum(stat_of["n_leapfrog__"][c, :done[c]])
                         for c in range(args.chains)))
        mask = (budget.watch.keep if budget.watch.keep is not None
                else np.ones(args.chains, bool))
        rows = int(done[mask].min())
        raw, stat_of = raw[mask, :rows], {c: v[mask, :rows] for c, v in stat_of.items()}
        kept = rows - n_warm
        stop = (kept, len(range(0, args.draws, args.thin)))
        if not mask.all():
            stop += (int(mask.sum()), args.chains)
        step_size = stat_of["stepsize__"][:, rows - 1].copy()
        if progress:
            progress(budget_stop_warning(*stop))
    else:
        n_grad = int(np.nansum(stat_of["n_leapfrog__"]))
    keep = slice(0 if save_warmup else n_warm, raw.shape[1])
    constrained = np.ascontiguousarray(raw[:, keep])
    k = model.param_num()
    lost = int(np.sum(np.isnan(constrained[:, :, :k]).any(axis=2)))
    if lost:  # stanli writes no parameters where the generated quantities fail their checks
        raise LostDraws(f"{model.name}: the interpreter's sampler loses the parameters of the "
                        f"draws whose generated quantities fail their checks ({lost} of "
                        f"{constrained.shape[0] * constrained.shape[1]})")
    unc = np.array([[model.unconstrain(row[:k]) for row in chain] for chain in constrained])
    unc = unc.reshape(constrained.shape[0], constrained.shape[1], model.dim)
    if progress:
        progress(f"sampled {model.name} in {seconds:.2f} s (interpreted)")
    if stop is None:
        inv_metric = np.array([np.asarray(m, dtype=float) for m in fit.inv_metric])
    else:  # stanli's metric of a stopped chain is not its adapted one: from the draws kept
        inv_metric = _metric_from_draws(unc[:, unc.shape[1] - stop[0]:])
    return NutsOutput(
        constrained=constrained,
        unconstrained=unc,
        constrained_names=names,
        sampler={c: np.ascontiguousarray(v[:, keep]) for c, v in stat_of.items()},
        step_size=step_size,
        inv_metric=inv_metric,
        seconds=seconds,
        n_gradient_evals=n_grad,
        max_treedepth=args.max_treedepth,
        seed=seed,
        budget_stop=stop,
    )
