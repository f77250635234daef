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
from tests.helpers import tick_per_call

pytestmark = pytest.mark.stan

EXAMPLES = Path(__file__).resolve().parents[3] / "stan_models" / "examples"
AR = EXAMPLES / "ar_nig.stan"
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
    assert time.perf_counter() - start < 4.0 + 1.0
    assert np.isfinite(r.elpd_lfo) and r.elpd_t.size == 4


EXACT = {"min_train": 28, "ahead": 1, "method": "exact", "chains": 2, "warmup": 300,
         "n_draws": 400, "seed": 8}


def test_exact_lfo_under_a_budget_answers_from_a_random_sample_of_origins(
        compiled, monkeypatch, clock):
    # exact LFO refused as a whole where its prefix fits would not fit (a stochastic-
    # volatility program with a latent per time step: "the 21 LFO prefix fits would take about
    # 26 s here, more than the time budget of 20 s allows"), and where they fit its bridges
    # checked no budget (49 s under 40 s). Now the origins are visited in a seeded random
    # order until the next would not fit; those done are the unbudgeted run's values.
    from scipy import stats

    from benchmarks.truths.crossval.truths import ar_nig_lfo

    d = json.loads((EXAMPLES / "ar_nig.data.json").read_text())
    model = compiled(AR, d)
    free = lfo(model, d, **EXACT)  # 12 origins, 13 prefix fits, no budget
    # a step-count budget: 1 s per prefix fit, 0.5 s per bridge, nothing else moves the clock
    tick_per_call(monkeypatch, clock, lfo_module, "_fit")
    tick_per_call(monkeypatch, clock, lfo_module, "heldout_elpd", 0.5)
    with time_budget(18.0):  # 9 of the 12 origins fit
        r = lfo(model, d, **EXACT)
    stop = r.budget_stop
    n = free.origins.size
    m = stop["origins_done"]
    assert stop["estimated_by"] == "origin-sample" and stop["origins"] == n and 2 <= m < n
    done = r.sampled
    assert done.sum() == m and sorted(stop["origins_left"]) == free.origins[~done].tolist()
    # the same fits and bridges, with the same seeds, as without a budget
    np.testing.assert_allclose(r.elpd_t[done], free.elpd_t[done], rtol=0, atol=1e-10)
    # n times the mean of those done, with the sampling error in the mc se
    mean = free.elpd_t[done].mean()
    assert r.elpd_lfo == pytest.approx(n * mean, rel=1e-12)
    widen = stats.t.ppf(stats.norm.cdf(2.0), m - 1) / 2
    sampling = widen * n * np.sqrt((1 - m / n) * np.var(free.elpd_t[done], ddof=1) / m)
    assert stop["sampling_se"] == pytest.approx(sampling, rel=1e-12)
    own = n / m * np.sqrt(np.sum(free.mcse_t[done] ** 2))
    assert r.mcse == pytest.approx(np.hypot(own, sampling), rel=1e-12)
    assert any(w.startswith(f"the time budget ended exact LFO after {m} of {n} origins")
               for w in r.warnings)
    assert r.to_dict()["budget_stop"] == stop
    # against the closed form: the sampling error is t-like with m - 1 = 8 degrees of
    # freedom; 8 of the widened se is 9.5 raw se, beyond which a t(8) lies with probability
    # 1.3e-5 (the finite-population factor and the bridges' small error only shrink it;
    # fixed seed)
    exact = ar_nig_lfo(d, EXACT["min_train"]).sum()
    assert m == 9 and abs(r.elpd_lfo - exact) <= 8 * r.mcse
