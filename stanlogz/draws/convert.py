"""Draws from what users already have: a cmdstanpy fit, ArviZ data (or its netCDF file), an
array of unconstrained draws, or any of those and CSV files through :func:`as_draws`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from .. import arviz_compat
from ..errors import DataError, InputError
from ..stan.program import StanProgram
from .core import _ARVIZ_STATS, Draws, _first_line, _from_columns, flat_name
from .stancsv import from_csv


def from_cmdstanpy(fit: Any, model: StanProgram | None) -> Draws:
    """Draws from a ``cmdstanpy.CmdStanMCMC`` fit of the same program.

    Parameters
    ----------
    fit : cmdstanpy.CmdStanMCMC
        The fit.
    model : StanModel or None
        The program the fit is of (to map its columns to the unconstrained scale); ``None``
        keeps the constrained draws only.

    Returns
    -------
    Draws
        The draws, with the fit's step sizes, metric, time and sampler settings.

    Raises
    ------
    InputError
        The fit's parameters are not the program's.

    See Also
    --------
    as_draws : any kind of draws.

    Examples
    --------
    With cmdstanpy and CmdStan installed (neither is needed by stanlogz, so this example is
    not run here)::

        import cmdstanpy, stanlogz
        fit = cmdstanpy.CmdStanModel(stan_file="m.stan").sample(data="d.json")
        model = stanlogz.StanModel.from_file("m.stan", "d.json")
        draws = stanlogz.from_cmdstanpy(fit, model)
        stanlogz.evidence(model, draws=draws)   # or simply draws=fit
    """
    arr = np.asarray(fit.draws(concat_chains=False), dtype=float)  # (n, chains, columns)
    values = np.ascontiguousarray(arr.transpose(1, 0, 2))
    names = [flat_name(c) for c in fit.column_names]
    inv = fit.inv_metric
    if inv is not None:
        inv = np.asarray(inv, dtype=float)
        if inv.ndim == 3:  # dense metric: keep its diagonal
            inv = np.diagonal(inv, axis1=1, axis2=2)
    cfg = fit.metadata.cmdstan_config
    try:  # cmdstanpy >= 1.2: a list with one {'warmup', 'sampling', 'total'} dict per chain
        seconds = float(sum(t.get("total", 0.0) for t in fit.time))
    except Exception:
        seconds = 0.0
    return _from_columns(
        values, names, model, what="cmdstanpy fit", source="cmdstanpy",
        step_size=None if fit.step_size is None else np.asarray(fit.step_size, dtype=float),
        inv_metric=inv, seconds=seconds,
        max_treedepth=int(cfg["max_depth"]) if "max_depth" in cfg else None,
        adapt_delta=float(cfg["delta"]) if isinstance(cfg.get("delta"), int | float) else None,
    )


def from_inference_data(data: Any, model: StanProgram | None) -> Draws:
    """Draws from ArviZ InferenceData / DataTree (or a netCDF file of one) of the same program.

    The posterior group must hold the program's parameters (Stan names, any shape); a
    log_likelihood group with one variable becomes the ``log_lik`` columns.
    """
    if isinstance(data, str | os.PathLike):
        path = Path(data)
        if not path.is_file():
            raise InputError(f"no such file: {path}")
        try:
            data = arviz_compat.read_netcdf(path)
        except Exception as exc:  # netCDF/HDF5 readers raise many types
            raise DataError(f"{path}: not an ArviZ netCDF file ({_first_line(exc)})") from None
    what = "InferenceData"
    post = arviz_compat.group(data, "posterior")
    if post is None:
        raise DataError(f"{what} has no posterior group")
    names: list[str] = []
    columns: list[np.ndarray] = []

    def add(var: str, arr: np.ndarray) -> None:
        arr = np.asarray(arr, dtype=float)
        if arr.ndim == 2:
            names.append(var)
            columns.append(arr)
            return
        for idx in np.ndindex(*arr.shape[2:][::-1]):  # Stan's column-major order
            idx = idx[::-1]
            names.append(var + "".join(f".{i + 1}" for i in idx))
            columns.append(arr[(slice(None), slice(None), *idx)])

    for var in post.data_vars:
        add(str(var), post[var].transpose("chain", "draw", ...).values)
    ll = arviz_compat.group(data, "log_likelihood")
    if ll is not None and len(ll.data_vars) == 1 and "log_lik" not in post.data_vars:
        var = next(iter(ll.data_vars))
        add("log_lik", ll[var].transpose("chain", "draw", ...).values)
    stats = arviz_compat.group(data, "sample_stats")
    if stats is not None:
        for col, az_name in _ARVIZ_STATS.items():
            if az_name in stats.data_vars:
                names.append(col)
                columns.append(np.asarray(stats[az_name].values, dtype=float))
    values = np.stack(columns, axis=-1)
    return _from_columns(values, names, model, what=what, source="arviz", step_size=None,
                         inv_metric=None, seconds=0.0, max_treedepth=None)


def from_array(unconstrained: np.ndarray, model: StanProgram | None = None) -> Draws:
    """Draws from unconstrained values ``(chains, n, dim)`` or ``(n, dim)`` (one chain).

    With a ``model`` the constrained parameters and transformed parameters are computed too.
    """
    u = np.asarray(unconstrained, dtype=float)
    if u.ndim == 2:
        u = u[None]
    if u.ndim != 3:
        raise InputError(f"draws must be (chains, n, dim) or (n, dim), got shape {u.shape}")
    if model is None:
        return Draws(unconstrained=u, source="array")
    if u.shape[2] != model.dim:
        raise InputError(f"draws have dimension {u.shape[2]}, model {model.name!r} has {model.dim}")
    if not np.all(np.isfinite(u)):
        raise InputError("draws contain non-finite values")
    chains, n, dim = u.shape
    cons = np.asarray(model.constrain_many(u.reshape(-1, dim), include_tp=True), dtype=float)
    return Draws(
        unconstrained=u,
        constrained=cons.reshape(chains, n, -1),
        constrained_names=list(model.param_names(include_tp=True)),
        unc_names=list(model.param_unc_names()),
        source="array",
    )


def as_draws(obj: Any, model: StanProgram | None) -> Draws:
    """Draws from whatever holds them: a :class:`Draws`, a cmdstanpy fit, CmdStan CSV path(s)
    or a glob, ArviZ InferenceData / DataTree or a ``.nc`` file of one, or an array.

    Parameters
    ----------
    obj : Draws, cmdstanpy fit, str, Path, list of paths, InferenceData or array_like
        The draws; an array is ``(chains, draws, dim)`` on the unconstrained scale.
    model : StanModel or None
        The program they are of; its dimension is checked.

    Returns
    -------
    Draws
        The draws, of the program's dimension when ``model`` is given.

    Raises
    ------
    InputError
        ``obj`` is none of the above, or its dimension is not the program's.

    See Also
    --------
    stanlogz.sample : draws from stanlogz's NUTS.
    from_csv : CmdStan CSV files.

    Examples
    --------
    >>> import numpy as np
    >>> from stanlogz import as_draws
    >>> as_draws(np.zeros((2, 50, 3)), None)
    Draws(2 chains x 50 draws, 3 unconstrained dims; x.1, x.2, x.3; from array)
    """
    if isinstance(obj, Draws):
        d = obj
    elif type(obj).__name__ == "CmdStanMCMC":
        d = from_cmdstanpy(obj, model)
    elif arviz_compat.is_inference_data(obj):
        d = from_inference_data(obj, model)
    elif _is_netcdf(obj):
        d = from_inference_data(obj[0] if isinstance(obj, list | tuple) else obj, model)
    elif isinstance(obj, str | os.PathLike):
        d = from_csv(obj, model)
    elif isinstance(obj, list | tuple) and obj and all(isinstance(p, str | os.PathLike)
                                                         for p in obj):
        d = from_csv(list(obj), model)
    elif isinstance(obj, np.ndarray | list | tuple):
        d = from_array(np.asarray(obj, dtype=float), model)
    else:
        raise InputError(f"cannot use {type(obj).__name__} as draws; give a Draws, a cmdstanpy "
                         "fit, CSV path(s), InferenceData or an array (chains, n, dim)")
    if model is not None and d.dim != model.dim:
        raise InputError(f"draws have dimension {d.dim}, model {model.name!r} has {model.dim}")
    return d


def _is_netcdf(obj: Any) -> bool:
    if isinstance(obj, list | tuple) and len(obj) == 1:
        obj = obj[0]
    return isinstance(obj, str | os.PathLike) and str(obj).endswith(".nc")
