"""loo of a real program under a short time budget answers (issue 45): the pointwise pass the
budget ends keeps the observations done and estimates the rest, with the flag in the result
and its JSON; on the command line, exit 0 with the warning. A refusal while NUTS is still in
warmup names iterations that, followed on the same machine, answer within the same budget."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import stanlogz
from stanlogz import OverBudget, time_budget

pytestmark = pytest.mark.stan

EXAMPLES = Path(__file__).resolve().parents[3] / "stan_models" / "examples"
N = 3000


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
    assert spent < 2.0 + 1.5  # the estimate after the stop, on a loaded machine
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


def test_a_pass_that_fits_on_fewer_draws_runs_on_them(compiled, data_file, monkeypatch):
    # The clock's decision (tests/crossval/psis_loo/test_anytime_pass.py, a fake clock) is
    # forced here: loo then runs the pass on 400 of the 4000 draws, as pointwise_draws=400
    # does, with the note and the flag, and the values are that run's exactly.
    from stanlogz.crossval.observations import clock

    model = compiled(EXAMPLES / "regression.stan", data=data_file)
    draws = stanlogz.sample(model, chains=4, warmup=300, draws=1000, seed=3)
    monkeypatch.setattr(clock.PassClock, "_thinned_fit", lambda self, *a: 400)
    with time_budget(600):
        r = stanlogz.loo(model, data_file, draws=draws, log_lik="difference", fix="none",
                         seed=1, verify=0)
    same = stanlogz.loo(model, data_file, draws=draws, log_lik="difference", fix="none",
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


def test_cli_loo_under_a_short_budget_answers_with_the_flag(compiled, data_file):
    compiled(EXAMPLES / "regression.stan", data=data_file)  # built once, in the cache
    # the pass alone (3000 data instances, each at 12000 draws) takes longer than 12 s on 2
    # cores; a short warmup leaves time for it on a loaded machine too
    cmd = [sys.executable, "-m", "stanlogz", "--json", "--time-budget", "12", "loo",
           str(EXAMPLES / "regression.stan"), "--data", str(data_file), "--log-lik",
           "difference", "--warmup", "200", "--draws", "3000", "--seed", "1"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout)
    stop = out["budget_stop"]
    assert stop is not None and (stop["sampling"] or stop["pass"] or stop["pass_draws"])
    if stop.get("pass_draws"):  # the pass on fewer draws, where every observation fit
        used = stop["pass_draws"]["draws_used"]
        assert out["n_samples"] == used < stop["pass_draws"]["draws"]
        assert f"PSIS-LOO on {used} of the" in proc.stderr
    if stop["pass"]:
        assert out["subsample"]["m"] == stop["pass"]["observations_done"]
        assert "stanlogz: warning: the time budget ended the pointwise pass" in proc.stderr
    if stop["sampling"]:
        kept = stop["sampling"]["draws_kept"]
        assert f"the time budget ended sampling after {kept} of 3000 draws per chain" \
            in proc.stderr


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
