"""CmdStan CSV files: reading one file per chain (with adaptation and timing), and writing all
chains into one file that CmdStan tools and :func:`from_csv` read back."""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .._util.files import atomic_write_text
from ..errors import DataError, InputError
from .core import SAMPLER_COLUMNS, Draws, _from_columns, flat_name


@dataclass
class _CsvChain:
    path: Path
    names: list[str]
    rows: np.ndarray
    config: dict[str, str]
    step_size: float | None
    inv_metric: np.ndarray | None
    seconds: float


def _read_cmdstan_csv(path: Path) -> _CsvChain:
    """One CmdStan (or ``stanlogz sample``) CSV file: header, draws, adaptation and timing."""
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"cannot read CSV file {path}: {exc.__class__.__name__}") from None
    config: dict[str, str] = {}
    names: list[str] | None = None
    rows: list[list[float]] = []
    step_size = None
    metric_rows: list[list[float]] = []
    in_metric = False
    seconds = 0.0
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("#"):
            body = line[1:].strip()
            if in_metric:
                try:
                    metric_rows.append([float(v) for v in body.split(",")])
                    continue
                except ValueError:
                    in_metric = False
            if body.startswith("Adaptation terminated"):
                rows = []  # anything before this line was warmup (save_warmup=1)
            elif body.startswith("Step size ="):
                step_size = float(body.split("=", 1)[1])
            elif body.startswith("Diagonal elements of inverse mass matrix") or body.startswith(
                "Elements of inverse mass matrix"
            ):
                in_metric = True
            elif "(Total)" in body:
                m = re.search(r"([0-9.eE+-]+)\s+seconds\s+\(Total\)", body)
                if m:
                    seconds = float(m.group(1))
            elif "=" in body and names is None:
                k, v = body.split("=", 1)
                config.setdefault(k.strip(), v.strip().replace(" (Default)", ""))
            continue
        if names is None:
            names = [flat_name(c) for c in line.split(",")]
            continue
        try:
            vals = [float(v) for v in line.split(",")]
        except ValueError:
            raise DataError(f"{path}:{lineno}: not a number in a draws row") from None
        if len(vals) != len(names):
            raise DataError(f"{path}:{lineno}: {len(vals)} values for {len(names)} columns")
        rows.append(vals)
    if names is None:
        raise DataError(f"{path} is not a CmdStan CSV file: no header line")
    method = config.get("method", "sample").split()[0]
    if method != "sample" or "lp__" not in names:
        raise DataError(f"{path} is not output of Stan's sampler (method = {method})")
    if not rows:
        raise DataError(f"{path} has no post-warmup draws")
    metric = None
    if len(metric_rows) == 1:
        metric = np.array(metric_rows[0])
    elif metric_rows and all(len(r) == len(metric_rows) for r in metric_rows):
        metric = np.diag(np.array(metric_rows))  # dense metric: keep its diagonal
    return _CsvChain(path, names, np.array(rows, dtype=float), config, step_size, metric, seconds)


def _csv_paths(paths: str | os.PathLike | Sequence[str | os.PathLike]) -> list[Path]:
    if isinstance(paths, str | os.PathLike):
        paths = [paths]
    out: list[Path] = []
    for p in paths:
        s = os.fspath(p)
        if any(ch in s for ch in "*?["):
            hits = sorted(glob.glob(s))
            if not hits:
                raise InputError(f"no CSV file matches {s}")
            out += [Path(h) for h in hits]
        elif Path(s).is_dir():
            hits = sorted(Path(s).glob("*.csv"))
            if not hits:
                raise InputError(f"no CSV file in directory {s}")
            out += hits
        else:
            if not Path(s).is_file():
                raise InputError(f"CSV file not found: {s}")
            out.append(Path(s))
    if not out:
        raise InputError("no CSV files given")
    return out


