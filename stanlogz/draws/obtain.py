"""The one way a workflow obtains posterior draws: the draws it was given (in any form
:func:`~stanlogz.draws.as_draws` reads) or a NUTS run with the workflow's settings."""

from __future__ import annotations

from typing import Any

from ..stan.program import StanProgram
from ..stan.settings import NutsArgs
from .convert import as_draws
from .core import Draws
from .sample import sample


def obtain_draws(
    model: StanProgram,
    given: Any = None,
    settings: NutsArgs | None = None,
    *,
    seed: int | None = None,
    progress: Any = None,
) -> Draws:
    """Posterior draws of ``model``: ``given`` (a :class:`Draws`, cmdstanpy fit, CmdStan CSV
    path(s), InferenceData / DataTree or ``.nc`` file, or an unconstrained array) converted by
    :func:`~stanlogz.draws.as_draws`, or, when ``given`` is None, stanlogz's NUTS with
    ``settings`` (a :class:`~stanlogz.stan.settings.NutsArgs`; default: CmdStan's)."""
    if given is not None:
        return as_draws(given, model)
    return sample(model, NutsArgs.of(settings), seed=seed, progress=progress)
