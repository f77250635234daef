"""Typed routes (:class:`stanlogz.errors.Route`): a refusal names the way forward once, and it
is said as flags on the command line and as keywords in Python; the error carries the routes,
and ``--json`` lists them in its error object. Pure Python: no Stan program is built."""

from __future__ import annotations

import json
import re

import pytest

from stanlogz._util import deadline
from stanlogz._util.deadline import OverBudget, time_budget
from stanlogz.cli import main
from stanlogz.crossval.observations.observations import find_observations
from stanlogz.errors import InputError, Route, option, speaking, voice

#: A command-line flag in a line (what a Python caller must never be told).
FLAG = re.compile(r"--[a-z][a-z-]+")


def test_a_route_renders_as_flags_and_as_keywords():
    r = Route("kfold", {"k": 10})
    assert (r.cli(), r.api(), r.argv()) == ("stanlogz kfold --k 10", "stanlogz.kfold(..., k=10)",
                                            ["kfold", "--k", "10"])
    fix = Route(options={"fix": "exact", "k_threshold": 0.5})
    assert (fix.cli(), fix.api()) == ("--fix exact --k-threshold 0.5",
                                      "fix='exact', k_threshold=0.5")
    # sampler settings go in settings=NutsArgs(...) in Python
    nuts = Route(options={"warmup": 300, "draws": 300})
    assert nuts.api() == "settings=NutsArgs(warmup=300, draws=300)"
    assert nuts.cli() == "--warmup 300 --draws 300"
    # a value that differs between the two (k=None is "--k groups"), lists, switches
    logo = Route("kfold", {"group": "g", "k": None}, cli_values={"k": "groups"})
    assert logo.cli() == "stanlogz kfold --group g --k groups"
    assert logo.api() == "stanlogz.kfold(..., group='g', k=None)"
    assert Route(options={"obs_fields": ["y", "x"]}).cli() == "--obs-fields y x"
    assert Route("compare", {"with_loo": True}).cli() == "stanlogz compare --loo"
    # the budget is a context manager in Python
    budget = Route(options={"time_budget": "27m"})
    assert (budget.cli(), budget.api()) == ("--time-budget 27m", "stanlogz.time_budget('27m')")
    # an argument named alone, and a change to the program (its note, in either voice)
    assert (option("obs_fields").cli(), option("obs_fields").api()) == ("--obs-fields",
                                                                        "obs_fields")
    assert option("adapt_delta").api() == "settings=NutsArgs(adapt_delta=...)"
    edit = Route(note="a log_lik generated quantity")
    assert str(edit) == "a log_lik generated quantity" and not edit.followable()
    assert not option("cond_budget").followable() and nuts.followable()


def test_the_voice_in_force_chooses_the_rendering_and_is_restored():
    r = Route("kfold", {"k": 10}, note="(10 refits)")
    assert voice() == "api" and f"{r}" == "`stanlogz.kfold(..., k=10)` (10 refits)"
    with speaking("cli"):
        assert f"{r}" == "`stanlogz kfold --k 10` (10 refits)"
        with speaking("api"):
            assert str(r).startswith("`stanlogz.kfold")
        assert voice() == "cli"
    assert voice() == "api"
    with pytest.raises(ValueError, match="voice"):
        with speaking("shell"):
            pass


def test_a_python_caller_of_time_budget_is_told_keywords_not_flags(clock):
    # 10 refits of 2000 iterations each; the first took 100 s of a 600 s budget: the rest would
    # take 900 s more, so the clock refuses. It names the iterations that fit in half the
    # budget (all 10 refits at 100 * 10 / 2000 = 0.5 s per iteration: 600 in 300 s, i.e.
    # warmup=300, draws=300) and the budget all of them need (1.3 * 1000 s + 10 s: 22 min)
    with time_budget(600):
        steps = deadline.StepsClock("held-out refits", 10, iterations=2000)
        clock.t += 100
        with pytest.raises(OverBudget) as info:
            steps.done()
    line = str(info.value)
    assert not FLAG.search(line), line
    assert line.endswith("run with settings=NutsArgs(warmup=300, draws=300) (about 5 min "
                         "here), or stanlogz.time_budget('22m') for all of them")
    fewer, whole = info.value.routes
    assert fewer.options == {"warmup": 300, "draws": 300}
    assert whole.options == {"time_budget": "22m"}
    # the same refusal on the command line names the flags
    with speaking("cli"), time_budget(600):
        steps = deadline.StepsClock("held-out refits", 10, iterations=2000)
        clock.t += 100
        with pytest.raises(OverBudget) as info:
            steps.done()
    assert str(info.value).endswith("run with --warmup 300 --draws 300 (about 5 min here), or "
                                    "--time-budget 22m for all of them")


def test_an_api_refusal_names_the_keyword_and_carries_the_route():
    data = {"N": 2, "M": 3, "w": [1.0, 2.0], "z": [1, 2, 3]}
    with pytest.raises(InputError) as info:
        find_observations(data)
    assert not FLAG.search(str(info.value))
    assert "choose the size of the observed values with obs (e.g. obs='N')" in str(info.value)
    assert info.value.routes == (Route(options={"obs": "N"}),)


def test_json_error_object_lists_the_routes(monkeypatch, capsys):
    routes = (Route(options={"subsample": 100}), Route(options={"time_budget": "6m"}))

    def refuse(args, report):
        raise InputError(f"too slow; run with {routes[0]}, or {routes[1]}", routes=routes)

    monkeypatch.setattr("stanlogz.commands.cache.run", refuse)
    assert main(["--json", "cache"]) == 2
    out, err = capsys.readouterr()
    obj = json.loads(out)
    assert obj["error"] == "too slow; run with --subsample 100, or --time-budget 6m"
    assert err.strip() == "stanlogz: error: " + obj["error"]
    assert [r["argv"] for r in obj["routes"]] == [["--subsample", "100"],
                                                  ["--time-budget", "6m"]]
    assert obj["routes"][0]["api"] == "subsample=100" and obj["routes"][0]["followable"]
    assert voice() == "api"  # the command line's voice ends with the command
