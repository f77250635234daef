"""gbs under a run's time budget (:func:`~stanlogz.time_budget`, issue 45): the bridge answers
with the best estimate the time allows instead of refusing once it has one.

Each orientation of gbs (a flow fitted on one half of the draws, bridged with the other) is a
complete, consistent estimate of log Z with its own eq. (9) standard error. Under a budget:

- the target's log density at the bridge half is evaluated first and timed, which gives the
  cost of one target evaluation;
- the flow's fit stops adding layers once the budget left is what the bridge's evaluations
  need (:func:`~stanlogz._util.deadline.wrapping_up`): a shallower flow is a worse proposal,
  not a wrong one, and eq. (9) measures the bridge it makes;
- the flow samples, the first ones as the adaptive rule's extra ones, are capped at those
  that fit (at least ``MIN_Q``);
- an orientation after the first starts only when it fits at the first's cost (and one the
  budget ends anyway is dropped): log Z is then the orientations done, with their se.

What was cut is the result's ``budget_stop["bridge"]`` and a warning. Nothing estimable (the
first orientation's posterior-side evaluations do not end) is still a refusal.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..._util import deadline
from ...arviz_compat import arviz
from ...densities.target import log_density_many
from ...errors import InputError, Route
from ...stan.nuts import budget_stop_dict

#: The budget's seconds kept back when sizing the bridge's steps (the estimate's own
#: bookkeeping, the consistency checks and the result's assembly).
KEEP_S = 0.1
#: The margin on a step's cost measured on its own or its first part.
MARGIN = 1.5
#: The fewest flow samples a bridge cut short by the budget draws (fewer would leave eq. (9)'s
#: proposal-side variance resting on a handful of terms).
MIN_Q = 200


@dataclass
class BridgeBudget:
    """The bridge's share of a run's time budget; :meth:`start` gives None without one."""

    seconds_per_eval: float = 0.0
    orientations: int = 0
    orientations_done: int = 0
    layers_cut: list[bool] = field(default_factory=list)
    n_q_cut: list[bool] = field(default_factory=list)

    @classmethod
    def start(cls, orientations: int) -> BridgeBudget | None:
        """A budget for ``orientations`` bridges when the run has a time budget, else None."""
        return None if deadline.remaining() is None else cls(orientations=orientations)

    @staticmethod
    def left() -> float:
        """Seconds of the budget left for the bridge's next step."""
        return (deadline.remaining() or 0.0) - KEEP_S

    def timed(self, seconds: float, evals: int) -> None:
        """The target's evaluations of the posterior half took ``seconds`` for ``evals``."""
        if evals > 0:
            self.seconds_per_eval = max(self.seconds_per_eval, seconds / evals)

    def fit_keep(self, n_p: int, n_q: int) -> float:
        """Seconds the flow's fit leaves for the bridge: ``n_q`` flow samples and their
        target evaluations, and the flow's density at the ``n_p`` posterior draws, with the
        margin."""
        return MARGIN * self.seconds_per_eval * (n_q + 0.2 * n_p) + KEEP_S

    def more_samples(self, want: int, seconds_per_sample: float) -> int:
        """How many of ``want`` more flow samples fit, at ``seconds_per_sample`` each."""
        if seconds_per_sample <= 0:
            return want
        fit = int(max(self.left(), 0.0) / (MARGIN * seconds_per_sample))
        return max(min(want, fit), 0)

    def next_fits(self, seconds_each: float) -> bool:
        """Whether another orientation fits at ``seconds_each`` (the first's cost)."""
        return self.left() >= MARGIN * seconds_each

    def cut(self) -> bool:
        """Whether the budget cut anything."""
        return (self.orientations_done < self.orientations or any(self.layers_cut)
                or any(self.n_q_cut))

    def to_dict(self) -> dict[str, Any]:
        """The bridge's ``budget_stop`` entry."""
        return {"orientations_done": self.orientations_done,
                "orientations": self.orientations, "layers_cut": list(self.layers_cut),
                "n_q_cut": list(self.n_q_cut)}

    def warning(self) -> str:
        """One line: what the time budget cut and what log Z is then."""
        parts = []
        if self.orientations_done < self.orientations:
            parts.append(f"after {self.orientations_done} of {self.orientations} "
                         "orientations (log Z and its se are those done)")
        if any(self.layers_cut):
            parts.append("with fewer flow layers (a cruder proposal; its se says what it is "
                         "worth)")
        if any(self.n_q_cut):
            parts.append("with fewer flow samples than the adaptive rule asked")
        return "the time budget ended the bridge " + "; ".join(parts)



#: What gbs spends per posterior draw kept: target evaluations in batches (the bridge half,
#: as many flow samples, the adaptive rule's extra ones), single gradient calls (the
#: validated fit's score at its training draws, 0.8 of them), and the flow's own seconds per
#: draw and dimension; a sampling run under a budget keeps that time, with MARGIN, for gbs.
EVALS_PER_DRAW = 3.0
GRADIENTS_PER_DRAW = 0.8
FLOW_SECONDS_PER_DRAW_DIM = 1e-5
#: Rows of the one timed batch that prices a target evaluation before sampling, and the
#: single gradient calls timed (after one untimed: the first call sets up the tape).
TIMED_ROWS = 64
TIMED_GRADIENTS = 8
#: The margin on that price: calls timed at one point, before sampling, on a machine whose
#: load changes (at load 12 on 2 cores, 1.5 left a third of the stopped runs without the
#: time for their first bridge: benchmarks/anytime_coverage.py --command evidence).
PRICE_MARGIN = 3.0


