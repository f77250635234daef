"""``stanlogz evidence MODEL.stan --data DATA.json``: the log evidence with its standard error."""

from __future__ import annotations

import argparse
import ast
import math
from pathlib import Path
from typing import Any

import numpy as np

from ..api import check_evidence_draws, evidence, prior_warnings
from ..draws import obtain_draws
from ..errors import InputError
from ..estimators import METHODS, lookup
from ..estimators.base import EvidenceResult
from ..estimators.bridge.anytime import sampling_reserve
from ..report.output import Reporter, write_atomically
from ..stan.load import load_model
from ..stan.priors import program_priors
from . import arguments as flags
from .executor import add_executor_arguments, with_executor
from .sample import check_plot

NAME = "evidence"
HELP = "Estimate the log evidence (log marginal likelihood) of a Stan program."

#: Methods whose results :func:`stanlogz.report.plots.plot_evidence` draws (they keep their flow and
#: log weights in ``diagnostics``); ``ups`` has its own plot.
FLOW_METHODS = ("gbs", "gis", "ghm")
PLOT_METHODS = FLOW_METHODS + ("ups",)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    flags.add_program_arguments(parser)
    add_estimation_arguments(parser)
    flags.add_fit_argument(parser, "use existing draws: CmdStan CSV files, or a file written by "
                           "stanlogz sample --output (.csv or .nc)", metavar="CSV")
    flags.add_plot_argument(parser, "save the method's diagnostic plot")
    parser.add_argument("--target-se", "--mcse", metavar="S", type=float, default=None,
                        dest="target_se",
                        help="continue the chains (their adapted step size and metric, no new "
                        "warmup) and re-estimate until the standard error is at most S nats "
                        "or the time budget ends")
    parser.add_argument("--max-draws", metavar="N", type=int, default=None,
                        help="with --target-se: at most N draws in all (default 16 times the "
                        "first draws)")


def add_estimation_arguments(parser: argparse.ArgumentParser) -> None:
    """``--method``, sampler sizes and ``--option`` (shared with ``compare``)."""
    parser.add_argument("--method", default="gbs",
                        help=f"estimator, one of {', '.join(METHODS)} (default gbs)")
    flags.add_sampler_arguments(parser)
    parser.add_argument("--option", metavar="KEY=VALUE", action="append", default=[],
                        help="estimator option, repeatable (VALUE is a Python literal)")
    parser.add_argument("--normalize-prior", action="store_true",
                        help="report log Z with every bounded parameter's prior normalized to "
                        "mass 1 inside its bounds (e.g. a half-Cauchy written without T[0, ])")
    add_executor_arguments(parser)


def parse_options(items: list[str]) -> dict[str, Any]:
    """``["n_bridge=2000", "flow='spline'"]`` -> ``{"n_bridge": 2000, "flow": "spline"}``."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or not key.isidentifier():
            raise InputError(f"--option {item!r} is not KEY=VALUE")
        try:
            out[key] = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError):
            out[key] = value.strip()
    return out


def save_plot(result: EvidenceResult, draws: np.ndarray, path: Path,
              names: list[str] | None = None) -> None:
    """Draw the method's diagnostic plot into ``path`` (never half-written)."""
    if result.method == "ups" and result.detail is not None:
        from ..report.ups_plots import plot_ups

        write_atomically(path, lambda tmp: plot_ups(result.detail, tmp))
    elif result.method in FLOW_METHODS:
        from ..report.plots import plot_evidence

        write_atomically(path, lambda tmp: plot_evidence(result, draws, tmp, names=names))
    else:
        raise InputError(f"no diagnostic plot for method {result.method}")


def print_result(report: Reporter, r: EvidenceResult, name: str) -> None:
    """The human-readable result: log Z ± se, cost, warnings."""
    df = "" if r.log_z_df is None else f"; se from {r.log_z_df:.0f} degrees of freedom"
    lo, hi = r.interval(0.95)
    band = f", 95% interval {lo:.4f} .. {hi:.4f}" if math.isfinite(r.log_z_se) else ""
    se = "NA (see the warnings)" if math.isnan(r.log_z_se) else f"{r.log_z_se:.4f}"
    report.text(f"{name}: log Z = {r.log_z:.4f} ± {se}  ({r.method}{df}{band})")
    n_samp = r.diagnostics.get("n_sampling_evals", 0)
    rows = [
        ["posterior draws used", r.diagnostics.get("draws_used", r.n_draws)],
        ["estimator evaluations", r.n_evals],
        ["estimator seconds", round(float(r.seconds), 3)],
        ["sampling gradient evaluations", n_samp],
        ["sampling seconds", round(float(r.diagnostics.get("sampling_seconds", 0.0)), 3)],
    ]
    if "proposal" in r.diagnostics:  # gbs: which whitening ran, and why
        d = r.diagnostics
        rows.append(["proposal", f"{d['proposal']} ({d['proposal_route']})"])
    report.table(["cost", "value"], rows)


@with_executor
def run(args: argparse.Namespace, report: Reporter) -> int:
    method, options = args.method, parse_options(args.option)
    lookup(method).options(options)  # before the build and the sampling
    if args.target_se is not None and not args.target_se > 0:
        raise InputError(f"--target-se must be a positive number of nats, got {args.target_se}")
    if args.max_draws is not None and args.max_draws < 1:
        raise InputError(f"--max-draws must be a positive number of draws, got {args.max_draws}")
    plot = check_plot(args.plot)
    if plot is not None and method not in PLOT_METHODS:
        raise InputError(f"--plot is available for {', '.join(PLOT_METHODS)}, not {method}")
    nuts = flags.nuts_settings(args)
    model = load_model(args.model, args.data, seed=args.seed, progress=report.progress,
                       backend=nuts.backend)
    early = prior_warnings(program_priors(model))  # named before the sampling
    for w in early:
        report.warn(w)
    if not args.fit:
        # gbs's halves, before the sampling
        check_evidence_draws(model, method, nuts, options.get("proposal", "auto"))
    with sampling_reserve(model, method, given=args.fit or None):
        draws = obtain_draws(model, list(args.fit) if args.fit else None, nuts, seed=args.seed,
                             progress=report.progress)
    r = evidence(model, method=method, draws=draws, settings=nuts, seed=args.seed,
                 progress=report.progress, target_se=args.target_se,
                 max_draws=args.max_draws, normalize_prior=args.normalize_prior, **options)
    print_result(report, r, model.name)
    for w in r.warnings:
        if w not in early:
            report.warn(w)
    if plot is not None:
        save_plot(r, draws.unconstrained, plot, names=model.param_unc_names())
        report.progress(f"plot written to {plot}")
    report.emit_json({"model": model.name, **r.to_dict(),
                      "plot": None if plot is None else str(plot)})
    return 0
