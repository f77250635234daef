"""More posterior draws: continue every chain of a :class:`~stanlogz.draws.Draws` from its last
draw with Stan's NUTS, and append the new draws."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InputError
from ..stan.program import StanProgram
from ..stan.settings import NutsArgs
from .core import Draws, group_flat_names
from .sample import sample

#: warmup iterations of a continued chain: it starts in the typical set, so only the step size
#: and metric need re-adapting (Stan's adaptation windows fit in 150 iterations)
CONTINUATION_WARMUP = 150


def init_from_unconstrained(model: StanProgram, x: np.ndarray) -> dict[str, Any]:
    """Constrained values of ``model``'s parameters at unconstrained ``x``, as a Stan init."""
    names = list(model.param_names(False, False))
    values = np.asarray(model.constrain(np.asarray(x, dtype=float)))[: len(names)]
    out: dict[str, Any] = {}
    for name, (shape, cols) in group_flat_names(names).items():
        v = values[cols]
        out[name] = float(v[0]) if not shape else v.reshape(shape, order="F").tolist()
    return out


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
