"""CmdStan CSV files: reading one file per chain (with adaptation and timing), and writing all
chains into one file that CmdStan tools and :func:`from_csv` read back."""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._util.files import atomic_write_text
from ..errors import DataError, InputError
from ..stan.program import StanProgram
from .core import SAMPLER_COLUMNS, Draws, _from_columns, flat_name
from .project import sig_figs_of


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
        elif not Path(s).is_file() and _written_chains(Path(s)):
            out += _written_chains(Path(s))  # what write_csv(d, s) wrote for several chains
        else:
            if not Path(s).is_file():
                raise InputError(f"CSV file not found: {s}")
            out.append(Path(s))
    if not out:
        raise InputError("no CSV files given")
    return out


def _written_chains(path: Path) -> list[Path]:
    """``STEM_1.csv``, ``STEM_2.csv``, ... next to ``path`` (numbered 1..K without gaps)."""
    out = []
    while (f := path.with_name(f"{path.stem}_{len(out) + 1}{path.suffix}")).is_file():
        out.append(f)
    return out


def _read_chains(paths: str | os.PathLike | Sequence[str | os.PathLike]
                 ) -> tuple[np.ndarray, list[str], str, list[_CsvChain], list[str]]:
    """The draws ``(chains, n, columns)`` of CSV files, their column names, a description, the
    chains read, and notes (chains cut to a common length)."""
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
    return values, names, what, chains, notes


def read_columns(paths: str | os.PathLike | Sequence[str | os.PathLike]
                 ) -> tuple[np.ndarray, list[str], str]:
    """Every column of CSV files without a program: values ``(chains, n, columns)``, Stan's
    flat column names and a description of the files."""
    values, names, what, _, _ = _read_chains(paths)
    return values, names, what


def from_csv(paths: str | os.PathLike | Sequence[str | os.PathLike],
             model: StanProgram | None) -> Draws:
    """Draws from CmdStan CSV files (one chain each; a glob pattern or a directory also works).

    A file written by the sample command's output option holds all chains in one file with
    a ``chain__`` column; it is split back into chains.

    Parameters
    ----------
    paths : str, Path or list of them
        The CSV files, a glob pattern or a directory.
    model : StanModel or None
        The program the draws are of; ``None`` keeps the constrained draws only.

    Returns
    -------
    Draws
        The draws with the files' step sizes, metric, time and sampler settings; notes from
        reading them are in its ``warnings``.

    Raises
    ------
    InputError
        No files, files with different columns, or parameter columns that are not the
        program's.

    See Also
    --------
    as_draws : any kind of draws.

    Examples
    --------
    Draws written as CmdStan CSV files (``draws_1.csv``, ``draws_2.csv``) and read back:

    >>> import tempfile, stanlogz
    >>> from stanlogz.draws import write_csv
    >>> m = stanlogz.StanModel.from_file("stan_models/examples/normal_mean.stan",
    ...                                  "stan_models/examples/normal_mean.data.json")
    >>> path = tempfile.mkdtemp() + "/draws.csv"
    >>> files = write_csv(stanlogz.sample(m, chains=2, draws=100, seed=1), path)
    >>> [f.name for f in files]
    ['draws_1.csv', 'draws_2.csv']
    >>> d = stanlogz.from_csv(files, m)
    >>> d.n_chains, d.n_draws, d.source
    (2, 100, 'csv')
    """
    values, names, what, chains, notes = _read_chains(paths)
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
        sig_figs=sig_figs_of(cfg),
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


def chain_files(path: str | os.PathLike, n_chains: int) -> list[Path]:
    """The files :func:`write_csv` writes for ``n_chains`` chains: ``path`` itself for one
    chain, else ``STEM_1.csv`` ... ``STEM_K.csv`` next to it (CmdStan's naming)."""
    path = Path(path)
    if n_chains == 1:
        return [path]
    return [path.with_name(f"{path.stem}_{c}{path.suffix}") for c in range(1, n_chains + 1)]


def _fmt(v: float, sig: int) -> str:
    return format(float(v), f".{sig}g")


def write_csv(d: Draws, path: str | os.PathLike, *, sig_figs: int | None = None,
              warmup: int | None = None) -> list[Path]:
    """Write draws as CmdStan CSV files, one per chain (:func:`chain_files`), which CmdStan
    tools, ``cmdstanpy.from_csv``, ``arviz.from_cmdstan`` and :func:`from_csv` read as the
    chains. ``sig_figs``: significant digits (default 17: every double exactly; CmdStan's own
    default is 6). Each file is written to a temporary name and moved into place, so it is
    never half-written. ``warmup``: the warmup iterations to record (readers such as cmdstanpy
    require a positive number when the step size was adapted; 1 when not given). Returns the
    files.
    """
    if d.constrained is None:
        raise InputError("draws without constrained values cannot be written as CSV")
    sig = 17 if sig_figs is None else int(sig_figs)
    if not 1 <= sig <= 18:
        raise InputError(f"sig_figs must be in 1..18, got {sig_figs}")
    stats = [c for c in SAMPLER_COLUMNS if c in d.sampler]
    header = ",".join(stats + d.constrained_names)
    files = chain_files(path, d.n_chains)
    total = d.seconds / max(d.n_chains, 1)
    for c, f in enumerate(files):
        lines = [f"# {line}" for line in _cmdstan_config(d, c + 1, sig, f.name, warmup)]
        lines.append(header)
        if d.step_size is not None:
            lines += ["# Adaptation terminated", f"# Step size = {_fmt(d.step_size[c], sig)}"]
            if d.inv_metric is not None:
                row = np.atleast_2d(d.inv_metric)[c]
                lines += ["# Diagonal elements of inverse mass matrix:",
                          "# " + ", ".join(_fmt(v, sig) for v in row)]
        block = np.column_stack([d.sampler[s][c] for s in stats] + [d.constrained[c]])
        lines += [",".join(_fmt(v, sig) for v in row) for row in block]
        lines += ["# ", "#  Elapsed Time: 0 seconds (Warm-up)",
                  f"#                {total!r} seconds (Sampling)",
                  f"#                {total!r} seconds (Total)", "# "]
        atomic_write_text(f, "\n".join(lines) + "\n")
    return files


def _cmdstan_config(d: Draws, chain: int, sig: int, name: str, warmup: int | None
                    ) -> list[str]:
    """The configuration header of one chain's CmdStan CSV file."""
    n = d.n_draws
    return ["stan_version_major = 2", "stan_version_minor = 35", "stan_version_patch = 0",
            "model = stanlogz_model", "method = sample (Default)", "  sample",
            f"    num_samples = {n}", f"    num_warmup = {warmup or 1}", "    save_warmup = false",
            "    thin = 1 (Default)", "    adapt",
            f"      engaged = {'true' if d.step_size is not None else 'false'}",
            *([f"      delta = {d.adapt_delta!r}"] if d.adapt_delta is not None else []),
            "    algorithm = hmc (Default)", "      hmc", "        engine = nuts (Default)",
            "          nuts", f"            max_depth = {d.max_treedepth or 10}",
            "        metric = diag_e (Default)", "    num_chains = 1 (Default)",
            f"id = {chain}", "output", f"  file = {name}", f"  sig_figs = {sig}",
            f"stanlogz_source = {d.source}"]
