"""A time budget that runs out in the middle of moment matching (issue 44 item 3): the point whose
matching was cut short above the k̂ threshold keeps its PSIS value and label (not "mm"), the
total Monte Carlo se is NaN with loo's reason (R loo's ``mcse_loo`` is NA while any Pareto k̂,
after ``loo_moment_match`` updated it, is above the threshold), and the budget note and the k̂
warning stay. The budget clock is injected (as in tests/util/test_deadline.py): the test moves
it past the deadline after the point's matching has started, so each decision is exact."""

from __future__ import annotations

import importlib
import json
import math
from pathlib import Path

import numpy as np
import pytest

import stanlogz
from stanlogz.crossval.fixups.moment_match import moment_match
from stanlogz.draws import sample
from tests.helpers import FakeClock

EX = Path(__file__).resolve().parents[3] / "stan_models" / "examples"
DATA = json.loads((EX / "normal_outlier.data.json").read_text())  # y[10] = 12: k-hat ~ 1
loo_module = importlib.import_module("stanlogz.crossval.psis_loo.loo")


@pytest.fixture(scope="module")
def fit(compiled):
    m = compiled(EX / "normal_mean.stan", DATA)
    return m, sample(m, chains=2, warmup=300, draws=500, seed=2)


def _spend_during_matching(monkeypatch: pytest.MonkeyPatch, clock: FakeClock) -> list[int]:
    """Each point's matching starts, then the clock jumps an hour: the deadline passes before
    the first map is tried (the point loop had found time left)."""
    real, started = loo_module._moment_matched, []

    def late(*args, **kwargs):
        started.append(args[3])
        clock.t += 3600.0
        return real(*args, **kwargs)

    monkeypatch.setattr(loo_module, "_moment_matched", late)
    return started


def _assert_psis_kept(r, note: str) -> None:
    t = f"{r.threshold:.2f}"  # 1 - 1/log10(1000 draws) = 0.67
    assert r.khat[9] > r.threshold and not r.fixed  # the unfinished point is not a fixed one
    row = r.pointwise()[9]
    assert row["method"] == "psis" and row["elpd"] == row["psis_elpd"] == r.psis_elpd_i[9]
    assert r.elpd_loo == pytest.approx(r.psis_elpd_i.sum(), abs=1e-12)
    assert math.isnan(r.mcse_elpd_loo) and r.to_dict()["mcse_elpd_loo"] is None
    why = r.mcse_na_reason()
    assert why is not None and f"1 observation(s) still have Pareto k-hat above {t}" in why
    assert f"MCSE of elpd_loo is NA: {why}." in str(r)
    assert any(note in w for w in r.warnings), r.warnings
    assert any(w.startswith(f"1 observation(s) have Pareto k-hat above {t} (10)")
               for w in r.warnings), r.warnings
    assert not any("after moment matching" in w for w in r.warnings)  # no "mm" claim left


def test_run_budget_spent_mid_match_keeps_the_psis_value(fit, clock, monkeypatch) -> None:
    m, d = fit
    # control, same draws, the clock standing still: observation 10 is moment matched
    with stanlogz.time_budget(100):
        ok = stanlogz.loo(m, DATA, draws=d, fix="mm", seed=1)
    assert [(f.index, f.method) for f in ok.fixed] == [(9, "mm")]
    assert ok.fixed[0].khat_after < ok.threshold and np.isfinite(ok.mcse_elpd_loo)
    started = _spend_during_matching(monkeypatch, clock)
    with stanlogz.time_budget(100):
        r = stanlogz.loo(m, DATA, draws=d, fix="mm", seed=1)
    assert started == [9]  # its matching did start: the budget ran out inside it
    _assert_psis_kept(r, "the run's time budget ran out during moment matching "
                         "after 0 of 1 observation(s); the others (10) keep their PSIS values")


def test_mm_budget_spent_mid_match_keeps_the_psis_value(fit, clock, monkeypatch) -> None:
    m, d = fit
    _spend_during_matching(monkeypatch, clock)
    r = stanlogz.loo(m, DATA, draws=d, fix="mm", seed=1, mm_budget=30)
    _assert_psis_kept(r, "the moment-matching budget of 30 s ran out after 0 of 1 "
                         "observation(s); the others (10) keep their PSIS values")


def test_unfinished_is_said_by_moment_match(clock) -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 200, 3))
    ll = lambda t: -0.5 * ((t[:, 0] - 3.0) / 0.3) ** 2  # noqa: E731 - far in the tail
    lp = lambda t: -0.5 * np.sum(t**2, axis=1)  # noqa: E731
    cut = moment_match(x, lp, ll, index=0, r_eff=1.0, k_threshold=0.7, deadline=clock.t)
    assert cut.khat_before > 0.7 and cut.unfinished and cut.transformations == []
    assert cut.to_dict()["unfinished"] is True
    done = moment_match(x, lp, ll, index=0, r_eff=1.0, k_threshold=0.7, deadline=clock.t + 1)
    assert done.transformations and not done.unfinished  # the clock never reached it


