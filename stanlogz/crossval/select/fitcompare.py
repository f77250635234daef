"""Models compared by PSIS-LOO from what each one is given as: a fit that carries its pointwise
log-likelihood (CmdStan CSV files, an ArviZ netCDF/InferenceData, a cmdstanpy fit, Draws, an
array) or a Stan program with its data (LOO by the same routes and fix-ups as
:func:`~stanlogz.crossval.psis_loo.loo.loo`). The result is the same
:class:`~stanlogz.crossval.select.choose.ProgramChoice` as ``compare(..., with_loo=True)`` of
programs: elpd differences, their se, p_worse, diagnostics and stacking / pseudo-BMA(+) weights. BMA
weights need the evidence, which a fit alone does not give."""

from __future__ import annotations

import glob
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..._util.seeds import Stream, stream_int_seed
from ...errors import InputError, option
from ...stan.inputs import read_data
from ...stan.settings import NutsArgs
from ..elpd.psis import relative_efficiency
from ..observations.observations import find_observations
from ..psis_loo.fitloo import is_fit, log_lik_from_fit, loo_from_fit
from ..psis_loo.loo import loo
from .choose import ProgramChoice, choose, parse_weights


def fit_files(fit: Any) -> list[str] | None:
    """The files a path-like fit names (a glob or directory expanded), or None for an
    in-memory fit; :class:`InputError` naming a missing file."""
    paths = [fit] if isinstance(fit, str | os.PathLike) else fit
    if not (isinstance(paths, list | tuple) and paths
            and all(isinstance(p, str | os.PathLike) for p in paths)):
        return None
    out = []
    for p in map(str, paths):
        if any(c in p for c in "*?["):
            hits = sorted(glob.glob(p))
            if not hits:
                raise InputError(f"no file matches {p}")
            out += hits
        elif os.path.isdir(p):
            out += sorted(str(q) for q in Path(p).glob("*.csv"))
        elif not os.path.isfile(p):
            raise InputError(f"no such file: {p}")
        else:
            out.append(p)
    nc = [p for p in out if p.endswith(".nc")]
    if nc and len(out) > 1:
        raise InputError(f"a .nc InferenceData is one model's fit on its own; got {nc[0]} "
                         f"with {len(out) - 1} other file(s)")
    return out


def fit_name(fit: Any, j: int) -> str:
    """A short name for the ``j``-th fit: the common stem of its files (``A_1.csv``,
    ``A_2.csv`` -> ``A``), else ``fit{j+1}``."""
    files = fit_files(fit)
    if not files:
        return f"fit{j + 1}"
    stems = [Path(f).stem for f in files]
    common = os.path.commonprefix(stems).rstrip("-_. ")
    return common or f"fit{j + 1}"


def _unique(names: list[str]) -> list[str]:
    return [f"{n}#{i + 1}" if names.count(n) > 1 else n for i, n in enumerate(names)]


def compare_sources(
    sources: Sequence[Any],
    data: Sequence[Any] | None = None,
    *,
    names: Sequence[str] | None = None,
    weights: str | Sequence[str] | None = None,
    var: str = "log_lik",
    loo_options: dict[str, Any] | None = None,
    settings: NutsArgs | None = None,
    seed: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> ProgramChoice:
    """The LOO comparison of ``sources``, each a fit with a pointwise log-likelihood ``var``
    (:func:`~stanlogz.crossval.psis_loo.fitloo.is_fit`) or a Stan program (path or model) with its
    entry of ``data``. Everything is checked before any sampling or smoothing: the files exist,
    every model has the same number of observations N, and the weight methods are ones the
    LOO comparison gives (stacking, pseudo-bma, pseudo-bma+). Programs run NUTS with
    ``settings`` and seeds derived from ``seed``; ``loo_options`` go to their
    :func:`~stanlogz.crossval.psis_loo.loo.loo`."""
    sources = list(sources)
    if len(sources) < 2:
        raise InputError(f"compare needs at least two models, got {len(sources)}")
    methods = parse_weights(weights)
    if "bma" in methods:
        raise InputError("bma weights need the evidence (log Z) of every model, which needs "
                         "its Stan program and data; fits give LOO: use stacking, pseudo-bma "
                         "or pseudo-bma+")
    fits = [is_fit(s) for s in sources]
    datas = list(data) if data is not None else [None] * len(sources)
    if len(datas) != len(sources):
        raise InputError(f"{len(datas)} data entries for {len(sources)} models")
    for s, f in zip(sources, fits, strict=True):
        if f:
            fit_files(s)
        elif isinstance(s, str | os.PathLike) and not os.path.isfile(s):
            raise InputError(f"no such file: {s}")
    if names is None:
        names = _unique([fit_name(s, j) if f else
                         (Path(s).stem if isinstance(s, str | os.PathLike)
                          else str(getattr(s, "name", f"model{j + 1}")))
                         for j, (s, f) in enumerate(zip(sources, fits, strict=True))])
    names = list(names)
    if len(names) != len(sources) or len(set(names)) != len(names):
        raise InputError(f"{option('names')} needs {len(sources)} distinct names, got "
                         f"{', '.join(names) or 'none'}")
    # read every fit's log-likelihood and every program's observations, then check N
    read: list[tuple[np.ndarray, np.ndarray | None] | None] = []
    ns = []
    for s, f, d, n in zip(sources, fits, datas, names, strict=True):
        if f:
            ll, post, _ = log_lik_from_fit(s, var)
            read.append((ll, post))
            ns.append(ll.shape[2])
        else:
            if d is None:
                raise InputError(f"{n}: a Stan program needs its data to be compared by LOO")
            opts = loo_options or {}
            obs = find_observations(read_data(d), opts.get("obs"), opts.get("obs_fields"))
            read.append(None)
            ns.append(obs.n)
    if len(set(ns)) != 1:
        detail = ", ".join(f"{n}: {k}" for n, k in zip(names, ns, strict=True))
        raise InputError(f"the models have different numbers of observations ({detail}); "
                         "LOO differences pair the same observations")
    results = []
    for j, (s, r, d, n) in enumerate(zip(sources, read, datas, names, strict=True)):
        if progress:
            progress(f"model {j + 1}/{len(sources)}: {n}")
        if r is not None:
            ll, post = r
            r_eff = 1.0 if post is None or post.shape[2] == 0 else relative_efficiency(post)
            results.append(loo_from_fit(ll, r_eff=r_eff, name=n))
        else:
            # program j's seed (what compare() gives it): the same as loo(seed=that)
            results.append(loo(s, d, settings=settings,
                               seed=stream_int_seed(seed, Stream.PROGRAM, j), progress=progress,
                               **(loo_options or {})))
            results[-1].model = n
    return choose(names, loo=results, weights=methods,
                  seed=stream_int_seed(seed, Stream.CHOICE))
