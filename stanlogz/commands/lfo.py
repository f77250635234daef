"""``stanlogz lfo MODEL.stan --data DATA.json --min-train L --ahead M``: leave-future-out
cross-validation of a time-series program."""

from __future__ import annotations

import argparse

from .._util.gpd import KHAT_BAD
from ..crossval.refit.lfo import LFO_METHODS, lfo
from ..report.crossval_plots import plot_lfo
from ..report.output import Reporter
from . import arguments as flags
from .executor import with_executor
from .sample import check_plot, finish_shown

NAME = "lfo"
HELP = ("Leave-future-out cross-validation of a time series: log p(y[t+1:t+M] | y[1:t]) for "
        "every forecast origin, by PSIS with refits or exactly.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    flags.add_program_arguments(parser)
    parser.add_argument("--min-train", metavar="L", type=int, required=True,
                        help="observations in the first training set")
    parser.add_argument("--ahead", metavar="M", type=int, default=1,
                        help="observations predicted at once (default 1)")
    parser.add_argument("--method", choices=LFO_METHODS, default="psis",
                        help="psis: importance sampling from the last fit, refitting when k-hat "
                        "exceeds --k-threshold; exact: a fit per origin and bridge sampling "
                        "(default psis)")
    parser.add_argument("--k-threshold", type=float, default=KHAT_BAD,
                        help=f"refit when PSIS k-hat exceeds this (default {KHAT_BAD})")
    flags.add_observation_arguments(parser)
    flags.add_cold_refits_argument(parser, "every PSIS refit's", "the last fit's final draws")
    flags.add_closing_arguments(parser, "save elpd and k-hat per forecast origin")


@with_executor
def run(args: argparse.Namespace, report: Reporter) -> int:
    plot = check_plot(args.plot)
    r = lfo(args.model, args.data, min_train=args.min_train, ahead=args.ahead,
            method=args.method, k_threshold=args.k_threshold, obs=args.obs,
            obs_fields=flags.obs_fields(args.obs_fields), settings=flags.nuts_settings(args),
            seed=args.seed, n_workers=args.workers or 1, progress=report.progress,
            warm_refits=not args.cold_refits)
    return finish_shown(report, r, plot, lambda tmp: plot_lfo(r, tmp))
