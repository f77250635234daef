"""More posterior draws: continue every chain of a :class:`~stanlogz.draws.Draws` from its last
draw with Stan's NUTS, and append the new draws."""

from __future__ import annotations

from typing import Any

import numpy as np
import stanio

from ..errors import InputError
from ..stan.program import StanProgram
from ..stan.settings import NutsArgs
from .core import Draws
from .sample import sample

#: warmup iterations of a continued chain: it starts in the typical set, so only the step size
#: and metric need re-adapting (Stan's adaptation windows fit in 150 iterations)
CONTINUATION_WARMUP = 150


def init_from_unconstrained(model: StanProgram, x: np.ndarray) -> dict[str, Any]:
    """Constrained values of ``model``'s parameters at unconstrained ``x``, as a Stan init
    (the flat values shaped into Stan variables by stanio, which reads Stan's flat names as
    CmdStan CSV headers: arrays in Stan's order, tuples as Stan JSON tuples)."""
    names = list(model.param_names(False, False))
    values = np.asarray(model.constrain(np.asarray(x, dtype=float)))[: len(names)]
    return {name: _json_tuples(var.extract_reshape(values))
            for name, var in stanio.parse_header(",".join(names)).items()}


def _json_tuples(value: Any) -> Any:
    """stanio's Python tuples (Stan tuples) as Stan JSON's ``{"1": ..., "2": ...}`` objects
    (stanlogz writes a Python tuple as an array)."""
    if isinstance(value, tuple):
        return {str(i + 1): _json_tuples(v) for i, v in enumerate(value)}
    if isinstance(value, np.ndarray) and value.dtype == object:
        return [_json_tuples(v) for v in value]
    return value


def extend_draws(model: StanProgram, draws: Draws, n_more: int, settings: NutsArgs | None = None, *,
                 seed: int | None = None, warmup: int = CONTINUATION_WARMUP,
                 progress: Any = None) -> Draws:
    """``draws`` with ``n_more`` further draws per chain from NUTS chains started at each chain's
    last draw (``warmup`` iterations re-adapt step size and metric first; the other sampler
    settings, e.g. ``adapt_delta``, come from ``settings``). The cost fields add up;
    ``sampling_cost_known`` stays what it was for the first draws."""
    if n_more < 1:
        raise InputError(f"need at least one more draw per chain, got {n_more}")
    inits = [init_from_unconstrained(model, x) for x in draws.unconstrained[:, -1]]
    nuts = NutsArgs.of(settings, chains=draws.n_chains, warmup=warmup, draws=int(n_more))
    more = sample(model, nuts, seed=seed, init=inits, progress=progress)
    constrained = None
    if draws.constrained is not None and more.constrained is not None \
            and draws.constrained.shape[2] == more.constrained.shape[2]:
        constrained = np.concatenate([draws.constrained, more.constrained], axis=1)
    sampler = {k: np.concatenate([v, more.sampler[k]], axis=1)
               for k, v in draws.sampler.items() if k in more.sampler}
    return Draws(
        unconstrained=np.concatenate([draws.unconstrained, more.unconstrained], axis=1),
        constrained=constrained,
        constrained_names=list(draws.constrained_names) if constrained is not None else [],
        unc_names=list(draws.unc_names),
        sampler=sampler,
        step_size=more.step_size,
        inv_metric=more.inv_metric,
        seconds=float(draws.seconds + more.seconds),
        n_gradient_evals=int(draws.n_gradient_evals + more.n_gradient_evals),
        source=draws.source,
        sampling_cost_known=draws.sampling_cost_known,
        max_treedepth=draws.max_treedepth,
        warnings=list(draws.warnings),
        adapt_delta=draws.adapt_delta,
    )
