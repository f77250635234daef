"""Comparing programs on any score (stanlogz.crossval.select.scores): paired se of CRPS and RMSE
differences against closed-form expected scores by simulation, the elpd sum's se, the
selection-bias warning and E[max of K normals], model-averaged draws against the mixture, and
``stanlogz compare --score / --averaged-draws`` end to end and on bad input.

Stochastic assertions state their failure probability (each <= 1e-4) and use fixed seeds.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from stanlogz.cli import main
from stanlogz.crossval.select.scores import (
    compare_scores,
    expected_max_normal,
    mix_counts,
    mix_draws,
    selection_warning,
)
from stanlogz.errors import InputError

EX = Path(__file__).resolve().parents[3] / "stan_models" / "examples"
DATA = EX / "regression.data.json"
ROBUST = EX / "regression_robust.stan"


def _crps_normal(mu: float, sd: float, y: np.ndarray) -> np.ndarray:
    """Positively oriented CRPS of N(mu, sd²) at y: ½ E|X − X'| − E|X − y| (closed form)."""
    z = (y - mu) / sd
    return sd / math.sqrt(math.pi) - sd * (z * (2 * stats.norm.cdf(z) - 1)
                                           + 2 * stats.norm.pdf(z))


def _expected_crps_normal(mu: float, sd: float) -> float:
    """E over y ~ N(0, 1) of the CRPS above: X − y ~ N(mu, sd² + 1)."""
    s = math.sqrt(sd**2 + 1)
    e_abs = s * math.sqrt(2 / math.pi) * math.exp(-mu**2 / (2 * s**2)) + mu * (
        1 - 2 * stats.norm.cdf(-mu / s))
    return sd / math.sqrt(math.pi) - e_abs


def test_paired_se_of_crps_and_rmse_differences_covers_the_truth() -> None:
    # predictive A = N(0, 1) (right), B = N(0.3, 1.2²); data y ~ N(0, 1), N = 40
    rng = np.random.default_rng(21)
    n, n_sims = 40, 1000
    true_crps = _expected_crps_normal(0.3, 1.2) - _expected_crps_normal(0.0, 1.0)
    true_rmse = math.sqrt(1 + 0.3**2) - 1.0
    hit_crps = hit_rmse = 0
    ratio = []
    for _ in range(n_sims):
        y = rng.normal(size=n)
        c = compare_scores([_crps_normal(0, 1, y), _crps_normal(0.3, 1.2, y)], ["a", "b"],
                           "crps")
        d = c.estimate[1] - c.estimate[0]
        hit_crps += abs(d - true_crps) <= 2 * max(c.diff_se)
        ratio.append(max(c.diff_se) / math.hypot(*c.se))
        r = compare_scores([y**2, (y - 0.3) ** 2], ["a", "b"], "rmse")
        d = r.estimate[1] - r.estimate[0]
        hit_rmse += abs(d - true_rmse) <= 2 * max(r.diff_se)
    # measured with 4000 sims: coverage 0.94 (CRPS) and 0.925 (RMSE); sd at 1000 sims <=
    # 0.0084, so 0.875 is >= 6 sd below (P < 1e-8 each)
    assert hit_crps / n_sims >= 0.875 and hit_rmse / n_sims >= 0.875
    # pairing matters: the paired se is on average 0.30 of the unpaired sqrt(se_a² + se_b²)
    # (4000 sims; per-set max 0.56), so the mean below 0.5 fails only if pairing is lost
    assert np.mean(ratio) < 0.5


def test_elpd_score_is_the_sum_with_paired_se() -> None:
    rng = np.random.default_rng(22)
    a = rng.normal(-1, 0.5, 30)
    b = a - 0.2 + rng.normal(0, 0.1, 30)  # worse by 6 +- 0.55 in sum
    c = compare_scores([a, b], ["a", "b"], "elpd")
    assert c.best == 0 and c.estimate == pytest.approx([a.sum(), b.sum()])
    assert c.diff[1] == pytest.approx(b.sum() - a.sum())
    assert c.diff_se[1] == pytest.approx(math.sqrt(30 * np.var(b - a, ddof=1)))
    assert c.se[0] == pytest.approx(math.sqrt(30 * np.var(a, ddof=1)))
    r = compare_scores([np.array([1.0, 4.0]), np.array([4.0, 9.0])], ["x", "y"], "rmse")
    assert r.best == 0 and r.estimate == pytest.approx([math.sqrt(2.5), math.sqrt(6.5)])
    # utility scale, as compare_measures: the worse program's diff is negative for a loss too
    assert r.diff[1] == pytest.approx(math.sqrt(2.5) - math.sqrt(6.5))
    assert [row[0] for row in r.table()] == ["x", "y"] and r.to_dict()["best"] == "x"
    with pytest.raises(InputError, match="unknown score"):
        compare_scores([a, b], ["a", "b"], "brier")
    with pytest.raises(InputError, match="same observations"):
        compare_scores([a, b[:10]], ["a", "b"], "crps")


