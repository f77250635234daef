"""loo of a real program under a short time budget answers (issue 45): the pointwise pass the
budget ends keeps the observations done and estimates the rest, with the flag in the result
and its JSON; on the command line, exit 0 with the warning. A refusal while NUTS is still in
warmup names iterations that, followed on the same machine, answer within the same budget."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import numpy as np
import pytest

import stanlogz
from stanlogz import OverBudget, time_budget
from tests.helpers import run_cli, tick_per_call

pytestmark = pytest.mark.stan

EXAMPLES = Path(__file__).resolve().parents[3] / "stan_models" / "examples"
TESTS = Path(__file__).resolve().parents[3] / "stan_models" / "tests"
N = 3000
#: the command line's time budget (seconds) and its draws (4 chains)
BUDGET_S, BUDGET_DRAWS = 8, 8000


@pytest.fixture(scope="module")
def data_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # a linear regression with t(5) noise, N = 3000: the density-difference pass builds one
    # data instance per observation and evaluates it at every draw (seconds on 2 cores)
    rng = np.random.default_rng(8)
    x = rng.normal(size=N)
    y = 0.5 + 1.2 * x + 0.8 * rng.standard_t(5, size=N)
    path = tmp_path_factory.mktemp("anytime") / "reg3000.json"
    path.write_text(json.dumps({"N": N, "x": x.round(4).tolist(), "y": y.round(4).tolist()}))
    return path


def test_a_pass_the_budget_ends_answers_with_the_rest_estimated(compiled, data_file):
    model = compiled(EXAMPLES / "regression.stan", data=data_file)
    draws = stanlogz.sample(model, chains=4, warmup=300, draws=1000, seed=3)
    # the same values from the log_lik generated quantity (the same constants), all of them
    full = stanlogz.loo(model, data_file, draws=draws, log_lik="log_lik", fix="none", seed=1)
    start = time.perf_counter()
    with time_budget(2.0):  # every draw asked for: the pass is not thinned to fit
        r = stanlogz.loo(model, data_file, draws=draws, log_lik="difference", fix="none",
                         seed=1, pointwise_draws=4000)
    spent = time.perf_counter() - start
    # the estimate after the stop, on a loaded machine: 1.64 s with two suites on two cores
    assert spent < 2.0 + 2.5
    done = r.budget_stop["pass"]["observations_done"]
    assert r.budget_stop["sampling"] is None and r.budget_stop["pass"]["observations"] == N
    assert 20 <= done < N and r.sample_index.size == done
    assert any(w.startswith(f"the time budget ended the pointwise pass after {done} of {N} "
                            "observations") for w in r.warnings)
    # the values of the observations done are the full pass's
    assert np.allclose(r.elpd_i, full.elpd_i[r.sample_index], rtol=0, atol=1e-8)
    # same draws: the estimate differs from the full value by its subsampling error only;
    # within 4.5 of its (calibrated) se: failure probability below 1e-5 for a normal error
    assert abs(r.elpd_loo - full.elpd_loo) <= 4.5 * r.subsampling_se
    out = r.to_dict()
    assert out["budget_stop"]["pass"]["observations_done"] == done
    assert out["subsample"]["m"] == done


def test_a_pass_that_fits_on_fewer_draws_runs_on_them(compiled, data_file, tmp_path,
                                                    monkeypatch):
    # The clock's decision (tests/crossval/psis_loo/test_anytime_pass.py, a fake clock) is
    # forced here: loo then runs the pass on 400 of the 4000 draws, as pointwise_draws=400
    # does, with the note and the flag, and the values are that run's exactly. The first 300
    # of the observations: the decision is forced, so no size makes the pass too long, and
    # the density-difference pass (N data instances of N observations each) is 100 times
    # shorter than at N = 3000.
    from stanlogz.crossval.observations import clock

    full_data = json.loads(data_file.read_text())
    data = tmp_path / "reg300.json"
    data.write_text(json.dumps({"N": 300, "x": full_data["x"][:300],
                                "y": full_data["y"][:300]}))
    model = compiled(EXAMPLES / "regression.stan", data=data)
    draws = stanlogz.sample(model, chains=4, warmup=300, draws=1000, seed=3)
    monkeypatch.setattr(clock.PassClock, "_thinned_fit", lambda self, *a: 400)
    with time_budget(600):
        r = stanlogz.loo(model, data, draws=draws, log_lik="difference", fix="none",
                         seed=1, verify=0)
    same = stanlogz.loo(model, data, draws=draws, log_lik="difference", fix="none",
                        seed=1, verify=0, pointwise_draws=400)
    # the same values; their sums in another order (the budget's pass visits them at random)
    assert r.n_samples == 400 and r.elpd_loo == pytest.approx(same.elpd_loo, rel=1e-12)
    # (loo's NA where a k-hat of the 400 draws is above the threshold with fix="none")
    assert r.mcse_elpd_loo == pytest.approx(same.mcse_elpd_loo, rel=1e-12, nan_ok=True)
    np.testing.assert_allclose(r.khat, same.khat, rtol=0, atol=1e-12)
    assert r.sample_index is None
    assert r.budget_stop == {"sampling": None, "pass": None,
                             "pass_draws": {"draws_used": 400, "draws": 4000}}
    assert any("on 400 of the 4000 posterior draws" in w and "the time budget" in w
               for w in r.warnings)


def test_cli_loo_under_a_short_budget_answers_with_the_flag(compiled, data_file, capsys):
    from stanlogz.arviz_compat import arviz
    from stanlogz.cli import build_parser

    compiled(EXAMPLES / "regression.stan", data=data_file)  # built once, in the cache
    # the command line in this process (its commands and ArviZ imported before the budget,
    # as in a process that ran any other test), as tests/api/test_evidence_budget.py runs it
    arviz()
    build_parser()
    # the pass alone (3000 data instances, each at BUDGET_DRAWS draws) takes longer than the
    # budget on 2 cores, the draws in proportion to the seconds (12000 draws, 12 s before);
    # a short warmup leaves time for it on a loaded machine too
    rc, stdout, stderr = run_cli(
        capsys, "--json", "--time-budget", str(BUDGET_S), "loo",
        str(EXAMPLES / "regression.stan"), "--data", str(data_file), "--log-lik", "difference",
        "--warmup", "200", "--draws", str(BUDGET_DRAWS // 4), "--seed", "1")
    assert rc == 0, stderr[-2000:]
    out = json.loads(stdout)
    stop = out["budget_stop"]
    assert stop is not None and (stop["sampling"] or stop["pass"] or stop["pass_draws"])
    if stop.get("pass_draws"):  # the pass on fewer draws, where every observation fit
        used = stop["pass_draws"]["draws_used"]
        assert out["n_samples"] == used < stop["pass_draws"]["draws"]
        assert f"PSIS-LOO on {used} of the" in stderr
    if stop["pass"]:
        assert out["subsample"]["m"] == stop["pass"]["observations_done"]
        assert "stanlogz: warning: the time budget ended the pointwise pass" in stderr
    if stop["sampling"]:
        kept = stop["sampling"]["draws_kept"]
        assert (f"the time budget ended sampling after {kept} of {BUDGET_DRAWS // 4} draws "
                "per chain") in stderr


def test_the_route_of_a_refusal_in_warmup_answers_within_the_same_budget(compiled):
    # slow.stan with K = 1000 (thousands of iterations a second): a warmup of 200,000
    # iterations per chain cannot end in 3 s; the refusal names fewer iterations, which,
    # followed on the same machine under the same budget, answer
    model = compiled("slow", data={"K": 1000})
    with time_budget(3), pytest.raises(OverBudget) as info:
        model.nuts(chains=2, warmup=200_000, draws=1000, seed=1)
    line = str(info.value)
    assert "still in warmup" in line
    route = info.value.routes[0]  # the typed route, as the Python caller is told it
    assert f"run with settings=NutsArgs(warmup={route.options['warmup']}," in line
    warmup, draws = route.options["warmup"], route.options["draws"]
    start = time.perf_counter()
    with time_budget(3):
        out = model.nuts(chains=2, warmup=warmup, draws=draws, seed=1)
    assert time.perf_counter() - start < 3.0
    assert out.constrained.shape[1] >= 25  # all its draws, or those the budget left


def test_the_integrated_pass_stops_at_the_budget_and_answers(compiled, tmp_path):
    # one latent per observation (Poisson with a normal random effect each), int<lower=1> N
    # and a data array the program does not read: the integrated route (one quadrature per
    # observation and draw, about 20 ms an observation at 1000 draws here). Its pass ran to
    # the end whatever the budget, and the command-line watchdog then threw every value away
    # ("ran out in a step that does not check it", after 46 s under --time-budget 30s on a
    # 300-observation program); now it stops as the conditional pass does.
    rng = np.random.default_rng(4)
    n = 200
    y = rng.poisson(np.exp(1.0 + 0.6 * rng.normal(size=n)))
    data = tmp_path / "latent200.json"
    data.write_text(json.dumps({"N": n, "y": y.tolist(), "unused": [0.5, 1.5]}))
    model = compiled(TESTS / "latent_poisson_lower1.stan", data=data)
    draws = stanlogz.sample(model, chains=4, warmup=300, draws=250, seed=3)
    start = time.perf_counter()
    full = stanlogz.loo(model, data, draws=draws, log_lik="integrated", fix="none", seed=1,
                        verify=0)
    took = time.perf_counter() - start  # the whole pass at this machine's load (4 s idle)
    # the sampler's summary of the 202 quantities, which loo reads before the pass since a
    # budget's end came 0.4 s late on radon (timed here after the first call's imports)
    from stanlogz.crossval.psis_loo.loo import _sampler_warnings

    start = time.perf_counter()
    _sampler_warnings(draws)
    summary_s = time.perf_counter() - start
    # a budget of 30% of the whole, at least 1 s, and the summary's seconds (without them it
    # left 13 done at two suites' load): the pass stops with 20 or more of the 200 done on
    # an idle machine and at the load of two test suites beside another process alike (a
    # fixed 1 s left 9 done there, and the pass refused)
    budget = max(1.0, 0.3 * took) + summary_s
    start = time.perf_counter()
    with time_budget(budget):
        r = stanlogz.loo(model, data, draws=draws, log_lik="integrated", fix="none", seed=1,
                         verify=0, pointwise_draws=1000)
    # the estimate after the stop: 1.5 s idle, more in proportion under load
    assert time.perf_counter() - start < budget + 1.5 * max(1.0, took / 4.0)
    stop = r.budget_stop["pass"]
    assert stop["observations"] == n and 2 <= stop["observations_done"] < n
    assert r.log_lik_source == "integrated"
    np.testing.assert_allclose(r.elpd_i, full.elpd_i[r.sample_index], rtol=0, atol=1e-8)
    # the same draws: the estimate's only error is the subsampling one; within 4.5 of its se
    # (failure probability below 1e-5 for a normal error)
    assert abs(r.elpd_loo - full.elpd_loo) <= 4.5 * r.subsampling_se


def test_bridge_refits_the_budget_ends_keep_those_done(compiled, clock, monkeypatch):
    # refits of a program with one latent per observation go through the augmented bridge
    # (heldout_many). Under a budget they used to refuse as a whole at the first that did not
    # fit, discarding those done; now each starts only where it fits and the done are kept.
    # A step-count budget: each refit advances the injected clock by 10 s, nothing else does.
    from stanlogz.crossval.refit import heldout

    data = TESTS / "latent_poisson_lower1.json"  # 12 counts, int<lower=1> N, unused arrays
    model = compiled(TESTS / "latent_poisson_lower1.stan", data=data)
    draws = stanlogz.sample(model, chains=2, warmup=300, draws=300, seed=3)
    tick_per_call(monkeypatch, clock, heldout, "heldout_elpd", 10.0)
    with time_budget(45):
        r = stanlogz.loo(model, data, draws=draws, log_lik="integrated", fix="exact",
                         k_threshold=0.0, verify=0, seed=1)
    # RefitWatch keeps a tenth of the budget (4.5 s) and starts a refit where 1.2 times the
    # slowest so far (10 s) fits: after 3 refits 15 s are left, 15 - 4.5 < 12, so 3 are done
    exact = [f for f in r.fixed if f.method != "psis"]
    assert len(exact) == 3 and all(np.isfinite(f.elpd) and f.mcse > 0 for f in exact)
    above = int(np.sum(r.khat > 0.0))  # those asked for: 7 of the 12 here
    assert above > 3
    assert any(w.startswith(f"the time budget ended the exact refits after 3 of {above}; ")
               for w in r.warnings)
    # those left keep their PSIS values, above the k-hat threshold of 0: no mc se (loo's NA)
    assert np.isnan(r.mcse_elpd_loo)


def test_the_self_checks_bridge_refits_are_priced_as_such(compiled):
    # the self-check's refits of a source with latents integrated out go through the augmented
    # bridge: NUTS and the held-out densities (HELDOUT_SHARE = 1.5 of a cold run, as K-fold
    # prices them). They were priced as a warm NUTS run alone: "about 1 s" for 12 s of
    # refits on a 300-observation Poisson-lognormal program. The draws here claim 20 s of
    # sampling, so that the price is far from the rounding of the line that prints it.
    import dataclasses

    from stanlogz.crossval.refit.kfold_time import HELDOUT_SHARE

    data = TESTS / "latent_poisson_lower1.json"
    model = compiled(TESTS / "latent_poisson_lower1.stan", data=data)
    draws = stanlogz.sample(model, chains=2, warmup=300, draws=300, seed=3)
    draws = dataclasses.replace(draws, seconds=20.0)
    lines: list[str] = []
    stanlogz.loo(model, data, draws=draws, log_lik="integrated", fix="none", verify=2,
                 seed=1, progress=lines.append)
    line = next(x for x in lines if x.startswith("self-check: recomputing"))
    # two refits, each a warm NUTS run and the held-out densities' share of the cold run
    # (at least 2 x 30 s; the old price, two warm NUTS runs, was at most 40 s)
    seconds = float(re.search(r"\(about (\d+) s\)$", line).group(1))
    assert seconds >= 2 * HELDOUT_SHARE * 20.0


def test_the_sampler_warnings_are_read_before_the_steps_the_budget_ends(monkeypatch):
    # loo read the draws' summary (R-hat, ESS) after moment matching, outside every budgeted
    # step: 0.4 s on radon_county_intercept's 90 parameters, past a 15 s budget. It is read
    # before the pointwise pass now, and its warnings still reach the result.
    from stanlogz.crossval.psis_loo import loo as loo_module

    monkeypatch.setenv("STANLOGZ_BACKEND", "interpreted")
    order = []
    real_warnings, real_source = loo_module._sampler_warnings, loo_module.pointwise_source

    def warnings(d):
        order.append("summary")
        return [*real_warnings(d), "a sampler warning"]

    def source(*args, **kwargs):
        order.append("pass")
        return real_source(*args, **kwargs)

    monkeypatch.setattr(loo_module, "_sampler_warnings", warnings)
    monkeypatch.setattr(loo_module, "pointwise_source", source)
    data = {"N": 20, "y": np.round(np.random.default_rng(2).normal(size=20), 3).tolist(),
            "sigma": 1.0, "prior_sd": 2.0}
    model = stanlogz.StanModel.from_file(str(EXAMPLES / "normal_mean.stan"), data)
    with time_budget(60):
        r = stanlogz.loo(model, seed=1, warmup=200, n_draws=200)
    assert order[:2] == ["summary", "pass"]
    assert "a sampler warning" in r.warnings