def test_a_matched_point_left_above_the_threshold_withholds_the_mcse(fit, monkeypatch) -> None:
    """No budget: moment matching that cannot bring k̂ under the threshold (here no map is
    allowed) keeps its "mm" label with loo's k̂ after matching, and, as loo's ``mcse_loo``
    with that k̂, the total Monte Carlo se is NaN with the reason."""
    m, d = fit
    real = loo_module.moment_match_observation
    monkeypatch.setattr(loo_module, "moment_match_observation",
                        lambda *a, **k: real(*a, **{**k, "max_iters": 0}))
    r = stanlogz.loo(m, DATA, draws=d, fix="mm", seed=1)
    assert [(f.index, f.method) for f in r.fixed] == [(9, "mm")]
    assert r.fixed[0].khat_after == r.khat[9] > r.threshold and not r.fixed[0].diagnostics
    assert r.unfixed_bad() == [] and r.still_bad() == [9]
    assert math.isnan(r.mcse_elpd_loo)
    assert "1 observation(s) still have Pareto k-hat above" in (r.mcse_na_reason() or "")
    assert bool(r.to_arviz().warning)


def test_a_budget_that_ends_inside_a_map_keeps_the_maps_accepted(clock) -> None:
    # AR(5) of 200 steps under 255 s: observation 1's maps brought k-hat from above the
    # threshold to 0.41, the next map's conditional quadrature (which checks the budget) found
    # it spent, and the point was dropped with everything it had reached. The maps accepted
    # stand, as at a deadline; a budget spent before any map is accepted leaves it unfinished.
    from stanlogz import time_budget
    from stanlogz._util import deadline

    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 200, 3))
    lp = lambda t: -0.5 * np.sum(t**2, axis=1)  # noqa: E731
    state = {"spend": False}

    def ll(t):
        if state["spend"]:  # as a quadrature: the budget checked at each evaluation
            clock.t += 3600.0
            deadline.check_spent("the conditional log-likelihood")
        return -0.5 * ((t[:, 0] - 1.5) / 0.5) ** 2

    def spend(_line):  # the budget ends right after the first map is accepted
        state["spend"] = True

    full = moment_match(x, lp, ll, index=0, r_eff=1.0, k_threshold=0.7, k_target=0.3)
    assert len(full.transformations) >= 2  # the control: more than one map is accepted
    with time_budget(60):
        cut = moment_match(x, lp, ll, index=0, r_eff=1.0, k_threshold=0.7, k_target=0.3,
                           on_map=spend)
    assert cut.transformations == full.transformations[:1]
    assert cut.khat_transformed < cut.khat_before
    assert cut.unfinished == (cut.khat_after >= 0.7)
    state["spend"] = True
    with time_budget(60):  # spent at the first map's evaluation: nothing accepted
        none = moment_match(x, lp, ll, index=0, r_eff=1.0, k_threshold=0.7,
                            log_lik_draws=-0.5 * ((x.reshape(-1, 3)[:, 0] - 1.5) / 0.5) ** 2)
    assert none.transformations == [] and none.unfinished


def test_a_refit_the_budget_refuses_keeps_the_psis_value_not_the_command(fit, monkeypatch
                                                                          ) -> None:
    """An exact refit whose NUTS the run's budget refuses (still in warmup when the budget is
    spent) used to refuse the whole command: posteriordb radon_county_intercept under
    ``--time-budget 15`` lost its answer at 14 s to the refits of its three one-house
    counties. The observation now keeps its PSIS value (and label), the note says the budget
    ended the refits, and the mc se is NA as loo's for a k-hat above the threshold."""
    from stanlogz.errors import OverBudget

    m, d = fit

    def refused(*args, **kwargs):
        raise OverBudget("sampling model would take about 59 s here ... still in warmup")

    monkeypatch.setattr(loo_module, "fix_observation", refused)
    with stanlogz.time_budget(600):
        r = stanlogz.loo(m, DATA, draws=d, fix="exact", seed=1, verify=0)
    assert r.khat[9] > r.threshold and not r.fixed
    assert r.pointwise()[9]["method"] == "psis"
    assert r.elpd_loo == pytest.approx(r.psis_elpd_i.sum(), abs=1e-12)
    assert math.isnan(r.mcse_elpd_loo)
    assert any(w.startswith("the time budget ended the exact refits after 0 of 1; "
                            "observation(s) 10 keep their values from the posterior draws")
               for w in r.warnings), r.warnings
