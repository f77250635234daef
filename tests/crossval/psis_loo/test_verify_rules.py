"""The self-check's rules without Stan (stanlogz.crossval.psis_loo.verify and its records in
crossval.observations.checked): the Bonferroni critical value, the z, which points are chosen,
and what a failure does (repair the band, or withhold the total's mc se) with a stand-in refit
whose values are given. Deterministic: the only randomness is a seeded choice."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from scipy import stats

from stanlogz._util import deadline
from stanlogz.crossval.fixups.fixups import FixedPoint
from stanlogz.crossval.observations.checked import (
    CheckedPoint,
    Verification,
    critical_z,
    z_score,
)
from stanlogz.crossval.psis_loo.verify import (
    Candidate,
    choose,
    parse_verify,
    repair_advice,
    self_check,
    stage_two_fits,
)
from stanlogz.crossval.psis_loo.verify_tests import MAX_ALPHA, TOTAL_ALPHA
from stanlogz.errors import InputError, speaking


@pytest.fixture(autouse=True)
def _cli_voice():
    """The refusals here are checked as the command line says them (flags); the API's
    keywords are checked in tests/util/test_routes.py."""
    with speaking("cli"):
        yield


def test_critical_z_is_bonferroni_on_the_normal_tail():
    assert critical_z(1) == pytest.approx(1.959964, abs=1e-6)
    assert critical_z(3) == pytest.approx(2.393980, abs=1e-6)
    # family-wise: m independent N(0, 1) points all pass with probability >= 0.95
    for m in (1, 2, 3, 5, 10):
        assert (1 - 2 * stats.norm.sf(critical_z(m))) ** m >= 0.95


def test_z_score_adds_the_two_variances():
    assert z_score(-1.0, 0.3, -1.5, 0.4) == pytest.approx(0.5 / 0.5)
    assert z_score(1.0, 0.0, 1.0, 0.0) == 0.0
    assert z_score(1.0, 0.0, 0.0, 0.0) == math.inf


@pytest.mark.parametrize("bad", [-1, "x", 1.5, True, None])
def test_bad_verify_is_one_line(bad):
    with pytest.raises(InputError, match="verify must be 'auto' or a number"):
        parse_verify(bad)


def test_verify_values(monkeypatch):
    monkeypatch.delenv("STANLOGZ_VERIFY")  # tests/conftest.py turns auto off
    assert parse_verify("auto") is None and parse_verify(0) == 0 and parse_verify("3") == 3
    # the environment variable replaces "auto", not an explicit number
    for env, k in (("0", 0), ("5", 5), ("auto", None)):
        monkeypatch.setenv("STANLOGZ_VERIFY", env)
        assert parse_verify("auto") == k and parse_verify(2) == 2
    monkeypatch.setenv("STANLOGZ_VERIFY", "many")
    with pytest.raises(InputError, match="verify must be"):
        parse_verify("auto")


def _cands() -> list[Candidate]:
    # observations 0..7: three in the band [0.5, 0.7], five below
    k = [0.55, 0.2, 0.68, 0.1, 0.62, 0.3, 0.4, 0.05]
    return [Candidate(i, kk, "psis", -1.0 - i / 10, 0.05) for i, kk in enumerate(k)]


def test_choose_takes_the_worst_of_the_band_another_and_one_at_random():
    picked = choose(_cands(), 3, np.random.default_rng(0))
    assert [w for _, w in picked] == ["worst k-hat", "k-hat band", "random"]
    assert picked[0][0].index == 2 and picked[1][0].index in (0, 4)
    assert len({c.index for c, _ in picked}) == 3
    # fewer candidates than points: all of them, once
    assert len(choose(_cands()[:2], 5, np.random.default_rng(0))) == 2
    # no band: random points only
    low = [c for c in _cands() if c.khat < 0.5]
    assert {w for _, w in choose(low, 3, np.random.default_rng(1))} == {"random"}


def _refit(values: dict[int, float], se: float = 0.02):
    """A stand-in for the exact refits: the given values with se ``se``; records its calls."""
    calls: list[list[int]] = []

    def refit(idx: np.ndarray, stage: int):
        calls.append([int(i) for i in idx])
        return [FixedPoint(int(i), values[int(i)], se, "exact", 0.6, 0.0, 0, 0, 0.0)
                for i in idx], []
    return refit, calls


def _check(cands, refit, **kw):
    opts = dict(refit_seconds=0.1, elapsed=10.0, can_repair=True,
                rng=np.random.default_rng(0))
    opts.update(kw)
    return self_check(kw.pop("verify", 3), cands, [], refit,
                      **{k: v for k, v in opts.items() if k != "verify"})


def test_points_within_their_error_bars_pass_and_change_nothing():
    cands = _cands()
    # each reference 1 combined se from its value: z = 1 < 2.39
    refit, calls = _refit({c.index: c.estimate - math.hypot(0.05, 0.02) for c in cands})
    fixed, ver = _check(cands, refit)
    assert ver.status == "passed" and fixed == [] and len(calls) == 1
    assert [p.z for p in ver.points] == pytest.approx([1.0] * 3)
    assert ver.critical_z == pytest.approx(critical_z(3, MAX_ALPHA))
    assert not ver.total_points  # no hint (|z| 1 < 2): no second stage


def _shifted(cands, checked_z, other_z):
    """References that put the values chosen by _check at ``checked_z`` combined se from
    their exact values and the others at ``other_z``."""
    se = math.hypot(0.05, 0.02)
    picked = {c.index for c, _ in choose(cands, 3, np.random.default_rng(0))}
    return {c.index: c.estimate - (checked_z if c.index in picked else other_z) * se
            for c in cands}, picked


def test_a_hint_refits_every_value_and_a_total_off_its_error_bar_is_repaired():
    # the three checked values 2.2 se high: each under 2.87 (Bonferroni at 1.25% over 3), but
    # above the hint's 2.0; the five others 2.2 se high too: the total of all eight is
    # 2.2 sqrt(8) = 6.2 of its claimed error (independent values), above 2.24
    cands = _cands()
    values, _ = _shifted(cands, 2.2, 2.2)
    refit, calls = _refit(values)
    fixed, ver = _check(cands, refit, refit_seconds=1.0)
    assert not ver.failed and ver.total_failed and ver.status == "repaired"
    assert len(calls) == 2 and len(ver.total_points) == 8
    assert ver.total_z == pytest.approx(2.2 * math.sqrt(8), rel=1e-9)
    assert ver.total_critical == pytest.approx(critical_z(1, TOTAL_ALPHA))
    assert {f.index for f in fixed} == {c.index for c in cands}
    assert "all refit after the first points hinted" in ver.note


def test_a_hint_whose_total_holds_keeps_the_answer():
    # checked values 2.2 se high, the others 0.5 se low: total (6.6 - 2.5) / sqrt(8) = 1.45
    cands = _cands()
    values, _ = _shifted(cands, 2.2, -0.5)
    refit, calls = _refit(values)
    fixed, ver = _check(cands, refit, refit_seconds=1.0)
    assert ver.status == "passed" and fixed == [] and len(calls) == 2
    assert ver.total_z == pytest.approx((3 * 2.2 - 5 * 0.5) / math.sqrt(8), rel=1e-9)
    assert "all 8 values were refit" in ver.note and "kept" in ver.note
    # too dear to refit the others (5 x 30 s > 120 s): no second stage
    refit, calls = _refit(values)
    fixed, ver = _check(cands, refit, refit_seconds=30.0)
    assert ver.status == "passed" and len(calls) == 1 and not ver.total_points
    # 5 x 4 s = 20 s: more than a run of 10 s (and the 10 s floor), so no second stage; after
    # a run of 30 s it fits
    for elapsed, stages in ((10.0, 1), (30.0, 2)):
        refit, calls = _refit(values)
        fixed, ver = _check(cands, refit, refit_seconds=4.0, elapsed=elapsed)
        assert ver.status == "passed" and len(calls) == stages
        assert bool(ver.total_points) == (stages == 2)


def test_a_failed_band_point_refits_the_band_and_checks_the_two_values_below():
    cands = _cands()
    values = {c.index: c.estimate for c in cands}
    values[2] = cands[2].estimate - 0.5  # the worst k-hat: 9 se too high
    refit, calls = _refit(values)
    # 30 s a refit: all 5 others would take more than REPAIR_ALL_SECONDS, so it steps down
    fixed, ver = _check(cands, refit, refit_seconds=30.0)
    assert ver.status == "repaired" and len(calls) == 2
    band = {c.index for c in cands if c.khat >= 0.5}
    checked = {c.index for c, _ in choose(cands, 3, np.random.default_rng(0))}
    # the frontier: the two highest k-hat below 0.5 not checked yet
    below = sorted((c for c in cands if c.khat < 0.5 and c.index not in checked),
                   key=lambda c: -c.khat)[:2]
    assert set(calls[1]) == (band - checked) | {c.index for c in below}
    assert {f.index for f in fixed} == band | checked | {c.index for c in below}
    assert "--fix exact --k-threshold 0.5" in ver.note
    assert [p.index for p in ver.failed] == [2] and ver.failed[0].z == pytest.approx(
        0.5 / math.hypot(0.05, 0.02))
    assert {p.why for p in ver.points[3:]} <= {"repair", "frontier"}


def test_a_cheap_repair_refits_every_value_left():
    cands = _cands()
    values = {c.index: c.estimate for c in cands}
    values[2] = cands[2].estimate - 0.5
    refit, calls = _refit(values)
    fixed, ver = _check(cands, refit, refit_seconds=1.0)  # 5 x 1 s: cheap
    assert ver.status == "repaired" and len(calls) == 2
    assert {f.index for f in fixed} == {c.index for c in cands}
    assert "estimated from the draws were refit too" in ver.note
    assert "elpd_loo and its Monte Carlo se include them" in ver.note


def test_refits_fit_their_limit_and_a_spent_budget_fits_none():
    # 5 refits of 1 s: within the 10 s floor with no budget, not within a budget's 4 s rest,
    # and not within a spent budget (0 s left is not "no budget")
    assert stage_two_fits(5, 1.0, 2.0, None)
    assert not stage_two_fits(5, 1.0, 2.0, 4.0)
    assert not stage_two_fits(5, 1.0, 2.0, 0.0)
    assert not stage_two_fits(0, 1.0, 2.0, None) and not stage_two_fits(5, None, 2.0, None)
    assert stage_two_fits(5, 4.0, 30.0, None) and not stage_two_fits(5, 4.0, 10.0, None)


def test_a_failure_after_the_budget_is_spent_withholds_at_the_band(monkeypatch):
    # the check itself fits (100 s left when it starts); by the repair the budget is spent:
    # refitting every value left cannot fit, so the repair does not reach below the band
    # (the advice names k-hat 0.5, not the lowest candidate's 0.05, which reads "0") and the
    # mcse is withheld
    cands = _cands()
    values = {c.index: c.estimate for c in cands}
    values[2] = cands[2].estimate - 0.5
    refit, calls = _refit(values)
    left = iter([100.0])
    monkeypatch.setattr(deadline, "remaining", lambda: next(left, 0.0))
    fixed, ver = _check(cands, refit, refit_seconds=1.0)
    assert ver.status == "withheld" and len(calls) == 1
    assert ver.note.endswith(f"recompute with {repair_advice(0.5)}")


def test_a_repair_whose_refit_has_no_se_says_the_mcse_is_na():
    # as above, but observation 6's refit chains disagree (its se NaN, as fix_observation
    # gives it): the note must not claim an mcse that includes it
    cands = _cands()
    values = {c.index: c.estimate for c in cands}
    values[2] = cands[2].estimate - 0.5
    base, _ = _refit(values)

    def refit(idx, stage):
        pts, notes = base(idx, stage)
        return [replace(f, mcse=math.nan) if f.index == 5 else f for f in pts], notes
    fixed, ver = _check(cands, refit, refit_seconds=1.0)
    assert ver.status == "repaired" and {f.index for f in fixed} == {c.index for c in cands}
    assert "its Monte Carlo se is NA: the refit(s) of observation(s) 6 have none" in ver.note
    assert "se include them" not in ver.note


def test_a_failing_frontier_steps_the_repair_down():
    cands = _cands()
    values = {c.index: c.estimate - 0.5 for c in cands}  # every value is 9 se too high
    refit, calls = _refit(values)
    fixed, ver = _check(cands, refit, refit_seconds=30.0)
    # rounds go down two values at a time until every value is refit
    assert ver.status == "repaired" and {f.index for f in fixed} == {c.index for c in cands}
    assert len(calls) >= 3 and repair_advice(min(c.khat for c in cands)) in ver.note


def test_a_failure_below_the_band_refits_down_to_its_k_hat():
    cands = _cands()
    random_pick = choose(cands, 3, np.random.default_rng(0))[2][0]
    values = {c.index: c.estimate for c in cands}
    values[random_pick.index] += 1.0
    refit, calls = _refit(values)
    fixed, ver = _check(cands, refit, refit_seconds=30.0)
    low = random_pick.khat
    assert ver.status == "repaired"
    assert {f.index for f in fixed} >= {c.index for c in cands if c.khat >= low}
    assert repair_advice(low) in ver.note


def test_fix_none_keeps_the_values_and_withholds_the_mcse():
    cands = _cands()
    refit, calls = _refit({c.index: c.estimate - 1.0 for c in cands})
    fixed, ver = _check(cands, refit, can_repair=False, replace=False)
    assert ver.status == "withheld" and fixed == [] and len(calls) == 1
    assert "kept as PSIS gives them" in ver.note


def test_without_refits_a_failure_withholds_the_mcse():
    cands = _cands()
    values = {c.index: c.estimate - 1.0 for c in cands}
    refit, calls = _refit(values)
    fixed, ver = _check(cands, refit, can_repair=False)
    assert ver.status == "withheld" and len(calls) == 1
    assert {f.index for f in fixed} == {p.index for p in ver.points}  # exact where known
    assert "withheld" in ver.note and "--fix exact" in ver.note


def test_auto_skips_a_check_that_is_not_cheap_and_zero_turns_it_off(monkeypatch):
    monkeypatch.delenv("STANLOGZ_VERIFY")
    refit, calls = _refit({})
    fixed, ver = _check(_cands(), refit, verify="auto", refit_seconds=60.0, elapsed=100.0)
    assert ver.status == "skipped" and calls == [] and "--verify 4" in ver.note
    assert "240%" in ver.note  # 4 x 60 s against 100 s so far
    fixed, ver = _check(_cands(), refit, verify=0)
    assert ver is None and calls == []
    # an explicit K runs whatever it costs, unless the time budget has less left
    refit, calls = _refit({c.index: c.estimate for c in _cands()})
    fixed, ver = _check(_cands(), refit, verify=3, refit_seconds=60.0, elapsed=100.0)
    assert ver.status == "passed"
    with deadline.time_budget(30):
        fixed, ver = _check(_cands(), refit, verify=3, refit_seconds=60.0, elapsed=100.0)
    assert ver.status == "skipped" and "time budget" in ver.note


def test_records_serialize():
    p = CheckedPoint(4, "psis", -1.2, 0.05, -1.6, 0.02, 7.4, False, "exact", 0.66, "worst k-hat")
    v = Verification("withheld", [p], critical_z(1), note="n")
    d = v.to_dict()
    assert set(d) == {"status", "points", "critical_z", "alpha", "seconds", "repair_seconds",
                      "share", "note", "repaired", "elpd_before", "sum_test", "total_test"}
    assert d["sum_test"] is None and d["total_test"] is None
    assert d["points"][0]["observation"] == 5 and d["points"][0]["passed"] is False
    assert set(d["points"][0]) == {"observation", "route", "estimate", "mcse", "reference",
                                   "reference_se", "reference_route", "z", "passed", "khat",
                                   "why"}
    assert v.rows()[0][-1] == "FAIL" and len(v.rows()[0]) == len(Verification.HEADER)
