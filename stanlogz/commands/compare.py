"""``stanlogz compare A.stan B.stan ... --data D.json [--loo] [--evidence] [--weights ...]``:
Bayes factors and model probabilities, PSIS-LOO differences, model weights; with
``--fit FILES`` per model, the LOO comparison of fits that carry log_lik (:func:`run_fits`)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

import numpy as np

from ..api import ComparisonResult, compare
from ..crossval.checks.checks import check_declares, checks_for_loo
from ..crossval.fixups.registry import FIXUPS, fix_help
from ..crossval.refit.cv_se import LEVEL_2SE
from ..crossval.select.choose import ProgramChoice
from ..crossval.select.fitcompare import compare_sources
from ..crossval.select.scores import parse_measures
from ..crossval.select.weights import WEIGHT_METHODS
from ..errors import InputError
from ..report.crossval_plots import plot_pit
from ..report.output import Reporter, write_atomically
from . import arguments as flags
from .evidence import add_estimation_arguments, parse_options
from .executor import with_executor
from .sample import check_output, check_plot

NAME = "compare"
HELP = "Compare Stan programs by their evidence: log Bayes factors and posterior probabilities."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("models", metavar="MODEL.stan", nargs="*",
                        help="two or more programs (fewer with --fit)")
    flags.add_fit_argument(parser, "one model's fit that carries log_lik: its CmdStan CSV files or "
                           "one .nc InferenceData; repeat per model. Compared by PSIS-LOO (with "
                           "any programs given, which then need --data)", per_model=True)
    parser.add_argument("--names", metavar="A,B,...", default=None,
                        help="model names, comma-separated (programs first, then --fit groups)")
    flags.add_data_argument(parser, "one data file for all programs, or one per program",
                            per_program=True)
    parser.add_argument("--prior-probs", metavar="P1,P2,...", default=None,
                        help="prior model probabilities (default uniform)")
    add_estimation_arguments(parser)
    parser.add_argument("--loo", action="store_true",
                        help="compare by PSIS-LOO (elpd differences, se of the paired "
                        "pointwise differences, p_worse, diagnostics) on the NUTS draws; "
                        "alone it skips the evidence (add --evidence for both)")
    parser.add_argument("--evidence", action="store_true",
                        help="compare by log evidence (the default without --loo)")
    parser.add_argument("--weights", metavar="METHODS", default=None,
                        help=f"model weights, comma-separated: {', '.join(WEIGHT_METHODS)} "
                        "(stacking and pseudo-BMA need --loo, bma needs the evidence)")
    parser.add_argument("--fix", choices=tuple(FIXUPS), default="auto",
                        help=fix_help("with --loo: how to recompute observations with high "
                                      "k-hat (mis: one run per program)"))
    flags.add_observation_arguments(parser)
    flags.add_group_argument(parser, "compare by leave-one-group-out over the groups in data "
                             "variable VAR (elpd_logo of each program as `loo --group`, "
                             "differences with the se over groups, stacking weights over "
                             "groups); no evidence")
    flags.add_check_arguments(parser)
    parser.add_argument("--score", "--measure", dest="score", metavar="NAMES", default=None,
                        help="with --loo: also compare on these measures, comma-separated, "
                        "with paired se: elpd, rps, srps, crps, scrps, mae, mse, rmse, r2, "
                        "brier, acc, bacc (all but elpd need --yrep); two or more, or one "
                        "beyond elpd/rmse/mae/crps/scrps, give one table ranked by --rank-by "
                        "with losses' diffs on the utility scale")
    parser.add_argument("--rank-by", metavar="NAME", default=None,
                        help="with --measure: the measure that ranks the programs (default "
                        "elpd when listed, else the first)")
    parser.add_argument("--averaged-draws", metavar="FILE.csv", default=None,
                        help="with --loo, --weights and --yrep: write model-averaged "
                        "posterior-predictive draws of the --yrep quantity (each program "
                        "supplies its weight's share of the draws)")
    parser.add_argument("--unbiased-bf", action="store_true",
                        help="also unbiased Bayes factors Z/Z_best on the natural scale "
                        "(importance weights times an unbiased 1/Z by Markov-chain truncation, Wei "
                        "& Murray 2017)")


def parse_probs(text: str | None, k: int) -> list[float] | None:
    """``"0.5,0.5"`` -> ``[0.5, 0.5]`` (checked against the number of programs)."""
    if text is None:
        return None
    try:
        probs = [float(v) for v in text.split(",")]
    except ValueError:
        raise InputError(f"--prior-probs {text!r} is not a comma-separated list of numbers") \
            from None
    if len(probs) != k:
        raise InputError(f"--prior-probs has {len(probs)} values for {k} programs")
    return probs


@with_executor
def run(args: argparse.Namespace, report: Reporter) -> int:
    if args.fit or args.names is not None:
        return run_fits(args, report)
    if args.group is not None:
        return run_groups(args, report)
    if len(args.models) < 2:
        raise InputError(f"compare needs at least two programs (or --fit groups), got "
                         f"{len(args.models)}")
    method, options = args.method, parse_options(args.option)
    k = len(args.models)
    data = args.data
    if data is not None and len(data) not in (1, k):
        raise InputError(f"--data has {len(data)} files for {k} programs; give one for all "
                         "or one per program")
    if data is not None and len(data) == 1:
        data = data[0]
    if args.loo and data is None:
        raise InputError("--loo needs --data: predictions are scored on the observations")
    probs = parse_probs(args.prior_probs, k)
    if flags.checks_requested(args) and not args.loo:
        raise InputError("predictive checks (--pit, --metrics, --crps, --e-loo) use the LOO "
                         "weights: add --loo")
    pit_plot = check_plot(args.pit_plot, "--pit-plot")
    averaged = check_output(args.averaged_draws, (".csv",), "--averaged-draws")
    measures = parse_measures(args.score) if args.score is not None else None
    if args.rank_by is not None and (measures is None or args.rank_by not in measures):
        raise InputError(f"--rank-by {args.rank_by} must be one of the --measure names")
    if (args.score is not None or averaged is not None) and not args.loo:
        raise InputError("--score and --averaged-draws use the LOO comparison: add --loo")
    if averaged is not None and (args.yrep is None or not args.weights):
        raise InputError("--averaged-draws needs --yrep NAME (the quantity to average) and "
                         "--weights (e.g. stacking)")
    beyond_elpd = measures is not None and measures != ["elpd"]
    if beyond_elpd and args.yrep is None:
        raise InputError(f"--score {args.score} needs --yrep NAME: the posterior-predictive "
                         "quantity with one draw per observation")
    if args.yrep is not None and (flags.checks_requested(args) or averaged is not None
                                  or beyond_elpd):
        check_declares(args.models, args.yrep)
    use_evidence = args.evidence or not args.loo
    loo_options = {"fix": args.fix, "obs": args.obs,
                   "obs_fields": flags.obs_fields(args.obs_fields)}
    c = compare(args.models, data, method=method, prior_probs=probs,
                settings=flags.nuts_settings(args), seed=args.seed,
                progress=report.progress, unbiased_bf=args.unbiased_bf, with_loo=args.loo,
                use_evidence=use_evidence, weights=args.weights, loo_options=loo_options,
                normalize_prior=args.normalize_prior, **options)
    if c.evidence_only:
        print_evidence(report, c.evidence, method, args.unbiased_bf)
        report.emit_json(c.evidence.to_dict())
        return 0
    if c.evidence is not None:
        print_evidence(report, c.evidence, method, args.unbiased_bf)
    print_choice(report, c)
    out = c.to_dict()
    if measures is not None:
        # one table and sign convention for one measure or several (loo 3.0's utility scale)
        mc = c.compare_measures(measures, args.yrep, args.outcome, args.rank_by)
        out["measure_comparison"] = _scored_table(
            report, c, mc, f"comparison on {', '.join(mc.measures)}, ranked by {mc.rank_by}; "
            "diff = value - top's on the utility scale"
            + (" (sign of losses " + ", ".join(m for m, lo in zip(mc.measures, mc.loss,
                                                                   strict=True) if lo)
               + " flipped: negative is worse)" if any(mc.loss) else "")
            + ", diff_se of paired differences")
    if averaged is not None:
        mixed = c.averaged_draws(args.yrep, seed=args.seed)
        header = ",".join(f"{args.yrep}.{i + 1}" for i in range(mixed.shape[1]))
        write_atomically(averaged, lambda p: np.savetxt(p, mixed, delimiter=",",
                                                        header=header, comments=""))
        report.progress(f"{mixed.shape[0]} model-averaged draws of {args.yrep} written to "
                        f"{averaged}")
        out["averaged_draws"] = {"path": str(averaged), "n_draws": int(mixed.shape[0])}
    if flags.checks_requested(args):
        out["checks"] = program_checks(report, c, args, pit_plot)
    report.emit_json(out)
    return 0


def print_choice(report: Reporter, c: ProgramChoice) -> None:
    """The comparison table (PSIS-LOO, or leave-one-group-out over groups), the model weights
    and the warnings."""
    if c.loo is not None:
        name = c.loo.results[0].elpd_name
        report.table(list(c.loo.header), c.loo.table(),
                     title=f"{c.loo.describe()}; elpd_diff = {name} - best, diff_se of paired "
                     f"differences over {c.loo.unit}, p_worse = P(worse than the best) by the "
                     "normal approximation")
        iv = c.loo.diff_interval
        for i in c.loo.order():
            if iv is not None and i != c.loo.best and np.all(np.isfinite(iv[i])):
                report.text(f"{c.names[i]}: {100 * LEVEL_2SE:.1f}% interval of elpd_diff "
                            f"[{iv[i][0]:.1f}, {iv[i][1]:.1f}] (diff_interval: +-2 diff_se "
                            "times the small-N factor)")
        for name, r in zip(c.names, c.loo.results, strict=True):
            for w in r.warnings:
                report.warn(f"{name}: {w}")
    if c.model_weights:
        report.table(["model"] + [h for m in c.model_weights for h in (m, "se")],
                     c.weights_table(), title="model weights (se: Bayesian bootstrap for "
                     "stacking and pseudo-BMA+, delta method for pseudo-BMA and BMA)")
    for w in c.warnings:
        report.warn(w)


def program_checks(report: Reporter, c: ProgramChoice, args: argparse.Namespace,
                   pit_plot: Path | None) -> dict[str, Any]:
    """The predictive checks of every program side by side (each needs the ``--yrep``
    quantity), and their PIT plots (``--pit-plot``: one file per program, ``-NAME`` added).
    A program whose checks cannot run (its draws lack the quantity) is one warning line and
    left out; the others are shown."""
    fits = c.fits or []
    checks, skipped = {}, {}
    for i in c.order():
        try:
            checks[c.names[i]] = checks_for_loo(c.loo.results[i], *fits[i], args,
                                                seed=args.seed)
        except InputError as exc:
            skipped[c.names[i]] = str(exc)
            report.warn(f"{c.names[i]}: no predictive checks: {exc}")
    if not checks:
        raise InputError("no program could be checked: " + "; ".join(
            f"{n}: {e}" for n, e in skipped.items()))
    first = next(iter(checks.values()))
    shown = [row for row in first.table() if not row[0].endswith("_statistic")]
    header = ["model"] + [h for row in shown for h in ((row[0],) if row[2] is None
                                                      else (row[0], "se"))]
    rows = [[n] + [v for row in ch.table() if not row[0].endswith("_statistic")
                   for v in ((row[1],) if row[2] is None else row[1:])]
            for n, ch in checks.items()]
    if shown:
        report.table(header, rows,
                     title=f"predictive checks of {first.outcome} from LOO weights (CRPS/SCRPS: "
                     "higher is better; se over observations)")
    for n, ch in checks.items():
        for name, e in ch.expectations.items():
            report.table(["observation", "mean", "sd"],
                         [[i + 1, float(e.mean[i]), float(np.sqrt(e.variance[i]))]
                          for i in range(e.mean.size)], title=f"{n}: E_loo of {name}")
        for w in ch.warnings:
            report.warn(f"{n}: {w}")
        if pit_plot is not None:
            safe = re.sub(r"[^\w.-]", "_", n)
            path = pit_plot.with_name(f"{pit_plot.stem}-{safe}{pit_plot.suffix}")
            write_atomically(path, lambda tmp, ch=ch: plot_pit(ch, tmp))
            report.progress(f"LOO-PIT plot of {n} written to {path}")
    return {**{n: ch.to_dict() for n, ch in checks.items()},
            **{n: {"error": e} for n, e in skipped.items()}}


def print_evidence(report: Reporter, c: ComparisonResult, method: str, unbiased: bool) -> None:
    """The evidence table, the unbiased Bayes factors (when asked for) and warnings."""
    report.table(c.header, c.table(), title=f"evidence by {method}; log_bf = log Z - log Z_best")
    report.text(f"best: {c.names[c.best]}")
    for name, r in zip(c.names, c.results, strict=True):
        if r.log_z_df is not None:
            lo, hi = r.interval(0.95)
            report.text(f"{name}: se from {r.log_z_df:.0f} degrees of freedom; 95% interval "
                        f"{lo:.4f} .. {hi:.4f} (Student-t)")
    if unbiased:
        report.table(["model", "bf", "bf_se", "log_bf", "log_bf_se", "positive", "tail_k"],
                     c.unbiased_table(), title="unbiased Bayes factors Z / Z_best (RBBCE, "
                     "Gaussian importance weights)")
        for n, u in zip(c.names, c.unbiased_bf or [], strict=False):
            if u is not None and u.fraction_positive < 0.95:
                report.warn(f"{n}: {100 * (1 - u.fraction_positive):.0f}% of the unbiased "
                            "Bayes factor replicates are negative: the weights vary too much "
                            "for the Gaussian proposal; trust the log-scale column")
            for w in (u.warnings if u is not None else []):
                report.warn(f"{n}: {w}")
    for name, r in zip(c.names, c.results, strict=True):
        for w in r.warnings:
            report.warn(f"{name}: {w}")
    for w in getattr(c, "warnings", []):
        report.warn(w)


def _refuse_program_only(args: argparse.Namespace) -> None:
    """One line for each option that needs every model's program."""
    needs = [flag for flag, used in (
        ("--evidence", args.evidence), ("--unbiased-bf", args.unbiased_bf),
        ("--prior-probs", args.prior_probs is not None),
        ("--normalize-prior", args.normalize_prior),
        ("--averaged-draws", args.averaged_draws is not None),
        (f"--measure {args.score}", args.score not in (None, "elpd")),
        ("--yrep", args.yrep is not None), ("--e-loo", bool(args.e_loo))) if used]
    if needs or flags.checks_requested(args):
        what = ", ".join(needs) or "predictive checks"
        raise InputError(f"{what} need(s) every model's Stan program; --fit models are "
                         "compared by PSIS-LOO of their log_lik (elpd_diff, weights)")


