"""``stanlogz loo MODEL.stan --data DATA.json``: PSIS-LOO with every unreliable point fixed."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from ..crossval.checks.checks import PredictiveChecks, check_declares, checks_for_loo
from ..crossval.fixups.mm_points import check_budget
from ..crossval.fixups.registry import FIXUPS, fix_help
from ..crossval.observations.pointwise import LOG_LIK_SOURCES
from ..crossval.psis_loo.loo import loo
from ..crossval.psis_loo.result import LooResult
from ..crossval.select.scores import parse_measures, program_measures
from ..errors import InputError
from ..report.crossval_plots import plot_pit
from ..report.output import Reporter, write_atomically
from . import arguments as flags
from .executor import with_executor
from .sample import check_plot, finish

NAME = "loo"
HELP = ("Leave-one-out cross-validation (PSIS-LOO) of a Stan program, recomputing observations "
        "whose Pareto k-hat is too high.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", metavar="MODEL.stan", nargs="?", default=None,
                        help="Stan program (optional with --fit files that carry log_lik: "
                        "PSIS-LOO of their log_lik, without fix-ups)")
    flags.add_data_argument(parser)
    flags.add_fit_argument(parser, "use existing draws: CmdStan CSV files, or a stanlogz sample "
                           "--output file (.csv or .nc)")
    flags.add_observation_arguments(parser)
    flags.add_group_argument(parser, "leave-one-group-out over the groups in data variable VAR "
                             "(one integer per observation), each group's latents integrated "
                             "out, no refits (high k-hat groups are refit with --fix auto or "
                             "exact)")
    parser.add_argument("--no-obs-values", action="store_true",
                        help="with --group: leave out the per-observation values "
                        "log p(y[i] | y[-g(i)]) (one more integral per observation)")
    parser.add_argument("--fix", choices=tuple(FIXUPS), default="auto",
                        help=fix_help("recompute observations with high k-hat"))
    parser.add_argument("--mm-budget", metavar="SECONDS", type=float, default=None,
                        help="stop moment matching after this many seconds: the remaining "
                        "high k-hat observations keep their PSIS values (with the k-hat "
                        "warning); Ctrl-C during moment matching does the same")
    parser.add_argument("--cond-budget", metavar="SECONDS", type=float, default=None,
                        help="stop the conditional log-likelihood's pass (programs without a "
                        "log_lik whose density does not factorize) after this many seconds, "
                        "saying how far it got and how long the rest would take")
    parser.add_argument("--pointwise-draws", metavar="M", type=int, default=None,
                        help="run the pointwise pass and PSIS-LOO on M of the posterior draws "
                        "(spread evenly over each chain; at least 100): a costly conditional "
                        "or density-difference pass takes that share of its time, and the "
                        "Monte Carlo se is that of the M draws. Under --time-budget without "
                        "it, a pass that fits only on 2000, 1000 or 400 draws runs on those")
    parser.add_argument("--k-threshold", type=float, default=None,
                        help="fix observations above this k-hat (default min(1 - 1/log10 S, 0.7); "
                        "with --group, groups above min(1 - 1/log10 S, 0.4) are refit)")
    parser.add_argument("--log-lik", choices=LOG_LIK_SOURCES, default="auto",
                        help="pointwise log-likelihood: the log_lik generated quantity, the "
                        "difference of two data instances' densities, the conditional "
                        "p(y_i | other y, theta) from the density normalized over y_i, or "
                        "integrated (one latent per observation integrated out). Default: "
                        "integrated when the program has one latent per observation, else "
                        "log_lik when the program has it, else the difference when valid, "
                        "else the conditional; log_lik forces the generated quantity")
    parser.add_argument("--subsample", metavar="M", type=int, default=None,
                        help="estimate elpd_loo from PSIS on M observations drawn at random "
                        "(difference estimator; for large N), with its subsampling se")
    parser.add_argument("--mcse", metavar="TARGET", type=float, default=None,
                        help="precision target: continue the chains (adapted step size and "
                        "metric, no new warmup) until the Monte Carlo se of elpd_loo is at "
                        "most TARGET or the time budget ends; the output says which")
    parser.add_argument("--verify", metavar="K", default="auto",
                        help="self-check: recompute K values still estimated from the draws "
                        "(the worst k-hat in [0.5, threshold], others of that band, one at "
                        "random) by exact refits and test each against its Monte Carlo se; on "
                        "a failure the band is refit or the Monte Carlo se withheld, with a "
                        "warning. Default auto: 4 where the refits cost at most half the run "
                        "so far (or 10 s); 0 turns it off")
    flags.add_jacobian_argument(parser)
    flags.add_check_arguments(parser)
    parser.add_argument("--measure", metavar="NAMES", default=None,
                        help="predictive measures beside elpd by the LOO weights, "
                        "comma-separated: rps, srps, crps, scrps, mae, mse, rmse, r2, brier, "
                        "acc, bacc (each with se and Monte Carlo se; needs --yrep)")
    flags.add_closing_arguments(parser, "save k-hat and pointwise elpd per observation")


def verify_argument(args: argparse.Namespace) -> dict[str, Any]:
    """``loo``'s ``verify`` from ``--verify`` (left to its default without a program, where
    only an explicit K is refused)."""
    if args.verify == "auto":
        return {}
    try:
        k = int(args.verify)
    except ValueError:
        raise InputError(f"--verify takes auto or a number of points >= 0, got "
                         f"{args.verify!r}") from None
    return {"verify": k}


def print_loo(report: Reporter, r: LooResult) -> None:
    """The result's table, exactly as ``print(r)`` shows it (estimates, k-hat bands, the
    fixed points, the self-check, its notes and warnings)."""
    report.text(repr(r))


@with_executor
def run(args: argparse.Namespace, report: Reporter) -> int:
    if args.group is not None:
        from .loo_group import run_group

        if args.pointwise_draws is not None:
            raise InputError("--pointwise-draws thins the draws of loo's pointwise pass; "
                             "leave-one-group-out (--group) integrates over every draw")

        return run_group(args, report)
    if args.no_obs_values:
        raise InputError("--no-obs-values applies to --group only")
    plot = check_plot(args.plot)
    pit_plot = check_plot(args.pit_plot, "--pit-plot")
    checks = flags.checks_requested(args)
    if args.model is None:
        if not args.fit:
            raise InputError("give a Stan program, or --fit files that carry log_lik")
        if checks:
            raise InputError("predictive checks (--pit, --metrics, --crps, --e-loo) need the "
                             "Stan program")
        if args.data is not None and args.jacobian is None:
            raise InputError("--data without a Stan program is used only by --jacobian")
    if checks and args.subsample is not None:
        raise InputError("predictive checks (--pit, --metrics, --crps, --e-loo) need every "
                         "observation's LOO weights; drop --subsample")
    measures = loo_measures_wanted(args)
    if (checks or measures) and args.yrep:
        check_declares([args.model], args.yrep)
    jac = flags.jacobian_of(args)
    if args.mm_budget is not None and (args.model is None
                                       or "mm_budget" not in FIXUPS[args.fix].Options.names()):
        raise InputError("--mm-budget bounds moment matching: it needs a Stan program and "
                         "--fix auto or mm")
    check_budget(args.mm_budget)
    r = loo(args.model, args.data if args.model else None,
            draws=list(args.fit) if args.fit else None, obs=args.obs,
            obs_fields=flags.obs_fields(args.obs_fields), fix=args.fix, log_lik=args.log_lik,
            k_threshold=args.k_threshold, subsample=args.subsample,
            settings=flags.nuts_settings(args), seed=args.seed, n_workers=args.workers or 1,
            progress=report.progress, mm_budget=args.mm_budget,
            cond_budget=args.cond_budget, mcse_target=args.mcse,
            pointwise_draws=args.pointwise_draws, **verify_argument(args))
    r, extra = flags.with_jacobian(r, args, jac)
    print_loo(report, r)
    if jac is not None:
        total = extra["jacobian"]["sum_log_abs_derivative"]
        report.text(f"elpd on the scale of the original outcome: log|g'(y_i)| of the "
                    f"{jac[0]} transform added (sum {total:.3f})")
    if checks:
        ch = checks_for_loo(r, r.program, r.data, r.draws, args, seed=args.seed)
        report_checks(report, ch)
        extra["checks"] = ch.to_dict()
        if pit_plot is not None:
            write_atomically(pit_plot, lambda tmp: plot_pit(ch, tmp))
            report.progress(f"LOO-PIT plot written to {pit_plot}")
    if measures:
        ms = program_measures(measures, r, r.program, r.data, r.draws, args.yrep, args.outcome)
        report.table(["measure", "estimate", "se", "se_calibrated", "mcse", "loss"],
                     [[m.name, m.estimate, m.se, m.se_parts.get("se_calibrated", float("nan")),
                       m.mcse, m.loss] for m in ms],
                     title=f"predictive measures of {args.yrep} by LOO weights (loss: lower "
                     "is better; se is loo's, read +-2 se_calibrated)")
        extra["measures"] = {m.name: m.to_dict() for m in ms}

    def draw(tmp: Path) -> None:
        from ..report.crossval_plots import plot_loo

        plot_loo(r, tmp)

    # the warnings stand in the table already (stdout); stderr gets them only under --json
    return finish(report, r, plot, draw, warned=not report.json_mode, **extra)


def loo_measures_wanted(args: argparse.Namespace) -> list[str]:
    """``--measure``'s names (elpd dropped: loo reports it), checked before any sampling."""
    if args.measure is None:
        return []
    names = [m for m in parse_measures(args.measure) if m != "elpd"]
    if names and (args.model is None or args.yrep is None or args.subsample is not None):
        raise InputError("--measure needs the Stan program, --yrep NAME (its "
                         "posterior-predictive quantity) and every observation (no "
                         "--subsample)")
    return names


def report_checks(report: Any, checks: PredictiveChecks) -> None:
    """Print the checks' table and warnings (a command then adds ``checks.to_dict()`` to its
    JSON and writes ``--pit-plot`` with :func:`stanlogz.report.crossval_plots.plot_pit`)."""
    if checks.table():
        report.table(["check", "estimate", "se"], checks.table(),
                     title=f"predictive checks of {checks.outcome} from LOO weights "
                     "(CRPS/SCRPS: higher is better)")
    for name, e in checks.expectations.items():
        report.table(["observation", "mean", "sd", "q05", "q50", "q95"],
                     [[i + 1, float(e.mean[i]), float(np.sqrt(e.variance[i])),
                       float(e.quantiles[0.05][i]), float(e.quantiles[0.5][i]),
                       float(e.quantiles[0.95][i])] for i in range(e.mean.size)],
                     title=f"E_loo of {name}")
    for w in checks.warnings:
        report.warn(w)
