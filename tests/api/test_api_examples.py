"""The Examples sections of the public API's docstrings run and print what they show."""

from __future__ import annotations

import doctest
from pathlib import Path

import pytest

import stanlogz.api

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.stan
def test_api_docstring_examples(monkeypatch):
    monkeypatch.chdir(ROOT)  # the examples use the repository's paths
    failed, tried = doctest.testmod(stanlogz.api, optionflags=doctest.ELLIPSIS)
    assert tried >= 6 and failed == 0
