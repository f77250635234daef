"""The command-line arguments several commands share: the program and its data, the NUTS flags
(turned into one :class:`~stanlogz.stan.settings.NutsArgs` by :func:`nuts_settings`), and the
common tail of the commands that refit (NUTS, cluster and ``--plot`` flags), and the flags of
the LOO predictive checks (``loo``, ``compare``)."""

from __future__ import annotations

import argparse
from typing import Any

from ..crossval.observations.jacobian import (
    jacobian_adjusted,
    log_jacobian,
    outcome_from_data,
    parse_jacobian,
)
from ..draws.continuation import CONTINUATION_WARMUP, WARM_REFIT_WARMUP
from ..errors import InputError
from ..stan.settings import BACKENDS, DEFAULT_BACKEND, NutsArgs
from .executor import add_executor_arguments

_NUTS_DEFAULTS = NutsArgs()


def add_program_arguments(parser: argparse.ArgumentParser, *, prior_instance: bool = False
                          ) -> None:
    """The program and its data: ``MODEL.stan`` and ``--data DATA.json``; ``prior_instance``: the
    command also needs the program's prior density."""
    parser.add_argument("model", metavar="MODEL.stan", help="Stan program" + (
        " (its prior from an lprior quantity, zero observations, log_lik or one-observation "
        "instances, the first that works)" if prior_instance else ""))
    add_data_argument(parser)


def add_data_argument(parser: argparse.ArgumentParser, text: str = "data (JSON)", *,
                      per_program: bool = False) -> None:
    """``--data DATA.json`` (one file, or with ``per_program`` one or one per program)."""
    parser.add_argument("--data", metavar="DATA.json", default=None, help=text,
                        **({"nargs": "+"} if per_program else {}))


def add_fit_argument(parser: argparse.ArgumentParser, text: str, *, metavar: str = "FILE",
                     per_model: bool = False) -> None:
    """``--fit FILE ...``: existing draws (with ``per_model`` repeated, one group a model)."""
    parser.add_argument("--fit", metavar=metavar, nargs="+", default=None, help=text,
                        **({"action": "append"} if per_model else {}))


def add_plot_argument(parser: argparse.ArgumentParser, text: str) -> None:
    """``--plot FILE.png``: what the figure shows is ``text``."""
    parser.add_argument("--plot", metavar="FILE.png", default=None, help=text)


def add_group_argument(parser: argparse.ArgumentParser, text: str) -> None:
    """``--group VAR``: a per-observation data array of group labels."""
    parser.add_argument("--group", metavar="VAR", default=None, help=text)


def add_obs_argument(parser: argparse.ArgumentParser) -> None:
    """``--obs N``: the data's observation size variable."""
    parser.add_argument("--obs", metavar="N", default=None,
                        help="the data's observation size variable (inferred when unambiguous)")


def add_observation_arguments(parser: argparse.ArgumentParser) -> None:
    """``--obs`` and ``--obs-fields`` (``loo``, ``waic``, ``kfold``, ``lfo``, ``cv``,
    ``compare --loo``)."""
    add_obs_argument(parser)
    parser.add_argument("--obs-fields", metavar="Y,X", default=None,
                        help="the per-observation data arrays (default: every array whose "
                        "leading dimension is N)")


def add_cold_refits_argument(parser: argparse.ArgumentParser, refits: str, start: str) -> None:
    """``--cold-refits``: ``refits`` (which refits) run cold instead of starting at ``start``
    (the draws a warm refit starts from), as :func:`~stanlogz.draws.continuation.refit_draws`
    starts them."""
    parser.add_argument("--cold-refits", action="store_true",
                        help=f"run {refits} full warmup from random inits instead of starting "
                        f"it at {start} with {WARM_REFIT_WARMUP} warmup iterations that keep "
                        f"their step size and metric ({CONTINUATION_WARMUP} where they carry "
                        "none); either way, short chains started the other way check it for "
                        "other modes")


def add_closing_arguments(parser: argparse.ArgumentParser, plot_help: str) -> None:
    """The common tail of the commands that refit: the NUTS flags, the cluster flags and
    ``--plot FILE.png`` (what it saves: ``plot_help``)."""
    add_sampler_arguments(parser)
    add_executor_arguments(parser)
    add_plot_argument(parser, plot_help)


