"""``stanlogz compare --fit A_1.csv A_2.csv --fit B.nc [MODEL.stan --data D.json]
[--names a,b] [--weights stacking]``: the LOO comparison of models given as fits that carry
``log_lik`` (and, optionally, programs compared by LOO alongside them)."""

from __future__ import annotations

import argparse

from ..crossval.select.fitcompare import compare_sources
from ..errors import InputError
from ..report.output import Reporter
from .arguments import checks_requested, nuts_settings
from .compare import print_choice
from .loo import obs_fields


def _refuse_program_only(args: argparse.Namespace) -> None:
    """One line for each option that needs every model's program."""
    needs = [flag for flag, used in (
        ("--evidence", args.evidence), ("--unbiased-bf", args.unbiased_bf),
        ("--prior-probs", args.prior_probs is not None),
        ("--normalize-prior", args.normalize_prior),
        ("--averaged-draws", args.averaged_draws is not None),
        (f"--score {args.score}", args.score not in (None, "elpd")),
        ("--yrep", args.yrep is not None), ("--e-loo", bool(args.e_loo))) if used]
    if needs or checks_requested(args):
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
    loo_options = {"fix": args.fix, "obs": args.obs, "obs_fields": obs_fields(args.obs_fields)}
    c = compare_sources(programs + fits, datas, names=names, weights=args.weights,
                        loo_options=loo_options, settings=nuts_settings(args), seed=args.seed,
                        progress=report.progress)
    print_choice(report, c)
    report.emit_json(c.to_dict())
    return 0
