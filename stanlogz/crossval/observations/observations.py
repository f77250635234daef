"""Which data of a Stan program are per-observation, and data instances for subsets of them.

A program's observations are indexed by a size variable (``N``): every data array whose leading
dimension is ``N`` holds one entry per observation (or only the arrays named explicitly). A
subset of observations is the same data with those arrays cut along their first axis and ``N``
set to the subset's size: a new data instance of the same compiled program, never a rebuild.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..._util.seeds import Stream, stream_int_seed
from ...errors import InputError, Route, option
from ...stan.code import data_names, model_block
from ...stan.program import ProgramLike


def _leading(value: Any) -> int | None:
    """Length of the first axis of a data array; None for scalars."""
    if isinstance(value, str | bytes | Mapping):
        return None
    try:
        arr = np.asarray(value)
    except (ValueError, TypeError):  # ragged nested lists
        return len(value) if isinstance(value, list | tuple) else None
    return int(arr.shape[0]) if arr.ndim >= 1 else None


def _is_int_scalar(value: Any) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool)


@dataclass(frozen=True)
class Observations:
    """The observation structure of one data set: size variable, per-observation fields, n."""

    size_name: str
    fields: tuple[str, ...]
    n: int

    def subset(self, data: Mapping[str, Any], index: Sequence[int] | np.ndarray) -> dict[str, Any]:
        """``data`` restricted to the observations ``index`` (0-based, in the order given)."""
        idx = np.asarray(index, dtype=int).ravel()
        if idx.size and (idx.min() < 0 or idx.max() >= self.n):
            raise InputError(f"observation index out of range 0..{self.n - 1}")
        out = dict(data)
        for f in self.fields:
            arr = np.asarray(data[f])
            out[f] = arr[idx].tolist()
        out[self.size_name] = int(idx.size)
        return out

    def without(self, data: Mapping[str, Any], held_out: Sequence[int] | np.ndarray
                ) -> dict[str, Any]:
        """``data`` without the observations ``held_out``."""
        keep = np.setdiff1d(np.arange(self.n), np.asarray(held_out, dtype=int))
        return self.subset(data, keep)


#: A lagged index in the model block (``gamma[t - 1, j]``, ``y[n-1]``): a recursion over the
#: observations, i.e. a time series.
_LAG = re.compile(r"\[\s*[A-Za-z_]\w*\s*-\s*1\s*[\],]")


def recursive_model(code: str | None) -> bool:
    """Whether the program's model block recurses over its observations (``x[t - 1]``): a
    time series, which leave-future-out cross-validation fits."""
    return bool(code) and _LAG.search(model_block(code)) is not None


def lfo_route(obs: Observations) -> Route:
    """The leave-future-out route over ``obs`` as a command that runs as named: its first
    training set is 90% of the observations (``--min-train``, which ``lfo`` requires)."""
    return Route("lfo", {"obs": obs.size_name, "min_train": max(2, obs.n * 9 // 10)},
                 note="for a time series")


#: Names of the observed-values array in common programs (brms writes Y).
RESPONSE_NAMES = ("y", "Y")


def _prefer_response(data: Mapping[str, Any], lengths: Mapping[str, int | None],
                     cands: list[str]) -> list[str]:
    """The candidate sizes that are the leading size of the observed values (an array named
    y or Y), when that singles one out; else ``cands`` unchanged."""
    hit = [k for k in cands if any(r in data and lengths[r] == data[k] for r in RESPONSE_NAMES)]
    return hit if len(hit) == 1 else cands


def _sampled_first(data: Mapping[str, Any], lengths: Mapping[str, int | None],
                   cands: list[str], code: str | None) -> list[str]:
    """``cands`` with the sizes of arrays the program's model block samples (``u ~``,
    ``u[t] ~``, ``_lpdf(u |``) first: the size a refusal's example names (bball: N of u and v,
    not K of the prior's alpha)."""
    if not code:
        return cands
    model = model_block(code)

    def sampled(k: str) -> bool:
        return any(re.search(rf"\b{re.escape(f)}\s*(\[[^\]]*\])?\s*~", model)
                   or re.search(rf"_lp[dm]f\(\s*{re.escape(f)}\s*(\[[^\]]*\])?\s*\|", model)
                   for f in data if f != k and lengths[f] == data[k])

    return sorted(cands, key=lambda k: not sampled(k))


