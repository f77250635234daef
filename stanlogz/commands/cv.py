"""``stanlogz cv MODEL.stan --data DATA.json --n-valid K --splits S``: unbiased cross-validation."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..crossval.refit.unbiased import CRITERIA, cv
from ..report.output import Reporter
from . import arguments as flags
from .executor import with_executor
from .sample import check_plot, finish

NAME = "cv"
HELP = ("Unbiased leave-n_V-out Bayesian cross-validation (-log p(y_V | y_T), or the squared "
        "prediction error, averaged over random splits) with a confidence interval.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    flags.add_program_arguments(parser)
    flags.add_observation_arguments(parser)
    parser.add_argument("--n-valid", type=int, default=1,
                        help="observations in each validation set (default 1: leave-one-out)")
    parser.add_argument("--splits", type=int, default=100,
                        help="random splits, one unbiased replicate each (default 100)")
    parser.add_argument("--criterion", choices=tuple(CRITERIA), default="log",
                        help="log: -log p(y_V | y_T); squared_error: expected squared error of "
                        "predicting the held-out outcome (needs a y_rep generated quantity)")
    parser.add_argument("--outcome", default="y",
                        help="with --criterion squared_error: the outcome array (default y)")
    parser.add_argument("--kernel", choices=("rwmh", "hmc"), default="rwmh",
                        help="coupled MCMC kernel (default rwmh)")
    flags.add_fit_argument(parser, "existing draws of the full-data posterior (start of the "
                           "chains)")
    flags.add_closing_arguments(parser, "save the replicates against split and lambda")


@with_executor
def run(args: argparse.Namespace, report: Reporter) -> int:
    plot = check_plot(args.plot)
    r = cv(args.model, args.data, n_valid=args.n_valid, splits=args.splits, obs=args.obs,
           obs_fields=flags.obs_fields(args.obs_fields),
           draws=list(args.fit) if args.fit else None, settings=flags.nuts_settings(args),
           seed=args.seed,
           criterion=args.criterion, outcome=args.outcome, kernel=args.kernel,
           n_workers=args.workers, progress=report.progress)
    lvl = f"{100 * r.ci_level:.0f}% CI"
    report.table(["", "estimate", "mc se", f"{lvl} low", f"{lvl} high"], r.table(),
                 title=f"{r.model}: unbiased CV over {r.replicates.size} random splits, "
                 f"n_V = {r.n_valid} of {r.n_obs}")
    report.text(f"cost: {r.n_evals} path evaluations in replicates, {r.n_evals_tuning} in "
                f"tuning, {r.seconds:.1f} s")

    def draw(tmp: Path) -> None:
        from ..report.crossval_plots import plot_cv

        plot_cv(r, tmp)

    return finish(report, r, plot, draw)
