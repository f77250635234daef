"""``stanlogz pmmh OUTER.stan --inner INNER.stan --data D.json``: pseudo-marginal MCMC for a
doubly-intractable posterior, with unbiased 1/Z estimates (Wei & Murray 2017) and their signs."""

from __future__ import annotations

import argparse

import numpy as np

from ..estimators.reciprocal.reciprocal import RECIPROCAL_METHODS
from ..pmmh.pseudo_marginal import (
    MH_WARMUP,
    WEIGHT_SOURCES,
    PseudoMarginalResult,
    inner_nuts,
    pmmh,
)
from ..report.output import Reporter
from ..report.pmmh_plot import plot_pmmh
from .arguments import add_data_argument, add_plot_argument, add_sampler_arguments, nuts_settings
from .sample import check_plot, finish

NAME = "pmmh"
HELP = ("Pseudo-marginal MCMC for a doubly-intractable posterior: the outer program's target "
        "lacks 1/Z(theta), which is estimated unbiasedly from the inner program (theta as data).")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("outer", metavar="OUTER.stan",
                        help="program with parameters theta and target log prior + log p*(y|theta)")
    parser.add_argument("--inner", metavar="INNER.stan", required=True,
                        help="program reading theta as data; its parameters x have density "
                        "p*(x|theta)")
    add_data_argument(parser, "data (JSON) for both programs")
    parser.add_argument("--estimator", choices=RECIPROCAL_METHODS, default="rbbce",
                        help="unbiased 1/Z estimator (default rbbce)")
    parser.add_argument("--iter", type=int, default=2000, help="kept iterations (default 2000)")
    parser.add_argument("--warmup", type=int, default=MH_WARMUP,
                        help=f"warmup iterations: proposal-scale adaptation (default {MH_WARMUP})")
    parser.add_argument("--batch", type=int, default=None,
                        help="importance weights averaged into each batch weight (default: "
                        "chosen so that the sd of the log batch weights is at most 0.2, and "
                        "grown during warmup while estimates come out negative)")
    parser.add_argument("--trials", type=int, default=1,
                        help="independent 1/Z estimates averaged per state (default 1)")
    parser.add_argument("--burn-in", type=int, default=0,
                        help="FCE burn-in T: Pr(estimate >= 0) >= 1 - 2/(T+1) (default 0)")
    parser.add_argument("--weights", choices=WEIGHT_SOURCES, default="is",
                        help="importance sampling or AIS weights for Z(theta) (default is)")
    parser.add_argument("--proposal", choices=("t", "gaussian", "flow"), default="t",
                        help="proposal fitted to NUTS draws of the inner program (default t: "
                        "a multivariate t with 10 degrees of freedom, whose importance weights "
                        "keep a finite variance where a Gaussian's may not)")
    add_sampler_arguments(parser, prefix="inner-", defaults=None,
                          what="the inner program's NUTS (fits the 1/Z proposal): ")
    add_plot_argument(parser, "save traces and autocorrelations of sign x theta")


def print_pmmh(report: Reporter, r: PseudoMarginalResult) -> None:
    """Sign-corrected posterior table and the sign/acceptance/cost diagnostics."""
    rows = [[p["name"], p["mean"], p["mcse"], p["sd"]] for p in r.summary_rows()]
    report.table(["name", "mean", "mcse", "sd"], rows,
                 title=f"pseudo-marginal posterior ({r.estimator}, {r.n_iter} iterations; "
                 "sign-corrected: sum h sign / sum sign)")
    n = r.n_iter + r.warmup
    report.table(["diagnostic", "value"], [
        ["positive estimates", f"{int(np.sum(r.signs > 0))} / {r.n_iter} "
                               f"({100 * r.fraction_positive:.2f}%)"],
        ["acceptance rate", round(r.acceptance, 3)],
        ["weights per iteration", round(r.n_weights / n, 1)],
        ["seconds per iteration", f"{r.seconds / n:.2e}"],
        ["sd of log batch weights", round(r.log_weight_sd, 3)],
        ["batch", f"{r.batch} ({'chosen automatically' if r.batch_auto else 'given'})"],
    ])


def run(args: argparse.Namespace, report: Reporter) -> int:
    plot = check_plot(args.plot)
    r = pmmh(args.outer, args.inner, args.data, estimator=args.estimator, iter=args.iter,
             warmup=args.warmup, seed=args.seed, batch=args.batch, trials=args.trials,
             burn_in=args.burn_in, weights=args.weights, proposal=args.proposal,
             settings=nuts_settings(args, prefix="inner-", base=inner_nuts(args.inner_draws)),
             progress=report.progress)
    print_pmmh(report, r)
    return finish(report, r, plot, lambda tmp: plot_pmmh(r, tmp))
