"""K-fold and LFO where the chains miss a mode: flagged, not estimated.

The refits start at the full-data fit's draws (warm) or at Stan's inits, and their probe from
Stan's inits (:mod:`stanlogz.draws.modes`). A mode outside both is missed by every refit as
it is by the full fit: on ``stan_models/tests/kfold_far_mode.stan`` (prior modes at 0 and 6)
with ten weak observations, every chain fell to 0, and elpd_kfold (k = 5) was −35.698 with
an mcse of 0.003 and no warning, against the exact −35.612 (z ≈ 32). The evidence's mode
search (:func:`~stanlogz.draws.mode_search.search_modes`) run on the full-data fit finds
that mode; K-fold then says so and withholds its Monte Carlo se. ``loo`` weighs each mode by
its evidence (:mod:`stanlogz.crossval.psis_loo.modes`) and answers.

LFO's fits start from its first fit, on y[1:min_train] (warm), or from Stan's inits: the
search runs on that first fit, whose posterior is the widest of them (the prior weighs most),
and a mode found there flags elpd_lfo the same way.
"""

from __future__ import annotations

from ...draws.core import Draws
from ...draws.mode_search import search_modes
from ...errors import Route
from ...stan.program import StanProgram
from ...stan.settings import NutsArgs


def missed_modes(model: StanProgram, full: Draws, nuts: NutsArgs, seed: int | None, *,
                 chains: str = "the full-data chains", quantity: str = "elpd_kfold",
                 route: Route | None = None) -> str | None:
    """The warning (and reason for the NA mcse) where the mode search on the fit ``full``
    (stanlogz's own NUTS only) finds a mode its chains do not reach, else None. ``chains``
    names that fit's chains, ``quantity`` the estimate, and ``route`` what weighs the modes
    (K-fold: ``loo``, the default; LFO: none, said so)."""
    if full.source != "stanlogz-nuts":
        return None
    found = search_modes(model, full, nuts, seed)
    if not found.found:
        return None
    if route is None and quantity == "elpd_kfold":
        route = Route("loo")
    then = (f"{route} weighs each mode by its evidence" if route is not None else
            "no stanlogz estimate of it weighs the modes yet: a program whose parameters "
            "are identified (an ordering, a narrower prior) samples one of them")
    return (f"the search for modes found {found.found} mode(s) that {chains} do "
            "not reach; the refits start where those chains are or from Stan's inits and "
            f"miss them too, so {quantity} holds only the modes the chains sat in, and its "
            f"Monte Carlo se is NA; {then}")
