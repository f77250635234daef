"""PSIS-LFO under a time budget (issue 45): the refits that do not fit are left out, their
origins keep PSIS values from the last refit's draws, flagged in the result and its JSON, with
PSIS's Monte Carlo se, NaN (loo's NA) where k̂ is above the draws' threshold; the origins
before them are the unbudgeted run's values."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest

from stanlogz import OverBudget, time_budget
from stanlogz.crossval.elpd.psis import k_threshold
from stanlogz.crossval.refit import lfo as lfo_module
from stanlogz.crossval.refit.lfo import lfo
from tests.helpers import past_budget_grace, tick_per_call

pytestmark = pytest.mark.stan

EXAMPLES = Path(__file__).resolve().parents[3] / "stan_models" / "examples"
AR = EXAMPLES / "ar_nig.stan"
TESTS = Path(__file__).resolve().parents[3] / "stan_models" / "tests"
SETTINGS = {"min_train": 30, "ahead": 2, "method": "psis", "k_threshold": 0.0, "chains": 4,
            "warmup": 300, "n_draws": 500, "seed": 8}


def test_a_budget_leaves_refits_out_and_flags_their_origins(compiled, monkeypatch, clock):
    d = json.loads((EXAMPLES / "ar_nig.data.json").read_text())
    model = compiled(AR, d)
    free = lfo(model, d, **SETTINGS)
    # k-hat 0 makes later origins refit (at 32, 34, 37) without a budget
    assert len(free.refits) >= 2
    # a step-count budget: the clock moves one second per NUTS fit and at nothing else. The
    # first fit (t = 30) takes 1 s of 2.5; a refit on y[1:t] would take 1.2 t/30 s > 1.25 s
    # (the 1.5 s left less a tenth of the budget), so none fits
    tick_per_call(monkeypatch, clock, lfo_module, "_fit")
    with time_budget(2.5):
        r = lfo(model, d, **SETTINGS)
    flagged = r.budget_stop["origins_flagged"]
    assert r.refits == [30] and r.budget_stop["refits_skipped"] == len(flagged) >= 1
    late = np.isin(r.origins, flagged)
    assert np.all(r.khat_t[late] > 0.0)
    # loo's NA: no Monte Carlo se where PSIS is unreliable (k̂ above the draws' threshold),
    # PSIS's own below it, and the total's NA with any NA origin
    unreliable = late & (r.khat_t > k_threshold(r.n_samples))
    assert np.all(np.isnan(r.mcse_t[unreliable]))
    assert np.all(np.isfinite(r.mcse_t[late & ~unreliable]))
    assert r.budget_stop["unreliable"] == r.origins[unreliable].tolist()
    assert np.isnan(r.mcse) == bool(unreliable.any())
    assert r.to_dict()["budget_stop"]["origins_flagged"] == flagged
    assert any(w.startswith("the time budget left") for w in r.warnings)
    # the origins before the first skipped refit share the unbudgeted run's draws and values
    before = r.origins < flagged[0]
    np.testing.assert_allclose(r.elpd_t[before], free.elpd_t[before])


def test_the_route_of_a_refusal_in_warmup_answers_within_the_same_budget(compiled):
    # 30,000,000 warmup iterations per chain of the first fit cannot end in 4 s; the refusal
    # names fewer iterations, which, followed on the same machine under the same budget,
    # answer (the refits that then do not fit are left out and flagged)
    d = json.loads((EXAMPLES / "ar_nig.data.json").read_text())
    model = compiled(AR, d)
    lfo(model, d, min_train=36, ahead=1, chains=2, warmup=100, n_draws=100, seed=3)  # warm
    with time_budget(4), pytest.raises(OverBudget) as info:
        lfo(model, d, min_train=36, ahead=1, chains=2, warmup=30_000_000, n_draws=1000, seed=3)
    line = str(info.value)
    assert "still in warmup" in line
    route = info.value.routes[0]  # the typed route, as the Python caller is told it
    warmup, draws = route.options["warmup"], route.options["draws"]
    start = time.perf_counter()
    with time_budget(4):
        r = lfo(model, d, min_train=36, ahead=1, chains=2, warmup=warmup, n_draws=draws,
                seed=3)
    # the budget's checks are polled, so a run may end a little after it; a second of margin
    # for a loaded machine (4.18 s with two test suites at once on 2 cores)
    assert time.perf_counter() - start < 4.0 + past_budget_grace(1.0)
    assert np.isfinite(r.elpd_lfo) and r.elpd_t.size == 4



EXACT = {"min_train": 28, "ahead": 1, "method": "exact", "chains": 2, "warmup": 300,
         "n_draws": 400, "seed": 8}


def test_exact_lfo_under_a_budget_answers_the_rest_by_psis(compiled, monkeypatch, clock):
    # exact LFO refused as a whole where its prefix fits would not fit, and where they did its
    # bridges checked no budget (49 s under 40 s on a stochastic-volatility program). Now the
    # origins are visited in a seeded random order until the next would not fit; those done
    # are the unbudgeted run's values, and the others PSIS estimates from the nearest fit.
    from benchmarks.truths.crossval.truths import ar_nig_lfo
    from stanlogz.crossval.elpd.psis import k_threshold as threshold

    d = json.loads((EXAMPLES / "ar_nig.data.json").read_text())
    model = compiled(AR, d)
    free = lfo(model, d, **EXACT)  # 12 origins, 13 prefix fits, no budget
    # a step-count budget: 1 s per prefix fit, 0.5 s per bridge, nothing else moves the clock
    tick_per_call(monkeypatch, clock, lfo_module, "_fit")
    tick_per_call(monkeypatch, clock, lfo_module, "heldout_elpd", 0.5)
    with time_budget(10.0):
        r = lfo(model, d, **EXACT)
    stop = r.budget_stop
    n, m = free.origins.size, stop["origins_exact"]
    assert stop["estimated_by"] == "psis" and stop["origins"] == n and 1 <= m < n
    left = sorted(stop["khat"])
    exact_rows = ~np.isin(r.origins, left)
    assert exact_rows.sum() == m and np.all(np.isnan(r.khat_t[exact_rows]))
    # the same fits and bridges, with the same seeds, as without a budget
    np.testing.assert_allclose(r.elpd_t[exact_rows], free.elpd_t[exact_rows], rtol=0,
                               atol=1e-10)
    # the others by PSIS from the nearest fit, with their k-hat (NaN where the fit is on
    # y[1:t] itself: plain Monte Carlo), a finite mc se below the draws' threshold
    k = np.array([stop["khat"][t] for t in left])
    assert np.isfinite(k).sum() >= 1 and stop["unreliable"] == [
        t for t, kk in zip(left, k, strict=True) if kk > threshold(800)]
    assert np.all(np.isfinite(r.elpd_t)) and np.all(np.isfinite(r.mcse_t[~exact_rows]))
    assert any(w.startswith(f"the time budget ended exact LFO after {m} of {n} origins")
               for w in r.warnings)
    assert r.to_dict()["budget_stop"] == stop
    # against the closed form: PSIS values' mc se added linearly per fit is an upper bound,
    # so 4.5 of it is passed by a normal error with probability below 7e-6 (fixed seed)
    exact = ar_nig_lfo(d, EXACT["min_train"]).sum()
    assert not stop["unreliable"] and abs(r.elpd_lfo - exact) <= 4.5 * r.mcse


def test_exact_lfo_whose_parameters_change_with_t_refuses_with_routes_that_answer(
        compiled, monkeypatch, clock):
    # latent AR(1) states, one per time step: PSIS from a prefix fit cannot reach another
    # prefix's parameters, and a sample of the origins' own spread is no error bar (at 2-10
    # of 20 origins it missed by 5-14 times); a budget that cannot hold every origin refuses
    # and names what can
    from stanlogz.errors import OverBudget as Over

    rng = np.random.default_rng(3)
    y = (np.cumsum(rng.normal(size=16)) * 0.5 + rng.normal(size=16)).round(3).tolist()
    d = {"N": 16, "y": y, "phi": 0.6, "s": 0.5, "sigma_y": 1.0}
    model = compiled(TESTS / "ar1_states.stan", d)
    settings = {"min_train": 10, "ahead": 1, "method": "exact", "chains": 2, "warmup": 200,
                "n_draws": 200, "seed": 4}
    tick_per_call(monkeypatch, clock, lfo_module, "_fit")
    tick_per_call(monkeypatch, clock, lfo_module, "heldout_elpd", 0.5)
    with time_budget(6.0), pytest.raises(Over) as info:
        lfo(model, d, **settings)
    line = str(info.value)
    assert "the time budget ended exact LFO after " in line and "change with t" in line
    budget = next(r for r in info.value.routes if "time_budget" in r.options)
    # followed under the same clock, every origin fits: 7 fits and 6 bridges, 10 s
    with time_budget(budget.options["time_budget"]):
        r = lfo(model, d, **settings)
    assert r.budget_stop is None and r.origins.size == 6 and np.all(np.isfinite(r.elpd_t))


def test_a_prefix_fit_the_budget_cut_short_is_not_used():
    # a fit whose sampling the budget stopped past its warmup keeps a few draws, too few to
    # bridge from: the origins needing it are left to PSIS (the visit ends there), as when the
    # next fit would not fit
    from types import SimpleNamespace

    from stanlogz.crossval.refit.lfo_anytime import visit_origins

    calls: list[int] = []

    def fit(t, rng):
        calls.append(t)
        return SimpleNamespace(budget_stop=(25, 1000) if len(calls) == 3 else None)

    origins = np.arange(10, 20)
    times = sorted(set(origins.tolist()) | {int(t) + 1 for t in origins})
    with time_budget(3600):
        fits, bridges, _ = visit_origins(origins, times, 1, 5, fit,
                                         lambda t, fitted, rng: (t, fitted[t], fitted[t + 1]))
    cut = calls[2]
    assert len(calls) == 3 and cut not in fits and set(fits) == set(calls[:2])
    assert all(t in fits and t + 1 in fits for t in bridges) and len(bridges) == 1
