"""The corpus runner's bookkeeping (benchmarks/corpus.py): how a command's exit status, JSON and
stderr are classified, how posteriordb names map to stanlogz's, and the z of a posterior mean
against a reference. Pure Python: no corpus and no Stan program needed."""

from __future__ import annotations

import math

import pytest

from benchmarks import corpus as C
from stanlogz.errors import Route


def _err(*routes: Route) -> dict:
    """The JSON error object of a refusal carrying ``routes``, as ``stanlogz --json`` prints."""
    return {"error": "x", "kind": "error", "exit_status": 2,
            "routes": [r.to_dict() for r in routes]}


def _run(rc: int, stderr: list[str], js: dict | None = None, timed_out: bool = False) -> dict:
    return {"rc": rc, "json": js, "stderr": stderr, "seconds": 1.0, "timed_out": timed_out}


def test_classify_answered_refused_failed_timeout_traceback():
    assert C.classify(_run(0, ["[ 1.0s] sampling"], {"parameters": []}))["status"] == "answered"
    refused = C.classify(_run(2, ["stanlogz: error: several possible observation sizes (N: y; "
                                  "K: a); choose the size with --obs (e.g. --obs N)"],
                              _err(Route(options={"obs": "N"}))))
    assert refused["status"] == "refused" and refused["route"] == "--obs N"
    assert not refused["raw"]
    # the route is read from the error object, never from the text
    assert C.classify(_run(2, ["stanlogz: error: x; use --obs-fields Y,X"],
                           _err(Route(options={"obs_fields": ["Y", "X"]}))))["route"] == \
        "--obs-fields Y X"
    assert C.classify(_run(2, ["stanlogz: error: x; use --obs-fields Y"]))["route"] is None
    no_route = C.classify(_run(2, ["stanlogz: error: the model failed"], _err()))
    assert no_route["status"] == "refused" and no_route["route"] is None
    raw = C.classify(_run(2, ["stanlogz: error: Exception: normal_lpdf: Scale parameter is 0, "
                              "but must be positive! (in 'model.stan', line 12, column 2)"]))
    assert raw["raw"] and raw["route"] is None
    assert C.classify(_run(1, ["stanlogz: internal error: ValueError: x (rerun with "
                               "--verbose for the traceback)"]))["status"] == "failed"
    assert C.classify(_run(1, ["Traceback (most recent call last):", "  File x", "KeyError: 1"])
                      )["status"] == "traceback"
    assert C.classify(_run(-15, ["[ 600s] moment matching"], timed_out=True))["status"] == \
        "timeout"
    assert C.classify(_run(-11, ["Segmentation fault"]))["status"] == "crashed"
    # an answer carries no error object, whatever the exit status
    assert C.classify(_run(0, [], {"error": "x"}))["status"] == "crashed"


def test_route_names_an_option_or_a_command():
    r = C.classify(_run(2, ["stanlogz: error: the data hold only scalars (k, n): compare such "
                            "programs by their evidence (stanlogz evidence for one program)"],
                        _err(Route("evidence"), Route("compare"))))
    assert r["route"] == "stanlogz evidence"
    r = C.classify(_run(2, ["stanlogz: error: no observation array holds one number per "
                            "observation (X): the pointwise log-likelihood needs a log_lik "
                            "generated quantity with one entry per observation"],
                        _err(Route(note="a log_lik generated quantity"))))
    assert r["route"] == "a log_lik generated quantity"


def test_flat_names_and_the_z_of_a_reference_mean():
    assert C.flat_name("theta[1]") == "theta.1" and C.flat_name("b[2, 3]") == "b.2.3"
    summary = {"parameters": [
        {"name": "mu", "mean": 1.1, "sd": 2.0, "mcse_mean": 0.03},
        {"name": "theta.2", "mean": -0.5, "sd": 1.0, "mcse_mean": float("nan"), "ess_bulk": 400},
    ]}
    reference = {"mu": {"mean": 1.0, "sd": 2.0, "draws": 10000},
                 "theta[2]": {"mean": -0.2, "sd": 1.0, "draws": 10000},
                 "sigma": {"mean": 1.0, "sd": 0.1, "draws": 10000}}
    z = C.reference_z(summary, reference)
    # mu: 0.1 / sqrt(0.03^2 + 4/10^4) = 2.774; theta[2]: -0.3 / sqrt(1/400 + 1e-4) = -5.883
    assert z["compared"] == 2 and z["missing"] == 1 and z["worst"] == "theta[2]"
    assert z["max_abs_z"] == pytest.approx(0.3 / math.sqrt(1 / 400 + 1e-4), rel=1e-12)
    assert C.reference_z(summary, {"tau": {"mean": 1, "sd": 1}})["max_abs_z"] is None


def test_the_table_counts_each_status_and_shows_the_route(tmp_path):
    records = [
        {"posterior": "a", "command": "loo", "status": "refused", "route": "--obs N",
         "raw": False, "message": "several sizes; use --obs N", "seconds": 3.0, "warnings": []},
        {"posterior": "a", "command": "sample", "status": "answered", "seconds": 12.0,
         "load": 3.5, "result": "max|z| 1.00", "warnings": ["w"]},
        {"posterior": "b", "command": "loo", "status": "refused", "route": None, "raw": True,
         "message": "Exception: bad", "seconds": 1.0, "warnings": []},
    ]
    text = C.table(records)
    assert "(route: `--obs N`)" in text  # a "|" inside a cell is written "/"
    assert "| a | sample | answered | 12 | 3.5 | max/z/ 1.00 | 1 |" in text
    assert "| b | loo | refused NO ROUTE RAW | 1 |  | Exception: bad | 0 |" in text  # no load
    assert text.splitlines()[-1] == "counts: answered 1, refused 1, refused NO ROUTE RAW 1"
    out = tmp_path / "r.json"
    C.save(out, records)
    assert C.load(out) == records and C.load(tmp_path / "none.json") == []


