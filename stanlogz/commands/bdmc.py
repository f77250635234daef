"""``stanlogz bdmc MODEL.stan --simulate SIM.stan``: BDMC sandwich and estimator testbed."""

from __future__ import annotations

import argparse

from .. import testbed
from ..errors import InputError
from ..estimators import METHODS
from ..estimators.shortcuts import SHORTCUTS
from ..report.output import Reporter
from ..report.testbed_plot import plot_testbed
from .arguments import add_plot_argument, add_sampler_arguments, nuts_settings
from .executor import add_executor_arguments, with_executor
from .sample import check_plot

NAME = "bdmc"
HELP = ("Sandwich log Z on data simulated from the model (bidirectional Monte Carlo) and score "
        "evidence estimators against it.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", metavar="MODEL.stan", help="Stan program")
    parser.add_argument("--simulate", metavar="SIM.stan", required=True,
                        help="simulation program: generated quantities draw the parameters "
                             "and the data, named as in MODEL.stan")
    parser.add_argument("--sim-data", metavar="SIMDATA.json", default=None,
                        help="data of the simulation program (also passed to MODEL.stan)")
    parser.add_argument("--estimators", default=None,
                        help="comma-separated estimators (default "
                             f"{','.join(testbed.DEFAULT_ESTIMATORS)}; with --prior also the "
                             f"shortcuts {','.join(testbed.SHORTCUT_ESTIMATORS)}: "
                             "BIC, harmonic mean, likelihood weighting and nested sampling, "
                             "the last when dynesty is installed)")
    parser.add_argument("--temps", type=int, default=1000,
                        help="AIS intermediate distributions T (default 1000)")
    parser.add_argument("--ais-chains", dest="ais_chains", type=int, default=16,
                        help="AIS chains K in each direction (default 16)")
    parser.add_argument("--gap-tol", type=float, default=1.0,
                        help="double T until the gap is below this many nats (0: never)")
    parser.add_argument("--prior", metavar="PRIOR.stan", default=None,
                        help="anneal from the prior: MODEL.stan without the observations, same "
                             "data, normalized (default: a Gaussian fitted to the NUTS draws)")
    add_executor_arguments(parser)
    add_sampler_arguments(parser, what="NUTS (the estimators' posterior draws): ")
    parser.add_argument("--budgets", "--sweep", dest="budgets", type=int, default=1,
                        metavar="N", help="run each estimator at N increasing costs: fractions "
                        "1/2^(N-1), ..., 1/2, 1 of its draws per chain (AIS: temperatures); "
                        "default 1")
    add_plot_argument(parser, "estimate vs cost per estimator over the sandwich band")


def parse_estimators(text: str) -> list[str]:
    """``"gbs, ais"`` -> ``["gbs", "ais"]`` after checking each is registered."""
    names = [s.strip() for s in text.split(",") if s.strip()]
    if not names:
        raise InputError("--estimators is empty")
    for n in names:
        if n not in METHODS and n not in SHORTCUTS:
            raise InputError(f"unknown estimator {n!r}; choose from "
                             f"{', '.join([*METHODS, *SHORTCUTS])}")
    return names


def print_result(report: Reporter, res: testbed.TestbedResult) -> None:
    """Sandwich summary, the estimator table and warnings."""
    s = res.sandwich
    if s.inverted:
        head = "BDMC (NOT VALID: bounds inverted)"
    elif not s.valid:
        head = "BDMC (NOT VALID: gap above the tolerance)"
    else:
        head = "BDMC"
    report.text(f"{head}: lower bound {s.lower.log_z:.4f} ± {s.lower.log_z_se:.4f}, upper bound "
                f"{s.upper.log_z:.4f} ± {s.upper.log_z_se:.4f}; gap {s.gap:.4f} ± "
                f"{s.gap_se:.4f} nats (T={s.lower.n_temps}, K={s.lower.n_chains} chains)")
    title = "estimators on the simulated data (error = estimate - sandwich midpoint)"
    if not s.valid:
        title += "; the sandwich is not valid, so errors are not reliable ('outside': n/a)"
    report.table(list(testbed.TestbedResult.HEADER), res.table_rows(), title=title)
    for r in res.rows:
        if r.failed:
            report.warn(f"{r.method} failed: {r.failed}")
    for w in s.warnings:
        report.warn(w)


@with_executor
def run(args: argparse.Namespace, report: Reporter) -> int:
    estimators = None if args.estimators is None else parse_estimators(args.estimators)
    if args.temps < 2:
        raise InputError(f"--temps must be >= 2, got {args.temps}")
    if args.ais_chains < 1:
        raise InputError(f"--ais-chains must be >= 1, got {args.ais_chains}")
    if args.gap_tol < 0:
        raise InputError(f"--gap-tol must be >= 0, got {args.gap_tol}")
    if args.budgets < 1:
        raise InputError(f"--budgets must be >= 1, got {args.budgets}")
    plot = check_plot(args.plot)
    res = testbed.run_testbed(
        args.model, args.simulate, args.sim_data, estimators, settings=nuts_settings(args),
        n_chains=args.ais_chains, n_temps=args.temps,
        gap_tol=args.gap_tol or None, seed=args.seed, n_workers=args.workers,
        prior_path=args.prior, budgets=testbed.budget_fractions(args.budgets),
        progress=report.progress,
    )
    print_result(report, res)
    if plot is not None:
        plot_testbed(res, plot)
        report.progress(f"plot written to {plot}")
    report.emit_json({**res.to_dict(), "plot": None if plot is None else str(plot)})
    return 0
