"""The command-line arguments several commands share: the program and its data, the NUTS flags
(turned into one :class:`~stanlogz.stan.settings.NutsArgs` by :func:`nuts_settings`), and the
common tail of the commands that refit (NUTS, cluster and ``--plot`` flags), and the flags of
the LOO predictive checks (``loo``, ``compare``)."""

from __future__ import annotations

import argparse

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
    parser.add_argument("--data", metavar="DATA.json", default=None, help="data (JSON)")


def add_closing_arguments(parser: argparse.ArgumentParser, plot_help: str) -> None:
    """The common tail of the commands that refit: the NUTS flags, the cluster flags and
    ``--plot FILE.png`` (what it saves: ``plot_help``)."""
    add_sampler_arguments(parser)
    add_executor_arguments(parser)
    parser.add_argument("--plot", metavar="FILE.png", default=None, help=plot_help)


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