def test_evidence_is_marked_where_the_same_posteriors_draws_disagree():
    records = [
        {"posterior": "p", "command": "evidence", "status": "answered", "seconds": 5.0,
         "json": {"log_z": -3.5, "log_z_se": 0.01, "method": "gbs",
                  "warnings": ["parameter s has no prior (stanc --warn-pedantic): ..."]}},
        {"posterior": "p", "command": "sample", "status": "answered", "seconds": 5.0,
         "reference_z": {"max_abs_z": 6.25, "worst": "s", "compared": 2, "missing": 0}},
        {"posterior": "q", "command": "evidence", "status": "answered", "seconds": 5.0,
         "json": {"log_z": -1.0, "log_z_se": 0.02, "method": "gbs", "warnings": []}},
        {"posterior": "q", "command": "sample", "status": "answered", "seconds": 5.0,
         "reference_z": {"max_abs_z": 1.5, "worst": "s", "compared": 2, "missing": 0}},
    ]
    lines = C.table(records).splitlines()
    p_line = next(ln for ln in lines if ln.startswith("| p | evidence"))
    q_line = next(ln for ln in lines if ln.startswith("| q | evidence"))
    assert "log Z -3.500 ± 0.010 (gbs)" in p_line and "sample max abs z 6.2" in p_line
    assert "1 parameter(s) without a prior" in p_line
    assert "disagree" not in q_line and "prior" not in q_line


def test_the_route_of_a_refusal_as_a_command_line():
    def route_of(*routes: Route, command: str = "loo") -> tuple[str, list[str]] | None:
        return C.route_of(_err(*routes)["routes"], command)

    assert route_of(Route(options={"obs": "n1"})) == ("loo", ["--obs", "n1"])
    assert route_of(Route("kfold", {"obs": "n_dogs"})) == ("kfold", ["--obs", "n_dogs"])
    assert route_of(Route("lfo", {"obs": "N_t", "min_train": 18}, note="for a time series")) \
        == ("lfo", ["--obs", "N_t", "--min-train", "18"])
    assert route_of(Route("evidence"), Route("compare")) == ("evidence", [])
    budget = (Route(options={"warmup": 250, "draws": 250}, note="(about 5 min here)"),
              Route(options={"time_budget": "27m"}, note="for the whole run"))
    assert route_of(*budget, command="sample") == ("sample",
                                                   ["--warmup", "250", "--draws", "250"])
    assert C.classify(_run(2, ["stanlogz: error: x"], _err(*budget)))["route"] == \
        "--warmup 250 --draws 250"
    assert route_of(Route(options={"subsample": 100})) == ("loo", ["--subsample", "100"])
    # a change to the program, an option without its value and the runner's own budget are
    # not command lines to follow
    assert route_of(Route(note="a log_lik generated quantity")) is None
    assert route_of(Route(options={"cond_budget": ...})) is None
    assert route_of(budget[1]) is None


def test_every_command_runs_under_a_time_budget_inside_the_limit():
    argv = C.command_line("loo", C.CORPUS / "x", seed=3, budget=555.0, extra=["--obs", "N"])
    i = argv.index("--time-budget")
    assert argv[i + 1] == "555" and argv.index("loo") > i and argv[-2:] == ["--obs", "N"]
    assert C.BUDGET_MARGIN_S < 60


def test_route_rows_follow_their_posterior_and_are_counted_apart():
    records = [
        {"posterior": "a", "command": "loo → route", "status": "answered", "seconds": 9.0,
         "route_argv": "stanlogz loo --obs N", "result": "elpd_loo -1.00", "warnings": []},
        {"posterior": "b", "command": "sample", "status": "answered", "seconds": 2.0,
         "result": "ok", "warnings": []},
        {"posterior": "a", "command": "loo", "status": "refused", "message": "use --obs N",
         "route": "--obs N", "seconds": 3.0, "warnings": []},
        {"posterior": "a", "command": "sample", "status": "answered", "seconds": 2.0,
         "result": "ok", "warnings": []},
    ]
    rows = [ln for ln in C.table(records).splitlines() if ln.startswith("| a") or
            ln.startswith("| b")]
    assert [r.split(" | ")[1] for r in rows] == ["sample", "loo", "loo → route", "sample"]
    assert "| `stanlogz loo --obs N`: elpd_loo -1.00 |" in rows[2]
    lines = C.table(records).splitlines()
    assert lines[-2:] == ["counts: answered 2, refused 1", "routes followed: answered 1"]


def test_kfold_and_lfo_routes_show_their_elpd():
    rec = {"json": {"elpd_kfold": -275.94, "se": 21.77, "mcse": 0.058, "k": 10}}
    assert C.result_text("kfold", rec) == "elpd_kfold -275.94 ± 21.77 (mc se 0.06); 10 folds"
    rec = {"json": {"elpd_lfo": -10.5, "se": 2.0, "mcse": 0.1, "method": "exact"}}
    assert C.result_text("lfo", rec) == "elpd_lfo -10.50 ± 2.00 (mc se 0.10); exact method"


def test_a_second_route_replaces_the_options_it_names_again():
    assert C.merge_options(["--obs", "n1", "--warmup", "150", "--draws", "150"],
                           ["--warmup", "100", "--draws", "100"]) == \
        ["--obs", "n1", "--warmup", "100", "--draws", "100"]
    assert C.merge_options([], ["--subsample", "100"]) == ["--subsample", "100"]
