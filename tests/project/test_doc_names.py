"""Every name the README and the documentation write must exist: each dotted ``stanlogz.*`` name
resolves (a module, or an attribute reached from one), and each ``stanlogz COMMAND ... --flag``
written in a page, in prose as well as in code, or in a message or docstring of the package's
own source (refusals that advise another command), is an option of that command's parser."""

from __future__ import annotations

import ast
import importlib
import re
from functools import cache
from pathlib import Path

import pytest

from stanlogz.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
SOURCES = sorted((ROOT / "stanlogz").rglob("*.py"))

#: a dotted name of the package, not a file name (``~/.cache/stanlogz``) or part of a longer one
_DOTTED = re.compile(r"(?<![\w./-])stanlogz(?:\.[A-Za-z_]\w*)+")
#: ``stanlogz CMD`` and what follows it on the same line, up to the end of the code span,
#: sentence part or shell pipe it is in
_COMMAND = re.compile(r"(?<![\w./-])stanlogz\s+([a-z][\w-]*)([^`\n|;)\]>]*)")
_FLAG = re.compile(r"(?<![\w-])(--[a-z][\w-]*)")


def dotted_names(text: str) -> list[str]:
    """The dotted ``stanlogz.*`` names written in ``text``, in order."""
    return [m.group(0) for m in _DOTTED.finditer(text)]


def resolves(name: str) -> bool:
    """Whether ``name`` is an importable module or an attribute reached from the longest
    importable module it starts with."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


@cache
def command_options() -> dict[str, frozenset[str]]:
    """Each sub-command's option strings (the global ones included), from the real parser."""
    parser = build_parser()
    top = {s for a in parser._actions for s in a.option_strings}
    sub = next(a for a in parser._actions if a.choices and "loo" in a.choices)
    return {name: frozenset(top | set(p._option_string_actions))
            for name, p in sub.choices.items()}


def command_flags(text: str) -> list[tuple[str, str]]:
    """``(command, --flag)`` for each flag written after ``stanlogz COMMAND`` in ``text`` (only
    for words that are sub-commands: ``stanlogz computes ...`` in prose is not a command)."""
    options = command_options()
    text = re.sub(r"\\\n\s*", " ", text)  # shell continuation lines
    out = []
    for m in _COMMAND.finditer(text):
        if m.group(1) in options:
            out.extend((m.group(1), f) for f in _FLAG.findall(m.group(2)))
    return out


def unknown_flags(text: str) -> list[str]:
    """``stanlogz COMMAND --flag`` for each flag in ``text`` that COMMAND does not accept."""
    options = command_options()
    return [f"stanlogz {cmd} {flag}" for cmd, flag in command_flags(text)
            if flag not in options[cmd]]


def string_literals(path: Path) -> str:
    """The string constants of a Python source file (adjacent literals joined, the literal parts
    of f-strings included), one per line."""
    tree = ast.parse(path.read_text(), filename=str(path))
    return "\n".join(node.value for node in ast.walk(tree)
                     if isinstance(node, ast.Constant) and isinstance(node.value, str))


def _rel(p: Path) -> str:
    return str(p.relative_to(ROOT))


@pytest.mark.parametrize("page", PAGES, ids=_rel)
def test_dotted_names_in_docs_resolve(page: Path) -> None:
    broken = sorted({n for n in dotted_names(page.read_text()) if not resolves(n)})
    assert not broken, f"{_rel(page)} names what does not exist: {broken}"


@pytest.mark.parametrize("page", PAGES, ids=_rel)
def test_flags_in_docs_exist(page: Path) -> None:
    bad = unknown_flags(page.read_text())
    assert not bad, f"{_rel(page)} shows options the command does not accept: {bad}"


def test_flags_in_messages_exist() -> None:
    bad = {_rel(p): unknown_flags(string_literals(p)) for p in SOURCES}
    bad = {k: v for k, v in bad.items() if v}
    assert not bad, f"messages advise options the command does not accept: {bad}"


def test_pages_name_things_at_all() -> None:
    # the walk finds what it checks (a regex that matched nothing would pass every page)
    text = "\n".join(p.read_text() for p in PAGES)
    assert len(set(dotted_names(text))) >= 50
    assert len(command_flags(text)) >= 100
    assert len(command_flags("\n".join(string_literals(p) for p in SOURCES))) >= 10


def test_checker_catches_a_broken_name_and_flag() -> None:
    text = ("Use `stanlogz.loo` and stanlogz.crossval.plots.plot_loo, "
            "then run `stanlogz kfold m.stan --data d.json --groups g` "
            "or `stanlogz loo m.stan --plot x.png`; files live in ~/.cache/stanlogz.x.")
    assert dotted_names(text) == ["stanlogz.loo", "stanlogz.crossval.plots.plot_loo"]
    assert [resolves(n) for n in dotted_names(text)] == [True, False]
    assert not resolves("stanlogz.no_such_module") and resolves("stanlogz.crossval.loo")
    assert unknown_flags(text) == ["stanlogz kfold --groups"]
    assert unknown_flags("stanlogz kfold m.stan --group g --k 5 --json") == []
    # prose that is not a command, and a flag of another tool after a pipe, are not checked
    assert unknown_flags("stanlogz computes --anything; stanlogz loo m.stan | jq --raw") == []


def test_checker_reads_message_literals(tmp_path: Path) -> None:
    src = tmp_path / "m.py"
    src.write_text('ADVICE = ("refit over groups "\n    "(stanlogz kfold --groups)")\n'
                   'x = f"{1} stanlogz loo --fix exact"\n')
    assert unknown_flags(string_literals(src)) == ["stanlogz kfold --groups"]
