"""``stanlogz sample`` summarizes the parameters only unless asked for every quantity (a program
with a per-observation log_lik printed thousands of summary lines)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

EX = Path(__file__).resolve().parents[2] / "stan_models" / "examples"
PROG, DATA = str(EX / "normal_mean.stan"), str(EX / "normal_mean.data.json")
SMALL = ["--chains", "2", "--warmup", "100", "--draws", "100"]


def test_sample_summarizes_parameters_unless_all_quantities(compiled, capsys, tmp_path):
    from stanlogz.cli import main

    compiled(PROG, DATA)  # build once per session
    nc = tmp_path / "d.nc"
    assert main(["--json", "--quiet", "--seed", "1", "sample", PROG, "--data", DATA, *SMALL,
                 "--output", str(nc)]) == 0
    rows = json.loads(capsys.readouterr().out)["parameters"]
    assert [r["name"] for r in rows] == ["mu"]
    import arviz as az

    assert az.from_netcdf(nc).log_likelihood["log_lik"].shape == (2, 100, 10)  # all saved
    assert main(["--json", "--quiet", "--seed", "1", "sample", PROG, "--data", DATA, *SMALL,
                 "--all-quantities"]) == 0
    every = json.loads(capsys.readouterr().out)["parameters"]
    names = [r["name"] for r in every]
    assert names[0] == "mu" and "log_lik.10" in names and "y_rep.10" in names
    assert len(names) == 21
    # the same seed gives the same draws: the restricted row is the full summary's row
    # (equal to rounding: the summary's sums run over a different set of columns)
    assert every[0].keys() == rows[0].keys() and every[0]["name"] == rows[0]["name"]
    assert all(np.isclose(every[0][k], rows[0][k], rtol=1e-12, atol=0)
               for k in rows[0] if k != "name")


def test_summary_keeps_every_column_when_the_names_match_none():
    from stanlogz.draws import Draws

    d = Draws(unconstrained=np.random.default_rng(0).standard_normal((2, 50, 2)),
              unc_names=["a", "b"])
    assert [r["name"] for r in d.summary(["mu"]).rows] == ["a", "b"]
    assert [r["name"] for r in d.summary(["b"]).rows] == ["b"]
