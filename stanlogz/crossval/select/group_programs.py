"""``compare(..., group=VAR)`` (and the compare command's group option): Stan programs compared by
leave-one-group-out, each program's LOGO from its program alone (:mod:`..logo`), compared over
the groups by the one comparison (:func:`.compare.loo_compare` pairs leave-one-group-out results
by group), into the one :class:`~.choose.ProgramChoice`."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ..._util.seeds import Stream, stream_int_seed
from ...errors import InputError
from ...stan.inputs import check_stan_file, read_data
from ...stan.load import load_model, program_names
from ...stan.settings import NutsArgs
from ..logo.estimator import logo_from_loo
from .choose import NEEDS, ProgramChoice, check_same_data, choose, parse_weights

#: Weight methods over groups (``bma`` needs the evidence, which a group comparison does not
#: compute).
GROUP_WEIGHTS = tuple(m for m, needs in NEEDS.items() if needs == "loo")


def compare_by_group(models: list[Any], data: Any, *, group: str, draws: Any, nuts: NutsArgs,
                     weights: Any, loo_options: dict[str, Any] | None, seed: int | None,
                     progress: Any, refused: dict[str, Any]) -> ProgramChoice:
    """:func:`stanlogz.compare` with ``group``: every program's leave-one-group-out, compared
    over the groups (:func:`~stanlogz.crossval.select.compare.loo_compare`), with weights
    over the groups."""
    for name, value in refused.items():
        if value:
            what = "sampler and estimator options" if name == "options" else name
            raise InputError(f"compare with group compares by elpd_logo: {what} does not "
                             "apply (leave out the evidence's options)")
    if len(models) < 2:
        raise InputError(f"compare needs at least two programs, got {len(models)}")
    datas = list(data) if isinstance(data, list | tuple) else [data] * len(models)
    if len(datas) != len(models):
        raise InputError(f"{len(datas)} data sets for {len(models)} programs; give one for "
                         "all or one per program")
    if draws is not None and len(draws) != len(models):
        raise InputError(f"{len(draws)} draw sets for {len(models)} programs")
    methods = parse_weights(weights) or ["stacking"]
    if any(m not in GROUP_WEIGHTS for m in methods):
        raise InputError(f"compare with group: weights over groups are "
                         f"{', '.join(GROUP_WEIGHTS)} (bma needs the evidence)")
    if "stacking" not in methods:
        methods = ["stacking", *methods]
    for m in models:
        if isinstance(m, str | os.PathLike):
            check_stan_file(m)
    datas = [read_data(dt) for dt in datas]
    opts = dict(loo_options or {})
    check_same_data(datas, program_names(models, models), opts.get("obs"), opts.get("obs_fields"))
    for i, d in enumerate(datas[1:], 1):
        if group not in (d or {}) or group not in (datas[0] or {}) or not np.array_equal(
                np.asarray(d[group]), np.asarray(datas[0][group])):
            raise InputError(f"compare with group: the programs' {group!r} differ (or one "
                             f"lacks it): program {i + 1} and program 1")
    # program i's seed as in compare(): its LOGO is that of loo(group=, seed=program_seed[i])
    program_seed = [stream_int_seed(seed, Stream.PROGRAM, i) for i in range(len(models))]
    loaded = [load_model(m, dt, seed=stream_int_seed(program_seed[i], Stream.MODEL),
                         progress=progress, backend=nuts.backend)
              for i, (m, dt) in enumerate(zip(models, datas, strict=True))]
    names = program_names(models, loaded)
    results = []
    for i, m in enumerate(loaded):
        if progress:
            progress(f"model {i + 1}/{len(loaded)}: {names[i]}: leave-one-group-out")
        results.append(logo_from_loo(m, datas[i], group=group,
                                     draws=None if draws is None else draws[i],
                                     settings=nuts, seed=program_seed[i],
                                     progress=progress, **opts))
    return choose(names, loo=results, weights=methods, seed=stream_int_seed(seed, Stream.CHOICE))
