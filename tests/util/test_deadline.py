"""The run's time budget (``--time-budget``, :func:`stanlogz.time_budget`; issue 37 item 3):
durations, nesting, and the two long steps that check it — NUTS and the pointwise passes —
stopping early with what fits. The clock is injected, so each decision is checked exactly;
the routes' real times on corpus programs are in docs/benchmarks.md."""

from __future__ import annotations

import re
from types import SimpleNamespace

import numpy as np
import pytest

from stanlogz._util import deadline
from stanlogz._util.deadline import OverBudget, parse_duration, time_budget
from stanlogz.crossval.observations.clock import PassClock
from stanlogz.errors import InputError, Route, speaking
from stanlogz.stan import nuts
from tests.helpers import FakeClock


@pytest.fixture(autouse=True)
def _cli_voice():
    """The refusals here are checked as the command line says them (flags); the API's
    keywords are checked in tests/util/test_routes.py."""
    with speaking("cli"):
        yield


@pytest.mark.parametrize("text, seconds", [("600", 600.0), ("600s", 600.0), ("10m", 600.0),
                                           ("1.5h", 5400.0), (" 2 min ", 120.0), (45, 45.0)])
def test_durations(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["10x", "", "-5", "0", "m", "1e3"])
def test_a_bad_duration_is_one_line(text):
    with pytest.raises(InputError, match="time budget") as info:
        parse_duration(text)
    assert "\n" not in str(info.value)


def test_no_budget_no_check(clock):
    assert deadline.remaining() is None
    with time_budget(None):
        assert deadline.remaining() is None


def test_the_tighter_of_nested_budgets_holds_and_is_restored(clock):
    with time_budget("10m"):
        clock.t += 60
        assert deadline.remaining() == 540.0
        with time_budget(3600):  # looser: the outer one still holds
            assert deadline.remaining() == 540.0
        with time_budget(100):
            assert deadline.remaining() == 100.0
            assert deadline.budget_seconds() == 100.0
        assert deadline.remaining() == 540.0 and deadline.budget_seconds() == 600.0
    assert deadline.remaining() is None


def test_budget_options_round_up():
    assert deadline.as_option(601).cli() == "--time-budget 11m"
    # below 2 min in whole seconds: a 3 s run is not sent to "1m" (issue 45)
    assert deadline.as_option(6.2).cli() == "--time-budget 7s"
    assert deadline.as_option(0.4).options == {"time_budget": "1s"}
    assert deadline.as_option(119.5).options == {"time_budget": "120s"}
    assert deadline.as_option(120).options == {"time_budget": "2m"}
    assert deadline.parse_duration("7s") == 7.0
    assert deadline.as_option(4 * 3600 + 1).cli() == "--time-budget 5h"


