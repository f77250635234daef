"""gbs under a run's time budget answers with the best estimate reached (issue 45): an
orientation that does not fit is left out, a flow fit short of time keeps the layers it has,
and the result says so (``budget_stop["bridge"]``, a warning); a budget that ends before the
first bridge's posterior side is evaluated is still a refusal.

A step-count clock: the budget's clock moves TICK seconds per row of the target's log density
and at nothing else, so a loaded machine does not move the stops. The banana's log Z is known
by quadrature (test_bridge.banana_log_z); the draws are exact.
"""

from __future__ import annotations

import numpy as np
import pytest

from stanlogz import OverBudget, time_budget
from stanlogz.densities.target import FunctionTarget
from stanlogz.estimators.bridge.bridge import gbs

from .test_bridge import Z_TOL, banana_draws, banana_log_z, banana_target

TICK = 1e-3  # budget seconds per target row
# 4 chains x 1000 exact draws: each orientation bridges n_p = 2000 draws (2 s of the clock)
# with at least as many flow samples (2 s more)


@pytest.fixture
def ticking(monkeypatch, clock):
    """The banana target, whose every row advances the budget's clock by TICK."""
    inner = banana_target()

    def many(x):
        clock.t += TICK * x.shape[0]
        return inner.log_density_many(x)

    return FunctionTarget(2, lambda x: float(many(x[None])[0]), log_density_many=many)


def draws():
    return banana_draws(np.random.default_rng(4), 4000).reshape(4, 1000, 2)


def test_a_budget_that_fits_changes_nothing(ticking):
    free = gbs(ticking, draws(), seed=3)
    with time_budget(1e6):
        r = gbs(ticking, draws(), seed=3)
    assert (r.log_z, r.log_z_se) == (free.log_z, free.log_z_se)
    assert r.budget_stop is None and free.budget_stop is None


def test_an_orientation_that_does_not_fit_is_left_out(ticking):
    # 7 s: the first orientation takes its 2 s of posterior rows, 2 s of flow samples and at
    # most the 2.9 s left for more (1.5 times a sample's cost each); the second would need 1.5
    # times the first's seconds, more than is left
    with time_budget(7.0):
        r = gbs(ticking, draws(), seed=3)
    stop = r.budget_stop["bridge"]
    assert stop["orientations_done"] == 1 and stop["orientations"] == 2
    assert stop["layers_cut"] == [False]
    assert len(r.diagnostics["half_swap_log_z"]) == 1
    assert r.log_z == r.diagnostics["half_swap_log_z"][0]
    assert r.log_z_se == r.diagnostics["half_swap_se"][0]
    assert any(w.startswith("the time budget ended the bridge after 1 of 2 orientations")
               for w in r.warnings)
    assert r.to_dict()["budget_stop"] == r.budget_stop
    # one bridge's eq. (9) se: Z_TOL fails with probability < 1e-4 even for an se 15% short
    # (test_bridge's note; the coverage of stopped runs is measured in
    # benchmarks/anytime_coverage.py)
    assert abs(r.log_z - banana_log_z()) <= Z_TOL * r.log_z_se


def test_a_fit_short_of_time_keeps_a_cruder_flow(ticking):
    # 5 s: after the 2 s of posterior rows, 3 s are left, less than the bridge's flow samples
    # need (1.5 x 1 ms x 2,400 rows + 0.1 s): the fit adds no layer (the validated whitening
    # alone, a Gaussian proposal), and the bridge runs on it
    with time_budget(5.0):
        r = gbs(ticking, draws(), seed=3)
    stop = r.budget_stop["bridge"]
    assert stop["layers_cut"] == [True] and stop["orientations_done"] == 1
    assert r.diagnostics["flow_layers"] == [0]
    assert any("with fewer flow layers" in w for w in r.warnings)
    # a Gaussian proposal for the banana: a worse bridge, whose own se says so
    with time_budget(1e6):
        full = gbs(ticking, draws(), seed=3)
    assert r.log_z_se > full.log_z_se
    assert abs(r.log_z - banana_log_z()) <= Z_TOL * r.log_z_se


def test_a_budget_spent_before_the_first_bridge_is_refused(ticking):
    # 1 s: the posterior side (2,000 rows, 2 s) cannot end; nothing is estimable
    with time_budget(1.0), pytest.raises(OverBudget, match="ran out during"):
        gbs(ticking, draws(), seed=3)


def test_draws_a_budget_cut_too_short_for_gbs_are_refused_with_a_route_that_fits():
    # the split's refusal names the draws per chain gbs needs (150 here); after a budget stop
    # the route is the same budget with fewer warmup iterations and more draws, where the
    # iterations the run reached leave room for them, else the budget the run needs at its rate
    from types import SimpleNamespace

    from stanlogz import NutsArgs, time_budget
    from stanlogz.errors import InputError, Route
    from stanlogz.estimators.bridge import anytime

    MIN_ROUTE_WARMUP, ROUTE_SHARE = anytime.MIN_ROUTE_WARMUP, anytime.ROUTE_SHARE
    too_few_after_stop = anytime.too_few_after_stop

    split = InputError("too few draws", routes=Route(options={"draws": 150}))
    stopped = SimpleNamespace(budget_stop=(40, 1000))
    with time_budget(60):
        out = too_few_after_stop(split, stopped, NutsArgs(warmup=1000, draws=1000))
        (route,) = out.routes
        # 1,040 iterations a chain reached; 80% of them, 150 of those draws
        assert route.options == {"warmup": int(ROUTE_SHARE * 1040) - 150, "draws": 150}
        assert "ended sampling after 40 of 1000 draws per chain" in str(out)
        assert "warmup=682, draws=150" in str(out)
        # a short warmup leaves no room: the budget at the run's rate, a quarter more
        out = too_few_after_stop(split, stopped, NutsArgs(warmup=200, draws=1000))
        (route,) = out.routes
        assert int(ROUTE_SHARE * 240) - 150 < MIN_ROUTE_WARMUP
        assert route.options == {"time_budget": "110s"}  # 60 s x 350 / 240 x 1.25 = 109.4 s
    # without a budget stop (or a budget) the split's own refusal stands
    assert too_few_after_stop(split, SimpleNamespace(budget_stop=None), NutsArgs()) is split
    assert too_few_after_stop(split, stopped, NutsArgs()) is split
