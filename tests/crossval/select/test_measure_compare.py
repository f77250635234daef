"""Comparing programs on several measures at once (stanlogz.crossval.select.scores
.compare_measures): ranking by ``rank_by``, losses' differences on the utility scale, paired
se's against their definition and, by simulation, against closed-form expected differences of
the Brier score and the RPS; ``stanlogz compare --measure a,b,c --rank-by`` end to end and on
bad input.

Stochastic assertions state their failure probability and use fixed seeds.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from stanlogz.cli import main
from stanlogz.crossval.checks.measures import elpd_measure, loo_measures
from stanlogz.crossval.select.scores import compare_measures, parse_measures
from stanlogz.errors import InputError

EX = Path(__file__).resolve().parents[3] / "stan_models" / "examples"
DATA = EX / "regression.data.json"
ROBUST = EX / "regression_robust.stan"


def _known(p: np.ndarray, y: np.ndarray, names: list[str]):
    """Measures of fixed predicted probabilities ``p`` (constant draws: no Monte Carlo error)."""
    mu = np.tile(p, (4, 1))
    return loo_measures(np.zeros_like(mu), y, None, names, mu=mu)


def test_ranking_and_utility_scale_differences() -> None:
    y = np.array([1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 0.0])
    good = np.array([0.8, 0.3, 0.7, 0.6, 0.2, 0.4, 0.9, 0.1])
    poor = np.array([0.6, 0.5, 0.4, 0.6, 0.4, 0.6, 0.5, 0.5])
    elpd = [elpd_measure(np.log(np.where(y == 1, q, 1 - q))) for q in (good, poor)]
    per = [[e, *_known(q, y, ["brier", "acc"])] for e, q in zip(elpd, (good, poor),
                                                                strict=True)]
    c = compare_measures([per[1], per[0]], ["poor", "good"])
    assert c.rank_by == "elpd" and c.best == 1 and c.order() == [1, 0]
    b_good = np.mean((good - y) ** 2)
    b_poor = np.mean((poor - y) ** 2)
    j = c.measures.index("brier")
    # Brier is a loss: its diff is −(poor − good) < 0, worse is negative as for elpd
    assert c.diff[0, j] == pytest.approx(-(b_poor - b_good)) and c.diff[0, j] < 0
    d = (good - y) ** 2 - (poor - y) ** 2
    assert c.diff_se[0, j] == pytest.approx(np.std(d, ddof=1) / math.sqrt(8))
    k = c.measures.index("elpd")
    assert c.diff[0, k] == pytest.approx(elpd[1].estimate - elpd[0].estimate)
    assert c.diff_se[0, k] == pytest.approx(
        math.sqrt(8 * np.var(elpd[1].pointwise - elpd[0].pointwise, ddof=1)))
    assert c.diff[1].tolist() == [0.0, 0.0, 0.0] and c.diff_se[1].tolist() == [0.0] * 3
    assert c.to_dict()["sign_converted"] == ["brier"]
    rows = c.table()
    assert len(rows) == 6 and [r[0] for r in rows[:2]] == ["good", "poor"]
    # ranked by a loss: the lower Brier is on top
    by_brier = compare_measures(per, ["good", "poor"], rank_by="brier")
    assert by_brier.best == 0 and by_brier.order() == [0, 1]


def test_paired_se_of_brier_and_rps_differences_covers_the_truth() -> None:
    # Binary: y ~ Bernoulli(p_i); A predicts p_i, B shrinks it to 0.5 + 0.6 (p_i − 0.5).
    # Ordinal (4 categories, weighted-category draws): y ~ pmf; A predicts the pmf, B a flatter
    # one. Truths: expectations over y of the pointwise values, in closed form.
    rng = np.random.default_rng(31)
    n, sims = 40, 600
    p = rng.uniform(0.1, 0.9, size=n)
    q = 0.5 + 0.6 * (p - 0.5)
    true_brier = -np.mean(p * ((1 - q) ** 2 - (1 - p) ** 2) + (1 - p) * (q**2 - p**2))
    pmf = np.array([0.1, 0.4, 0.3, 0.2])
    flat = 0.5 * pmf + 0.5 * np.full(4, 0.25)
    cats = np.arange(1.0, 5.0)
    draws = np.tile(cats[:, None], (1, n))

    def rps_of(f: np.ndarray, yy: np.ndarray) -> np.ndarray:
        return loo_measures(np.tile(np.log(f)[:, None], (1, yy.size)), yy,
                            np.tile(cats[:, None], (1, yy.size)), ["rps"])[0].pointwise

    true_rps = -float(pmf @ (rps_of(flat, cats) - rps_of(pmf, cats)))
    hits_b = hits_r = 0
    for _ in range(sims):
        y = (rng.uniform(size=n) < p).astype(float)
        c = compare_measures([_known(p, y, ["brier"]), _known(q, y, ["brier"])], ["a", "b"],
                             rank_by="brier")
        d = c.diff[1, 0] if c.best == 0 else -c.diff[0, 0]      # B minus A, utility scale
        hits_b += abs(d - true_brier) <= 2 * max(c.diff_se[:, 0])
        yo = rng.choice(cats, size=n, p=pmf)
        lw_a, lw_b = (np.tile(np.log(f)[:, None], (1, n)) for f in (pmf, flat))
        r = compare_measures([loo_measures(lw_a, yo, draws, ["rps"]),
                              loo_measures(lw_b, yo, draws, ["rps"])], ["a", "b"])
        d = r.diff[1, 0] if r.best == 0 else -r.diff[0, 0]
        hits_r += abs(d - true_rps) <= 2 * max(r.diff_se[:, 0])
    # measured here: 0.922 (Brier) and 0.908 (RPS), below the nominal 0.954 at N = 40 with
    # skewed 0/1 and 1..4 outcomes; a coverage of ~0.91 over 600 sims has binomial sd 0.012,
    # so 0.86 is > 4 sd below it (P < 1e-4 each); a lost pairing (unpaired se, 2-3x larger)
    # would push both to ~1, and the upper bound catches it
    assert 0.86 <= hits_b / sims <= 0.985 and 0.86 <= hits_r / sims <= 0.985, (hits_b, hits_r)


def test_bad_measure_lists_and_mismatches() -> None:
    assert parse_measures("elpd, rps,acc") == ["elpd", "rps", "acc"]
    for bad in ("elpd,elpd", "rps,nope", ""):
        with pytest.raises(InputError, match="measures must be distinct names"):
            parse_measures(bad)
    y = np.array([1.0, 0.0, 1.0])
    a = _known(np.array([0.7, 0.2, 0.6]), y, ["brier"])
    with pytest.raises(InputError, match="rank_by 'acc' is not among"):
        compare_measures([a, a], ["x", "y"], rank_by="acc")
    with pytest.raises(InputError, match="was scored on"):
        compare_measures([a, _known(np.array([0.7, 0.2, 0.6]), y, ["acc"])], ["x", "y"])
    with pytest.raises(InputError, match="at least two programs"):
        compare_measures([a], ["x"])


@pytest.mark.stan
def test_cli_compare_on_several_measures(compiled, capsys) -> None:
    robust = str(ROBUST)
    compiled(ROBUST, DATA)
    rc = main(["--json", "--quiet", "--seed", "4", "compare", robust, robust, "--data",
               str(DATA), "--loo", "--yrep", "y_rep", "--metrics", "--crps", "--measure",
               "elpd,crps,mse,rps", "--rank-by", "rps", "--chains", "2", "--warmup", "200",
               "--draws", "200"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    res = json.loads(out)
    mc = res["measure_comparison"]
    assert mc["rank_by"] == "rps" and mc["sign_converted"] == ["mse", "rps"]
    top = mc["measures"]["rps"][0]
    assert top["diff"] == 0.0 and mc["best"] == top["name"]
    loo = {m["name"]: m for m in res["loo"]["models"]}
    for name, ch in res["checks"].items():
        by = {m: next(r for r in mc["measures"][m] if r["name"] == name)
              for m in ("elpd", "crps", "mse")}
        # the same LOO weights as the predictive checks: CRPS equal, MSE = RMSE²
        assert by["crps"]["estimate"] == pytest.approx(ch["crps"]["crps"], rel=1e-10)
        rmse = next(m["estimate"] for m in ch["metrics"] if m["metric"] == "rmse")
        assert by["mse"]["estimate"] == pytest.approx(rmse**2, rel=1e-10)
        assert by["mse"]["mcse"] > 0 and by["elpd"]["se"] > 0
        assert by["elpd"]["estimate"] == pytest.approx(loo[name]["elpd_loo"], rel=1e-12)
        assert by["elpd"]["se"] == pytest.approx(loo[name]["se"], rel=1e-10)


@pytest.mark.parametrize("argv, message", [
    (["--loo", "--measure", "elpd,nope"], "measures must be distinct names"),
    (["--loo", "--yrep", "y_rep", "--measure", "rps", "--rank-by", "acc"],
     "--rank-by acc must be one of"),
    (["--loo", "--measure", "rps,acc"], "--score rps,acc needs --yrep"),
])
def test_cli_measure_bad_input(capsys, argv, message) -> None:
    rc = main(["--quiet", "compare", str(ROBUST), str(ROBUST), "--data", str(DATA), *argv])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and message in err, err


@pytest.mark.stan
def test_cli_loo_reports_measures_beside_elpd(compiled, capsys) -> None:
    robust = str(ROBUST)
    compiled(ROBUST, DATA)
    rc = main(["--json", "--quiet", "--seed", "5", "loo", robust, "--data", str(DATA),
               "--yrep", "y_rep", "--metrics", "--crps", "--measure", "crps,mse,rps",
               "--chains", "2", "--warmup", "200", "--draws", "200"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    res = json.loads(out)
    ms, ch = res["measures"], res["checks"]
    assert list(ms) == ["crps", "mse", "rps"] and ms["rps"]["loss"] and not ms["crps"]["loss"]
    # the same LOO weights as the predictive checks: CRPS equal, MSE = RMSE², RPS = −CRPS here
    # (a continuous outcome: loo's RPS is CRPS with the bias-corrected E|X − X'|, a relative
    # difference of about 1/S' for S' effective draws)
    assert ms["crps"]["estimate"] == pytest.approx(ch["crps"]["crps"], rel=1e-10)
    rmse = next(m["estimate"] for m in ch["metrics"] if m["metric"] == "rmse")
    assert ms["mse"]["estimate"] == pytest.approx(rmse**2, rel=1e-10)
    assert ms["rps"]["estimate"] == pytest.approx(-ms["crps"]["estimate"], rel=0.05)
    assert all(m["se"] > 0 and m["mcse"] > 0 for m in ms.values())
    assert all(m["se_calibrated"] >= m["se"] for m in ms.values())   # floored at loo's


@pytest.mark.parametrize("argv, message", [
    (["--measure", "rps"], "--measure needs the Stan program, --yrep NAME"),
    (["--yrep", "y_rep", "--measure", "rps,nope"], "measures must be distinct names"),
])
def test_cli_loo_measure_bad_input(capsys, argv, message) -> None:
    rc = main(["--quiet", "loo", str(ROBUST), "--data", str(DATA), *argv])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and message in err, err