def run_fits(args: argparse.Namespace, report: Reporter) -> int:
    """``compare`` with ``--fit`` groups: checks, LOO of every model, the comparison table."""
    fits = [list(g) for g in (args.fit or [])]
    programs = list(args.models)
    k = len(programs) + len(fits)
    if not fits:
        raise InputError("--names names --fit groups (and programs): add --fit FILES per model")
    _refuse_program_only(args)
    names = None
    if args.names is not None:
        names = [n.strip() for n in args.names.split(",")]
        if len(names) != k or not all(names):
            raise InputError(f"--names has {len(names)} names for {k} models (programs first, "
                             "then --fit groups)")
    data = args.data
    if programs and data is None:
        raise InputError("programs compared with --fit models need --data: predictions are "
                         "scored on the observations")
    if not programs and data is not None:
        raise InputError("--data is for programs; --fit models carry their log_lik")
    if data is not None and len(data) not in (1, len(programs)):
        raise InputError(f"--data has {len(data)} files for {len(programs)} programs; give one "
                         "for all or one per program")
    datas = ([data[0]] * len(programs) if data is not None and len(data) == 1
             else list(data or [])) + [None] * len(fits)
    loo_options = {"fix": args.fix, "obs": args.obs,
                   "obs_fields": flags.obs_fields(args.obs_fields)}
    c = compare_sources(programs + fits, datas, names=names, weights=args.weights,
                        loo_options=loo_options, settings=flags.nuts_settings(args),
                        seed=args.seed,
                        progress=report.progress)
    print_choice(report, c)
    report.emit_json(c.to_dict())
    return 0


