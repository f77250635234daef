"""Posterior draws by sampling: stanlogz's NUTS inside the model library, or CmdStan through
cmdstanpy."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from .._util.argcheck import check_arguments
from ..errors import InputError, ToolchainError
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
    **overrides: Any,
) -> Draws:
    """Draws from stanlogz's own NUTS (Stan's sampler compiled into the model library) with
    ``settings`` (a :class:`~stanlogz.stan.settings.NutsArgs`; keyword overrides such as
    ``draws=2000`` replace single fields). ``model`` is a
    :class:`~stanlogz.stan.model.StanModel` or a ``.stan`` path (built with ``data``, a dict
    or a JSON path)."""
    check_arguments("sample", model=model, progress=progress)
    if isinstance(model, str | os.PathLike) or data is not None:
        from ..stan.load import load_model

        model = load_model(model, data, seed=seed)
    elif not hasattr(model, "nuts"):
        raise InputError(f"model must be a StanModel or a .stan path, not {type(model).__name__}")
    out = model.nuts(settings, seed=seed, init=init, progress=progress, **overrides)
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
        adapt_delta=NutsArgs.of(settings, **overrides).adapt_delta,
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
