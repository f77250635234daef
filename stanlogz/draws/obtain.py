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
    """Posterior draws of a program: the ones given, or new ones from stanlogz's NUTS.

    Parameters
    ----------
    model : StanModel
        The program.
    given : Draws, cmdstanpy fit, CSV paths, InferenceData or array, optional
        Draws you have (converted by :func:`~stanlogz.draws.as_draws`); ``None`` samples.
    settings : NutsArgs, optional
        Sampler settings when sampling (default: CmdStan's).
    seed : int, optional
        Random seed of the sampler (unused when ``given``).
    progress : callable, optional
        Called with one line of text per step.

    Returns
    -------
    Draws
        ``given`` converted, or NUTS's new draws.

    Raises
    ------
    InputError
        Draws that are not of this program (another dimension) or of no known kind.

    See Also
    --------
    as_draws : conversion only.
    stanlogz.sample : sampling only.

    Examples
    --------
    >>> import numpy as np, stanlogz
    >>> m = stanlogz.StanModel.from_file("stan_models/examples/normal_mean.stan",
    ...                                  "stan_models/examples/normal_mean.data.json")
    >>> stanlogz.obtain_draws(m, np.zeros((2, 10, m.dim))).source
    'array'
    """
    if given is not None:
        return as_draws(given, model)
    return sample(model, settings, seed=seed, progress=progress)