def from_csv(paths: str | os.PathLike | Sequence[str | os.PathLike], model: Any) -> Draws:
    """Draws from CmdStan CSV files (one chain each; a glob pattern or a directory also works).

    A file written by ``stanlogz sample --output draws.csv`` holds all chains in one file with
    a ``chain__`` column; it is split back into chains. Every file must have the same columns,
    and the parameter columns must be the model's parameters.
    """
    files = _csv_paths(paths)
    chains: list[_CsvChain] = []
    for f in files:
        ch = _read_cmdstan_csv(f)
        if "chain__" in ch.names:
            j = ch.names.index("chain__")
            keep = [i for i in range(len(ch.names)) if i != j]
            parts = [_CsvChain(f, [ch.names[i] for i in keep],
                               ch.rows[ch.rows[:, j] == cid][:, keep], ch.config, None, None, 0.0)
                     for cid in np.unique(ch.rows[:, j])]
            _attach_adaptation(parts, ch)
            chains += parts
        else:
            chains.append(ch)
    names = chains[0].names
    for ch in chains[1:]:
        if ch.names != names:
            raise DataError(f"{ch.path} has different columns than {chains[0].path}")
    n = min(ch.rows.shape[0] for ch in chains)
    notes = []
    if any(ch.rows.shape[0] != n for ch in chains):
        notes.append(f"chains have different lengths; each was cut to its first {n} draws")
    values = np.stack([ch.rows[:n] for ch in chains])
    what = f"CSV {files[0]}" if len(files) == 1 else f"CSV files {files[0]}, ..."
    steps = [ch.step_size for ch in chains]
    mets = [ch.inv_metric for ch in chains]
    cfg = chains[0].config
    d = _from_columns(
        values, names, model, what=what, source="csv",
        step_size=None if any(s is None for s in steps) else np.array(steps, dtype=float),
        inv_metric=None if any(m is None for m in mets) or len({m.size for m in mets}) != 1
        else np.stack(mets),
        seconds=float(sum(ch.seconds for ch in chains)),
        max_treedepth=int(cfg["max_depth"]) if cfg.get("max_depth", "").isdigit() else None,
        adapt_delta=_float_or_none(cfg.get("delta")),
    )
    d.warnings.extend(notes)
    return d


def _float_or_none(text: str | None) -> float | None:
    try:
        return None if text is None else float(text)
    except ValueError:
        return None


def _attach_adaptation(parts: list[_CsvChain], whole: _CsvChain) -> None:
    # A file written by write_csv keeps each chain's step size and metric in its header.
    sizes = whole.config.get("stanlogz_step_size")
    if sizes:
        vals = [float(v) for v in sizes.split(",")]
        if len(vals) == len(parts):
            for p, v in zip(parts, vals, strict=True):
                p.step_size = v
    metric = whole.config.get("stanlogz_inv_metric")
    if metric:
        rows = [np.array([float(v) for v in r.split()]) for r in metric.split(";")]
        if len(rows) == len(parts):
            for p, r in zip(parts, rows, strict=True):
                p.inv_metric = r
    for p in parts:
        p.seconds = whole.seconds / len(parts)


def write_csv(d: Draws, path: str | os.PathLike) -> None:
    """Write draws as one CSV file (all chains, ``chain__`` column) readable by :func:`from_csv`.

    The file is written to a temporary name and moved into place, so it is never half-written.
    """
    if d.constrained is None:
        raise InputError("draws without constrained values cannot be written as CSV")
    path = Path(path)
    stats = [c for c in SAMPLER_COLUMNS if c in d.sampler]
    header = stats + ["chain__"] + d.constrained_names
    lines = ["# stanlogz draws", "# method = sample", f"# source = {d.source}"]
    if d.max_treedepth is not None:
        lines.append(f"# max_depth = {d.max_treedepth}")
    if d.adapt_delta is not None:
        lines.append(f"# delta = {d.adapt_delta!r}")
    if d.step_size is not None:
        lines.append("# stanlogz_step_size = " + ",".join(repr(float(s)) for s in d.step_size))
    if d.inv_metric is not None:
        lines.append("# stanlogz_inv_metric = " + ";".join(
            " ".join(repr(float(v)) for v in row) for row in np.atleast_2d(d.inv_metric)))
    lines.append(",".join(header))
    for c in range(d.n_chains):
        cols = [d.sampler[s][c] for s in stats] + [np.full(d.n_draws, c + 1.0)]
        block = np.column_stack(cols + [d.constrained[c]])
        lines += [",".join(repr(float(v)) for v in row) for row in block]
    lines.append(f"#  Elapsed Time: {d.seconds!r} seconds (Total)")
    atomic_write_text(path, "\n".join(lines) + "\n")
