"""The package layout: moved modules keep their old import paths for one release (with a
DeprecationWarning), and no module grows past the size the layout allows."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

import stanlogz

# old path -> (new module, a name both must give)
MOVED = {
    "stanlogz.model": ("stanlogz.stan.model", "StanModel"),
    "stanlogz.target": ("stanlogz.densities.target", "Target"),
    "stanlogz.targets": ("stanlogz.densities.gaussian", "GaussianTarget"),
    "stanlogz.targets_exact": ("stanlogz.densities.testing", "spin_chain_log_z"),
    "stanlogz.bases": ("stanlogz.densities.fits", "gaussian_from_draws"),
    "stanlogz.mcmc.continuation": ("stanlogz.draws.continuation", "extend_draws"),
    "stanlogz.report.results": ("stanlogz.estimators.base", "EvidenceResult"),
    "stanlogz.bdmc": ("stanlogz.testbed", "run_testbed"),
}

#: Modules allowed above MAX_LINES, each with the reason.
LONG_MODULES: dict[str, str] = {}
MAX_LINES = 500


@pytest.mark.parametrize("old", sorted(MOVED))
def test_old_import_paths_warn_and_give_the_same_objects(old):
    new, name = MOVED[old]
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=f"{old} moved to "):
        mod = importlib.import_module(old)
    assert getattr(mod, name) is getattr(importlib.import_module(new), name)


def test_public_api_names_resolve():
    for name in stanlogz.__all__:
        assert getattr(stanlogz, name) is not None
    from stanlogz.api import load_model, read_data  # used by code written before the move
    from stanlogz.stan.inputs import read_data as moved_read_data
    from stanlogz.stan.load import load_model as moved_load_model

    assert read_data is moved_read_data and load_model is moved_load_model


def test_no_module_is_longer_than_the_layout_allows():
    root = Path(stanlogz.__file__).parent
    long = {str(p.relative_to(root)): sum(1 for _ in p.open())
            for p in root.rglob("*.py") if sum(1 for _ in p.open()) > MAX_LINES}
    assert set(long) <= set(LONG_MODULES), long
