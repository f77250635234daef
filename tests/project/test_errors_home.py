"""Every exception class stanlogz defines lives in ``stanlogz/errors.py`` (issue 43), and that
module imports nothing from the package, so any floor may import it."""

from __future__ import annotations

import ast
import builtins
import sys
from pathlib import Path

import stanlogz.errors

PACKAGE = Path(stanlogz.errors.__file__).resolve().parent


def _exception_names() -> set[str]:
    """Python's own exception classes and every class of errors.py."""
    own = {n for n, v in vars(builtins).items()
           if isinstance(v, type) and issubclass(v, BaseException)}
    return own | {n for n, v in vars(stanlogz.errors).items()
                  if isinstance(v, type) and issubclass(v, BaseException)}


def _base_name(node: ast.expr) -> str:
    return node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")


def test_exception_classes_only_in_errors() -> None:
    names = _exception_names()
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "errors.py" and path.parent == PACKAGE:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ClassDef) and any(
                    _base_name(b) in names or _base_name(b).endswith(("Error", "Exception"))
                    for b in node.bases):
                found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {node.name}")
    assert found == [], "exception classes outside stanlogz/errors.py: " + ", ".join(found)


def test_errors_imports_nothing_from_the_package() -> None:
    tree = ast.parse((PACKAGE / "errors.py").read_text())
    imports = [n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)]
    # the standard library only (the Route dataclass and its voice): no relative import and
    # nothing of stanlogz, so every floor may import errors.py
    names = [a.name for n in imports if isinstance(n, ast.Import) for a in n.names] + [
        n.module or "" for n in imports if isinstance(n, ast.ImportFrom)]
    assert all(n.level == 0 for n in imports if isinstance(n, ast.ImportFrom))
    assert all(name.split(".")[0] in sys.stdlib_module_names for name in names), names


def test_the_moved_classes_keep_their_old_import_names() -> None:
    from stanlogz import OverBudget
    from stanlogz._util.deadline import BudgetSpent
    from stanlogz.crossval.observations.clock import PassBudget
    from stanlogz.crossval.observations.conditional import AmbiguousResponse, NotGaussian
    from stanlogz.crossval.observations.conditional_integral import NoConditional
    from stanlogz.crossval.observations.splitcheck import SplitError

    moved = [OverBudget, BudgetSpent, PassBudget, AmbiguousResponse, NotGaussian,
             NoConditional, SplitError]
    assert all(c.__module__ == "stanlogz.errors" for c in moved)
    assert all(issubclass(c, stanlogz.errors.InputError) for c in moved)
    assert issubclass(BudgetSpent, OverBudget)
    e = AmbiguousResponse("two arrays", ("y", "z"), "y")
    assert (str(e), e.fields, e.example) == ("two arrays", ("y", "z"), "y")
