"""``stanlogz loo --group``: the JSON keys against the API's values (same seed), and flags
that do not apply to groups refused in one line before any computation."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from benchmarks.truths.crossval.truths import gaussian_heldout, hier_regression_cov
from stanlogz.cli import main

EX = Path(__file__).resolve().parents[3] / "stan_models" / "examples"
PROG, DATA = str(EX / "hier_regression.stan"), str(EX / "hier_regression.data.json")


def test_loo_group_json(capsys, compiled):
    compiled(EX / "hier_regression.stan", DATA)  # built once (the CLI finds it in the cache)
    rc = main(["loo", PROG, "--data", DATA, "--group", "g", "--seed", "3", "--json",
               "--quiet"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0
    data = json.loads(Path(DATA).read_text())
    cov, y = hier_regression_cov(data), np.asarray(data["y"])
    truth = sum(gaussian_heldout(y, cov, np.flatnonzero(np.asarray(data["g"]) == g))
                for g in range(1, 7))
    # PSIS estimate normal around the truth with sd its mc se: |z| < 3.9 fails w.p. 1e-4
    assert abs(out["elpd_logo"] - truth) < 3.9 * out["mcse_elpd_logo"]
    assert [p["group"] for p in out["pointwise"]] == list(range(1, 7))
    assert {"elpd", "mcse", "khat", "method", "integration", "integration_error"} <= set(
        out["pointwise"][0])
    assert sum(p["elpd"] for p in out["pointwise"]) == pytest.approx(out["elpd_logo"])
    assert len(out["observations"]) == 30 and out["observations"][0]["group"] == 1


@pytest.mark.parametrize("extra, needle", [
    (["--subsample", "5"], "--subsample does not apply to leave-one-group-out"),
    (["--fix", "mm"], "--fix must be auto, exact or none"),
    (["--log-lik", "difference"], "--log-lik does not apply"),
    (["--group", "county"], "--group county: no data variable named county"),
    (["--no-obs-values"], "--no-obs-values applies to --group only"),
])
def test_loo_group_refuses_in_one_line(capsys, extra, needle):
    argv = ["loo", PROG, "--data", DATA, *(["--group", "g"] if extra[0] != "--no-obs-values"
                                          else []), *extra]
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc != 0 and needle in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("argv", [
    ["loo", PROG, "--data", DATA, "--group", "county"],
    ["kfold", PROG, "--data", DATA, "--group", "county"],
    ["kfold", PROG, "--data", DATA, "--stratify", "county"],
])
def test_a_label_variable_the_data_lack_is_refused_before_the_program_loads(
        capsys, monkeypatch, tmp_path, argv):
    # an empty compile cache: were the program loaded first, its compile would print a
    # progress line (and take a minute) before the error
    monkeypatch.setenv("STANLOGZ_CACHE", str(tmp_path))
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc != 0 and err.strip().splitlines() == [
        f"stanlogz: error: {argv[-2]} county: no data variable named county"]
    models = tmp_path / "v1" / "models"  # nothing built there either
    assert not models.is_dir() or not any(models.iterdir())
