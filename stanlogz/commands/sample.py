"""``stanlogz sample MODEL.stan --data DATA.json``: NUTS draws, summary and diagnostics."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .._util.files import write_atomically
from ..draws import Draws, sample, write_csv
from ..draws.stancsv import chain_files
from ..errors import InputError
from ..report.output import Reporter
from ..stan.load import load_model
from .arguments import add_program_arguments, add_sampler_arguments, nuts_settings

NAME = "sample"
HELP = "Draw from the posterior with Stan's NUTS; print a summary, diagnostics and warnings."

OUTPUT_SUFFIXES = (".csv", ".nc")
PLOT_SUFFIXES = (".png", ".pdf", ".svg")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_program_arguments(parser)
    add_sampler_arguments(parser)
    parser.add_argument("--all-quantities", action="store_true",
                        help="summarize transformed parameters and generated quantities too "
                        "(default: the parameters only; --output saves every quantity)")
    parser.add_argument("--output", metavar="FILE", default=None,
                        help="save the draws: .csv (CmdStan CSV, one file per chain: "
                        "FILE_1.csv, ...; --fit FILE.csv reads them all) or .nc (ArviZ netCDF)")


def finish(report: Any, result: Any, plot: Path | None, draw: Callable[[Path], None],
           warned: bool = False, **extra: Any) -> int:
    """The common end of a command: the result's warnings (unless ``warned``: the printed
    result showed them), its plot written atomically to ``plot`` by ``draw(tmp_path)`` (when
    asked for), and the JSON object with ``extra`` keys."""
    if not warned:
        for w in result.warnings:
            report.warn(w)
    if plot is not None:
        write_atomically(plot, draw)
        report.progress(f"plot written to {plot}")
    report.emit_json({**extra, **result.to_dict(), "plot": None if plot is None else str(plot)})
    return 0


def finish_shown(report: Any, result: Any, plot: Path | None = None,
                 draw: Callable[[Path], None] | None = None) -> int:
    """:func:`finish` after printing the result's own table, exactly as ``print(result)``
    shows it (which holds the warnings; the JSON object alone with ``--json``)."""
    report.text(repr(result))
    return finish(report, result, plot, draw or (lambda tmp: None),
                  warned=not report.json_mode)


def check_output(path: str | None, suffixes: tuple[str, ...], what: str) -> Path | None:
    """The output path after checking its suffix and that its folder exists."""
    if path is None:
        return None
    p = Path(path)
    if p.suffix.lower() not in suffixes:
        raise InputError(f"{what} file {p} must end in {' or '.join(suffixes)}")
    if not p.parent.resolve().is_dir():
        raise InputError(f"folder of {what} file {p} does not exist")
    return p


def check_plot(path: str | None, what: str = "--plot") -> Path | None:
    """:func:`check_output` of a figure file (``.png``, ``.pdf`` or ``.svg``)."""
    return check_output(path, PLOT_SUFFIXES, what)


def save_draws(d: Draws, path: Path, warmup: int | None = None) -> None:
    """Write draws to ``.csv`` (CmdStan CSV, one file per chain: ``STEM_1.csv``, ...) or
    ``.nc`` without ever leaving a half-written file."""
    if path.suffix.lower() == ".csv":
        write_csv(d, path, warmup=warmup)
        return
    try:
        write_atomically(path, lambda tmp: d.to_inference_data().to_netcdf(str(tmp),
                                                                            engine="h5netcdf"))
    except InputError:
        raise
    except Exception as exc:  # netCDF/HDF5 writers raise many types
        raise InputError(f"cannot write {path}: {exc}".splitlines()[0]) from None


def run(args: argparse.Namespace, report: Reporter) -> int:
    out = check_output(args.output, OUTPUT_SUFFIXES, "--output")
    nuts = nuts_settings(args)
    model = load_model(args.model, args.data, seed=args.seed, progress=report.progress,
                       backend=nuts.backend)
    d = sample(model, nuts, seed=args.seed, progress=report.progress)
    s = d.summary(None if args.all_quantities else model.param_names())
    report.table(s.header, s.table_rows(), title=f"posterior of {model.name}")
    diag = s.diagnostics
    report.text()
    report.text(f"{diag['chains']} chains x {diag['draws_per_chain']} draws in "
                f"{d.seconds:.2f} s, {d.n_gradient_evals} gradient evaluations; "
                f"divergences: {diag.get('divergences', 0)}, max-treedepth hits: "
                f"{diag.get('max_treedepth_hits', 0)}; step sizes: "
                + ", ".join(f"{x:.3g}" for x in diag.get("step_size", [])))
    for w in s.warnings:
        report.warn(w)
    if out is not None:
        save_draws(d, out, warmup=args.warmup)
        report.progress(f"draws written to {out}" if out.suffix.lower() != ".csv" else
                        "draws written to " + ", ".join(str(f) for f in
                                                        chain_files(out, d.n_chains)))
    report.emit_json({"model": model.name, **s.to_dict(),
                      "output": None if out is None else str(out)})
    return 0
