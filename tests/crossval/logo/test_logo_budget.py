"""Leave-one-group-out under a time budget (issue 45, :mod:`stanlogz.crossval.logo.budget`):
the groups' pass runs on fewer draws where all of them would not fit, the observation-level
values are left out where they would not fit, and the refits start only where they fit.
Step-count budgets (the injected clock moves only at the calls ticked), so a loaded machine
does not move where the budget stops. Before, nothing after NUTS checked the budget:
posteriordb radon_county_intercept's 85 counties took 12.8 s under ``--time-budget 8s``.

Tolerances as in test_logo.py: a group's PSIS value is asymptotically normal with sd its
Monte Carlo se, so the total's |z| < 3.9 fails with probability 1e-4 (fixed seeds)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import stanlogz
from benchmarks.truths.crossval.truths_logo import exact_logo, simulate
from stanlogz import time_budget
from stanlogz.crossval.logo import estimator
from stanlogz.crossval.logo.estimator import logo
from stanlogz.crossval.refit import heldout
from tests.helpers import tick_per_call

pytestmark = pytest.mark.stan

TESTS = Path(__file__).resolve().parents[3] / "stan_models" / "tests"


@pytest.fixture(scope="module")
def normal_case(compiled):
    data = simulate("normal", 10, 4, seed=11)
    model = compiled(TESTS / "logo_normal.stan", data)
    draws = stanlogz.sample(model, chains=4, warmup=500, draws=1000, seed=3)
    return model, data, draws


def test_the_groups_pass_runs_on_fewer_draws_and_the_obs_values_are_left_out(
        normal_case, clock, monkeypatch):
    model, data, draws = normal_case
    # each integral advances the clock 0.25 s at 4000 draws, in proportion at fewer; after 3
    # groups the 7 left would not fit in 0.7 of the rest of a 3 s budget, but all 10 groups
    # do on fewer draws
    real = estimator.integrate

    def ticked(m, unc, *args, **kwargs):
        clock.t += 0.25 * unc.shape[0] / 4000
        return real(m, unc, *args, **kwargs)

    monkeypatch.setattr(estimator, "integrate", ticked)
    with time_budget(3.0):
        r = logo(model, data, group="g", draws=draws, seed=5)
    stop = r.budget_stop
    used = stop["pass_draws"]["draws_used"]
    assert stop["pass_draws"]["draws"] == 4000 and used in (2000, 1000, 400)
    assert r.n_samples == used
    assert any(w.startswith(f"leave-one-group-out on {used} of the 4000 posterior draws")
               for w in r.warnings)
    # the same values as the pass on those draws, asked for without a budget
    monkeypatch.undo()
    same = logo(model, data, group="g", draws=draws.thinned(used // 4), seed=5,
                pointwise_obs=False)
    np.testing.assert_allclose(r.elpd_g, same.elpd_g, rtol=0, atol=1e-10)
    assert r.mcse_elpd_logo == pytest.approx(same.mcse_elpd_logo, rel=1e-10)
    # the observation-level values did not fit in what was left: left out, and said
    assert r.elpd_obs is None and stop["obs_values"] == "left out"
    assert any("observation-level values (log p(y_i | y_-g(i))) were left out" in w
               for w in r.warnings)
    assert r.to_dict()["budget_stop"] == stop and r.to_dict()["elpd_logo_obs"] is None
    # the answer on fewer draws still covers the exact LOGO
    assert abs(r.elpd_logo - exact_logo("normal", data).sum()) < 3.9 * r.mcse_elpd_logo


def test_group_refits_the_budget_leaves_out_keep_psis_with_an_na_mcse(
        normal_case, clock, monkeypatch):
    model, data, draws = normal_case
    # k-hat threshold 0: every group with k-hat above 0 is to be refit, each refit 10 s of a
    # 35 s budget. RefitWatch keeps a tenth (3.5 s) and starts a refit where 1.2 times the
    # slowest (10 s) fits: after 2 refits 15 s are left, 15 - 3.5 < 12, so 2 are done
    tick_per_call(monkeypatch, clock, heldout, "heldout_elpd", 10.0)
    with time_budget(35.0):
        r = logo(model, data, group="g", draws=draws, seed=5, k_threshold=0.0,
                 pointwise_obs=False)
    above = [g for g in r.groups if g.khat > 0.0]
    refit = [g for g in r.groups if g.method == "refit"]
    assert len(refit) == 2 and len(above) > 2
    left = r.budget_stop["refits_skipped"]
    assert sorted(left) == sorted(g.label for g in above if g.method != "refit")
    assert np.isnan(r.mcse_elpd_logo)  # PSIS values above the threshold kept: loo's NA
    assert any(w.startswith(f"the time budget left the refits of {len(left)} group(s) out")
               for w in r.warnings)
