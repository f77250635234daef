"""One name per quantity: every alias (loo's, ArviZ's, bridgesampling's name) returns exactly its
canonical attribute's value, and the naming table of the docs lists every alias next to it."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import stanlogz
from stanlogz._util.display import Alias, alias

ROOT = Path(__file__).resolve().parents[2]
NAMING = ROOT / "docs" / "naming.md"


def all_aliases() -> list[tuple[str, str, Alias]]:
    """``(class, alias name, property)`` for every alias in the package."""
    out = []
    for info in pkgutil.walk_packages(stanlogz.__path__, "stanlogz."):
        if ".toolchain" in info.name:
            continue
        mod = importlib.import_module(info.name)
        for cname, cls in inspect.getmembers(mod, inspect.isclass):
            if cls.__module__ == mod.__name__:
                out += [(cname, k, v) for k, v in vars(cls).items() if isinstance(v, Alias)]
    return out


ALIASES = all_aliases()


def test_the_walk_finds_the_aliases():
    names = {k for _, k, _ in ALIASES}
    assert {"pareto_k", "loo_i", "se_diff", "dse", "logml", "looic", "se_looic"} <= names


@pytest.mark.parametrize(("cls", "name", "prop"), ALIASES, ids=lambda x: getattr(
    x, "canonical", x))
def test_an_alias_returns_its_canonical_value(cls, name, prop):
    value = np.float64(3.0)  # integer-valued: an int() cast (n_data_points) keeps it
    got = prop.fget(SimpleNamespace(**{prop.canonical: value}))
    expected = value if prop.scale is None else prop.scale * value
    assert got == expected, f"{cls}.{name} is not {prop.canonical}"


def test_a_transforming_alias_would_be_caught():
    bad = alias("se", "wrong", cast=lambda v: 2 * v)
    assert bad.fget(SimpleNamespace(se=1.25)) != 1.25  # what the test above compares


def test_aliases_on_a_real_loo_result():
    ll = np.random.default_rng(0).normal(-1.0, 0.3, size=(4, 100, 12))
    r = stanlogz.loo(ll)
    own = [(k, v) for cls in type(r).__mro__ for k, v in vars(cls).items()
           if isinstance(v, Alias)]
    assert own  # LooResult answers to loo's and ArviZ's names
    for name, prop in own:
        if prop.scale is None:
            assert np.array_equal(getattr(r, name), getattr(r, prop.canonical)), name
    assert r.looic == -2 * r.elpd_loo


def test_naming_table_lists_every_alias_beside_its_canonical_name():
    rows = [line for line in NAMING.read_text().splitlines() if line.startswith("| ")]
    missing = []
    for cls, name, prop in ALIASES:
        if prop.scale is not None:  # looic, kfoldic, se_looic: quantities of their own
            listed = any(re.search(rf"`{name}`", r) for r in rows)
        else:
            listed = any(re.search(rf"`{name}`", r) and re.search(rf"`{prop.canonical}`", r)
                         for r in rows)
        if not listed:
            missing.append(f"{cls}.{name} -> {prop.canonical}")
    assert not missing, missing


def test_compare_takes_loo_as_the_former_name_of_with_loo():
    """``compare(loo=...)`` shadowed :func:`stanlogz.loo`; ``with_loo`` is the name, ``loo=`` is
    still accepted and means the same, and the naming table lists it."""
    from stanlogz.errors import InputError

    params = inspect.signature(stanlogz.compare).parameters
    assert "with_loo" in params and "loo" not in params
    rows = [r for r in NAMING.read_text().splitlines() if r.startswith("| ") and "`with_loo" in r]
    assert len(rows) == 1 and "`loo=True` (former name" in rows[0]
    # by LOO without the evidence, bma weights are refused for want of the evidence ...
    for kw in ({"loo": True}, {"with_loo": True}):
        with pytest.raises(InputError, match="bma weights need the evidence"):
            stanlogz.compare(["a.stan", "b.stan"], use_evidence=False, weights="bma", **kw)
    # ... and without LOO there is nothing to compare at all
    with pytest.raises(InputError, match="nothing to compare"):
        stanlogz.compare(["a.stan", "b.stan"], use_evidence=False, weights="bma", loo=False)
