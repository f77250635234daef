"""Leave-one-group-out's error bars as loo's (issue 44 item 4): with few groups the calibrated
interval and the small-count note that ``loo`` gives for few observations, and no Monte Carlo
se of the total (loo's NA) while a group above the k̂ threshold keeps its PSIS value.

The interval is checked on exact leave-one-group-out values of a normal varying-intercept
model with σ and τ known (closed form: benchmarks/logo_interval.py), so it needs no Stan; its
coverage table at 5-40 groups is in docs/guide/logo.md."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from benchmarks import logo_interval as bench
from benchmarks.truths.crossval.truths_logo import exact_logo, simulate
from stanlogz.crossval.logo.estimator import logo
from stanlogz.crossval.logo.result import GroupValue, LogoResult
from stanlogz.crossval.observations.observations import Observations
from stanlogz.crossval.refit.cv_se import calibration_factor, elpd_interval
from stanlogz.draws import sample

TESTS = Path(__file__).resolve().parents[3] / "stan_models" / "tests"


def _result(elpd_g: np.ndarray, khat: float = 0.1, method: str = "psis") -> LogoResult:
    groups = [GroupValue(k + 1, np.array([k]), float(e), 0.01, khat, method, "laplace", 0.0,
                         float(e), 0.0) for k, e in enumerate(elpd_g)]
    return LogoResult("m", "g", float(np.sum(elpd_g)), float(np.std(elpd_g, ddof=1)
                                                             * math.sqrt(len(elpd_g))),
                      0.05, groups, None, Observations("N", ("y",), len(elpd_g)), 4000, 0.4)


def test_few_groups_get_loos_interval_and_note() -> None:
    rng = np.random.default_rng(3)
    e = bench.exact_logo(*bench.simulate("model right", 8, rng))
    r = _result(e)
    iv, want = r.elpd_logo_interval, elpd_interval(e, e.sum())
    assert (iv.low, iv.high, iv.factor) == (want.low, want.high, want.factor)
    c = calibration_factor(e)
    assert 1.0 < c <= 2.0 and iv.high - iv.low == pytest.approx(4 * c * r.se, rel=1e-12)
    notes = r.se_notes()
    assert notes[0].startswith("95.4% interval for elpd_logo: [")
    assert notes[1] == ("Only 8 groups: the SE over groups understates the error; use the "
                        "interval.")
    d = r.to_dict()
    assert d["elpd_logo_interval"] == iv.to_dict() and d["mcse_elpd_logo"] == 0.05
    assert d["mcse_elpd_logo_na"] is None and r.mcse_note() == "MCSE of elpd_logo is 0.050."
    many = _result(bench.exact_logo(*bench.simulate("model right", 25, rng)))
    assert len(many.se_notes()) == 1  # 25 groups: the interval, no small-count note


@pytest.mark.parametrize("case", ["model right", "effects var x2"])
def test_interval_covers_at_eight_groups(case: str) -> None:
    """400 data sets of 8 groups: the interval covers the expected log score of the full-data
    predictive on new groups (benchmarks/logo_interval.py: 0.986 and 0.969 over 2,000). With
    p >= 0.969, 0.925 or less (31+ misses of 400, 12.4 expected) has probability < 1e-5."""
    rng = np.random.default_rng([44, 8])
    hits = 0
    for _ in range(400):
        ybar, ss = bench.simulate(case, 8, rng)
        e = bench.exact_logo(ybar, ss)
        iv = _result(e).elpd_logo_interval
        hits += iv.low <= bench.conditional_target(case, ybar) <= iv.high
    assert hits / 400 > 0.925


def test_kept_psis_value_above_threshold_withholds_the_mcse(compiled, capsys) -> None:
    """logo_normal, 8 groups, group 2 far from the rest (k̂ 0.72 at these draws, the others
    below 0.6): kept with fix="none", the total's mc se is NaN with the reason; refit, it is
    given."""
    data = simulate("normal", 8, 4, seed=11)
    m = compiled(TESTS / "logo_normal.stan", data)
    d = sample(m, chains=2, warmup=400, draws=1000, seed=5)
    kept = logo(m, data, group="g", draws=d, fix="none", k_threshold=0.6, pointwise_obs=False)
    assert kept.groups[1].khat > 0.6 and kept.bad_groups() == [2]
    assert math.isnan(kept.mcse_elpd_logo) and kept.to_dict()["mcse_elpd_logo"] is None
    why = kept.mcse_na_reason()
    assert why is not None and why.startswith("1 group(s) still have Pareto k-hat above 0.60")
    assert any("group(s) have Pareto k-hat above 0.60 (2)" in w for w in kept.warnings)
    print(kept)  # loo --group prints exactly this (tests/cli/test_cv_tables.py)
    out = capsys.readouterr().out
    assert f"MCSE of elpd_logo is NA: {why}." in out and "Only 8 groups" in out
    assert "95.4% interval for elpd_logo" in out
    refit = logo(m, data, group="g", draws=d, fix="auto", k_threshold=0.6, seed=5,
                 pointwise_obs=False, chains=2, warmup=400, n_draws=1000)
    assert refit.groups[1].method == "refit" and refit.bad_groups() == []
    assert np.isfinite(refit.mcse_elpd_logo) and refit.mcse_na_reason() is None
    truth = exact_logo("normal", data)
    # the refit total is normal around the truth with sd its mc se: |z| < 3.9 w.p. 1 - 1e-4
    assert abs(refit.elpd_logo - truth.sum()) < 3.9 * refit.mcse_elpd_logo
