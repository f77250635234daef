"""Type checks of the public API's arguments, at its boundary: a wrong type is one
:class:`~stanlogz.errors.ArgumentTypeError` naming the function and the argument, instead of a
raw ``TypeError`` (or ``AttributeError``) from deep inside a workflow, possibly after minutes.

:func:`check_arguments` knows the arguments shared by :func:`stanlogz.loo`,
:func:`stanlogz.evidence`, :func:`stanlogz.compare`, :func:`stanlogz.kfold`,
:func:`stanlogz.lfo` and :func:`stanlogz.sample` by name; values are checked for type only
(ranges stay with the functions that know them).
"""

from __future__ import annotations

import glob
import math
import numbers
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from ..errors import ArgumentTypeError

#: What a program argument may be, for messages.
PROGRAM = "a StanModel or a .stan path"


def _shown(value: Any) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 40 else text[:37] + '...'}"


def _fail(where: str, name: str, expected: str, value: Any) -> ArgumentTypeError:
    return ArgumentTypeError(f"{where}(): {name} must be {expected}, not {_shown(value)}")


def _is_path(value: Any) -> bool:
    return isinstance(value, str | os.PathLike)


def _program(where: str, name: str, value: Any) -> None:
    if _is_path(value) or hasattr(value, "log_density_gradient"):
        return
    raise _fail(where, name, PROGRAM, value)


def _programs(where: str, name: str, value: Any) -> None:
    if _is_path(value) or hasattr(value, "log_density_gradient"):
        raise ArgumentTypeError(f"{where}(): {name} must be a list of programs ({PROGRAM} "
                                f"each), not one {type(value).__name__}: give [A, B, ...]")
    if isinstance(value, Mapping | bytes) or not isinstance(value, Iterable):
        raise _fail(where, name, f"a list of programs ({PROGRAM} each)", value)
    if isinstance(value, list | tuple):  # (an iterator is checked once it is a list)
        for i, v in enumerate(value):
            _program(where, f"{name}[{i}]", v)


def check_draws(where: str, name: str, value: Any) -> None:
    """Refuse a ``draws`` argument that cannot be draws (a number) or names no file (nor
    files matching it as a glob pattern, nor CmdStan's chain files ``STEM_1.csv``, ...)."""
    if isinstance(value, bool | numbers.Number | bytes):
        raise _fail(where, name, "draws (a Draws, a cmdstanpy fit, CmdStan CSV path(s), "
                    "InferenceData or an array)", value)
    paths = [value] if _is_path(value) else (
        list(value) if isinstance(value, list | tuple) and value
        and all(_is_path(p) for p in value) else [])
    for p in paths:
        chains = Path(p).with_name(f"{glob.escape(Path(p).stem)}_*{Path(p).suffix}")
        if not Path(p).is_file() and not glob.glob(str(p)) and not glob.glob(str(chains)):
            raise ArgumentTypeError(f"{where}(): {name} names {str(p)!r}, which is not a "
                                    "file (give CmdStan CSV path(s), a .nc file, a cmdstanpy "
                                    "fit, InferenceData, a Draws or an array)")


def _optional(kind: type | tuple[type, ...], expected: str
              ) -> Callable[[str, str, Any], None]:
    def check(where: str, name: str, value: Any) -> None:
        if value is not None and (isinstance(value, bool) or not isinstance(value, kind)):
            raise _fail(where, name, expected + " or None", value)
    return check


def _callable(where: str, name: str, value: Any) -> None:
    if value is not None and not callable(value):
        raise _fail(where, name, "a callable taking one message (e.g. print) or None", value)


def _names(where: str, name: str, value: Any) -> None:
    if value is None or isinstance(value, str):
        return
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise _fail(where, name, "a name, a comma-separated string or a list of names", value)


def _name_list(where: str, name: str, value: Any) -> None:
    if value is not None and (isinstance(value, str) or not isinstance(value, list | tuple)
                              or not all(isinstance(v, str) for v in value)):
        raise _fail(where, name, "a list of names (str) or None", value)


def _numbers(where: str, name: str, value: Any) -> None:
    if value is None:
        return
    if isinstance(value, str | bytes | Mapping) or not hasattr(value, "__len__") or not all(
            isinstance(v, numbers.Real) and not isinstance(v, bool) for v in value):
        raise _fail(where, name, "a list of numbers", value)


def _count(where: str, name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise _fail(where, name, "an integer", value)


_REAL = _optional(numbers.Real, "a number")
_INT = _optional(numbers.Integral, "an integer")
_STR = _optional(str, "a name (str)")

#: Argument name -> its check(where, name, value).
CHECKS: dict[str, Callable[[str, str, Any], None]] = {
    "model": _program,
    "models": _programs,
    "draws": check_draws,
    "progress": _callable,
    "method": _STR, "obs": _STR, "group": _STR, "stratify": _STR, "fix": _STR,
    "log_lik": _STR, "yrep": _STR,
    "obs_fields": _name_list,
    "target_se": _REAL, "k_threshold": _REAL, "k_thresh": _REAL,
    "max_draws": _INT, "subsample": _INT, "k": _INT,
    "n_workers": _INT, "min_train": _count, "ahead": _count,
    "weights": _names,
    "prior_probs": _numbers,
    "loo_options": _optional(Mapping, "a dict of loo() options"),
    "ups_options": _optional(Mapping, "a dict of ups options"),
}


def check_arguments(where: str, **arguments: Any) -> None:
    """Raise :class:`~stanlogz.errors.ArgumentTypeError` for the first argument (by name, see
    :data:`CHECKS`) whose value has the wrong type; ``where`` is the public function's name."""
    for name, value in arguments.items():
        CHECKS[name](where, name, value)


def check_mcse_target(mcse_target: Any) -> float:
    """A precision target (``mcse_target=``, the command line's ``--mcse``) as a positive
    finite float; :class:`~stanlogz.errors.InputError` naming the option otherwise."""
    from ..errors import InputError, option

    try:
        t = float(mcse_target)
    except (TypeError, ValueError):
        t = float("nan")
    if not (math.isfinite(t) and t > 0):
        raise InputError(f"{option('mcse_target')} must be a positive number, got "
                         f"{mcse_target!r}")
    return t