def _declared(data: Mapping[str, Any], obs: str | None, obs_fields: Sequence[str] | None,
              code: str | None) -> Mapping[str, Any]:
    """The entries of ``data`` that the program's data block declares (a data file may carry
    more: posteriordb's gp_pois_regr data hold a ``y`` that its program, whose outcome is ``k``,
    never reads); all of ``data`` when the code is not known or shows no data block. An
    ``obs`` or ``obs_fields`` the program does not declare is refused in one line."""
    declared = set(data_names(code))
    if not declared or not declared & set(data):
        return data
    named = ([obs] if obs is not None else []) + list(obs_fields or [])
    stray = [n for n in named if n in data and n not in declared]
    if stray:
        flag = option("obs" if stray[0] == obs else "obs_fields")
        raise InputError(f"{flag} {stray[0]}: the program's data block does not declare "
                         f"{stray[0]} (it declares {', '.join(sorted(declared))})")
    return {k: v for k, v in data.items() if k in declared}


def find_observations(data: Mapping[str, Any], obs: str | None = None,
                      obs_fields: Sequence[str] | None = None,
                      code: str | None = None) -> Observations:
    """The observations of ``data``: size variable ``obs`` (inferred when exactly one integer
    matches the leading dimension of some array) and the arrays split along it (``obs_fields``,
    or every array whose leading dimension equals it). ``code`` (the program) limits both to the
    variables its data block declares, and picks the example that a refusal of several possible
    sizes names."""
    fields = obs_fields
    if not isinstance(data, Mapping) or not data:
        raise InputError("cross-validation needs the program's data (a dict or JSON file)")
    data = _declared(data, obs, obs_fields, code)
    lengths = {k: _leading(v) for k, v in data.items()}
    if fields:
        missing = [f for f in fields if f not in data]
        if missing:
            raise InputError(f"{option('obs_fields')}: no data variable named {', '.join(missing)}")
        scalar = [f for f in fields if lengths[f] is None]
        if scalar:
            raise InputError(f"{option('obs_fields')}: {', '.join(scalar)} is not an "
                             "array")
        sizes = {lengths[f] for f in fields}
        if len(sizes) > 1:
            detail = ", ".join(f"{f}: {lengths[f]}" for f in fields)
            raise InputError(f"observation arrays have mixed leading sizes ({detail})")
        n = sizes.pop()
        if obs is None:
            names = [k for k, v in data.items() if _is_int_scalar(v) and v == n]
            if len(names) != 1:
                what = "no integer" if not names else f"several integers ({', '.join(names)})"
                raise InputError(f"{what} in the data equal {n}, the length of the observation "
                                 f"arrays; name the size variable with {option('obs')}",
                                 routes=option("obs"))
            obs = names[0]
    if obs is None:
        if not any(v is not None for v in lengths.values()):
            scalars = ", ".join(list(data)[:6])
            raise InputError(f"the data hold only scalars ({scalars}): there are no "
                             "observations to leave out one at a time; compare such programs "
                             f"by their evidence ({Route('evidence')} for one program's log Z, "
                             f"{Route('compare')} for several), or pass the data as arrays with "
                             "one entry per observation", routes=(Route("evidence"),
                                                                  Route("compare")))
        cands = [k for k, v in data.items()
                 if _is_int_scalar(v) and v > 0 and any(lengths[f] == v for f in data if f != k)]
        if not cands:
            raise InputError("no observation dimension found: no integer in the data is the "
                             f"leading size of an array; name it with {option('obs')} and the "
                             f"arrays with {option('obs_fields')}")
        if len(cands) > 1:
            cands = _prefer_response(data, lengths, cands)
        if len(cands) > 1:
            cands = _sampled_first(data, lengths, cands, code)
            detail = "; ".join(
                f"{k}: {', '.join(f for f in data if f != k and lengths[f] == data[k])}"
                for k in cands)
            example = Route(options={"obs": cands[0]})
            raise InputError(f"several possible observation sizes ({detail}); choose the size "
                             f"of the observed values with {option('obs')} (e.g. {example})",
                             routes=example)
        obs = cands[0]
    if obs not in data:
        raise InputError(f"{option('obs')} {obs}: no data variable named {obs}")
    if not _is_int_scalar(data[obs]):
        raise InputError(f"{option('obs')} {obs}: {obs} is not an integer size variable")
    n = int(data[obs])
    if fields:
        if lengths[fields[0]] != n:
            raise InputError(f"{option('obs_fields')} have {lengths[fields[0]]} entries but "
                             f"{obs} = {n}")
        chosen = tuple(fields)
    else:
        chosen = tuple(f for f in data if f != obs and lengths[f] == n)
        if not chosen:
            raise InputError(f"{option('obs')} {obs}: no data array has leading dimension "
                             f"{obs} = {n}")
    if n < 2:
        raise InputError(f"cross-validation needs at least 2 observations, {obs} = {n}")
    return Observations(obs, chosen, n)


