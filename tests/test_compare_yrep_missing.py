"""``compare --loo --yrep NAME --pit`` where one program lacks the ``--yrep`` quantity: one
line naming that program, exit status 2, before anything is built or sampled (the programs'
generated quantities are read from their text)."""

from __future__ import annotations

from pathlib import Path

import pytest

import stanlogz.commands.compare
from stanlogz.cli import main

EX = Path(__file__).resolve().parents[1] / "stan_models" / "examples"
WITH = EX / "regression_robust.stan"  # declares y_rep in generated quantities
WITHOUT = EX / "regression_null.stan"  # has none
DATA = EX / "regression.data.json"


@pytest.mark.parametrize("checks", [["--pit"], ["--pit-plot", "pit.png"], ["--metrics"]])
def test_missing_yrep_is_refused_before_any_build(capsys, tmp_path, monkeypatch, checks):
    monkeypatch.chdir(tmp_path)

    def never(*args, **kwargs):
        raise AssertionError("compare() ran: the refusal must come before any build")

    monkeypatch.setattr(stanlogz.commands.compare, "compare", never)
    rc = main(["--quiet", "compare", str(WITH), str(WITHOUT), "--data", str(DATA), "--loo",
               "--yrep", "y_rep", *checks])
    captured = capsys.readouterr()
    assert rc == 2 and captured.out == ""
    assert captured.err.count("\n") == 1, captured.err
    assert "regression_null has no generated quantity 'y_rep'" in captured.err
    assert "regression_robust" not in captured.err  # only the program without it is named
    assert not list(tmp_path.glob("pit*"))