def add_sampler_arguments(parser: argparse.ArgumentParser, *, prefix: str = "",
                          defaults: NutsArgs | None = _NUTS_DEFAULTS, what: str = "") -> None:
    """The NUTS flags of every command that runs NUTS: ``--chains``, ``--warmup``, ``--draws``,
    ``--adapt-delta``, ``--max-treedepth`` (each ``--PREFIXname`` with ``prefix``; ``defaults``
    None leaves them None, for a caller whose defaults differ); :func:`nuts_settings` turns
    them into one :class:`~stanlogz.stan.settings.NutsArgs`."""
    d = defaults or NutsArgs()
    flags = (("chains", int, "number of chains"),
             ("warmup", int, "warmup iterations per chain"),
             ("draws", int, "post-warmup draws per chain"),
             ("adapt-delta", float, "target acceptance rate of NUTS step-size adaptation "
              "(raise it, e.g. 0.95, when divergences are reported)"),
             ("max-treedepth", int, "maximum NUTS tree depth"))
    for name, kind, text in flags:
        field = name.replace("-", "_")
        default = getattr(d, field)
        parser.add_argument(f"--{prefix}{name}", type=kind,
                            default=default if defaults is not None else None,
                            help=f"{what}{text} (default {default})")
    if not prefix:
        parser.add_argument("--backend", choices=BACKENDS, default=None,
                            help="density backend: compiled (C++ build), interpreted (stanli, "
                            "no build) or auto (interpreted where it can, else compiled, with "
                            "a note) (default $STANLOGZ_BACKEND, else " + DEFAULT_BACKEND + ")")


def nuts_settings(args: argparse.Namespace, *, prefix: str = "",
                  base: NutsArgs | None = None) -> NutsArgs:
    """The one :class:`~stanlogz.stan.settings.NutsArgs` of the flags that
    :func:`add_sampler_arguments` added (``base`` with the given flags applied; invalid values
    raise :class:`~stanlogz.errors.InputError` before anything runs)."""
    p = prefix.replace("-", "_")
    return NutsArgs.of(base, backend=getattr(args, "backend", None) if not p else None,
                       **{f: getattr(args, p + f) for f in
                          ("chains", "warmup", "draws", "adapt_delta", "max_treedepth")})


def add_check_arguments(parser: argparse.ArgumentParser) -> None:
    """``--yrep NAME``, ``--outcome NAME``, ``--pit``, ``--metrics``, ``--crps``, ``--e-loo``,
    ``--pit-plot``."""
    parser.add_argument("--yrep", metavar="NAME", default=None,
                        help="the posterior-predictive generated quantity (one draw per "
                        "observation), for --pit, --metrics and --crps")
    parser.add_argument("--outcome", metavar="NAME", default=None,
                        help="the observed data array it predicts (default: NAME without "
                        "_rep / _pred)")
    parser.add_argument("--pit", action="store_true",
                        help="LOO-PIT values with a uniformity test")
    parser.add_argument("--pit-plot", metavar="FILE.png", default=None,
                        help="save the LOO-PIT ECDF difference and histogram")
    parser.add_argument("--metrics", action="store_true",
                        help="LOO predictive RMSE, MAE, R^2 (accuracy for 0/1 outcomes)")
    parser.add_argument("--crps", action="store_true", help="LOO CRPS and SCRPS")
    parser.add_argument("--e-loo", metavar="NAME", nargs="+", default=None,
                        help="LOO predictive mean, variance and quantiles of these generated "
                        "quantities (one entry per observation)")


def add_jacobian_argument(parser: argparse.ArgumentParser) -> None:
    """``--jacobian TRANSFORM:VAR`` (``loo``, ``waic``)."""
    parser.add_argument("--jacobian", metavar="TRANSFORM:VAR", default=None,
                        help="the program models g(y) (TRANSFORM: log, log1p, sqrt, logit): add "
                        "log|g'(y_i)| to each pointwise elpd so that it is on the scale of y, "
                        "the data variable VAR (original scale, in --data)")


def jacobian_of(args: argparse.Namespace) -> tuple[str, Any] | None:
    """The parsed ``--jacobian`` and the outcome it needs, checked before any computation."""
    if args.jacobian is None:
        return None
    transform, var = parse_jacobian(args.jacobian)
    y = outcome_from_data(args.data, var)
    log_jacobian(transform, y)  # support checked now, not after sampling
    return transform, y


def with_jacobian(result: Any, args: argparse.Namespace, jac: tuple[str, Any] | None
                  ) -> tuple[Any, dict[str, Any]]:
    """The result on the scale of the original outcome when ``--jacobian`` was given (else as
    it is) and the JSON entry that says so."""
    if jac is None:
        return result, {}
    return jacobian_adjusted(result, *jac), {"jacobian": {
        "transform": jac[0], "variable": args.jacobian.split(":", 1)[1],
        "sum_log_abs_derivative": float(log_jacobian(*jac).sum())}}


def checks_requested(args: argparse.Namespace) -> bool:
    """Whether any check flag was given (``--yrep`` is then required for PIT/metrics/CRPS)."""
    wanted = args.pit or args.metrics or args.crps or args.pit_plot is not None
    if wanted and args.yrep is None:
        raise InputError("--pit, --metrics and --crps need --yrep NAME: the generated quantity "
                         "with one posterior-predictive draw per observation")
    return wanted or bool(args.e_loo)


def obs_fields(text: str | None) -> list[str] | None:
    """``"y,x"`` -> ``["y", "x"]``."""
    if text is None:
        return None
    fields = [f.strip() for f in text.split(",") if f.strip()]
    if not fields:
        raise InputError("--obs-fields is empty")
    return fields
