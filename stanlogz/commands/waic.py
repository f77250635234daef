"""``stanlogz waic [MODEL.stan] [--data DATA.json] [--fit FILES]``: WAIC with its warnings."""

from __future__ import annotations

import argparse
from typing import Any

from ..crossval.observations.pointwise import LOG_LIK_SOURCES
from ..crossval.psis_loo.waic import P_WAIC_MAX, waic
from ..errors import InputError
from ..report.output import Reporter
from . import arguments as flags

NAME = "waic"
HELP = ("WAIC (widely applicable information criterion) of a fit's log_lik or of a Stan "
        "program, with loo's p_waic > 0.4 warning; prefer loo, which says how reliable it is.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", metavar="MODEL.stan", nargs="?", default=None,
                        help="Stan program (optional with --fit files that carry log_lik)")
    flags.add_data_argument(parser)
    flags.add_fit_argument(parser, "existing draws: CmdStan CSV files or an ArviZ .nc file")
    flags.add_observation_arguments(parser)
    parser.add_argument("--log-lik", choices=LOG_LIK_SOURCES, default="auto",
                        help="pointwise log-likelihood of a program: its log_lik generated "
                        "quantity or density differences (default: log_lik when it has one)")
    flags.add_jacobian_argument(parser)
    flags.add_sampler_arguments(parser)


def run(args: argparse.Namespace, report: Reporter) -> int:
    if args.model is None and not args.fit:
        raise InputError("give a Stan program, or --fit files that carry log_lik")
    if args.model is None and args.data is not None and args.jacobian is None:
        raise InputError("--data without a Stan program is used only by --jacobian")
    jac = flags.jacobian_of(args)
    fit: Any = list(args.fit) if args.fit else None
    if args.model is None:
        r = waic(fit)
    else:
        settings = flags.nuts_settings(args)
        r = waic(args.model, args.data, draws=fit, obs=args.obs,
                 obs_fields=flags.obs_fields(args.obs_fields), log_lik=args.log_lik,
                 settings=settings, seed=args.seed, progress=report.progress)
    r, extra = flags.with_jacobian(r, args, jac)
    report.table(["", "estimate", "se"], r.table(),
                 title=f"{r.model}: WAIC on {r.n_samples} draws and {r.n_obs} observations")
    report.text(f"Monte Carlo se of elpd_waic: {r.mcse:.3f}; observations with p_waic > "
                f"{P_WAIC_MAX}: {int((r.p_waic_i > P_WAIC_MAX).sum())}")
    for w in r.warnings:
        report.warn(w)
    report.emit_json({**extra, **r.to_dict()})
    return 0