def test_selection_warning_for_many_programs() -> None:
    assert expected_max_normal(2) == pytest.approx(1 / math.sqrt(math.pi), rel=1e-9)
    # E[max of 12 normals]: by Monte Carlo 1.629 (1e6 x 12 draws, se 0.0006)
    assert expected_max_normal(12) == pytest.approx(1.6292, abs=0.003)
    assert selection_warning(11, np.ones(10)) is None
    w = selection_warning(12, np.full(11, 2.0))
    assert w is not None and "12 programs" in w and "~3.26" in w
    rng = np.random.default_rng(23)
    vals = [rng.normal(-1, 0.3, 50) for _ in range(12)]
    assert any("12 programs" in m for m in compare_scores(vals, list("abcdefghijkl")).warnings)


def test_mixed_draws_follow_the_weighted_mixture() -> None:
    rng = np.random.default_rng(24)
    a = rng.normal(0.0, 1.0, (4000, 3))
    b = rng.normal(5.0, 1.0, (3000, 3))
    m = mix_draws([a, b], [0.3, 0.7], seed=1)
    assert m.shape == (3000, 3)
    assert mix_counts([0.3, 0.7], 3000).tolist() == [900, 2100]
    assert mix_counts([1 / 3, 1 / 3, 1 / 3], 10).sum() == 10
    # exactly 900 draws near 0 and 2100 near 5 in each column (N(0,1) and N(5,1) overlap
    # beyond 2.5 with probability 0.006 each: the split at 2.5 misplaces ~10 draws of 3000;
    # 40 is > 9 sd of that binomial count)
    assert np.all(np.abs(np.sum(m < 2.5, axis=0) - 900) < 40)
    # mixture mean 3.5, sd sqrt(0.3 + 0.7 + 0.21 * 25) = 2.5; stratified counts make the mean
    # error ~1/sqrt(3000) per component: 0.1 is > 5 se
    assert np.all(np.abs(m.mean(axis=0) - 3.5) < 0.1)
    # the draws come from the programs' own draws, none repeated
    assert np.unique(m[:, 0]).size == 3000
    with pytest.raises(InputError, match="non-negative"):
        mix_draws([a, b], [-0.1, 1.1])
    with pytest.raises(InputError, match="needs 2100 draws"):
        mix_draws([a, b[:1000]], [0.3, 0.7], n_draws=3000)


def test_cli_compare_on_a_score_with_averaged_draws(compiled, capsys, tmp_path) -> None:
    robust = str(ROBUST)
    compiled(ROBUST, DATA)
    csv = tmp_path / "mixed.csv"
    rc = main(["--json", "--quiet", "--seed", "3", "compare", robust, robust, "--data",
               str(DATA), "--loo", "--yrep", "y_rep", "--crps", "--score", "crps", "--weights",
               "stacking", "--averaged-draws", str(csv), "--chains", "2", "--warmup", "300",
               "--draws", "400"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    res = json.loads(out)
    # one measure takes the same table as several (one sign convention)
    sc = res["measure_comparison"]
    assert sc["rank_by"] == "crps" and sc["sign_converted"] == [] and "score_comparison" not in res
    by_name = {m["name"]: m for m in sc["measures"]["crps"]}
    # the same pointwise CRPS as the predictive checks of each program
    for name, ch in res["checks"].items():
        assert by_name[name]["estimate"] == pytest.approx(ch["crps"]["crps"])
    mixed = np.loadtxt(csv, delimiter=",", skiprows=1)
    assert mixed.shape == (800, 25)
    assert open(csv).readline().startswith("y_rep.1,y_rep.2")
    assert res["averaged_draws"]["n_draws"] == 800


@pytest.mark.parametrize("argv, message", [
    (["--score", "crps"], "add --loo"),
    (["--loo", "--score", "crps"], "--score crps needs --yrep"),
    (["--loo", "--averaged-draws", "m.csv", "--weights", "stacking"], "needs --yrep"),
    (["--loo", "--yrep", "y_rep", "--averaged-draws", "m.txt", "--weights", "stacking"],
     "must end in .csv"),
])
def test_cli_score_bad_input(capsys, argv, message) -> None:
    rc = main(["--quiet", "compare", str(ROBUST), str(ROBUST), "--data", str(DATA), *argv])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and message in err, err
