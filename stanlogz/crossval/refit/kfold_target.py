"""elpd_kfold to a precision target (``kfold(mcse_target=...)``, the kfold command's mcse
option): more draws, by continuing the chains of the full fit and of every refit, until the
Monte Carlo se of the headline (elpd_kfold; elpd_logo under leave-one-group-out) is at most the
target.

The first round is K-fold as usual, with every refit's draws kept. While the headline's mcse is
above the target, every chain — the full fit's and each refit's — is continued from its last
draw (:func:`~stanlogz.draws.continuation.extend_draws`: ``CONTINUATION_WARMUP`` iterations
re-adapt the step size and metric from there, no restart from random inits) and each fold's
held-out values are estimated again on all the draws. Rounds are sized by the 1/sqrt(draws)
law, aiming at ``AIM`` times the target. It ends at the target, at the time budget
(:func:`stanlogz.time_budget`: a round starts only when the last one, scaled to its size, fits
in what is left; a round the budget stops is dropped), at ``MAX_GROWTH`` times the first
draws, or after ``MAX_ROUNDS`` rounds. The result's ``precision`` says which, with every
round's draws and mcse. Folds a time budget left to PSIS (no refit) keep their values.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..._util import deadline
from ..._util.argcheck import check_mcse_target
from ..._util.seeds import Stream, drawn_sequence, int_seed, stream_rng
from ...draws import Draws
from ...draws.continuation import extend_draws
from ...errors import OverBudget
from ...stan.settings import NutsArgs
from .heldout import HeldOut, SharedEvidence, heldout_elpd

#: Rounds are sized to reach this fraction of the target (the se estimate is itself noisy).
AIM = 0.9
#: The draws may grow to at most this many times the first round's.
MAX_GROWTH = 16
#: Rounds at most.
MAX_ROUNDS = 6
#: Why a precision-targeted K-fold ended, as the result's ``precision["ended_by"]`` says.
ENDINGS = ("target", "budget", "max_draws", "max_rounds")


check_target = check_mcse_target  # one rule for loo's and K-fold's targets


def headline_mcse(res: Any) -> float:
    """The Monte Carlo se the target is on: elpd_logo's under leave-one-group-out, else
    elpd_kfold's."""
    return float(res.mcse_elpd_logo if res.is_logo else res.mcse)


def kfold_to_target(model: Any, data: dict[str, Any], observations: Any,
                    held: Sequence[np.ndarray], folds: list[HeldOut], full: Draws,
                    nuts: NutsArgs, seed: Any, target: float,
                    result: Callable[[list[HeldOut], Draws], Any],
                    progress: Callable[[str], None] | None = None) -> Any:
    """The K-fold result ``result(folds, full)`` after the rounds that bring its headline mcse
    to ``target`` (see the module's text), with ``precision`` set."""
    t0 = time.perf_counter()
    res = result(folds, full)
    first = full.n_draws
    rounds = [{"draws": first, "mcse": headline_mcse(res)}]
    ended, last_seconds, last_more = "target", 0.0, 0
    for r in range(1, MAX_ROUNDS + 1):
        mcse = headline_mcse(res)
        if mcse <= target:
            ended = "target"
            break
        if not math.isfinite(mcse):  # NA (a fold's chains disagree): more draws cannot help
            ended = "mcse_na"
            break
        if r == MAX_ROUNDS:
            ended = "max_rounds"
            break
        now = full.n_draws
        want = min(int(math.ceil(now * (mcse / (AIM * target)) ** 2)), MAX_GROWTH * first)
        more = want - now
        left = deadline.remaining()
        if left is not None and (left <= 0 or (last_more and more > 0 and
                                               last_seconds * more / last_more > left)):
            ended = "budget"
            break
        if more < 1:
            ended = "max_draws"
            break
        if progress:
            progress(f"mcse {mcse:.3g} > target {target:g}: continuing every chain by {more} "
                     f"draws (round {r})")
        t1 = deadline.clock()  # the budget's clock (a step-count clock in tests)
        try:
            full_more, folds_more = _round(model, data, observations, held, folds, full, nuts,
                                           stream_rng(seed, Stream.KFOLD_TARGET, r), more)
        except OverBudget:
            ended = "budget"
            break
        last_seconds, last_more = deadline.clock() - t1, more
        full, folds = full_more, folds_more
        res = result(folds, full)
        rounds.append({"draws": full.n_draws, "mcse": headline_mcse(res)})
    res.precision = {"mcse_target": target, "ended_by": ended, "draws": full.n_draws,
                     "draws_first": first, "rounds": rounds,
                     "seconds": time.perf_counter() - t0}
    return res


def _round(model: Any, data: dict[str, Any], observations: Any, held: Sequence[np.ndarray],
           folds: list[HeldOut], full: Draws, nuts: NutsArgs, rng: np.random.Generator,
           more: int) -> tuple[Draws, list[HeldOut]]:
    """One round: the full fit and every refit continued by ``more`` draws per chain, and
    each refit fold's values on all the draws (a PSIS fold is kept as it is)."""
    more_full = extend_draws(model, full, more, nuts, seed=int_seed(drawn_sequence(rng)))
    if more_full is full:  # the budget ended the continuation in its warmup: no new draws
        raise OverBudget("the time budget ended the continuation of the full fit")
    full = more_full
    shared = SharedEvidence(int_seed(drawn_sequence(rng)))
    out = []
    for v, f in zip(held, folds, strict=True):
        if f.train_draws is None:  # estimated by PSIS (the budget ended the refits)
            out.append(f)
            continue
        train = model.with_data(observations.subset(data, np.setdiff1d(
            np.arange(observations.n), v)))
        td = extend_draws(train, f.train_draws, more, nuts, seed=int_seed(drawn_sequence(rng)))
        if td is f.train_draws:
            raise OverBudget(f"the time budget ended the continuation of fold {len(out) + 1}")
        g = heldout_elpd(model, data, observations, v, full_draws=full, train_draws=td,
                         settings=nuts, seed=drawn_sequence(rng), full_evidence=shared,
                         keep_draws=True, points=f.points)
        # the refit's draws so far and every point refit of this set (earlier rounds' too)
        g.n_gradient_evals = int(td.n_gradient_evals) + (g.points.n_gradient_evals
                                                         if g.points is not None else 0)
        g.warm = f.warm
        out.append(g)
    return full, out
