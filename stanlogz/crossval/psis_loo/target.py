"""elpd_loo to a precision target (``loo(mcse_target=...)``, the command line's mcse
option): more draws, by continuing the chains, until the Monte Carlo se of elpd_loo is at
most the target.

The first round is :func:`~.loo.loo` as usual. While its ``mcse_elpd_loo`` is above the
target, every chain is continued from its last draw with its adapted step size and metric
(:func:`~stanlogz.mcmc.nuts_continue.continue_chains`: no new warmup, no restart) and elpd_loo
is computed again on all the draws. Each round is sized by the 1/sqrt(draws) law of a Monte
Carlo se, aiming at ``AIM`` times the target so that one round usually suffices; a round that
still misses it (moment-matched and heavy-tailed points fall more slowly) sizes the next one
from its own se. It ends at the target, at the time budget (:func:`stanlogz.time_budget`:
rounds are sized to leave time for the last elpd_loo, and the continuation stops where that
time starts), at ``MAX_GROWTH`` times the first draws, or where mcse_elpd_loo is NA (a
k̂ left above the threshold: more draws of the same posterior do not make it estimable).
The result's ``precision`` says which, with every round's draws and mcse.
"""

from __future__ import annotations

import math
import time
from typing import Any

from ..._util import deadline
from ..._util.argcheck import check_mcse_target
from ..._util.seeds import Stream, stream_int_seed
from ...errors import InputError
from ...mcmc.nuts_continue import continue_chains
from .result import LooResult

#: Rounds are sized to reach this fraction of the target (the se estimate is itself noisy).
AIM = 0.9
#: The draws may grow to at most this many times the first round's.
MAX_GROWTH = 64
#: Rounds at most (each round's elpd_loo repeats the pointwise pass and the fix-ups).
MAX_ROUNDS = 8
#: Until a continuation has been timed, a draw is taken to cost this many times a draw of the
#: first NUTS run (warmup included; the Python transition is slower than Stan's C++ one:
#: 75 us against 25 us of wall time per leapfrog step on the roaches regression,
#: 4 chains on 2 busy cores).
FIRST_RATE_FACTOR = 3.0
#: Why a precision-targeted run ended, as the result's ``precision["ended_by"]`` says.
ENDINGS = ("target", "budget", "max_draws", "mcse_na")


check_target = check_mcse_target  # one rule for loo's and K-fold's targets


def draws_for(total: int, mcse: float, target: float) -> int:
    """Draws (all chains) at which a Monte Carlo se of ``mcse`` at ``total`` draws falls to
    ``target`` by the 1/sqrt(draws) law."""
    return int(math.ceil(total * (mcse / target) ** 2))


