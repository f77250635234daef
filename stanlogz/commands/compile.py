"""``stanlogz compile MODEL.stan``: build a Stan program and list its parameters."""

from __future__ import annotations

import argparse

from ..evidence import check_stan_file, read_data
from ..report import Reporter

NAME = "compile"
HELP = "Build a Stan program (stanc + C++) into a cached library and list its parameters."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", metavar="MODEL.stan", help="Stan program")
    parser.add_argument("--data", metavar="DATA.json", default=None,
                        help="data (needed to list parameters of programs with a data block)")


def run(args: argparse.Namespace, report: Reporter) -> int:
    from ..model import StanModel

    path = check_stan_file(args.model)
    data = read_data(args.data)
    model = StanModel.from_file(path, data, seed=args.seed, progress=report.progress)
    names = list(model.param_names())
    unc = list(model.param_unc_names())
    report.text(f"model:      {model.name}")
    report.text(f"stan file:  {model.stan_file}")
    report.text(f"library:    {model.lib_path}")
    report.text(f"dimension:  {model.dim} (unconstrained)")
    report.text(f"parameters: {', '.join(names) if names else '(none)'}")
    report.emit_json({
        "model": model.name,
        "stan_file": str(model.stan_file),
        "lib_path": str(model.lib_path),
        "dim": model.dim,
        "param_names": names,
        "param_unc_names": unc,
    })
    return 0
