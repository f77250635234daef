"""K-fold where the full-data chains miss a mode: flagged, not estimated.

The refits start at the full-data fit's draws (warm) or at Stan's inits, and their probe from
Stan's inits (:mod:`stanlogz.draws.modes`). A mode outside both is missed by every refit as
it is by the full fit: on ``stan_models/tests/kfold_far_mode.stan`` (prior modes at 0 and 6)
with ten weak observations, every chain fell to 0, and elpd_kfold (k = 5) was −35.698 with
an mcse of 0.003 and no warning, against the exact −35.612 (z ≈ 32). The evidence's mode
search (:func:`~stanlogz.draws.mode_search.search_modes`) run on the full-data fit finds
that mode; K-fold then says so and withholds its Monte Carlo se. ``loo`` weighs each mode by
its evidence (:mod:`stanlogz.crossval.psis_loo.modes`) and answers.
"""

from __future__ import annotations

from ...draws.core import Draws
from ...draws.mode_search import search_modes
from ...errors import Route
from ...stan.program import StanProgram
from ...stan.settings import NutsArgs


def missed_modes(model: StanProgram, full: Draws, nuts: NutsArgs, seed: int | None
                 ) -> str | None:
    """The warning (and reason for the NA mcse) where the mode search on the full-data fit
    ``full`` (stanlogz's own NUTS only) finds a mode its chains do not reach, else None."""
    if full.source != "stanlogz-nuts":
        return None
    found = search_modes(model, full, nuts, seed)
    if not found.found:
        return None
    return (f"the search for modes found {found.found} mode(s) that the full-data chains do "
            "not reach; the refits start where those chains are or from Stan's inits and "
            "miss them too, so elpd_kfold holds only the modes the chains sat in, and its "
            f"Monte Carlo se is NA; {Route('loo')} weighs each mode by its evidence")
