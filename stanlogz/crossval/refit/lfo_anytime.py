"""Exact LFO under a time budget: the origins that fit exactly, the rest by PSIS.

Exact LFO costs a NUTS run on every prefix y_{1:t} and a bridge per origin. Under a time
budget the origins are visited in a seeded random order, each with the prefix fits it needs
(shared with the origins already done) and its bridge, and the visit stops where the next
origin would not fit (at the slowest fit and bridge so far, a fifth more, a tenth of the
budget kept, as :class:`~.heldout.RefitWatch` stops refits). Where every origin fits, the
values are those of the run without a budget (the same fits and bridges with the same seeds).

Each origin left is estimated by Pareto-smoothed importance sampling from the prefix fit
nearest to it, as PSIS-LFO estimates the origins between its refits: with the fit on
y_{1:t'}, log w_s = log p̃(θ_s; y_{1:t}) − log p̃(θ_s; y_{1:t'}) (two data instances of the
program) and elpd_t = log Σ_s w_s p(y_{t+1:t+M} | θ_s, y_{1:t}), with loo's Monte Carlo se, NaN
(loo's NA) where k̂ is above the draws' threshold. The random order scatters the fits over the
series, so an origin left is seldom far from one. The PSIS values from one fit share its draws,
so their Monte Carlo se adds linearly (an upper bound), as K-fold's PSIS folds do.

A program whose parameters change with t (a latent per time step) has no such estimate: a
random sample of the origins was tried instead, and its error bar, from the sample's own
spread, missed by 5–14 times at 2–10 origins of 20 (a tight cluster of values sampled alone;
``benchmarks/anytime_commands.py`` lfo-exact). There the budget that cannot hold every origin
is refused, with the iterations at which all of them fit and the budget they need.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from scipy import special

from ... import arviz_compat
from ..._util import deadline
from ..._util.progress import duration, steps
from ..._util.seeds import Stream, stream, stream_rng
from ...errors import OverBudget
from ...parallel import task_generators
from ..elpd.psis import elpd_mcse, k_threshold, relative_efficiency

#: The part of the budget kept for what follows the origins (the PSIS of those left).
RESERVE_SHARE = 0.1
#: The margin on the slowest fit and bridge so far.
MARGIN = 1.2


def visit_origins(origins: np.ndarray, times: Sequence[int], ahead: int, seed: Any,
                  fit: Callable[[int, Any], Any], bridge: Callable[[int, Any, Any], Any],
                  progress: Callable[[str], None] | None = None
                  ) -> tuple[dict[int, Any], dict[int, Any], dict[str, float]]:
    """The fits (by t) and bridges (by origin) of the origins done in a seeded random order
    before the time budget ends them, and the slowest fit and bridge (``"fit"``,
    ``"bridge"``, seconds). ``fit(t, rng)`` draws from y_{1:t}; ``bridge(t, fits, rng)`` is
    origin t's held-out value from the fits at t and t + ``ahead``; the generators are those
    of the run without a budget (prefix fits by their position in ``times``, bridges by the
    origin's)."""
    fit_rngs = dict(zip(times, task_generators(stream(seed, Stream.REFIT), len(times)),
                        strict=True))
    bridge_rngs = dict(zip(origins.tolist(),
                           task_generators(stream(seed, Stream.REFIT_ESTIMATOR), origins.size),
                           strict=True))
    order = stream_rng(seed, Stream.LFO_ORIGINS).permutation(origins.size)
    fits: dict[int, Any] = {}
    bridges: dict[int, Any] = {}
    slowest = {"fit": 0.0, "bridge": 0.0}
    total = deadline.budget_seconds() or 0.0
    with steps(progress, origins.size, "LFO origins (random order)", unit="origin") as bar:
        for j in order:
            t = int(origins[j])
            need = [u for u in (t, t + ahead) if u not in fits]
            left = deadline.remaining()
            cost = MARGIN * (len(need) * slowest["fit"] + slowest["bridge"])
            if fits and left is not None and left - RESERVE_SHARE * total < cost:
                break
            try:
                for u in need:
                    start = deadline.clock()
                    drawn = fit(u, fit_rngs[u])
                    deadline.check_not_cut(drawn, f"the fit of y[1:{u}]")  # not kept if cut
                    fits[u] = drawn
                    slowest["fit"] = max(slowest["fit"], deadline.clock() - start)
                start = deadline.clock()
                bridges[t] = bridge(t, fits, bridge_rngs[t])
                slowest["bridge"] = max(slowest["bridge"], deadline.clock() - start)
            except OverBudget:
                if not fits:
                    raise
                break
            bar.update()
    return fits, bridges, slowest


def psis_from_nearest(origins: np.ndarray, ahead: int, fits: dict[int, Any],
                      inst: Callable[[int], Any], left: Sequence[int]
                      ) -> dict[int, tuple[float, float, float, int]]:
    """Each origin of ``left`` by PSIS from the prefix fit nearest to it (the earlier on a
    tie): ``{t: (elpd, mcse, k̂, t')}``, mcse NaN where k̂ is above the draws' threshold.
    ``inst(t)`` is the program on y_{1:t}."""
    out: dict[int, tuple[float, float, float, int]] = {}
    fitted = np.array(sorted(fits))
    for t in left:
        near = int(fitted[np.argmin(np.abs(fitted - t) + 0.5 * (fitted > t))])
        d = fits[near]
        x = d.flat_unconstrained()
        if near == t:
            log_w, k = np.full(len(x), -math.log(len(x))), float("nan")
        else:
            ratio = inst(t).log_density_many(x) - inst(near).log_density_many(x)
            lw, k_arr = arviz_compat.psislw(ratio[None, :])
            log_w, k = lw[0], float(np.asarray(k_arr).ravel()[0])
        log_lik = inst(t + ahead).log_density_many(x) - inst(t).log_density_many(x)
        elpd = float(special.logsumexp(log_w + log_lik))
        se = float(elpd_mcse(log_w, log_lik, relative_efficiency(d.unconstrained)))
        if not (math.isnan(k) or k <= k_threshold(len(x))):
            se = float("nan")  # loo's NA: PSIS is not reliable here
        out[t] = (elpd, se, k, near)
    return out


def fixed_dimension(inst: Callable[[int], Any], times: Sequence[int]) -> bool:
    """Whether the program has the same parameters on every prefix of ``times``."""
    dims = {int(inst(t).dim) for t in times}
    return len(dims) == 1


def refusal(n_origins: int, n_done: int, times: Sequence[int], slowest: dict[str, float],
            iterations: int, elapsed: float) -> OverBudget:
    """The refusal of an exact LFO whose parameters change with t when the budget cannot hold
    every origin: the iterations at which all of them fit, and the budget they need."""
    whole = len(times) * slowest["fit"] + n_origins * slowest["bridge"]
    available = deadline.budget_seconds() or 0.0
    routes = [r for r in [deadline.fewer_iterations(whole / iterations, available,
                                                    iterations)] if r]
    routes.append(deadline.as_option(1.3 * whole + elapsed, "for every origin"))
    return OverBudget(
        f"the time budget ended exact LFO after {n_done} of {n_origins} origins, and the "
        "others have no estimate with an error bar that holds (the program's parameters "
        "change with t, so PSIS from the prefix fits cannot reach them, and a sample of the "
        f"origins' own spread is no error bar); every origin takes about {duration(whole)} "
        f"here: run with {', or '.join(str(r) for r in routes)}", routes=tuple(routes))


def budget_warning(stop: dict[str, Any]) -> str:
    """The warning of an exact LFO the budget ended."""
    bad = stop["unreliable"]
    return (f"the time budget ended exact LFO after {stop['origins_exact']} of "
            f"{stop['origins']} origins (visited in random order); the other "
            f"{stop['origins'] - stop['origins_exact']} are PSIS estimates from the nearest "
            "prefix fit" + (f" (origins {', '.join(map(str, bad[:8]))}"
                            f"{', ...' if len(bad) > 8 else ''} have k-hat above the "
                            "threshold: Monte Carlo se NA)" if bad else ""))


def total_mcse(exact_mcse: Sequence[float], psis: dict[int, tuple[float, float, float, int]]
               ) -> float:
    """Monte Carlo se of the sum: the exact origins' independent bridges in quadrature, the
    PSIS values of one fit linearly (they share its draws), the fits in quadrature."""
    by_fit: dict[int, float] = {}
    for _, se, _, near in psis.values():
        by_fit[near] = by_fit.get(near, 0.0) + se
    return math.sqrt(float(np.sum(np.square(exact_mcse)))
                     + sum(v**2 for v in by_fit.values()))