def sampling_reserve(model: Any, method: str, given: Any = None
                     ) -> contextlib.AbstractContextManager:
    """Around a sampling run for ``method``'s evidence under a time budget, the time gbs
    will take after the draws (:func:`~stanlogz._util.deadline.reserving`): a fixed part and
    a part per draw kept, the target's evaluations and gradients priced by calls at the
    program's initial point (zeros, unconstrained) on this machine at its load now. Nothing
    with draws ``given`` (no sampling), without a budget, for another method, or when the
    calls fail (the bridge then keeps to the budget on its own). Under a budget ArviZ, which
    the draws' summaries after the estimate need, is imported first (seconds on a loaded
    machine), so that the sampling run counts them."""
    if given is not None or deadline.remaining() is None:
        return contextlib.nullcontext()
    arviz()
    if method != "gbs":
        return contextlib.nullcontext()
    try:
        dim = int(model.dim)
        x = np.zeros((TIMED_ROWS, dim))
        start = time.perf_counter()
        log_density_many(model, x)
        per_eval = (time.perf_counter() - start) / TIMED_ROWS
        per_gradient = 0.0
        if getattr(model, "log_density_gradient", None) is not None:
            model.log_density_gradient(x[0])
            start = time.perf_counter()
            for row in x[:TIMED_GRADIENTS]:
                model.log_density_gradient(row)
            per_gradient = (time.perf_counter() - start) / TIMED_GRADIENTS
    except Exception:  # noqa: BLE001 - no price: no reserve beyond the sampler's own
        return contextlib.nullcontext()
    per_draw = PRICE_MARGIN * (EVALS_PER_DRAW * per_eval + GRADIENTS_PER_DRAW * per_gradient
                               + FLOW_SECONDS_PER_DRAW_DIM * (dim + 2))
    return deadline.reserving(3 * KEEP_S, per_draw)


def add_sampling_stop(res: Any, draws: Any) -> None:
    """Put in the evidence result ``res`` the stop of the sampling run whose ``draws`` it
    used, when the time budget ended that run past its warmup (``budget_stop["sampling"]``
    and the run's warning)."""
    stop = getattr(draws, "budget_stop", None)
    if not stop:
        return
    res.budget_stop = {**(res.budget_stop or {}), "sampling": budget_stop_dict(stop)}
    for w in getattr(draws, "warnings", None) or []:
        if w.startswith("the time budget ended sampling") and w not in res.warnings:
            res.warnings.append(w)


#: Warmup iterations per chain the same-budget route keeps at least (fewer leave the step size
#: and metric poorly adapted); below it the route is a longer time budget.
MIN_ROUTE_WARMUP = 150


#: The share of the iterations per chain a stopped run reached that its same-budget route asks
#: for (a run asking for all of them would end at the budget's edge again).
ROUTE_SHARE = 0.8


def too_few_after_stop(exc: InputError, draws: Any, nuts: Any) -> InputError:
    """The refusal of draws that a time budget cut too short for gbs's split, with routes
    that fit (``exc``: the split's refusal, whose route names the draws per chain it needs).

    The run's iterations per chain (warmup and kept draws) are what the budget allowed: a run
    with as many, fewer of them warmup and the draws the split needs, fits the same budget
    (``warmup``/``draws``, ``ROUTE_SHARE`` of them in all), where at least
    ``MIN_ROUTE_WARMUP`` are left for warmup; else the
    budget the run needs at its measured rate (``time_budget``)."""
    need = next((int(r.options["draws"]) for r in exc.routes if "draws" in r.options), None)
    stop, total = getattr(draws, "budget_stop", None), deadline.budget_seconds()
    if need is None or not stop or total is None:
        return exc
    thin = max(1, int(getattr(nuts, "thin", 1)))
    warmup, kept = int(nuts.warmup), int(stop[0]) * thin
    iterations = warmup + kept  # per chain, what the budget allowed
    head = (f"the time budget ended sampling after {stop[0]} of {stop[1]} draws per chain, too "
            f"few for gbs to fit its proposal and bridge (it needs {need} per chain)")
    fit = int(ROUTE_SHARE * iterations)  # the stop came at the budget's end: a margin
    if fit - need * thin >= MIN_ROUTE_WARMUP:
        route = Route(options={"warmup": fit - need * thin, "draws": need * thin},
                      note="(fewer iterations per chain than the budget allowed, more of "
                           "them draws)")
    else:
        route = deadline.as_option(total * (warmup + need * thin) / iterations * 1.25,
                                   "(the run's rate so far, with a quarter more)")
    return InputError(f"{head}; run with {route}", routes=route)


@contextlib.contextmanager
def routes_after_stop(draws: Any, nuts: Any) -> Iterator[None]:
    """Within it, a refusal of ``draws`` that a time budget cut too short is raised with the
    routes of :func:`too_few_after_stop` (any other error as it is)."""
    try:
        yield
    except InputError as exc:
        raised = too_few_after_stop(exc, draws, nuts)
        if raised is exc:
            raise
        raise raised from None
