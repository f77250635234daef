"""``stanlogz sensitivity MODEL.stan --data D``: power-scaling sensitivity of log Z, elpd_loo
and the posterior to the prior and the likelihood."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..bayes_factors.sensitivity import SensitivityResult, sensitivity
from ..errors import InputError
from ..estimators import METHODS
from ..report.output import Reporter
from ..stan.inputs import check_stan_file
from . import arguments as flags
from .sample import check_plot, finish

NAME = "sensitivity"
HELP = ("Power-scaling sensitivity of log Z, elpd_loo and the posterior to the prior "
        "(p^alpha renormalized) and the likelihood (L^beta).")


def parse_scales(text: str) -> list[float]:
    """``"0.5,2"`` -> ``[0.5, 2.0]`` (positive, not 1)."""
    try:
        out = [float(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise InputError(f"--scales {text!r} is not a comma-separated list of numbers") from None
    if not out or any(not a > 0 or a == 1.0 for a in out):
        raise InputError(f"--scales must be positive numbers other than 1, got {text!r}")
    return out


def add_arguments(parser: argparse.ArgumentParser) -> None:
    flags.add_program_arguments(parser, prior_instance=True)
    flags.add_obs_argument(parser)
    parser.add_argument("--method", default="gbs",
                        help=f"evidence estimator for log Z, one of {', '.join(METHODS)}")
    parser.add_argument("--scales", default="0.5,2",
                        help="powers alpha and beta at which values are given (default 0.5,2)")
    parser.add_argument("--no-refit", action="store_true",
                        help="refuse log Z at a scale whose reweighting has a high Pareto k-hat "
                        "instead of recomputing it by SMC")
    flags.add_sampler_arguments(parser)
    flags.add_plot_argument(parser, "save log Z and elpd_loo against the prior power alpha")


def print_sensitivity(report: Reporter, r: SensitivityResult) -> None:
    """The sensitivity tables: quantities, then parameters."""
    scales = list(next(iter(r.quantities["log_z"].values())).at)
    report.table(["quantity", "scaling", "d/d log(power) ± se",
                  *[f"at {a} ± se" for a in scales]], r.table(),
                 title=f"{r.model} (prior from {r.prior_route}): log Z = {r.log_z:.3f} ± "
                 f"{r.log_z_se:.3f} ({r.method}), "
                 f"elpd_loo = {r.elpd_loo:.3f} ± {r.elpd_loo_se:.3f} (Monte Carlo se), "
                 f"{r.n_draws} draws")
    report.table(["variable", "mean", "sd", "prior dmean", "prior dsd", "lik dmean", "lik dsd",
                  "diagnosis"],
                 [[p["variable"], p["mean"], p["sd"], p["prior_dmean"], p["prior_dsd"],
                   p["likelihood_dmean"], p["likelihood_dsd"], p["diagnosis"]]
                  for p in r.params],
                 title="posterior sensitivity (derivatives w.r.t. log power, in posterior sds)")


def run(args: argparse.Namespace, report: Reporter) -> int:
    plot = check_plot(args.plot)
    check_stan_file(args.model)
    if args.data is not None and not Path(args.data).is_file():
        raise InputError(f"data file {args.data} does not exist")
    settings = flags.nuts_settings(args)
    r = sensitivity(args.model, args.data, settings=settings, method=args.method,
                    scales=parse_scales(args.scales), obs=args.obs, refit=not args.no_refit,
                    seed=args.seed, progress=report.progress)
    print_sensitivity(report, r)

    def draw(tmp: Path) -> None:
        from ..report.bayes_factor_plots import plot_sensitivity

        plot_sensitivity(r, tmp)

    return finish(report, r, plot, draw)
