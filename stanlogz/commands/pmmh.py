"""``stanlogz pmmh OUTER.stan --inner INNER.stan --data D.json``: pseudo-marginal MCMC for a
doubly-intractable posterior, with unbiased 1/Z estimates (paper 003) and their signs."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from ..estimators.reciprocal import METHODS
from ..pmmh.pseudo_marginal import SOURCES, PseudoMarginalResult, pmmh
from ..report.output import Reporter
from .evidence import PLOT_SUFFIXES
from .sample import check_output, finish

NAME = "pmmh"
HELP = ("Pseudo-marginal MCMC for a doubly-intractable posterior: the outer program's target "
        "lacks 1/Z(theta), which is estimated unbiasedly from the inner program (theta as data).")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("outer", metavar="OUTER.stan",
                        help="program with parameters theta and target log prior + log p*(y|theta)")
    parser.add_argument("--inner", metavar="INNER.stan", required=True,
                        help="program reading theta as data; its parameters x have density "
                        "p*(x|theta)")
    parser.add_argument("--data", metavar="DATA.json", default=None,
                        help="data (JSON) for both programs")
    parser.add_argument("--estimator", choices=METHODS, default="rbbce",
                        help="unbiased 1/Z estimator (default rbbce)")
    parser.add_argument("--iter", type=int, default=2000, help="kept iterations (default 2000)")
    parser.add_argument("--warmup", type=int, default=1000,
                        help="warmup iterations: proposal-scale adaptation (default 1000)")
    parser.add_argument("--batch", type=int, default=None,
                        help="importance weights averaged into each batch weight (default: "
                        "chosen so that the sd of the log batch weights is at most 0.2, and "
                        "grown during warmup while estimates come out negative)")
    parser.add_argument("--trials", type=int, default=1,
                        help="independent 1/Z estimates averaged per state (default 1)")
    parser.add_argument("--burn-in", type=int, default=0,
                        help="FCE burn-in T: Pr(estimate >= 0) >= 1 - 2/(T+1) (default 0)")
    parser.add_argument("--weights", choices=SOURCES, default="is",
                        help="importance sampling or AIS weights for Z(theta) (default is)")
    parser.add_argument("--proposal", choices=("gaussian", "flow"), default="gaussian",
                        help="proposal fitted to NUTS draws of the inner program (default "
                        "gaussian)")
    parser.add_argument("--plot", metavar="FILE.png", default=None,
                        help="save traces and autocorrelations of sign x theta")


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


def plot_pmmh(r: PseudoMarginalResult, path: Path, max_lag: int = 100) -> None:
    """Traces and autocorrelations of sign x theta (as paper 003's Figures 2 and 3)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    values, names = r.draws.constrained[0], r.draws.constrained_names
    k = len(names)
    fig, axes = plt.subplots(2, k, figsize=(4.0 * k, 5.0), squeeze=False)
    lags = np.arange(min(max_lag, r.n_iter - 1) + 1)
    for j, name in enumerate(names):
        s = values[:, j] * r.signs
        axes[0, j].plot(s, lw=0.5)
        axes[0, j].set_title(f"sign x {name}")
        c = s - s.mean()
        denom = float(np.dot(c, c)) or 1.0
        acf = [float(np.dot(c[: c.size - h], c[h:])) / denom for h in lags]
        axes[1, j].bar(lags, acf, width=1.0)
        axes[1, j].set_xlabel("lag")
        axes[1, j].set_title(f"autocorrelation of sign x {name}")
    fig.tight_layout()
    fig.savefig(path, format=path.suffix.lstrip(".") or "png")
    plt.close(fig)


def run(args: argparse.Namespace, report: Reporter) -> int:
    plot = check_output(args.plot, PLOT_SUFFIXES, "--plot")
    r = pmmh(args.outer, args.inner, args.data, estimator=args.estimator, iter=args.iter,
             warmup=args.warmup, seed=args.seed, batch=args.batch, trials=args.trials,
             burn_in=args.burn_in, weights=args.weights, proposal=args.proposal,
             progress=report.progress)
    print_pmmh(report, r)
    return finish(report, r, plot, lambda tmp: plot_pmmh(r, tmp))
