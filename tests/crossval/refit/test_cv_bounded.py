"""``cv`` under a time budget (issue 45): the splits the budget leaves time for are a prefix
of the seeded order, with the values an unbudgeted run gives them, and their mean and interval
are the answer; fewer than 30 is a refusal naming a budget."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

import stanlogz
from stanlogz.crossval import cv
from stanlogz.crossval.refit import unbiased
from stanlogz.errors import BudgetSpent
from stanlogz.estimators.ups import ups_chains
from tests.crossval.test_crossval import NORMAL, NORMAL_DATA, normal_predictive
from tests.helpers import tick_during

RUN = dict(n_valid=2, splits=120, seed=11, chains=2, warmup=300, n_draws=300, n_workers=1)


@pytest.fixture(scope="module")
def normal(compiled):
    return compiled(NORMAL, NORMAL_DATA)


@pytest.fixture(scope="module")
def unbudgeted(normal):
    return cv(normal, NORMAL_DATA, **RUN)


def _one_second_per_replicate(monkeypatch, clock):
    # A step-count budget: every coupled-chain replicate (not the tuning's pilot runs)
    # advances the injected clock by 1 s, and nothing else moves it, so the budget ends after
    # a fixed count.
    tick_during(monkeypatch, clock, ups_chains, "_chain_task", unbiased,
                "run_replicates_in_time")


def test_a_budget_keeps_the_first_splits_with_their_values(normal, unbudgeted, monkeypatch,
                                                           clock):
    _one_second_per_replicate(monkeypatch, clock)
    with stanlogz.time_budget(60):
        r = cv(normal, NORMAL_DATA, **RUN)
    # blocks of 2, 4, 8, ... replicates, each started only when it fits at 1.5 times the rate
    # of those before it: 40 to 60 of the 60 s go to replicates
    done = r.budget_stop["replicates"]["done"]
    assert r.budget_stop == {"replicates": {"done": done, "asked": 120}} and 40 <= done <= 60
    assert r.to_dict()["budget_stop"] == r.budget_stop
    np.testing.assert_array_equal(r.replicates, unbudgeted.replicates[:done])
    np.testing.assert_array_equal(r.splits, unbudgeted.splits[:done])
    assert any(f"time budget ended the replicates: {done} of 120" in w for w in r.warnings)
    # The replicates are iid and unbiased for the exact objective over all 45 splits, so
    # (estimate - truth) / se is t with done - 1 >= 39 degrees of freedom under the CLT:
    # |t| > 5.3 has probability below 1e-5. The interval is the t interval of those done.
    truth = -np.mean([normal_predictive(NORMAL_DATA, list(v))
                      for v in itertools.combinations(range(10), 2)])
    assert abs(r.estimate - truth) / r.estimate_mcse < 5.3
    half = stats.t.ppf(0.975, done - 1) * r.estimate_mcse
    assert r.ci == pytest.approx((r.estimate - half, r.estimate + half))
    assert r.estimate_mcse == pytest.approx(r.replicates.std(ddof=1) / math.sqrt(done))


def test_fewer_than_30_splits_in_the_budget_is_refused(normal, monkeypatch, clock):
    # below 30 heavy-tailed replicates the t interval undercovers (0.80 of 15 budgeted runs)
    _one_second_per_replicate(monkeypatch, clock)
    with stanlogz.time_budget(25), pytest.raises(BudgetSpent, match="of 120 done; an interval "
                                                 "needs 30") as info:
        cv(normal, NORMAL_DATA, **RUN)
    # The route: 30 replicates at the rate of those done, 1.5 times, and a third more
    # (1.33 x 1.5 x 30 s = 60 s); followed under the same clock, it answers.
    (route,) = info.value.routes
    assert route.options == {"time_budget": "60s"}
    with stanlogz.time_budget(route.options["time_budget"]):
        r = cv(normal, NORMAL_DATA, **RUN)
    assert r.replicates.size >= 30 and r.budget_stop["replicates"]["asked"] == 120