def _watch_run(clock: FakeClock, seconds_per_iteration: float, chains: int = 4,
               warmup: int = 1000, draws: int = 1000, reserve: float | None = None
               ) -> tuple[int, str | None]:
    """Drive a budget watch as NUTS's poll does, ``seconds_per_iteration`` (all chains
    together) per iteration: the iterations done when it refused the run (and its line), or
    stopped it to keep the draws so far (line ``"stopped"``), or when the run ended."""
    watch = nuts._BudgetWatch("model", chains, warmup, draws, reserve)
    total = chains * (warmup + draws)
    done = 0
    while done < total:
        done = min(total, done + 40)
        clock.t += 40 * seconds_per_iteration
        try:
            if watch.check(np.full(chains, done // chains)):
                return done, "stopped"
        except OverBudget as exc:
            return done, str(exc)
    return done, None


def test_nuts_that_fits_runs_to_the_end(clock):
    # 8000 iterations at 0.065 s: 520 s in a 600 s budget, over a tenth of it left for what
    # follows the draws
    with time_budget(600):
        done, line = _watch_run(clock, 0.065)
    assert line is None and done == 8000


def test_nuts_past_warmup_keeps_its_draws_at_the_reserve_point(clock):
    # 8000 iterations at 0.07 s: 560 s, which would leave 40 s of 600 for loo's pass or the
    # bridge. The warmup (4000 iterations, 280 s) ends in time, so the run goes on to the
    # point where the reserve (a tenth: 60 s) starts, 540 s in, and keeps the draws so far:
    # 540 / 0.07 = 7714 iterations, checked every 40 (2.8 s).
    with time_budget(600):
        done, line = _watch_run(clock, 0.07)
    assert line == "stopped"
    assert done == 7720  # the first multiple of 40 past 7714.3
    assert clock.t - 1000.0 == pytest.approx(540.4)


def test_a_reserve_estimated_by_the_caller_replaces_the_share(clock):
    # the same run, with 100 s kept for what follows: stopped at 500 s (7160 iterations)
    with time_budget(600):
        done, line = _watch_run(clock, 0.07, reserve=100.0)
    assert line == "stopped" and done == 7160


def test_nuts_whose_warmup_cannot_end_in_time_is_refused_with_iterations_that_fit(clock):
    # 8000 iterations at 0.15 s: the warmup alone (4000 iterations) takes 600 s, more than the
    # 540 s before the reserve. Until a tenth of the warmup is done the run is refused only
    # beyond EARLY_MARGIN; at a tenth (100 per chain, 60 s in) the rest of the warmup and
    # MIN_DRAWS draws (925 iterations per chain, 555 s) exceed the 480 s left before it.
    with time_budget(600):
        done, line = _watch_run(clock, 0.15)
    assert done == 400
    assert line == ("sampling model would take about 20 min here (4 chains x 2000 iterations; "
                    "400 of 8000 done in 60 s, still in warmup), more than the time budget "
                    "of 10 min allows; run with --warmup 250 --draws 250 (about 5 min here), "
                    "or --time-budget 27m for the whole run")
    # the iterations named fit in half the budget at the rate measured: the other half is
    # for what follows the draws
    warmup, draws = map(int, re.search(r"--warmup (\d+) --draws (\d+)", line).groups())
    assert 4 * (warmup + draws) * 0.15 <= 0.5 * 600


def test_the_route_of_a_refusal_ends_in_an_answer_within_the_same_budget(clock):
    # following the route above at the same rate: the run ends (no refusal, nothing stopped)
    # in 300 s, half of the budget
    with time_budget(600):
        done, line = _watch_run(clock, 0.15, warmup=250, draws=250)
    assert line is None and done == 2000 and clock.t - 1000.0 == pytest.approx(300.0)


def test_the_whole_run_budget_counts_what_the_run_measured_not_a_flat_minute(clock):
    # The README's wells example under 3 s: 0.8 s before sampling (the interpreter's load),
    # NUTS at 0.4 ms an iteration (8000 in 3.2 s), the pass priced at 0.5 s plus 0.5 ms a
    # draw kept (2.5 s for 4000). At 880 iterations (a tenth of the warmup done) the rest of
    # the warmup and 25 draws (1.3 s) cannot end in the 1.0 s left before the reserve (a tenth
    # of the budget and the pass's 0.55 s for 100 draws): refused. The whole run is
    # 1.3 x (0.8 + 3.2 + 2.5) + 10 = 18.45 s: "19s". Before, 1.3 x 3.2 + 60 named 65 s for a
    # run of 12-14 s (issue 45: routes 5-45 times too large).
    with time_budget(3), deadline.reserving(0.5, 0.0005):
        clock.t += 0.8
        done, line = _watch_run(clock, 0.0004)
    assert line is not None and line.startswith("sampling model would take about 3 s here")
    assert line.endswith("--time-budget 19s for the whole run"), line
    # followed: the same run under 19 s samples to its end and keeps the pass's reserve
    with time_budget(19), deadline.reserving(0.5, 0.0005):
        clock.t += 0.8
        done, line = _watch_run(clock, 0.0004)
    assert line is None and done == 8000


def test_nuts_far_over_the_budget_is_refused_early(clock):
    # 8000 iterations at 2 s (4.4 h) in 600 s: refused once the slowest chain has 20
    # iterations (80 in all), as the rest of its warmup, 8040 s, is beyond EARLY_MARGIN x the
    # 440 s left before the reserve; no iteration count fits
    with time_budget(600):
        done, line = _watch_run(clock, 2.0)
    assert done == 80
    assert "--warmup" not in line and line.endswith("run with --time-budget 6h for the whole run")


def test_nuts_is_refused_once_the_budget_is_spent_in_warmup(clock):
    with time_budget(100):
        clock.t += 101  # spent before NUTS began (e.g. by a compile)
        done, line = _watch_run(clock, 0.001)
    assert done == 40 and line.startswith("sampling model would take")


def test_nuts_budget_spent_after_warmup_keeps_the_draws(clock):
    # the warmup ended when the budget is suddenly spent (e.g. the machine got slower)
    watch = nuts._BudgetWatch("model", 2, 100, 100)
    with time_budget(100):
        clock.t += 10
        assert not watch.check(np.array([150, 160]))
        clock.t += 95
        assert watch.check(np.array([151, 170]))
        assert watch.check(np.array([151, 170]))  # and it stays stopped


def test_nuts_past_warmup_with_few_draws_goes_into_the_reserve_for_them(clock):
    watch = nuts._BudgetWatch("model", 2, 100, 100)
    with time_budget(100):
        clock.t += 95  # past the reserve point (10 s before the end)
        assert not watch.check(np.array([110, 120]))  # 10 draws: fewer than MIN_DRAWS
        clock.t += 1
        assert watch.check(np.array([125, 130]))  # 25: kept
    watch = nuts._BudgetWatch("model", 2, 100, 100)
    with time_budget(100):
        clock.t += 101  # the budget spent with one draw in a chain: nothing estimable
        with pytest.raises(OverBudget, match="sampling model would take"):
            watch.check(np.array([101, 130]))


def test_a_stopped_chains_metric_is_estimated_from_its_draws():
    # Stan's regularization of a window's variances: n/(n+5) var + 1e-3 * 5/(n+5)
    x = np.random.default_rng(1).normal(0.0, [1.0, 3.0], size=(2, 95, 2))
    got = nuts._metric_from_draws(x)
    want = 95 / 100 * x.var(axis=1, ddof=1) + 1e-3 * 5 / 100
    assert np.allclose(got, want)
    assert np.isnan(nuts._metric_from_draws(x[:, :1])).all()


def test_a_pass_that_would_overrun_names_a_subsample_that_fits(clock):
    # 5000 observations at 2.9 s each (diamonds' conditional pass: 4 h) with 500 s left
    with time_budget(500):
        pc = PassClock(None, 5000, "conditional log-likelihood", clock=clock)
        with pytest.raises(OverBudget) as info:
            for _ in range(5000):
                clock.t += 2.9
                pc.update()
    assert pc.done == 3  # decided once the time left can be estimated
    line = str(info.value)
    assert line == ("the conditional log-likelihood of 5000 observations would take about 4.0 h"
                    " here (3 done in 9 s), more than the time budget of 8 min allows; run with "
                    "--subsample 100 (elpd_loo from 100 observations drawn at random, with its "
                    "se; about 5 min for this pass), or a log_lik generated quantity where the "
                    "observations are independent given the parameters (a pass linear in N), or "
                    "--time-budget 6h for the whole run")


def test_a_time_series_pass_names_leave_future_out_not_independent_terms(clock):
    # the same pass over a program that recurses over its observations (a hidden Markov
    # model's forward algorithm): its terms are not independent given the parameters, so
    # the log_lik route does not fit it; leave-future-out does, named as it runs
    lfo = Route("lfo", {"obs": "N", "min_train": 4500}, note="for a time series")
    with time_budget(500):
        pc = PassClock(None, 5000, "conditional log-likelihood", clock=clock, series=(lfo,))
        with pytest.raises(OverBudget) as info:
            for _ in range(5000):
                clock.t += 2.9
                pc.update()
    line = str(info.value)
    assert "independent given the parameters" not in line
    assert line.endswith("se; about 5 min for this pass), or `stanlogz lfo --obs N "
                         "--min-train 4500` for a time series, or --time-budget 6h for the "
                         "whole run")
    assert lfo in info.value.routes


def test_a_pass_that_fits_is_not_stopped(clock):
    with time_budget(500):
        pc = PassClock(None, 5000, "density-difference log-likelihood", clock=clock)
        for _ in range(5000):
            clock.t += 0.09  # 450 s
            pc.update()
    assert pc.done == 5000


def test_too_few_observations_fit_names_only_the_budget(clock):
    with time_budget(60):
        pc = PassClock(None, 500, "conditional log-likelihood", clock=clock)
        with pytest.raises(OverBudget, match=r"run with a log_lik generated quantity .*, or "
                                             r"--time-budget 55m for the whole run$"):
            for _ in range(500):
                clock.t += 5.0
                pc.update()


def _pass_refusal(clock: FakeClock, budget: float, total: int, per_obs: float,
                  draws: tuple[int, int]) -> str:
    with time_budget(budget):
        pc = PassClock(None, total, "conditional log-likelihood", clock=clock, draws=draws)
        with pytest.raises(OverBudget) as info:
            for _ in range(total):
                clock.t += per_obs
                pc.update()
    return str(info.value)


def test_a_pass_names_the_draws_thinned_first_when_every_observation_then_fits(clock):
    # 400 observations at 0.5 s (4 chains x 1000 draws) in 100 s: on 1000 of the draws the
    # pass takes 50 s, within 60% of the budget (2000 would take 100 s); no new run, no
    # subsampling error
    line = _pass_refusal(clock, 100, 400, 0.5, (4, 1000))
    assert ("run with --pointwise-draws 1000 (the pass on 1000 of the 4000 draws; about "
            "50 s), or") in line
    # at 0.7 s only 400 draws fit: counted as a fifth of the pass, not a tenth (the part of
    # an observation's cost that does not shrink with the draws, APPROX_SHARE): 56 s
    line = _pass_refusal(clock, 100, 400, 0.7, (4, 1000))
    assert "run with --pointwise-draws 400 (the pass on 400 of the 4000 draws; about 56 s)" \
        in line


def test_a_pass_names_a_subsample_with_the_cost_of_its_approximations(clock):
    # 19,200 observations at 0.1 s (4 chains x 1000 draws) with 330 s: 250 draws per chain
    # would still take 480 s; a subsample also approximates every observation at 100 thinned
    # draws (48 s), and 1450 observations at 0.1 s fit in the rest of 60% of the budget (150 s,
    # less the rounding of the floating-point seconds: multiples of 50 are named)
    line = _pass_refusal(clock, 330, 19200, 0.1, (4, 1000))
    assert ("run with --subsample 1450 (elpd_loo from 1450 observations drawn at random, with "
            "its se; about 3 min for this pass), or") in line


def test_a_pass_whose_approximations_alone_overrun_names_the_budget_only(clock):
    # diamonds under the corpus budget: 5000 observations at 5.6 s (4000 draws) with 330 s
    # for the pass; approximating every observation at 100 draws alone takes 700 s
    line = _pass_refusal(clock, 330, 5000, 5.6, (4, 1000))
    assert line.endswith("allows; run with a log_lik generated quantity where the observations "
                         "are independent given the parameters (a pass linear in N), or "
                         "--time-budget 11h for the whole run")


def test_refits_that_would_overrun_stop_after_the_first_with_fewer_iterations(clock):
    # 10 refits of 2000 iterations per chain at 100 s each, in 600 s: after the first, 900 s
    # more; 300 s for all ten leaves 30 s each, 600 iterations per chain at the rate seen
    with time_budget(600):
        steps_clock = deadline.StepsClock("held-out refits", 10, iterations=2000)
        clock.t += 100
        with pytest.raises(OverBudget) as info:
            steps_clock.done()
    assert str(info.value) == (
        "the 10 held-out refits would take about 17 min here (1 done in 100 s), more than the "
        "time budget of 10 min allows; run with --warmup 300 --draws 300 (about 5 min here), "
        "or --time-budget 22m for all of them")


def test_refits_that_fit_go_on(clock):
    with time_budget(600):
        steps_clock = deadline.StepsClock("held-out refits", 10, iterations=2000)
        for _ in range(10):
            clock.t += 55
            steps_clock.done()
    assert steps_clock.count == 10


def test_a_step_that_starts_late_says_what_was_left_of_the_budget(clock):
    # half the budget went to a compile and loading: the line says what the step had
    with time_budget(600):
        clock.t += 300
        done, line = _watch_run(clock, 0.15)
    assert "more than the 5 min left of the time budget (10 min); run with" in line


def test_a_fast_pass_is_judged_on_a_few_seconds_not_three_observations(clock):
    # 19,200 observations at 0.04 s (768 s) with 500 s: the first three, one of them slow,
    # would judge it on 0.5 s; it is judged after DECIDE_S seconds (about 110 observations)
    with time_budget(500):
        pc = PassClock(None, 19200, "density-difference log-likelihood", clock=clock,
                       draws=(4, 1000))
        clock.t += 0.5
        pc.update()
        with pytest.raises(OverBudget, match=r"\(11[0-9] done in 5 s\)"):
            for _ in range(19199):
                clock.t += 0.04
                pc.update()


def test_a_difference_pass_names_kfold_where_its_refits_cost_less(clock):
    # 19,200 observations at 0.4 s (2.1 h), a sampling run 117 s: ten refits take 20 min
    with time_budget(330):
        pc = PassClock(None, 19200, "density-difference log-likelihood", clock=clock,
                       draws=(4, 1000), refit_seconds=117.0)
        with pytest.raises(OverBudget) as info:
            for _ in range(19200):
                clock.t += 0.4
                pc.update()
    assert "run with `stanlogz kfold` (10 refits of about 117 s each), or --time-budget" in \
        str(info.value)


def test_a_conditional_pass_names_a_log_lik_not_kfold(clock):
    # diamonds: the conditional pass is taken because leaving observations out changes the
    # others (predictors centred in transformed data), so kfold's refits would be refused
    with time_budget(330):
        pc = PassClock(None, 5000, "conditional log-likelihood", clock=clock, draws=(4, 1000),
                       refit_seconds=117.0)
        with pytest.raises(OverBudget) as info:
            for _ in range(5000):
                clock.t += 5.6
                pc.update()
    assert str(info.value).endswith(
        "allows; run with a log_lik generated quantity where the observations are independent "
        "given the parameters (a pass linear in N), or --time-budget 11h for the whole run")


def test_moment_matching_keeps_within_the_run_budget(clock):
    # a budget already spent: no point is matched, and the note names the run's budget
    from stanlogz.crossval.fixups.mm_points import moment_match_points

    def never(i, deadline_s, on_map):
        raise AssertionError("no point should be matched")

    with time_budget(60):
        clock.t += 61
        matched, notes, left = moment_match_points(np.array([4, 7]), never, None)
    assert matched == [] and left == [4, 7]
    assert notes == ["the run's time budget ran out during moment matching "
                     "after 0 of 2 observation(s); the others (5, 8) keep their PSIS values "
                     "(raise --time-budget, or fix them with --fix exact)"]


def test_a_budget_counts_what_was_spent_before_it(clock):
    # the command line counts its process's start (deadline.process_age) as spent
    with time_budget(20, spent_before=3.0):
        assert deadline.remaining() == pytest.approx(17.0)
        assert deadline.budget_seconds() == 20.0
        assert deadline.elapsed() == pytest.approx(3.0)
    assert 0.0 <= deadline.process_age() <= deadline.STARTUP_MAX_S


def test_the_run_budget_ending_moment_matching_is_in_budget_stop(clock):
    # what the time budget ended is the result's budget_stop; moment matching ended by it is
    # "moment_matching" there (it made the heavy values' rule apply), and one ended by its own
    # cap (mm_budget) is not: that run is the one a larger budget gives
    from stanlogz.crossval.fixups.mm_points import moment_match_points
    from stanlogz.crossval.psis_loo.anytime import with_mm_cut

    def slow(i, deadline_s, on_map):
        clock.t += 10.0
        return SimpleNamespace(index=i, diagnostics={}, khat=0.8, khat_after=0.5, n_evals=1,
                               seconds=10.0)

    cut: list[dict[str, int]] = []
    with time_budget(20):
        matched, _, left = moment_match_points(np.array([4, 7, 9]), slow, None, cut=cut)
    assert [f.index for f in matched] == [4, 7] and left == [9]
    assert cut == [{"observations_done": 2, "observations": 3}]
    own: list[dict[str, int]] = []
    with time_budget(600):
        moment_match_points(np.array([4, 7, 9]), slow, None, mm_budget=15.0, cut=own)
    assert own == []
    assert with_mm_cut(None, own) is None
    assert with_mm_cut(None, cut + cut) == {
        "sampling": None, "pass": None,
        "moment_matching": {"observations_done": 4, "observations": 6}}


def test_a_point_the_budget_ends_inside_is_left_unmatched_not_a_refusal(clock):
    # A conditional quadrature checks the run's budget at every node: a point whose matching
    # starts with 0.5 s left raises BudgetSpent inside it. It used to reach the user as the
    # whole command's refusal, throwing away an anytime answer (a GARCH(1,1) of 100 steps
    # under 255 s: the pass had answered from 62 of 100 observations); now the point keeps
    # its PSIS value, as one the budget left before it starts.
    from stanlogz._util import deadline
    from stanlogz.crossval.fixups.mm_points import moment_match_points

    def spends(i, deadline_s, on_map):
        clock.t += 1.0
        deadline.check_spent(f"the conditional log-likelihood of y[{i + 1}]")
        raise AssertionError("the budget is spent")

    with time_budget(60):
        clock.t += 59.5
        matched, notes, left = moment_match_points(np.array([4, 7]), spends, None)
    assert matched == [] and left == [4, 7]
    assert notes == ["the run's time budget ran out during moment matching "
                     "after 0 of 2 observation(s); the others (5, 8) keep their PSIS values "
                     "(raise --time-budget, or fix them with --fix exact)"]


def test_the_conditional_self_check_is_not_run_on_a_spent_budget(clock, monkeypatch):
    # AR(5) of 200 steps under 255 s at load 6: the pass ended at the budget, and the
    # self-check's brute force (at 16 draws, no budget check inside) then took 11 s past it.
    # On a spent budget it is not run, and its note says why and what runs it.
    from types import SimpleNamespace

    from stanlogz.crossval.observations import conditional_verify as CV

    def never(*a, **k):
        raise AssertionError("the brute force ran on a spent budget")

    monkeypatch.setattr(CV, "verify_conditional", never)
    pw = SimpleNamespace(source="conditional", quad=None)
    with time_budget(60):
        clock.t += 60.5
        notes, reason = CV.self_check(pw, np.zeros((4, 1)))
    assert reason is None and notes == ["self-check of the conditional route not done: the pass "
                                        "used the time budget (a longer --time-budget runs it)"]


def test_auto_refits_keep_within_what_is_left_of_the_budget(clock):
    from types import SimpleNamespace

    from stanlogz.crossval.psis_loo.loo import _auto_refits_too_long

    auto, d = SimpleNamespace(name="auto"), SimpleNamespace(seconds=30.0)
    assert _auto_refits_too_long(auto, d, 10, 0.7) is None  # 300 s: no budget, under 10 min
    with time_budget(200):
        line = _auto_refits_too_long(auto, d, 10, 0.7)
    assert line == ("10 observation(s) keep Pareto k-hat above 0.70 after moment matching; "
                    "refitting each would take about 5 min (10 x 30 s of sampling), more than "
                    "the time budget has left (3 min): refit them with --fix exact, or estimate "
                    "the elpd by K-fold (`stanlogz kfold --k 10`)")


def test_a_pass_far_beyond_the_budget_by_its_cost_estimate_stops_before_it_starts(clock):
    # iohmm_reg's quadrature pass: estimated at 13,929 s with 430 s left (beyond 3 x)
    with time_budget(430):
        pc = PassClock(None, 500, "conditional log-likelihood", clock=clock, draws=(4, 100))
        pc.check_expected(1000.0)  # within 3 x the budget left: the pass starts and is judged
        with pytest.raises(OverBudget, match=r"would take about 3\.9 h here \(by its cost "
                                             r"estimate\), more than the time budget of 7 min"):
            pc.check_expected(13929.0)


def test_a_budget_spent_inside_an_observation_stops_the_pass_with_a_lower_bound(clock):
    # two observations took 35 s and 127 s; the budget runs out inside the third: the pass
    # would take at least 500 x 252 s / 3 (11.7 h)
    with time_budget(250):
        pc = PassClock(None, 500, "conditional log-likelihood", clock=clock)
        for step in (35.0, 127.0):
            clock.t += step
            pc.update()
        clock.t += 90.0
        with pytest.raises(deadline.BudgetSpent, match="during the conditional"):
            deadline.check_spent("the conditional log-likelihood of observation 3")
        with pytest.raises(OverBudget,
                           match=r"would take at least 11\.7 h here \(2 done in 4 min\)"):
            pc.spent()


def test_the_bridge_flow_stops_once_the_budget_is_spent(clock):
    # election88_full's evidence: NUTS ended within its budget, the bridge ran past it
    from stanlogz.flows.gaussianize import GaussianizingFlow

    x = np.random.default_rng(1).normal(size=(400, 3))
    GaussianizingFlow.fit(x, n_layers=2, rng=np.random.default_rng(2))  # no budget: fits
    with time_budget(600):
        clock.t += 601
        with pytest.raises(deadline.BudgetSpent) as info:
            GaussianizingFlow.fit(x, n_layers=2, rng=np.random.default_rng(2))
    assert str(info.value) == ("the time budget of 10 min ran out during the fit of the "
                               "bridge's flow; run with --time-budget 20m")


def test_an_estimators_density_evaluations_stop_once_the_budget_is_spent(clock):
    from stanlogz.estimators.common import BUDGET_ROWS, eval_log_density

    calls = []

    class Target:
        dim = 1

        def log_density_many(self, xs):
            calls.append(len(xs))
            clock.t += 100.0  # each block of rows takes 100 s
            return -0.5 * np.sum(xs**2, axis=1)

    xs = np.zeros((3 * BUDGET_ROWS, 1))
    lp, bad = eval_log_density(Target(), xs)  # no budget: one call
    assert calls == [3 * BUDGET_ROWS] and bad == 0 and np.all(lp == 0)
    calls.clear()
    with time_budget(150), pytest.raises(deadline.BudgetSpent, match="evaluations of the log"):
        eval_log_density(Target(), xs)
    assert calls == [BUDGET_ROWS, BUDGET_ROWS]  # the third block never started


def test_the_watchdog_interrupts_a_step_that_checks_no_budget():
    # real time: a 0.2 s budget and 0.1 s of grace interrupt a busy loop that checks nothing
    import time

    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        with time_budget(0.2), deadline.watchdog(0.1):
            while time.monotonic() - start < 30:
                pass
    assert deadline.expired() and time.monotonic() - start < 20
    deadline._state["expired"] = None
    with deadline.watchdog(0.1):  # no budget: nothing armed
        pass
    assert not deadline.expired()


def test_a_watchdog_that_fires_as_its_run_ends_interrupts_nothing_after(monkeypatch):
    # the race: the first interrupt is on its way (here: held 0.5 s) when the run's block
    # ends and cancels the timers; the interrupt's next timer (5 s) was scheduled after that
    # and, before, interrupted whatever ran 5 s later (a suite's worker crashed in another
    # test). Real time, the interrupts recorded instead of sent; deterministic given the
    # holds (the block ends 0.1 s into the 0.5 s hold)
    import signal
    import threading
    import time

    calls: list[float] = []
    started = threading.Event()

    def slow_interrupt(*args: object) -> None:
        calls.append(time.monotonic())
        started.set()
        time.sleep(0.5)

    monkeypatch.setattr(signal, "pthread_kill", slow_interrupt)
    monkeypatch.setattr("_thread.interrupt_main", slow_interrupt)
    with time_budget(0.05), deadline.watchdog(0.05):
        assert started.wait(10.0)
        time.sleep(0.1)
    time.sleep(6.0)  # past the next timer's 5 s
    assert len(calls) == 1
    deadline._state["expired"] = None


def test_chains_with_draws_are_kept_while_later_chains_are_still_in_warmup(clock):
    # 4 chains on 2 cores: chains 1-2 run first (0.01 s per iteration each, side by side),
    # chains 3-4 start only when those end. Under 30 s, chains 1-2 pass their warmup (1000
    # iterations, 10 s) and sample; the reserve point (27 s) comes while chains 3-4 have not
    # started: the run stops and keeps chains 1-2 (1700 draws each), not refused for the
    # chains in warmup
    watch = nuts._BudgetWatch("model", 4, 1000, 2000)
    its = np.zeros(4, dtype=np.int64)
    with time_budget(30):
        while True:
            clock.t += 0.4
            its[:2] = np.minimum(its[:2] + 40, 3000)
            if watch.check(its):
                break
    assert watch.keep.tolist() == [True, True, False, False]
    assert clock.t - 1000.0 == pytest.approx(27.2) and its[0] == 2720
    assert nuts.budget_stop_warning(1720, 2000, 2, 4) == (
        "the time budget ended sampling after 1720 of 2000 draws per chain of 2 of 4 chains "
        "(the others were still in warmup); ESS and mcse count only these")
    assert nuts.budget_stop_dict((1720, 2000, 2, 4)) == {
        "draws_kept": 1720, "draws_asked": 2000, "chains_kept": 2, "chains": 4}


def test_the_conditional_self_check_is_priced_before_it_starts(clock, monkeypatch):
    # With a little budget left, the check is priced from the pass's own timings (two
    # observations x its first two levels, 2 x 1024 nodes, at 16 draws) and not begun when it
    # would not fit; once the budget ends inside it, its note says it checked nothing.
    from types import SimpleNamespace

    from stanlogz._util import deadline
    from stanlogz.crossval.observations import conditional_verify as CV

    def never(*a, **k):
        raise AssertionError("the brute force began with too little budget left")

    quad = SimpleNamespace(seconds=lambda n_nodes, n_draws: n_nodes * n_draws * 1e-3)
    pw = SimpleNamespace(source="conditional", quad=quad, model=SimpleNamespace(dim=1))
    monkeypatch.setattr(CV, "verify_conditional", never)
    with time_budget(600):
        clock.t += 540  # 60 s left; the check needs 2 x 2048 x 16 x 1 ms = 66 s
        notes, reason = CV.self_check(pw, np.zeros((40, 1)))
    assert reason is None and notes == ["self-check of the conditional route not done: it needs "
                                        "about 66 s and 60 s of the time budget is left (a "
                                        "longer --time-budget runs it)"]

    def cut(*a, **k):
        raise deadline.spent("the self-check")

    monkeypatch.setattr(CV, "verify_conditional", cut)
    with time_budget(600):
        clock.t += 500  # 100 s left: it begins, and the budget ends inside it
        notes, reason = CV.self_check(pw, np.zeros((40, 1)))
    assert reason is None and notes == ["self-check of the conditional route not done: the time "
                                        "budget ended during its brute force (a longer "
                                        "--time-budget runs it)"]


def test_a_conditional_probe_on_a_spent_budget_is_not_read_as_no_mass(clock):
    # A far-mode probe (and the self-check's brute force, made of probes) once read every
    # error as "this value holds no mass" (-inf), the budget's end included: past the budget,
    # far modes were silently taken as absent and the brute force summed -inf columns.
    from stanlogz._util import deadline
    from stanlogz.crossval.observations.conditional_quadrature import QuadratureLogLik
    from stanlogz.errors import BudgetSpent

    def evaluate(i, us, unc):
        deadline.check_spent("a probe")
        return np.zeros((unc.shape[0], len(us)))

    quad = QuadratureLogLik.__new__(QuadratureLogLik)
    quad._eval, quad.probes = evaluate, {}
    unc = np.zeros((4, 1))
    with time_budget(60):
        assert np.all(quad._probe(0, np.arange(3.0), unc) == 0.0)
        clock.t += 61
        with pytest.raises(BudgetSpent):
            quad._probe(0, np.arange(3.0), unc)


def test_a_subsampled_loo_cut_by_the_budget_does_not_change_route(clock, monkeypatch):
    # The approximation's pass of a subsampled loo (its density difference on thinned draws)
    # once caught the budget's refusal with the check's failures and tried the conditional
    # route instead, as if the difference were not a pointwise log-likelihood there.
    from types import SimpleNamespace

    from stanlogz._util import deadline
    from stanlogz.crossval.psis_loo import loo as L
    from stanlogz.errors import OverBudget

    def chunks(unc):
        raise deadline.OverBudget("the pass would take 5 min; 1 min of the time budget is left")
        yield  # a generator, as the pass's

    def other_route(*a, **k):
        raise AssertionError("the budget's refusal was read as the route's")

    monkeypatch.setattr(L, "conditional_instead", other_route)
    pw = SimpleNamespace(obs=SimpleNamespace(n=50), source="difference", chunks=chunks)
    d = SimpleNamespace(flat_unconstrained=lambda: np.zeros((400, 2)))
    with time_budget(600), pytest.raises(OverBudget, match="5 min"):
        L._subsampled(pw, d, 1.0, 10, 0, None)
