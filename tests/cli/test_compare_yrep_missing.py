"""``compare --loo --yrep NAME --pit`` where one program lacks the ``--yrep`` quantity: one
line naming that program, exit status 2, before anything is built or sampled (the programs'
generated quantities are read from their text)."""

from __future__ import annotations

from pathlib import Path

import pytest

import stanlogz.commands.compare
from stanlogz.cli import main

EX = Path(__file__).resolve().parents[2] / "stan_models" / "examples"
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


def test_a_program_whose_checks_fail_is_one_line_and_the_others_are_shown(monkeypatch,
                                                                           capsys):
    """A program that passes the text check but whose draws lack the quantity (e.g. declared
    in a local block): its checks are one warning, the other programs' PIT still shown."""
    import argparse
    from types import SimpleNamespace

    import numpy as np

    from stanlogz.crossval.checks.checks import PredictiveChecks
    from stanlogz.errors import InputError
    from stanlogz.report.output import Reporter

    def checks_for_loo(result, model, data, draws, args, *, seed=None):
        if model == "b":
            raise InputError("no generated quantity 'y_rep' in the draws of b")
        return PredictiveChecks("y_rep", "y", pit=np.array([0.25, 0.5, 0.75]))

    monkeypatch.setattr(stanlogz.commands.compare, "checks_for_loo", checks_for_loo)
    c = SimpleNamespace(names=["a", "b"], order=lambda: [0, 1],
                        fits=[("a", {}, None), ("b", {}, None)],
                        loo=SimpleNamespace(results=[None, None]))
    args = argparse.Namespace(seed=1)
    out = stanlogz.commands.compare.program_checks(Reporter(), c, args, None)
    err = capsys.readouterr().err
    assert out["a"]["pit"] == [0.25, 0.5, 0.75]
    assert out["b"] == {"error": "no generated quantity 'y_rep' in the draws of b"}
    assert err == ("stanlogz: warning: b: no predictive checks: no generated quantity "
                   "'y_rep' in the draws of b\n")
    c.names, c.fits = ["b", "b"], [("b", {}, None), ("b", {}, None)]
    with pytest.raises(InputError, match="no program could be checked"):
        stanlogz.commands.compare.program_checks(Reporter(), c, args, None)