def observation_labels(data: Mapping[str, Any], observations: Observations, name: str,
                       flag: str, integer: bool = True) -> np.ndarray:
    """The per-observation labels in data variable ``name`` (a group or stratum per observation,
    for ``flag`` in messages): a 1-D array with one entry per observation, of integers when
    ``integer`` (else integers or strings)."""
    if name not in data:
        raise InputError(f"{flag} {name}: no data variable named {name}")
    value = data[name]
    if _leading(value) is None:
        raise InputError(f"{flag} {name}: {name} is not an array with one entry per observation")
    arr = np.asarray(value)
    if arr.ndim != 1 or arr.shape[0] != observations.n:
        raise InputError(f"{flag} {name}: {name} has shape {arr.shape}, not one entry per "
                         f"observation ({observations.size_name} = {observations.n})")
    if arr.dtype.kind in "iu":
        return arr.astype(int)
    if arr.dtype.kind == "f" and np.all(arr == np.round(arr)):
        return arr.astype(int)
    if integer or arr.dtype.kind not in "US":
        kinds = "integer" if integer else "integer or string"
        raise InputError(f"{flag} {name}: {name} must hold {kinds} labels, one per observation")
    return arr


def load_observed(model: ProgramLike, data: Any, obs: str | None = None,
                  obs_fields: Sequence[str] | None = None, *, seed: int | None = None,
                  progress: Any = None, settings: Any = None, backend: str | None = None,
                  labels: Mapping[str, str | None] | None = None
                  ) -> tuple[Any, dict[str, Any], Observations]:
    """The program (a path or :class:`~stanlogz.stan.model.StanModel`, loaded on the backend
    of ``settings``, a :class:`~stanlogz.stan.settings.NutsArgs`, or on ``backend``) bound to
    ``data``, the data as a dict (the model's own when ``data`` is None) and its observations.
    ``seed`` is the run's: the program's own seed is its model stream. ``labels`` maps an
    option (``"group"``) to the data variable it names (None: not given); a name the data
    lack is refused before the program is loaded (a compile, on a cold cache)."""
    import json

    from ...stan.inputs import read_data
    from ...stan.load import load_model

    backend = getattr(settings, "backend", None) or backend
    data = read_data(data)  # parsed once, for the labels' check and the program
    for flag, name in (labels or {}).items():
        if data is not None and name is not None and name not in data:
            raise InputError(f"{option(flag)} {name}: no data variable named {name}")
    model = load_model(model, data, seed=stream_int_seed(seed, Stream.MODEL), progress=progress,
                       backend=backend)
    if data is not None:
        data_dict = data
    else:
        data_dict = json.loads(model.data_json) if getattr(model, "data_json", "") else {}
    return model, data_dict, find_observations(data_dict, obs, obs_fields,
                                               getattr(model, "code", None))
