"""The README and the documentation pages: short README, every file they name exists, every
``stanlogz`` command line they show parses with the real parser (so they cannot drift from
``--help``), and the docs index picks up every feature page."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from stanlogz.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def _command_lines(text: str) -> list[str]:
    """``stanlogz ...`` command lines of code blocks (indented, or after ``$ ``), with
    backslash continuations joined."""
    text = re.sub(r"\\\n\s*", " ", text)
    out = []
    for line in text.splitlines():
        m = re.match(r"^\s*(?:\$ )?(stanlogz(?: [^#`]*)?)", line)
        if m and (line.startswith("    ") or line.lstrip().startswith("$ ")):
            # the stanlogz command only: not what a shell pipe or redirect adds after it
            out.append(re.split(r"\s(?:\||>|2>|&&|;)\s", m.group(1))[0].strip())
    return out


def test_readme_is_short() -> None:
    assert len((ROOT / "README.md").read_text().splitlines()) <= 150


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_named_files_exist(page: Path) -> None:
    text = page.read_text()
    # the package's and the tests' files too: a page must follow a module or test that moves
    named = re.findall(
        r"\b((?:stan_models|examples|benchmarks|tests|stanlogz)/[\w./-]+"
        r"\.(?:stan|jsonl|ndjson|json|py))\b", text)
    missing = [p for p in named if not (ROOT / p).is_file()]
    assert not missing, missing


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_command_lines_parse(page: Path) -> None:
    parser = build_parser()
    lines = _command_lines(page.read_text())
    for line in lines:
        argv = shlex.split(line)[1:]
        if argv in (["--version"], ["--help"]) or any(
                "[" in a or re.match(r"^[A-Z][A-Z_]*\.", a) for a in argv):
            continue  # synopses with placeholders (MODEL.stan, [--k K]) are not examples
        try:
            parser.parse_args(argv)
        except SystemExit as exc:  # a usage error: the page shows an option that does not exist
            raise AssertionError(f"{page.name}: {line!r} does not parse") from exc


def test_readme_shows_runnable_commands() -> None:
    lines = _command_lines((ROOT / "README.md").read_text())
    assert len(lines) >= 6 and any(" loo " in f" {x} " for x in lines)


def test_index_places_every_page_in_a_task_section() -> None:
    # the site is organized by task: no page left out, no glob section of past changes
    index = (ROOT / "docs" / "index.md").read_text()
    listed = set()
    for block in re.findall(r"```\{toctree\}\n(.*?)```", index, re.S):
        listed |= {line.strip() for line in block.splitlines()
                   if line.strip() and not line.startswith(":")}
    assert ":glob:" not in index and "Features" not in index
    pages = {str(p.relative_to(ROOT / "docs").with_suffix(""))
             for p in (ROOT / "docs").rglob("*.md") if "_build" not in p.parts}
    unplaced = sorted(pages - listed - {"index"})
    assert not unplaced, f"add these pages to a task section of docs/index.md: {unplaced}"
    conf = (ROOT / "docs" / "conf.py").read_text()
    assert "sphinxarg.ext" in conf and "myst_nb" in conf


def test_ci_executes_the_tutorials_and_a_failing_cell_fails_the_build() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    build = [line for line in ci.splitlines() if "sphinx" in line and not line.startswith("#")]
    assert build and "-W" in build[0] and "nb_execution_mode=force" in build[0]
    assert "nb_execution_mode=off" not in ci
    conf = (ROOT / "docs" / "conf.py").read_text()
    assert re.search(r"^nb_execution_raise_on_error = True$", conf, re.M)
    readme = (ROOT / "README.md").read_text()
    assert "sphinx-build -W -b html docs docs/_build/html" in readme


def test_tutorials_use_no_private_plot_modules() -> None:
    # the public plots are stanlogz.report's; a tutorial teaches what a user should import
    for page in sorted((ROOT / "docs" / "tutorials").glob("*.md")):
        text = page.read_text()
        assert "stanlogz.report" in text or "plt." in text, f"{page.name} has no plot"
        bad = re.findall(r"from stanlogz\.(?:crossval|estimators)\.\S*plot\S* import", text)
        assert not bad, (page.name, bad)
