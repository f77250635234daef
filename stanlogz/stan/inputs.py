"""What a Stan program is given: its ``.stan`` file and its data (a dict, JSON text or a JSON
file), checked and turned into Stan JSON."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import stanio

from ..errors import DataError, InputError

DataLike = None | Mapping[str, Any] | str | os.PathLike[str]


class StanJson(str):
    """Stan JSON text already written by :func:`data_to_json` (or joined from its pieces by
    :func:`json_with_field`): passed as data, it is used as it is, not read and written again
    (a data instance of a large data set differing in one variable costs its JSON text once)."""


def data_to_json(data: DataLike) -> str:
    """Stan JSON text from ``None``, a dict, a path to a ``.json`` file, or JSON text (files and
    text are read and checked by :func:`read_data`), written by :func:`stanio.dump_stan_json`
    (numpy arrays, booleans, NaN and infinities as CmdStan reads them; a dict value is a Stan
    tuple). A Python tuple is an array here, as it always was in stanlogz (stanio would write
    a Stan tuple). :class:`StanJson` text is returned as it is."""
    if isinstance(data, StanJson):
        return str(data)
    if data is not None and not isinstance(data, Mapping):
        data = read_data(data)
    try:
        return stanio.dump_stan_json({str(k): _tuples_as_arrays(v)
                                      for k, v in (data or {}).items()})
    except (TypeError, ValueError) as exc:
        raise DataError(f"data cannot be written as Stan JSON: {' '.join(str(exc).split())}"
                        ) from None


def json_fragments(data_json: str) -> dict[str, str]:
    """The Stan JSON text of each variable of ``data_json`` (text :func:`data_to_json` wrote),
    to be joined again by :func:`json_with_field`."""
    obj = json.loads(data_json)
    return {k: stanio.dump_stan_json({k: v})[len(json.dumps(k)) + 3:-1] for k, v in obj.items()}


def json_with_field(fragments: Mapping[str, str], field: str, value: Any) -> StanJson:
    """Stan JSON text of the data whose variables' texts are ``fragments`` with ``field`` set
    to ``value`` (only that variable written anew)."""
    try:
        new = stanio.dump_stan_json({field: _tuples_as_arrays(value)})
    except (TypeError, ValueError) as exc:
        raise DataError(f"data cannot be written as Stan JSON: {' '.join(str(exc).split())}"
                        ) from None
    parts = {**fragments, field: new[len(json.dumps(field)) + 3:-1]}
    return StanJson("{" + ", ".join(f"{json.dumps(k)}: {v}" for k, v in parts.items()) + "}")


def _tuples_as_arrays(value: Any) -> Any:
    """``value`` with Python tuples (at any depth of lists and tuples) turned into lists."""
    if isinstance(value, tuple):
        return [_tuples_as_arrays(v) for v in value]
    if isinstance(value, list) and value and isinstance(value[0], list | tuple):
        return [_tuples_as_arrays(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _tuples_as_arrays(v) for k, v in value.items()}
    return value


def read_data(data: Any) -> dict[str, Any] | None:
    """Stan data as a dict: ``None``, a dict, JSON text, or a path to a JSON file (checked)."""
    if data is None or isinstance(data, dict):
        return data
    if isinstance(data, str) and data.lstrip().startswith("{"):
        try:
            obj = json.loads(data)
        except json.JSONDecodeError as exc:
            raise DataError(f"data is not valid JSON: {exc.msg} at line {exc.lineno}") from None
        return obj
    if isinstance(data, str | os.PathLike):
        p = Path(data)
        if p.suffix.lower() != ".json":
            raise DataError(f"data file {p} must be a .json file")
        if not p.is_file():
            raise DataError(f"data file not found: {p}")
        try:
            obj = json.loads(p.read_text())
        except (OSError, UnicodeDecodeError) as exc:
            raise DataError(f"cannot read data file {p}: {exc.__class__.__name__}") from None
        except json.JSONDecodeError as exc:
            raise DataError(f"data file {p} is not valid JSON: {exc.msg} at line {exc.lineno}") \
                from None
        if not isinstance(obj, dict):
            raise DataError(f"data file {p} must hold a JSON object, not {type(obj).__name__}")
        return obj
    raise DataError(f"data must be a dict or a path to a JSON file, not {type(data).__name__}")


def check_stan_file(path: str | os.PathLike) -> Path:
    """``path`` as a :class:`Path` after checking it names an existing ``.stan`` file."""
    p = Path(path)
    if p.suffix != ".stan":
        raise InputError(f"{p} is not a Stan program (expected a .stan file)")
    if not p.is_file():
        raise InputError(f"Stan program not found: {p}")
    return p
