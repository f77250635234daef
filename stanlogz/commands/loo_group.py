"""``stanlogz loo MODEL.stan --data DATA.json --group VAR``: leave-one-group-out without
refits (the ``--group`` route of :mod:`.loo`)."""

from __future__ import annotations

import argparse

from ..crossval.logo.estimator import logo
from ..errors import InputError
from ..report.output import Reporter
from .arguments import checks_requested, nuts_settings, obs_fields
from .sample import finish_shown

#: loo flags with no meaning for groups, checked before anything runs.
_NOT_FOR_GROUPS = (("fit", None, "--fit"), ("subsample", None, "--subsample"),
                   ("jacobian", None, "--jacobian"), ("mm_budget", None, "--mm-budget"),
                   ("plot", None, "--plot"), ("log_lik", "auto", "--log-lik"))


def check_group_arguments(args: argparse.Namespace) -> str:
    """The logo fix-up for ``args.fix``; :class:`InputError` for flags that do not apply."""
    if args.model is None:
        raise InputError("--group needs the Stan program")
    if args.data is None:
        raise InputError("--group needs --data (the group labels are a data variable)")
    for name, default, flag in _NOT_FOR_GROUPS:
        if getattr(args, name, default) != default:
            raise InputError(f"{flag} does not apply to leave-one-group-out (--group)")
    if checks_requested(args):
        raise InputError("predictive checks (--pit, --metrics, --crps, --e-loo) are not "
                         "available with --group")
    how = {"auto": "auto", "exact": "refit", "none": "none"}
    if args.fix not in how:
        raise InputError(f"--group: --fix must be auto, exact or none, got {args.fix}")
    return how[args.fix]


def run_group(args: argparse.Namespace, report: Reporter) -> int:
    """``loo --group``."""
    fix = check_group_arguments(args)
    r = logo(args.model, args.data, group=args.group, obs=args.obs,
             obs_fields=obs_fields(args.obs_fields), fix=fix, k_threshold=args.k_threshold,
             settings=nuts_settings(args), seed=args.seed, progress=report.progress,
             pointwise_obs=not args.no_obs_values)
    return finish_shown(report, r)
