"""House rules of the layout that a refactor could silently break: figures only in
:mod:`stanlogz.report`, one place that loads matplotlib."""

from __future__ import annotations

import re
from pathlib import Path

import stanlogz

PACKAGE = Path(stanlogz.__file__).parent


def _sources() -> dict[str, str]:
    return {str(p.relative_to(PACKAGE)): p.read_text() for p in PACKAGE.rglob("*.py")}


def test_matplotlib_is_imported_only_under_report():
    users = {name for name, text in _sources().items()
             if re.search(r"^\s*(import|from) matplotlib", text, re.M)}
    assert users == {"report/figures.py"}, users
    outside = {name for name, text in _sources().items()
               if "matplotlib" in text and not name.startswith("report/")}
    assert not outside, outside


def test_a_compiled_program_is_a_stan_program(compiled):
    from stanlogz.densities.gaussian import GaussianTarget
    from stanlogz.stan.program import StanProgram

    m = compiled("normal")
    assert isinstance(m, StanProgram) and isinstance(m.with_data(m.data_json), StanProgram)
    # a density that is no Stan program (no constrain, names, data instances, NUTS) is not one
    assert not isinstance(GaussianTarget([0.0], [[1.0]]), StanProgram)


def test_no_benchmark_adds_to_sys_path():
    bench = PACKAGE.parent / "benchmarks"
    assert (bench / "__init__.py").is_file() and (bench / "_common.py").is_file()
    touching = sorted(str(p.relative_to(bench)) for p in bench.rglob("*.py")
                      if "sys.path" in p.read_text())
    assert not touching, touching
