"""``compare --group`` / ``stanlogz.compare(..., group=)``: programs compared by elpd_logo
against the exact LOGO values of two conjugate hierarchical programs (hier_regression.stan with
every scale known, τ = 1 and τ = 0.1: Gaussian conditioning gives log p(y_g | y₋g) exactly).

Tolerances. Each program's estimate of a group value is asymptotically normal around the
truth with sd its Monte Carlo se (integration error ~1e-10 on this Gaussian program), so
|error_g| < 4.5 mcse_g fails with probability 7e-6 per group, under 1e-4 over the 12 group
values of a test. On that event:

* the difference's error is the sum of the two totals' independent errors: |z| < 3.9 of
  diff_mcse fails with probability 1e-4;
* the se over groups, sqrt(G) sd(d), moves by at most sqrt(G / (G − 1)) ‖δ‖₂ when the per-group
  differences move by δ (the sd is a seminorm: |sd(a) − sd(b)| ≤ sd(a − b) ≤ ‖a − b‖₂ /
  sqrt(G − 1)), and |δ_g| < 4.5 (mcse_g,A + mcse_g,B).

The seeds are fixed."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

import stanlogz
from benchmarks.truths.crossval.truths import gaussian_heldout, hier_regression_cov
from stanlogz.cli import main
from stanlogz.crossval.logo.result import LogoResult
from stanlogz.crossval.select.choose import ProgramChoice
from stanlogz.crossval.select.compare import LooComparison
from stanlogz.crossval.select.weights import stacking_objective, stacking_weights

EX = Path(__file__).resolve().parents[3] / "stan_models" / "examples"
PROG, DATA = EX / "hier_regression.stan", EX / "hier_regression.data.json"
Z_GROUP, Z_TOTAL = 4.5, 3.9


def _datas() -> list[dict]:
    d = json.loads(DATA.read_text())
    return [d, dict(d, tau=0.1)]


def _exact(d: dict) -> np.ndarray:
    cov, y, g = hier_regression_cov(d), np.asarray(d["y"]), np.asarray(d["g"])
    return np.array([gaussian_heldout(y, cov, np.flatnonzero(g == j)) for j in range(1, 7)])


def _check_difference(elpd_g: list[np.ndarray], mcse_g: list[np.ndarray], diff: float,
                      diff_se: float, diff_mcse: float) -> None:
    """Program 1 (τ = 0.1) against the best, program 0 (τ = 1)."""
    truth = [_exact(d) for d in _datas()]
    for e, m, t in zip(elpd_g, mcse_g, truth, strict=True):
        assert np.all(np.abs(e - t) < Z_GROUP * m)
    d_true = truth[1] - truth[0]
    assert d_true.sum() == pytest.approx(-5.489, abs=1e-3)  # below -4: p_worse is given
    assert abs(diff - d_true.sum()) < Z_TOTAL * diff_mcse
    g = d_true.size
    se_true = math.sqrt(g) * np.std(d_true, ddof=1)
    bound = math.sqrt(g / (g - 1)) * np.linalg.norm(Z_GROUP * (mcse_g[0] + mcse_g[1]))
    assert abs(diff_se - se_true) < bound
    assert bound < 0.1 * se_true  # the check has teeth: se_true is 6.71, the bound ~0.5


def test_compare_by_groups_against_exact_logo(compiled):
    datas = _datas()
    for d in datas:
        compiled(PROG, d)
    choice = stanlogz.compare([str(PROG), str(PROG)], datas, group="g", seed=11)
    assert isinstance(choice, ProgramChoice) and isinstance(choice.loo, LooComparison)
    c = choice.loo  # the one comparison, over the programs' leave-one-group-out results
    assert all(isinstance(r, LogoResult) for r in c.results)
    assert c.best == 0 and c.order() == [0, 1] and c.n_units == 6 and c.unit == "groups"
    assert c.header[1] == "elpd_logo" and c.table()[0][1] == c.results[0].elpd_logo
    assert c.elpd_diff[0] == 0.0 and c.diff_se[0] == 0.0 and c.diff_mcse[0] == 0.0
    _check_difference([r.elpd_g for r in c.results],
                      [np.array([g.mcse for g in r.groups]) for r in c.results],
                      float(c.elpd_diff[1]), float(c.diff_se[1]), float(c.diff_mcse[1]))
    assert c.diff_mcse[1] == pytest.approx(math.hypot(c.results[0].mcse_elpd_logo,
                                                      c.results[1].mcse_elpd_logo))
    # loo's conventions with groups as the units: |diff| >= 4 gives p_worse; 6 groups give
    # diag "N < 100", no calibrated interval and no k-hat of the differences
    assert c.p_worse[1] == pytest.approx(
        float(stanlogz.crossval.select.compare.p_worse(c.elpd_diff, c.diff_se)[1]))
    assert 0.7 < c.p_worse[1] < 0.9  # Φ(5.489 / 6.71) = 0.79 at the exact values
    assert c.diag_diff[1] == "N < 100" and np.all(np.isnan(c.diff_interval[1]))
    assert any("only 6 groups" in w for w in c.warnings())
    # stacking over groups: the per-group values are the pointwise values
    e = np.column_stack([r.elpd_g for r in c.results])
    w = choice.model_weights["stacking"].weights
    assert w == pytest.approx(stacking_weights(e, n_boot=0).weights, abs=1e-8)
    assert stacking_objective(w, e) >= max(e.sum(axis=0)) - 1e-9
    d = choice.to_dict()
    assert d["best"] == c.names[0] and d["logo"]["n_units"] == 6
    m = d["logo"]["models"]
    assert m[1]["elpd_logo"] == pytest.approx(c.results[1].elpd_logo)
    assert {"elpd_logo", "se", "elpd_diff", "diff_se", "diff_mcse", "diff_interval", "p_worse",
            "khat_diff", "diag_diff", "diag_elpd", "fixed", "warnings"} <= set(m[0])


def test_compare_group_cli_json(capsys, compiled, tmp_path):
    datas = _datas()
    for d in datas:
        compiled(PROG, d)
    second = tmp_path / "tau01.json"
    second.write_text(json.dumps(datas[1]))
    rc = main(["compare", str(PROG), str(PROG), "--data", str(DATA), str(second), "--group",
               "g", "--seed", "5", "--json", "--quiet"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["logo"]["scheme"] == "leave-one-group-out"
    assert out["logo"]["group"] == "g" and out["logo"]["unit"] == "groups"
    a, b = out["logo"]["models"]
    assert out["best"] == a["name"] and a["elpd_diff"] == 0.0
    _check_difference([np.array(a["elpd_g"]), np.array(b["elpd_g"])],
                      [np.array(a["mcse_g"]), np.array(b["mcse_g"])],
                      b["elpd_diff"], b["diff_se"], b["diff_mcse"])
    assert set(out["weights"]["stacking"]["weights"]) == {a["name"], b["name"]}
    assert sum(out["weights"]["stacking"]["weights"].values()) == pytest.approx(1.0)


@pytest.mark.parametrize("extra, needle", [
    (["--loo"], "--loo does not apply to compare --group"),
    (["--weights", "bma"], "bma needs the evidence"),
])
def test_compare_group_refuses_in_one_line(capsys, extra, needle):
    rc = main(["compare", str(PROG), str(PROG), "--data", str(DATA), "--group", "g", *extra])
    err = capsys.readouterr().err
    assert rc != 0 and needle in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
