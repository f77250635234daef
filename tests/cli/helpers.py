"""Command lines for every sub-command the parser registers, shared by the CLI tests."""

from __future__ import annotations

import argparse
from pathlib import Path

from stanlogz.cli import build_parser

SMALL = {"--chains": "1", "--warmup": "20", "--draws": "20", "--iter": "20",
         "--ais-chains": "2", "--temps": "5", "--budgets": "1", "--min-train": "2"}


def subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise AssertionError("the CLI has no sub-commands")


def argv_for(name: str, sub: argparse.ArgumentParser, program: Path, data: Path | None,
             fit: Path | None, extra: list[str]) -> list[str]:
    """A command line for ``name`` that gives every argument the hostile case's values."""
    argv = [name, "--quiet"]
    for action in sub._actions:
        opts = action.option_strings
        metavar = str(action.metavar or "")
        if not opts:
            n = 2 if action.nargs in ("+", "*") else 1
            argv += [str(program)] * n
        elif metavar.endswith(".stan") and action.required:
            argv += [opts[0], str(program)]
        elif metavar.startswith("DATA") or metavar.endswith("DATA.json"):
            if data is not None:
                argv += [opts[0], str(data)]
        elif opts[0] == "--fit" and fit is not None:
            argv += [opts[0], str(fit)]
            fit = None
        elif opts[0] in SMALL:
            argv += [opts[0], SMALL[opts[0]]]
    if fit is not None:  # no --fit: the draws file goes where the data would
        argv = [a if a != str(data) else str(fit) for a in argv]
    known = {o for a in sub._actions for o in a.option_strings}
    for i in range(0, len(extra), 2):
        if extra[i] in known:
            argv += extra[i:i + 2]
    return argv
