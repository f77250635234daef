"""Moment matching of the observations with high k̂, one after another, keeping what is done:
a progress line per point and per accepted map, a time budget after which the remaining points
keep their PSIS values (with the k̂ warning), and Ctrl-C, which stops the loop and returns the
points already matched with a note instead of losing them. A point whose matching the budget
cut short while its k̂ was still above the threshold is not a moment-matched value: it keeps
its PSIS value and label too, and the note counts it among those left."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..._util import deadline as run_budget
from ...errors import Route, option
from .fixups import FixedPoint

#: Key of a moment-matched FixedPoint's diagnostics set when the time budget stopped its maps
#: while its k̂ was still above the threshold (:attr:`MomentMatched.unfinished`).
UNFINISHED = "mm_unfinished"


def check_budget(mm_budget: float | None) -> float | None:
    """``mm_budget`` as a positive float (or None); :class:`InputError` otherwise."""
    return run_budget.positive_seconds("mm_budget", mm_budget)


def moment_match_points(bad: np.ndarray,
                        match_one: Callable[[int, float | None, Callable[[str], None]],
                                            FixedPoint],
                        progress: Callable[[str], None] | None,
                        mm_budget: float | None = None,
                        stop_when: Callable[[list[FixedPoint]], bool] | None = None,
                        cut: list[dict[str, int]] | None = None
                        ) -> tuple[list[FixedPoint], list[str], list[int]]:
    """Moment-matched :class:`FixedPoint` s of the observations ``bad`` (0-based), in order
    (``match_one(i, deadline, on_map)`` matches one; ``deadline`` is a value of the run
    budget's clock, :data:`stanlogz._util.deadline.clock`), warnings, and the observations left
    unmatched because the budget ran out (before their matching started, or during it with k̂
    still above the threshold: :data:`UNFINISHED`) or the user interrupted; they keep their
    PSIS values and are not refitted either. ``stop_when(matched)`` true after a point ends
    the matching there too, with no note (the caller says why). Where the run's time budget
    (not ``mm_budget``) left some, ``cut`` (when given) gets ``{"observations_done",
    "observations"}`` appended: what the result's ``budget_stop["moment_matching"]`` says."""
    t0 = run_budget.clock()
    deadline = None if mm_budget is None else t0 + float(mm_budget)
    run_left = run_budget.remaining()  # the run's time budget: a tenth is kept for the rest
    by_run = run_left is not None and (deadline is None or t0 + 0.9 * run_left < deadline)
    if by_run:
        deadline = t0 + 0.9 * run_left
    matched: list[FixedPoint] = []
    notes: list[str] = []
    try:
        for n_done, i in enumerate(int(v) for v in bad):
            if deadline is not None and run_budget.clock() >= deadline:
                break

            def step(msg: str, i: int = i) -> None:
                if progress:
                    progress(f"observation {i + 1}: {msg}")

            try:
                f = match_one(i, deadline, step)
            except run_budget.OverBudget:  # the run's budget ended inside this point (a
                by_run = True              # conditional quadrature checks it at every node)
                break
            if f.diagnostics.get(UNFINISHED):  # cut short above the threshold: not matched
                if progress:
                    progress(f"the budget stopped moment matching of observation {i + 1} at "
                             f"k-hat {f.khat_after:.2f}; it keeps its PSIS value")
                break
            matched.append(f)
            if progress:
                progress(f"moment matched observation {i + 1} ({n_done + 1}/{bad.size}): "
                         f"k-hat {f.khat:.2f} -> {f.khat_after:.2f}, {f.n_evals} "
                         f"evaluations, {f.seconds:.1f} s")
            if stop_when is not None and stop_when(matched):
                return matched, notes, [int(v) for v in bad[len(matched):]]
    except KeyboardInterrupt:
        left = [int(v) for v in bad[len(matched):]]
        notes.append(f"interrupted during moment matching: {len(matched)} of {bad.size} "
                     "observation(s) were matched; the others "
                     f"({', '.join(str(v + 1) for v in left[:10])}) keep their PSIS values")
        return matched, notes, left
    left = [int(v) for v in bad[len(matched):]]
    if left and by_run:
        if cut is not None:
            cut.append({"observations_done": len(matched), "observations": int(bad.size)})
        notes.append("the run's time budget ran out during moment matching "
                     f"after {len(matched)} of {bad.size} observation(s); the others "
                     f"({', '.join(str(v + 1) for v in left[:10])}) keep their PSIS values "
                     f"(raise {option('time_budget')}, or fix them with "
                     f"{Route(options={'fix': 'exact'})})")
    elif left:
        notes.append(f"the moment-matching budget of {mm_budget:g} s ran out after "
                     f"{len(matched)} of {bad.size} observation(s); the others "
                     f"({', '.join(str(v + 1) for v in left[:10])}) keep their PSIS values "
                     f"(raise {option('mm_budget')}, or fix them with "
                     f"{Route(options={'fix': 'exact'})})")
    return matched, notes, left
