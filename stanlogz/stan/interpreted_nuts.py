"""Stan's NUTS on an :class:`~stanlogz.stan.interpreted.InterpretedModel`: the interpreter's own
sampler (Stan's diagonal-metric NUTS, CmdStan's defaults and RNG streams), its draws returned as
the compiled sampler's :class:`~stanlogz.stan.nuts.NutsOutput` (constrained columns in
``param_names`` order, unconstrained draws, sampler columns, adapted step sizes and metrics)."""

from __future__ import annotations

import contextlib
import inspect
import io
import time
from typing import Any

import numpy as np

from .._util.seeds import int_seed
from ..errors import InitializationError, InputError, StanlogzError
from .nuts import SAMPLER_COLUMNS, NutsOutput, _init_jsons, run_nuts
from .settings import NutsArgs


def _flat(name: str) -> str:
    """stanli's ``theta[1,2]`` column name in stanlogz's ``theta.1.2`` style."""
    return name.replace("[", ".").replace(",", ".").replace("]", "")


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
    start = time.perf_counter()
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            fit = sampler.sample(chains=args.chains, seed=seed % (2**31 - 1),
                                 warmup=args.warmup, samples=args.draws,
                                 delta=args.adapt_delta, max_depth=args.max_treedepth,
                                 thin=args.thin, save_warmup=True, inits=inits,
                                 init_radius=args.init_radius, refresh=0, **start_from)
    except RuntimeError as exc:
        text = " ".join(str(exc).split())
        if "initial" in text.lower() or "initializ" in text.lower():
            raise InitializationError(f"NUTS initialization failed for {model.name}: {text}",
                                      log=str(exc)) from None
        raise StanlogzError(f"NUTS failed for {model.name}: {text}", log=str(exc)) from None
    seconds = time.perf_counter() - start
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
    n_grad = int(np.nansum(stat_of["n_leapfrog__"]))
    keep = slice(0 if save_warmup else n_warm, raw.shape[1])
    constrained = np.ascontiguousarray(raw[:, keep])
    k = model.param_num()
    unc = np.array([[model.unconstrain(row[:k]) for row in chain] for chain in constrained])
    if progress:
        progress(f"sampled {model.name} in {seconds:.2f} s (interpreted)")
    inv_metric = np.array([np.asarray(m, dtype=float) for m in fit.inv_metric])
    return NutsOutput(
        constrained=constrained,
        unconstrained=unc.reshape(constrained.shape[0], constrained.shape[1], model.dim),
        constrained_names=names,
        sampler={c: np.ascontiguousarray(v[:, keep]) for c, v in stat_of.items()},
        step_size=np.asarray(fit.step_size, dtype=float),
        inv_metric=inv_metric,
        seconds=seconds,
        n_gradient_evals=n_grad,
        max_treedepth=args.max_treedepth,
        seed=seed,
    )
