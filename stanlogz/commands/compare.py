"""``stanlogz compare A.stan B.stan ... --data D.json``: Bayes factors and model probabilities."""

from __future__ import annotations

import argparse

from ..api import compare
from ..errors import InputError
from ..report import Reporter
from .evidence import add_estimation_arguments, parse_options

NAME = "compare"
HELP = "Compare Stan programs by their evidence: log Bayes factors and posterior probabilities."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("models", metavar="MODEL.stan", nargs="+", help="two or more programs")
    parser.add_argument("--data", metavar="DATA.json", nargs="+", default=None,
                        help="one data file for all programs, or one per program")
    parser.add_argument("--prior-probs", metavar="P1,P2,...", default=None,
                        help="prior model probabilities (default uniform)")
    add_estimation_arguments(parser)


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


def run(args: argparse.Namespace, report: Reporter) -> int:
    method, options = args.method, parse_options(args.option)
    k = len(args.models)
    data = args.data
    if data is not None and len(data) not in (1, k):
        raise InputError(f"--data has {len(data)} files for {k} programs; give one for all "
                         "or one per program")
    if data is not None and len(data) == 1:
        data = data[0]
    probs = parse_probs(args.prior_probs, k)
    c = compare(args.models, data, method=method, prior_probs=probs, chains=args.chains,
                warmup=args.warmup, n_draws=args.draws, seed=args.seed,
                progress=report.progress, **options)
    report.table(c.header, c.table(), title=f"evidence by {method}; log_bf = log Z - log Z_best")
    report.text(f"best: {c.names[c.best]}")
    for name, r in zip(c.names, c.results, strict=True):
        for w in r.warnings:
            report.warn(f"{name}: {w}")
    report.emit_json(c.to_dict())
    return 0
