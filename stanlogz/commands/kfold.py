"""``stanlogz kfold MODEL.stan --data DATA.json --k 10``: K-fold, stratified, grouped and
leave-one-group-out cross-validation with exact held-out densities."""

from __future__ import annotations

import argparse

from ..crossval.refit.kfold import kfold
from ..errors import InputError
from ..report.crossval_plots import plot_kfold
from ..report.output import Reporter
from . import arguments as flags
from .executor import with_executor
from .sample import check_plot, finish_shown

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
    flags.add_program_arguments(parser)
    flags.add_fit_argument(parser, "existing draws of the full-data posterior: CmdStan CSV "
                           "files, or a stanlogz sample --output file (.csv or .nc); the folds "
                           "are refit")
    parser.add_argument("--k", default="10", metavar="K|groups",
                        help="number of folds (default 10), or 'groups' with --group: "
                        "leave-one-group-out")
    parser.add_argument("--stratify", metavar="VAR", default=None,
                        help="per-observation data array whose labels are spread evenly over "
                        "the folds")
    flags.add_group_argument(parser, "per-observation integer array: every group's "
                             "observations are held out together")
    flags.add_observation_arguments(parser)
    parser.add_argument("--mcse", metavar="TARGET", type=float, default=None,
                        help="continue the full fit's and every refit's chains until the "
                        "Monte Carlo se of elpd_kfold (elpd_logo with --k groups) is at most "
                        "TARGET or the time budget ends; the output says which")
    flags.add_cold_refits_argument(parser, "every refit's", "the full fit's last draws")
    flags.add_closing_arguments(parser, "save pointwise and per-fold elpd")


@with_executor
def run(args: argparse.Namespace, report: Reporter) -> int:
    plot = check_plot(args.plot)
    k = parse_k(args.k)
    if k is None and args.group is None:
        raise InputError("--k groups needs --group VAR")
    r = kfold(args.model, args.data, k=k, stratify=args.stratify, group=args.group,
              obs=args.obs, obs_fields=flags.obs_fields(args.obs_fields),
              draws=list(args.fit) if args.fit else None, settings=flags.nuts_settings(args),
              seed=args.seed, n_workers=args.workers or 1, progress=report.progress,
              warm_refits=not args.cold_refits, mcse_target=args.mcse)
    return finish_shown(report, r, plot, lambda tmp: plot_kfold(r, tmp))