def run_groups(args: argparse.Namespace, report: Reporter) -> int:
    """``compare --group VAR``: the programs by elpd_logo (:func:`compare` with ``group``)."""
    if len(args.models) < 2:
        raise InputError(f"compare --group needs at least two programs, got {len(args.models)}")
    if not args.data:
        raise InputError("--group needs --data (the group labels are a data variable)")
    for flag, on in (("--loo", args.loo), ("--evidence", args.evidence),
                     ("--unbiased-bf", args.unbiased_bf), ("--score", args.score is not None),
                     ("--averaged-draws", args.averaged_draws is not None),
                     ("--prior-probs", args.prior_probs is not None),
                     ("--option", bool(args.option)),
                     ("predictive checks", flags.checks_requested(args))):
        if on:
            raise InputError(f"{flag} does not apply to compare --group (it compares by "
                             "elpd_logo only)")
    data = args.data[0] if len(args.data) == 1 else args.data
    c = compare(args.models, data, settings=flags.nuts_settings(args), seed=args.seed,
                progress=report.progress, weights=args.weights, group=args.group,
                loo_options={"fix": args.fix, "obs": args.obs,
                             "obs_fields": flags.obs_fields(args.obs_fields)})
    print_choice(report, c)
    report.emit_json(c.to_dict())
    return 0


def _scored_table(report: Any, choice: Any, comparison: Any, title: str) -> dict[str, Any]:
    """Print a score or measure comparison's table and the warnings the choice has not given
    already; its JSON entry."""
    report.table(list(comparison.header), comparison.table(), title=title)
    for w in comparison.warnings:
        if w not in choice.warnings:
            report.warn(w)
    return comparison.to_dict()
