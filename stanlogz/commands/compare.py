"""``stanlogz compare A.stan B.stan ... --data D.json``: Bayes factors and model probabilities."""

from __future__ import annotations

import argparse

from .._util.seeds import child_int_seed
from ..api import compare
from ..crossval import loo, loo_compare
from ..crossval.fixups import FIX_METHODS
from ..draws import sample
from ..errors import InputError
from ..report.output import Reporter
from ..stan.inputs import read_data
from ..stan.load import load_model
from .evidence import add_estimation_arguments, parse_options
from .executor import with_executor
from .loo import add_observation_arguments, obs_fields

NAME = "compare"
HELP = "Compare Stan programs by their evidence: log Bayes factors and posterior probabilities."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("models", metavar="MODEL.stan", nargs="+", help="two or more programs")
    parser.add_argument("--data", metavar="DATA.json", nargs="+", default=None,
                        help="one data file for all programs, or one per program")
    parser.add_argument("--prior-probs", metavar="P1,P2,...", default=None,
                        help="prior model probabilities (default uniform)")
    add_estimation_arguments(parser)
    parser.add_argument("--loo", action="store_true",
                        help="also compare by PSIS-LOO (elpd differences with the se of the "
                        "paired pointwise differences), on the same draws")
    parser.add_argument("--fix", choices=FIX_METHODS, default="exact",
                        help="with --loo: how to recompute observations with high k-hat")
    add_observation_arguments(parser)
    parser.add_argument("--unbiased-bf", action="store_true",
                        help="also unbiased Bayes factors Z/Z_best on the natural scale "
                        "(paper 003: importance weights times an unbiased 1/Z)")


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
    method, options = args.method, parse_options(args.option)
    k = len(args.models)
    data = args.data
    if data is not None and len(data) not in (1, k):
        raise InputError(f"--data has {len(data)} files for {k} programs; give one for all "
                         "or one per program")
    if data is not None and len(data) == 1:
        data = data[0]
    if args.loo and data is None:
        raise InputError("--loo needs --data: cross-validation splits the observations")
    probs = parse_probs(args.prior_probs, k)
    models, draws, datas = args.models, None, [data] * k if not isinstance(data, list) else data
    if args.loo:  # one NUTS run per program serves both comparisons
        models = [load_model(m, dt, seed=child_int_seed(args.seed, i), progress=report.progress)
                  for i, (m, dt) in enumerate(zip(args.models, datas, strict=True))]
        draws = [sample(m, chains=args.chains, warmup=args.warmup, draws=args.draws,
                        seed=child_int_seed(args.seed, i), progress=report.progress)
                 for i, m in enumerate(models)]
    c = compare(models, data, method=method, prior_probs=probs, draws=draws, chains=args.chains,
                warmup=args.warmup, n_draws=args.draws, seed=args.seed,
                progress=report.progress, unbiased_bf=args.unbiased_bf, **options)
    report.table(c.header, c.table(), title=f"evidence by {method}; log_bf = log Z - log Z_best")
    report.text(f"best: {c.names[c.best]}")
    if args.unbiased_bf:
        report.table(["model", "bf", "bf_se", "log_bf", "log_bf_se", "positive"],
                     c.unbiased_table(), title="unbiased Bayes factors Z / Z_best (RBBCE, "
                     "Gaussian importance weights)")
        for n, u in zip(c.names, c.unbiased_bf or [], strict=False):
            if u is not None and u.fraction_positive < 0.95:
                report.warn(f"{n}: {100 * (1 - u.fraction_positive):.0f}% of the unbiased "
                            "Bayes factor replicates are negative: the weights vary too much "
                            "for the Gaussian proposal; trust the log-scale column")
    for name, r in zip(c.names, c.results, strict=True):
        for w in r.warnings:
            report.warn(f"{name}: {w}")
    out = c.to_dict()
    if args.loo:
        loos = [loo(m, read_data(dt), draws=d, fix=args.fix, obs=args.obs,
                    obs_fields=obs_fields(args.obs_fields), chains=args.chains,
                    warmup=args.warmup, n_draws=args.draws, seed=child_int_seed(args.seed, i),
                    progress=report.progress)
                for i, (m, dt, d) in enumerate(zip(models, datas, draws, strict=True))]
        lc = loo_compare(loos, c.names)
        report.table(lc.header, lc.table(),
                     title="PSIS-LOO; elpd_diff = elpd_loo - best, se of paired differences")
        for name, r in zip(c.names, loos, strict=True):
            for w in r.warnings:
                report.warn(f"{name}: {w}")
        out["loo"] = lc.to_dict()
    report.emit_json(out)
    return 0
