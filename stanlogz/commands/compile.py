"""``stanlogz compile MODEL.stan``: build a Stan program and list its parameters."""

from __future__ import annotations

import argparse

from ..report.output import Reporter
from ..stan.inputs import check_stan_file, read_data
from .arguments import add_data_argument

NAME = "compile"
HELP = "Build a Stan program (stanc + C++) into a cached library and list its parameters."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", metavar="MODEL.stan", help="Stan program")
    add_data_argument(parser, "data (needed to list parameters of programs with a data block)")


def run(args: argparse.Namespace, report: Reporter) -> int:
    from ..errors import DataError
    from ..stan.model import StanModel
    from ..toolchain import build

    path = check_stan_file(args.model)
    data = read_data(args.data)
    built = build(path, progress=report.progress)
    info: dict = {"model": built.name, "stan_file": str(path.resolve()),
                  "lib_path": str(built.lib_path), "built": built.built,
                  "build_seconds": built.seconds}
    report.text(f"model:      {built.name}")
    report.text(f"stan file:  {path.resolve()}")
    report.text(f"library:    {built.lib_path}")
    try:
        model = StanModel(built.lib_path, data, name=built.name, code=built.code,
                          stan_file=path.resolve(), seed=args.seed)
    except DataError:
        if data is not None:
            raise
        note = "the program needs data: pass --data DATA.json to list its parameters"
        report.text(f"parameters: ({note})")
        report.emit_json({**info, "dim": None, "param_names": None, "param_unc_names": None,
                          "note": note})
        return 0
    names = list(model.param_names())
    report.text(f"dimension:  {model.dim} (unconstrained)")
    report.text(f"parameters: {', '.join(names) if names else '(none)'}")
    report.emit_json({**info, "dim": model.dim, "param_names": names,
                      "param_unc_names": list(model.param_unc_names())})
    return 0
