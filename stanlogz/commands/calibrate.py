"""``stanlogz calibrate A.stan B.stan --data D --sim SIM_A.stan SIM_B.stan --sims N``:
Bayes-factor calibration by simulation."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..bayes_factors.calibrate import DECISIVE_BF, CalibrationResult, calibrate
from ..errors import InputError
from ..estimators import METHODS
from ..report.output import Reporter
from ..stan.inputs import check_stan_file
from . import arguments as flags
from .executor import add_executor_arguments, with_executor
from .sample import check_plot, finish

NAME = "calibrate"
HELP = ("Calibrate Bayes factors between Stan programs by simulation: the mean posterior "
        "probability of each program must equal its prior probability.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("models", metavar="PROGRAM.stan", nargs="+", help="the programs")
    flags.add_data_argument(parser, "data the programs and simulation programs read besides the "
                            "simulated data (JSON)")
    parser.add_argument("--sim", metavar="SIM.stan", nargs="+", required=True,
                        help="one simulation program per program (generated quantities draw "
                        "the parameters from the prior and the data given them)")
    parser.add_argument("--sim-data", metavar="SIM.json", default=None,
                        help="data of the simulation programs (default: --data)")
    parser.add_argument("--sims", metavar="N", type=int, default=100,
                        help="number of simulations (default 100)")
    parser.add_argument("--prior-probs", default=None, help="prior model probabilities, e.g. "
                        "0.5,0.5 (default equal)")
    parser.add_argument("--decisive-bf", type=float, default=DECISIVE_BF,
                        help=f"a wrong program's BF above this is a decisive error (default "
                        f"{DECISIVE_BF:g})")
    parser.add_argument("--method", default="gbs",
                        help=f"evidence estimator, one of {', '.join(METHODS)}")
    flags.add_sampler_arguments(parser)
    add_executor_arguments(parser)
    flags.add_plot_argument(parser, "save log BF histograms and mean posterior probabilities")


def print_calibration(report: Reporter, r: CalibrationResult) -> None:
    s = r.summary
    report.table(["program", "prior prob", "mean post prob", "se", "z"], r.table(),
                 title=f"calibration over {len(r.simulations)} simulations ({r.method}): "
                 f"{'passes' if s.passed else 'FAILS'} (|z| <= 3)")
    rows = []
    for t, by in s.log_bf_quantiles.items():
        for j, q in by.items():
            if q:
                rows.append([r.models[int(t)], f"{r.models[int(j)]} vs {r.models[0]}",
                             s.n_by_truth[int(t)], *q])
    report.table(["truth", "log BF", "sims", "5%", "25%", "50%", "75%", "95%"], rows,
                 title="log Bayes factors under each truth")
    report.text(f"decisive wrong Bayes factors: {100 * s.decisive_wrong_rate:.1f}% ± "
                f"{100 * s.decisive_wrong_se:.1f}%")


@with_executor
def run(args: argparse.Namespace, report: Reporter) -> int:
    plot = check_plot(args.plot)
    for f in [*args.models, *args.sim]:
        check_stan_file(f)
    for f in (args.data, args.sim_data):
        if f is not None and not Path(f).is_file():
            raise InputError(f"data file {f} does not exist")
    if len(args.sim) != len(args.models):
        raise InputError(f"--sim needs one simulation program per program: {len(args.models)} "
                         f"programs, {len(args.sim)} simulation programs")
    prior = None
    if args.prior_probs is not None:
        try:
            prior = [float(t) for t in args.prior_probs.split(",")]
        except ValueError:
            raise InputError(f"--prior-probs {args.prior_probs!r} is not a list of numbers"
                             ) from None
    r = calibrate(args.models, args.sim, args.data, n_sims=args.sims, prior_probs=prior,
                  sim_data=args.sim_data, settings=flags.nuts_settings(args), method=args.method,
                  decisive_bf=args.decisive_bf, seed=args.seed,
                  n_workers=None if args.scheduler else args.workers, progress=report.progress)
    print_calibration(report, r)

    def draw(tmp: Path) -> None:
        from ..report.bayes_factor_plots import plot_calibration

        plot_calibration(r, tmp)

    return finish(report, r, plot, draw)
