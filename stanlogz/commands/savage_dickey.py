"""``stanlogz savage-dickey MODEL.stan --data D --at NAME=VALUE``: log BF₀₁ of a point null by
the Savage–Dickey density ratio, with its se."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..bayes_factors.savage_dickey import parse_at, savage_dickey
from ..errors import InputError
from ..estimators import METHODS
from ..report.output import Reporter
from ..stan.inputs import check_stan_file
from . import arguments as flags

NAME = "savage-dickey"
HELP = ("log Bayes factor BF01 of a point null nested in a Stan program by the Savage-Dickey "
        "density ratio (posterior over prior density at the null value).")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    flags.add_program_arguments(parser, prior_instance=True)
    parser.add_argument("--at", metavar="NAME=VALUE", default=None,
                        help="the point null, e.g. beta=0 or beta[2]=0 (required)")
    parser.add_argument("--null", metavar="NULL.stan", default=None,
                        help="the nested program itself: also compute log BF01 by the evidence "
                        "route and compare")
    parser.add_argument("--method", default="gbs",
                        help=f"evidence estimator for --null, one of {', '.join(METHODS)}")
    flags.add_obs_argument(parser)
    parser.add_argument("--grid", type=int, default=801,
                        help="quadrature points over the tested parameter (default 801)")
    flags.add_sampler_arguments(parser)


def run(args: argparse.Namespace, report: Reporter) -> int:
    if args.at is None:
        raise InputError("--at NAME=VALUE is required: the point null to test, e.g. --at beta=0")
    at = parse_at(args.at)
    check_stan_file(args.model)
    if args.null is not None:
        check_stan_file(args.null)
    if args.data is not None and not Path(args.data).is_file():
        raise InputError(f"data file {args.data} does not exist")
    r = savage_dickey(args.model, args.data, at=at, settings=flags.nuts_settings(args),
                      null=args.null, method=args.method, obs=args.obs, n_grid=args.grid,
                      seed=args.seed,
                      progress=report.progress)
    what = ", ".join(f"{k}={v:g}" for k, v in r.at.items())
    report.table(["", "estimate", "se"], r.table(),
                 title=f"{r.model}: point null {what} (prior from {r.prior_route})")
    for w in r.warnings:
        report.warn(w)
    report.emit_json(r.to_dict())
    return 0
