"""``stanlogz kfold MODEL.stan --data DATA.json --k 10``: K-fold, stratified, grouped and
leave-one-group-out cross-validation with exact held-out densities."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..crossval.refit.kfold import KFoldResult, kfold
from ..errors import InputError
from ..report.output import Reporter
from .arguments import add_closing_arguments, add_program_arguments, nuts_settings
from .executor import with_executor
from .loo import add_observation_arguments, obs_fields
from .sample import check_plot, finish

NAME = "kfold"
HELP = ("K-fold cross-validation (random, stratified, grouped or leave-one-group-out) with "
        "exact held-out predictive densities, one NUTS refit per fold.")


def parse_k(text: str) -> int | None:
    """``--k``: a number of folds, or ``groups`` (one fold per group of --group)."""
    if text == "groups":
        return None
    try:
        return int(text)
    except ValueError:
        raise InputError(f"--k must be a number of folds or 'groups', got {text!r}") from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_program_arguments(parser)
    parser.add_argument("--fit", metavar="FILE", nargs="+", default=None,
                        help="existing draws of the full-data posterior: CmdStan CSV files, or "
                        "a stanlogz sample --output file (.csv or .nc); the folds are refit")
    parser.add_argument("--k", default="10", metavar="K|groups",
                        help="number of folds (default 10), or 'groups' with --group: "
                        "leave-one-group-out")
    parser.add_argument("--stratify", metavar="VAR", default=None,
                        help="per-observation data array whose labels are spread evenly over "
                        "the folds")
    parser.add_argument("--group", metavar="VAR", default=None,
                        help="per-observation integer array: every group's observations are "
                        "held out together")
    add_observation_arguments(parser)
    add_closing_arguments(parser, "save pointwise and per-fold elpd")


def print_kfold(report: Reporter, r: KFoldResult) -> None:
    """The result's table, exactly as ``print(r)`` shows it (estimates, folds, notes and
    warnings)."""
    report.text(repr(r))


@with_executor
def run(args: argparse.Namespace, report: Reporter) -> int:
    plot = check_plot(args.plot)
    k = parse_k(args.k)
    if k is None and args.group is None:
        raise InputError("--k groups needs --group VAR")
    r = kfold(args.model, args.data, k=k, stratify=args.stratify, group=args.group,
              obs=args.obs, obs_fields=obs_fields(args.obs_fields),
              draws=list(args.fit) if args.fit else None, settings=nuts_settings(args),
              seed=args.seed, n_workers=args.workers or 1, progress=report.progress)
    print_kfold(report, r)

    def draw(tmp: Path) -> None:
        from ..report.crossval_plots import plot_kfold

        plot_kfold(r, tmp)

    return finish(report, r, plot, draw, warned=not report.json_mode)
