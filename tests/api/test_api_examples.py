"""The Examples sections of the public API's docstrings run and print what they show."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: modules whose docstring examples build or run a Stan program (from the repository root)
WITH_STAN = ["stanlogz.api", "stanlogz.crossval.psis_loo.loo", "stanlogz.draws.sample",
             "stanlogz.draws.stancsv", "stanlogz.draws.obtain",
             "stanlogz.crossval.psis_loo.mixture_loo", "stanlogz.crossval.refit.heldout",
             "stanlogz.bayes_factors.sensitivity", "stanlogz.testbed.run"]
#: modules whose examples need no program
PURE = ["stanlogz.report.plotting", "stanlogz.draws.summary", "stanlogz.crossval.names",
        "stanlogz.draws.convert", "stanlogz.crossval.observations.jacobian",
        "stanlogz.estimators.ups.ups", "stanlogz.estimators.annealing.ais",
        "stanlogz.crossval.psis_loo.waic", "stanlogz.crossval.select.compare",
        "stanlogz.crossval.psis_loo.result"]


def _run(name: str) -> tuple[int, int]:
    failed, tried = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    return failed, tried


@pytest.mark.stan
@pytest.mark.parametrize("name", WITH_STAN)
def test_examples_with_a_program(name, monkeypatch):
    monkeypatch.chdir(ROOT)  # the examples use the repository's paths
    failed, tried = _run(name)
    assert tried >= 2 and failed == 0


@pytest.mark.parametrize("name", PURE)
def test_examples_without_a_program(name):
    failed, tried = _run(name)
    assert tried >= 2 and failed == 0
