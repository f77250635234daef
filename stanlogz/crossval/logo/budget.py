"""Leave-one-group-out under a time budget (``loo --group`` with ``--time-budget``).

Its work after NUTS is one pass of integrals per group at every draw, the observation-level
values (one integral per observation at 400 of the draws) and the refits of the groups whose
k̂ is too high. None of them checked the budget: radon's 85 counties took 12.8 s under
``--time-budget 8s`` (the interpreted backend, which a budget picks to skip the C++ build).

* **The groups' pass** is timed group by group. Once ``MIN_GROUPS`` are done and
  ``MIN_SECONDS`` have passed, where the rest would not fit in ``THIN_SHARE`` of the budget
  left but would on 2,000, 1,000 or 400 of the draws (thinned evenly per chain; the per-draw
  integrals cost in proportion to the draws), the pass stops and runs again on those:
  every group, with the Monte Carlo se of those draws (:class:`GroupWatch`).
* **The observation-level values** are left out where they would not fit in the budget left
  (:class:`ObsWatch`, at the rate of the groups done so far); ``elpd_logo_obs`` is then None
  and a note names a longer budget. elpd_logo does not depend on them.
* **The refits** start only where they fit (``heldout_many(anytime=True)``); a group left keeps
  its PSIS value, and its k̂ above the threshold makes the Monte Carlo se NA, as loo's.
"""

from __future__ import annotations

from typing import Any

from ..._util import deadline
from ..._util.progress import duration
from ...errors import SkipObsValues, ThinForBudget
from ..observations.clock import THIN_SHARE, fewest_cut

#: Groups done before the pass may stop to run on fewer draws.
MIN_GROUPS = 3
#: Seconds of the pass before it may stop (the first groups pay one-time costs).
MIN_SECONDS = 0.5
#: Share of a group's time taken not to shrink with the draws (the quadrature's set-up per
#: group; the per-draw integrals are most of it).
FLOOR = 0.1


class GroupWatch:
    """The clock of the groups' pass under a time budget: :meth:`done` after each group
    raises :class:`~stanlogz.errors.ThinForBudget` (decided once) where the rest fits on
    fewer draws only."""

    def __init__(self, n_groups: int, n_draws: int) -> None:
        self.n_groups, self.n_draws = n_groups, n_draws
        self.t0 = deadline.clock()
        self.done_groups = 0
        self.decided = False

    def done(self) -> None:
        """One more group done."""
        self.done_groups += 1
        elapsed = deadline.clock() - self.t0
        left = deadline.remaining()
        if self.decided or left is None or self.done_groups < MIN_GROUPS \
                or elapsed < MIN_SECONDS:
            return
        self.decided = True
        per_group = elapsed / self.done_groups
        if per_group * (self.n_groups - self.done_groups) <= THIN_SHARE * left:
            return
        m = fewest_cut(self.n_draws,  # every group again, on m of the draws
                       lambda m: self.n_groups * per_group * max(m / self.n_draws, FLOOR),
                       THIN_SHARE * left)
        if m is not None:
            raise ThinForBudget(m)


def thinned_note(used: int, total: int, per_chain: int, of: int) -> str:
    """The warning of a groups' pass that the budget moved to fewer draws."""
    return (f"leave-one-group-out on {used} of the {total} posterior draws ({per_chain} of "
            f"{of} per chain, spread evenly; the time budget: the groups' integrals on all "
            f"{total} would not have fitted, on {used} every group's do); the Monte Carlo se "
            "is that of these draws")


class ObsWatch:
    """The clock of the observation-level values under a time budget: :meth:`done` after
    each group of them raises :class:`SkipObsValues` where the rest, at the rate so far,
    would end past the budget less ``reserve`` seconds (kept for the refits and the
    result)."""

    def __init__(self, n_obs: int, reserve: float) -> None:
        self.n_obs, self.reserve = n_obs, reserve
        self.t0 = deadline.clock()
        self.done_obs = 0

    def done(self, n: int) -> None:
        """``n`` more observations done."""
        self.done_obs += n
        left = deadline.remaining()
        if left is None:
            return
        elapsed = deadline.clock() - self.t0
        rest = elapsed / max(self.done_obs, 1) * (self.n_obs - self.done_obs)
        if rest > left - self.reserve:
            raise SkipObsValues(
                f"the observation-level values (log p(y_i | y_-g(i))) were left out: "
                f"{self.n_obs - self.done_obs} more would take about {duration(rest)}, more "
                f"than the time budget left; elpd_logo does not depend on them (a longer "
                f"time budget computes them)")


def refits_left_note(labels: list[Any]) -> str:
    """The warning of the group refits the budget left out."""
    shown = ", ".join(str(g) for g in labels[:10])
    return (f"the time budget left the refits of {len(labels)} group(s) out ({shown}): they "
            "keep their PSIS values, above the k-hat threshold, so the Monte Carlo se is NA "
            "(a longer time budget refits them)")
