"""Exact LFO under a time budget: a random sample of the forecast origins.

Exact LFO costs a NUTS run on every prefix y_{1:t} and a bridge per origin. Under a time
budget the origins are visited in a seeded random order, each with the prefix fits it needs
(shared with the origins already done) and its bridge, and the visit stops where the next
origin would not fit (at the slowest fit and bridge so far, a fifth more, a tenth of the
budget kept, as :class:`~.heldout.RefitWatch` stops refits). The origins done are then a
simple random sample of them all, whatever the series' dependence: the first m of a random
permutation. Σ_t elpd_t is estimated by n times their mean (design-unbiased), with the
sampling se n sqrt((1 − m/n) s² / m), s² the variance of the values done, widened so that
±2 se is the t interval of m − 1 degrees of freedom (as K-fold's folds left,
:func:`~.kfold_time.fill_by_sampling`), in the Monte Carlo se. Where every origin fits, the
values are those of the run without a budget (the same fits and bridges with the same seeds).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from scipy import stats

from ..._util import deadline
from ..._util.progress import steps
from ..._util.seeds import Stream, spawn_generators, stream, stream_rng
from ...errors import OverBudget

#: The part of the budget kept for what follows the origins (their estimate, the result).
RESERVE_SHARE = 0.1
#: The margin on the slowest fit and bridge so far.
MARGIN = 1.2


def sampled_origins(origins: np.ndarray, times: Sequence[int], ahead: int, seed: Any,
                    fit: Callable[[int, Any], Any], bridge: Callable[[int, Any, Any], Any],
                    progress: Callable[[str], None] | None = None
                    ) -> tuple[dict[int, Any], dict[int, Any]]:
    """The fits (by t) and bridges (by origin) of the origins done in a seeded random order
    before the time budget ends them. ``fit(t, rng)`` draws from y_{1:t}; ``bridge(t, fits,
    rng)`` is origin t's held-out value from the fits at t and t + ``ahead``; the generators
    are those of the run without a budget (prefix fits by their position in ``times``,
    bridges by the origin's). :class:`OverBudget` when fewer than two origins fit."""
    fit_rngs = dict(zip(times, spawn_generators(stream(seed, Stream.REFIT), len(times)),
                        strict=True))
    bridge_rngs = dict(zip(origins.tolist(),
                           spawn_generators(stream(seed, Stream.REFIT_ESTIMATOR), origins.size),
                           strict=True))
    order = stream_rng(seed, Stream.LFO_ORIGINS).permutation(origins.size)
    fits: dict[int, Any] = {}
    bridges: dict[int, Any] = {}
    slowest_fit = slowest_bridge = 0.0
    total = deadline.budget_seconds() or 0.0
    with steps(progress, origins.size, "LFO origins (random order)", unit="origin") as bar:
        for j in order:
            t = int(origins[j])
            need = [u for u in (t, t + ahead) if u not in fits]
            left = deadline.remaining()
            cost = MARGIN * (len(need) * slowest_fit + slowest_bridge)
            if bridges and left is not None and left - RESERVE_SHARE * total < cost:
                break
            try:
                for u in need:
                    start = deadline.clock()
                    fits[u] = fit(u, fit_rngs[u])
                    slowest_fit = max(slowest_fit, deadline.clock() - start)
                start = deadline.clock()
                bridges[t] = bridge(t, fits, bridge_rngs[t])
                slowest_bridge = max(slowest_bridge, deadline.clock() - start)
            except OverBudget:
                if len(bridges) < 2:
                    raise
                break
            bar.update()
    if len(bridges) < 2:
        twice = deadline.as_option(2 * (deadline.budget_seconds() or 60.0))
        raise OverBudget(f"the time budget ended exact LFO after {len(bridges)} of "
                         f"{origins.size} origins, too few to estimate elpd_lfo; run with "
                         f"{twice}", routes=twice)
    return fits, bridges


def origin_sample_estimate(values: np.ndarray, mcse: np.ndarray, done: np.ndarray
                           ) -> tuple[np.ndarray, np.ndarray, float, float]:
    """Per-origin values with those not ``done`` set to the mean of those done (so that their
    sum is n times that mean), their Monte Carlo se (NaN where not done), and the Monte Carlo
    se of the sum: the done values' own errors, scaled by n/m, and the sampling error of the
    origins left (the last, on its own)."""
    n, m = done.size, int(done.sum())
    rate = float(np.mean(values[done]))
    out = np.where(done, values, rate)
    s2 = float(np.var(values[done], ddof=1))
    widen = float(stats.t.ppf(stats.norm.cdf(2.0), m - 1)) / 2.0
    sampling = widen * n * math.sqrt((1.0 - m / n) * s2 / m)
    own = (n / m) * math.sqrt(float(np.sum(mcse[done] ** 2)))
    return out, np.where(done, mcse, np.nan), math.hypot(own, sampling), sampling


def sample_warning(m: int, n: int) -> str:
    """The warning of an exact LFO the budget ended after ``m`` of ``n`` origins."""
    return (f"the time budget ended exact LFO after {m} of {n} origins (visited in random "
            f"order); elpd_lfo is {n} times their mean, and its Monte Carlo se counts the "
            "sampling error of the origins left (a longer time budget computes them all)")
