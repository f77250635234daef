"""Posterior draws by sampling: stanlogz's NUTS inside the model library, or CmdStan through
cmdstanpy."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from .._util.argcheck import check_arguments
from ..errors import InputError, ToolchainError
from ..stan.nuts import budget_stop_warning
from ..stan.program import StanProgram
from ..stan.settings import NutsArgs
from .convert import from_cmdstanpy
from .core import Draws


# ---------------------------------------------------------------------- constructors
def sample(
    model: StanProgram,
    settings: NutsArgs | None = None,
    *,
    seed: int | None = None,
    init: Any = None,
    progress: Any = None,
    data: Any = None,
    warm: Any = None,
    **overrides: Any,
) -> Draws:
    """Posterior draws from stanlogz's own NUTS (Stan's sampler, compiled into the program).

    Parameters
    ----------
    model : StanModel or str
        A built :class:`~stanlogz.StanModel`, or a ``.stan`` path (built with ``data``).
    settings : NutsArgs, optional
        Sampler settings (CmdStan's defaults: 4 chains, 1000 warmup, 1000 draws).
    seed : int, optional
        Random seed.
    init : array_like, optional
        Initial values on the unconstrained scale.
    progress : callable, optional
        Called with one line of text per step.
    data : dict or str, optional
        Data for a ``.stan`` path (a dict or a JSON file).
    warm : object, optional
        Adapted step sizes and inverse metrics that start the chains (``unconstrained``,
        ``step_size``, ``inv_metric`` attributes of a fit of the same parameters): the
        interpreted backend's sampler only (:func:`~stanlogz.draws.continuation.refit_draws`
        passes it where it applies).
    **overrides
        Single fields of ``settings``: ``chains``, ``warmup``, ``draws`` (per chain; a count
        here), ``adapt_delta``, ``max_treedepth``, ``init_radius``, ``thin``.

    Returns
    -------
    Draws
        The draws (unconstrained and constrained), sampler diagnostics and cost; it prints as
        one line and ``summary()`` gives the table.

    Raises
    ------
    InputError
        An unknown setting (cmdstanpy's ``iter_sampling`` gets "did you mean draws=").

    See Also
    --------
    as_draws : draws you already have, from CmdStan, cmdstanpy or ArviZ.

    Examples
    --------
    >>> import stanlogz
    >>> d = stanlogz.sample("stan_models/examples/normal_mean.stan",
    ...                     data="stan_models/examples/normal_mean.data.json",
    ...                     chains=2, draws=200, seed=1)
    >>> d.n_chains, d.n_draws, bool(d.summary().to_dataframe().loc["mu", "r_hat"] < 1.05)
    (2, 200, True)
    """
    check_arguments("sample", model=model, progress=progress)
    # validated once (a workflow's NutsArgs arrives validated); below, only this object travels
    nuts = settings if isinstance(settings, NutsArgs) and not overrides else NutsArgs.of(
        settings, **overrides)
    if isinstance(model, str | os.PathLike) or data is not None:
        from ..stan.load import load_model

        model = load_model(model, data, seed=seed)
    elif not hasattr(model, "nuts"):
        raise InputError(f"model must be a StanModel or a .stan path, not {type(model).__name__}")
    out = model.nuts(nuts, seed=seed, init=init, progress=progress,
                     **({"warm": warm} if warm is not None else {}))
    stop = getattr(out, "budget_stop", None)
    return Draws(
        unconstrained=out.unconstrained,
        constrained=out.constrained,
        constrained_names=list(out.constrained_names),
        unc_names=list(model.param_unc_names()),
        sampler={k: np.asarray(v) for k, v in out.sampler.items()},
        step_size=np.asarray(out.step_size, dtype=float),
        inv_metric=np.asarray(out.inv_metric, dtype=float),
        seconds=float(out.seconds),
        n_gradient_evals=int(out.n_gradient_evals),
        source="stanlogz-nuts",
        sampling_cost_known=True,  # the library counts warmup and sampling leapfrog steps
        max_treedepth=int(out.max_treedepth),
        adapt_delta=nuts.adapt_delta,
        budget_stop=stop,
        warnings=[budget_stop_warning(*stop)] if stop else [],
    )


def sample_cmdstanpy(
    stan_file: str | os.PathLike,
    data: Any = None,
    *,
    model: StanProgram | None = None,
    settings: NutsArgs | None = None,
    seed: int | None = None,
    **overrides: Any,
) -> Draws:
    """Draws from CmdStan through cmdstanpy, when a CmdStan installation exists, with
    ``settings`` (a :class:`~stanlogz.stan.settings.NutsArgs`; keyword overrides such as
    ``draws=2000`` replace single fields).

    ``model`` (a :class:`stanlogz.stan.model.StanModel` of the same program and data) converts the
    draws to unconstrained space; it is built from ``stan_file`` and ``data`` when omitted.
    Raises :class:`ToolchainError` when cmdstanpy finds no CmdStan.
    """
    nuts = NutsArgs.of(settings, **overrides)
    try:
        import cmdstanpy

        cmdstanpy.cmdstan_path()
    except Exception:
        raise ToolchainError(
            "no CmdStan installation found for cmdstanpy; use stanlogz's own sampler "
            "(stanlogz.draws.sample) or set CMDSTAN"
        ) from None
    if model is None:
        from ..stan.model import StanModel

        model = StanModel.from_file(stan_file, data, seed=seed)
    cm = cmdstanpy.CmdStanModel(stan_file=os.fspath(stan_file))
    fit = cm.sample(
        data=data, chains=nuts.chains, iter_warmup=nuts.warmup, iter_sampling=nuts.draws,
        seed=seed, adapt_delta=nuts.adapt_delta, max_treedepth=nuts.max_treedepth,
        thin=nuts.thin, show_progress=False, sig_figs=18,
    )
    return from_cmdstanpy(fit, model)