def loo_to_target(run: Any, mcse_target: float, *, seed: int | None,
                  progress: Any = None) -> LooResult:
    """elpd_loo with ``mcse_elpd_loo <= mcse_target`` where the budget and ``MAX_GROWTH``
    allow. ``run(model, data, draws, checked)`` is :func:`~.loo.loo` with the caller's other
    arguments: called first with ``(None, None, None, True)`` (the caller's program and draws,
    the caller's self-check), then with the program, its data and the continued draws and no
    self-check (its refits do not change with the draws), which the last round then runs once."""
    target = check_target(mcse_target)
    t0 = time.perf_counter()
    res = run(None, None, None, True)
    d = res.draws
    if d is None or res.program is None:
        raise InputError("mcse_target continues the chains of a Stan program: give the "
                         "program (a fit alone cannot be continued)")
    first = d.n_chains * d.n_draws
    rate = _first_rate(d)  # seconds per continued draw (one chain)
    rounds = [_round(res, time.perf_counter() - t0)]
    ended = None
    while ended is None:
        total = d.n_chains * d.n_draws
        mcse = res.mcse_elpd_loo
        if mcse <= target:
            ended = "target"
            break
        if not math.isfinite(mcse):
            ended = "mcse_na"
            break
        if total >= MAX_GROWTH * first or len(rounds) >= MAX_ROUNDS:
            ended = "max_draws"
            break
        want = min(MAX_GROWTH * first, max(draws_for(total, mcse, AIM * target),
                                           int(1.25 * total)))
        per_draw_loo = rounds[-1]["loo_seconds"] / total  # elpd_loo's cost grows with draws
        left = deadline.remaining()
        if left is not None:  # continue only as far as the last elpd_loo still fits
            fits = int((0.9 * left + rate * total) / (rate + per_draw_loo))
            want = min(want, fits)
            if want < 1.05 * total:
                ended = "budget"
                break
        more = -(-(want - total) // d.n_chains)
        if progress:
            progress(f"mcse of elpd_loo {mcse:.3g} > target {target:g}: continuing the chains "
                     f"by {more} draws each")
        reserve = 1.2 * per_draw_loo * want

        def stop(reserve: float = reserve) -> bool:
            left = deadline.remaining()
            return left is not None and left < reserve

        t1 = time.perf_counter()
        d, added = continue_chains(res.program, d, int(more), progress=progress, stop=stop,
                                   seed=stream_int_seed(seed, Stream.EXTEND, len(rounds)))
        if added:
            rate = (time.perf_counter() - t1) / (added * d.n_chains)
        if added < more:
            ended = "budget"  # the continuation stopped at the time kept for elpd_loo
        if added == 0:
            break
        t2 = time.perf_counter()
        res = run(res.program, None, d, False)
        rounds.append(_round(res, time.perf_counter() - t2))
        if ended == "budget" and res.mcse_elpd_loo <= target:
            ended = "target"
    if len(rounds) > 1:  # the caller's self-check, once, on the last round's draws
        left = deadline.remaining()
        if left is None or left > 1.2 * rounds[-1]["loo_seconds"]:
            res = run(res.program, None, d, True)
    res.precision = {"mcse_target": target, "ended_by": ended, "draws_first": first,
                     "draws": d.n_chains * d.n_draws, "rounds": rounds, "restarts": 0,
                     "continued": "adapted step size and metric, no new warmup"}
    res.seconds = time.perf_counter() - t0
    if ended != "target":
        res.warnings.append(target_missed(res.precision, res.mcse_elpd_loo))
    return res


def _first_rate(d: Any) -> float:
    """Seconds per continued draw before one is timed: ``FIRST_RATE_FACTOR`` times the first
    run's seconds per leapfrog step (warmup included) times its steps per kept draw."""
    steps = d.sampler.get("n_leapfrog__")
    if steps is None or not d.n_gradient_evals or not d.seconds:
        return 0.0
    per_step = d.seconds / d.n_gradient_evals
    return FIRST_RATE_FACTOR * per_step * float(steps.mean())


def _round(res: LooResult, seconds: float) -> dict[str, Any]:
    mcse = res.mcse_elpd_loo
    return {"draws": int(res.n_samples), "elpd_loo": float(res.elpd_loo),
            "mcse_elpd_loo": float(mcse) if math.isfinite(mcse) else None,
            "loo_seconds": float(seconds)}


def target_missed(precision: dict[str, Any], mcse: float) -> str:
    """The warning of a run that ended before its mcse target."""
    target, total = precision["mcse_target"], precision["draws"]
    why = {"budget": "the time budget ended it",
           "max_draws": f"the draws reached their cap ({MAX_GROWTH} times the first, or "
                        f"{MAX_ROUNDS} rounds)",
           "mcse_na": "mcse_elpd_loo is NA (a k-hat above the threshold stays unfixed)"}
    need = (f"; about {draws_for(total, mcse, target)} draws would reach it"
            if math.isfinite(mcse) else "")
    return (f"mcse target {target:g} not reached: mcse_elpd_loo "
            f"{mcse:.3g} with {total} draws, {why[precision['ended_by']]}{need}")
