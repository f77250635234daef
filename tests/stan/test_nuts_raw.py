"""Stan's NUTS through the library's own entry point: posterior moments against the analytic
conjugate-normal posterior, output layout, reproducibility, inits and init failures, progress
lines and stopping on Ctrl-C."""

from __future__ import annotations

import _thread
import json
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import arviz as az
import numpy as np
import pytest

import stanlogz.stan.messages
import stanlogz.stan.nuts
from stanlogz.errors import InitializationError, InputError
from stanlogz.stan.model import StanModel
from stanlogz.stan.nuts import NutsOutput

MODELS = Path(__file__).resolve().parents[2] / "stan_models" / "tests"
NORMAL_DATA = json.loads((MODELS / "normal.json").read_text())


@pytest.fixture(scope="module")
def normal(compiled) -> StanModel:
    return compiled("normal")


@pytest.fixture(scope="module")
def normal_fit(normal) -> NutsOutput:
    return normal.nuts(chains=4, warmup=1000, draws=1000, seed=11)


def analytic_posterior(d: dict) -> tuple[float, float]:
    y = np.asarray(d["y"])
    precision = 1 / d["tau0"] ** 2 + len(y) / d["sigma"] ** 2
    mean = (d["mu0"] / d["tau0"] ** 2 + y.sum() / d["sigma"] ** 2) / precision
    return mean, 1 / precision


def test_posterior_moments_match_analytic(normal_fit):
    mean, var = analytic_posterior(NORMAL_DATA)
    mu = normal_fit.constrained[:, :, 0]
    # 5 Monte Carlo standard errors (estimated by ArviZ) keep the false-failure rate ~1e-6;
    # the seed is fixed, so the test is deterministic anyway.
    mcse_mean = float(az.mcse(mu, method="mean"))
    assert abs(mu.mean() - mean) < 5 * mcse_mean
    mcse_sd = float(az.mcse(mu, method="sd"))
    assert abs(mu.std() - np.sqrt(var)) < 5 * mcse_sd
    # y_rep is the posterior predictive: variance var + sigma^2 (ESS of y_rep is ~ the draws,
    # so the ratio's relative sd is ~ sqrt(2 / 4000) ~ 0.02 and 0.15 is ~7 sd).
    y_rep = normal_fit.constrained[:, :, 1]
    assert abs(y_rep.var() / (var + NORMAL_DATA["sigma"] ** 2) - 1) < 0.15
    assert float(az.rhat(mu)) < 1.01


def test_output_layout(normal, normal_fit):
    fit = normal_fit
    assert fit.constrained.shape == (4, 1000, 2)
    assert fit.unconstrained.shape == (4, 1000, 1)
    assert fit.constrained_names == ["mu", "y_rep"]
    assert set(fit.sampler) == {"lp__", "accept_stat__", "stepsize__", "treedepth__",
                                "n_leapfrog__", "divergent__", "energy__"}
    assert all(v.shape == (4, 1000) for v in fit.sampler.values())
    assert fit.seed == 11 and fit.max_treedepth == 10 and fit.seconds > 0
    # mu is unconstrained, so both views hold the same numbers.
    np.testing.assert_array_equal(fit.unconstrained[..., 0], fit.constrained[..., 0])
    # Post-warmup step size is the adapted one; the metric approximates the posterior variance
    # (Stan regularizes it toward 1e-3 with weight 5/(n+5), and estimates it from ~500 draws).
    np.testing.assert_array_equal(fit.sampler["stepsize__"][:, 0], fit.step_size)
    _, var = analytic_posterior(NORMAL_DATA)
    assert fit.inv_metric.shape == (4, 1)
    assert np.all(np.abs(fit.inv_metric[:, 0] / var - 1) < 0.4)
    # Step-size adaptation targets a mean accept_stat of adapt_delta = 0.8.
    assert 0.6 < fit.sampler["accept_stat__"].mean() < 0.99
    assert fit.n_gradient_evals > fit.sampler["n_leapfrog__"].sum()  # warmup included


def test_lp_is_propto_log_density_at_the_draws(normal, normal_fit):
    unc = normal_fit.unconstrained[0, :50]
    lp = normal.log_density_many(unc, propto=True, jacobian=True)
    np.testing.assert_allclose(normal_fit.sampler["lp__"][0, :50], lp, rtol=1e-12, atol=1e-12)


def test_reproducible_with_seed_and_warmup_thin(normal):
    a = normal.nuts(chains=2, warmup=200, draws=300, seed=5, thin=3, save_warmup=True)
    b = normal.nuts(chains=2, warmup=200, draws=300, seed=5, thin=3, save_warmup=True)
    c = normal.nuts(chains=2, warmup=200, draws=300, seed=6, thin=3, save_warmup=True)
    np.testing.assert_array_equal(a.constrained, b.constrained)
    assert not np.array_equal(a.constrained, c.constrained)
    assert a.constrained.shape == (2, 67 + 100, 2)
    full = normal.nuts(chains=2, warmup=200, draws=300, seed=5, save_warmup=True)
    # Thinning keeps every 3rd draw of warmup and of sampling separately, like Stan.
    np.testing.assert_array_equal(full.constrained[:, 0:200:3], a.constrained[:, :67])
    np.testing.assert_array_equal(full.constrained[:, 200::3], a.constrained[:, 67:])
    assert full.n_gradient_evals == int(full.sampler["n_leapfrog__"].sum())


def test_constrained_draws_of_transforms_program(compiled):
    model = compiled("transforms")
    fit = model.nuts(chains=2, warmup=300, draws=200, seed=3, init={"k": 0.6, "b": 0.0})
    names = fit.constrained_names
    assert names == model.param_names(include_tp=True, include_gq=True)
    w = fit.constrained[..., [names.index(f"w.{i}") for i in (1, 2, 3)]]
    np.testing.assert_allclose(w.sum(axis=-1), 1.0, atol=1e-12)
    k = model.param_num()
    again = model.constrain_many(fit.unconstrained.reshape(-1, model.dim))
    np.testing.assert_allclose(again, fit.constrained.reshape(-1, fit.constrained.shape[-1])[:, :k],
                               rtol=1e-10, atol=1e-12)
    assert fit.sampler["divergent__"].sum() < 10


def test_per_chain_inits(normal):
    # Without warmup the unit-metric, unit-step transitions oscillate around the posterior
    # (sd 0.5) with a slowly shrinking amplitude, so the first draws stay far out only when
    # the chain started there; random inits lie in (-2, 2).
    fit = normal.nuts(chains=2, warmup=0, draws=3, seed=1, init=[{"mu": -30.0}, {"mu": 30.0}])
    assert np.all(np.abs(fit.constrained[:, 0, 0]) > 10)
    fit = normal.nuts(chains=2, warmup=0, draws=3, seed=1, init={"mu": 30.0})
    assert np.all(np.abs(fit.constrained[:, 0, 0]) > 10)
    fit = normal.nuts(chains=2, warmup=0, draws=3, seed=1)
    assert np.all(np.abs(fit.constrained[:, 0, 0]) < 10)
    with pytest.raises(InputError, match="2 entries for 3 chains"):
        normal.nuts(chains=3, init=[{"mu": 0.0}, {"mu": 1.0}])


def test_non_finite_density_everywhere_raises_initialization_error(normal):
    broken = normal.with_data({**NORMAL_DATA, "mu0": float("inf")})
    assert broken.log_density(np.array([0.0])) == -np.inf
    message = "100 attempts.*Location parameter is inf.*line 14"
    with pytest.raises(InitializationError, match=message):
        broken.nuts(chains=2, warmup=10, draws=10, seed=1)


def test_invalid_init_value_raises_initialization_error(normal, compiled):
    model = compiled("transforms")
    with pytest.raises(InitializationError, match="reason: variable 'k': .*is -1"):
        model.nuts(chains=1, warmup=10, draws=10, seed=1, init={"k": -1.0})
    with pytest.raises(InputError, match="adapt_delta"):
        normal.nuts(adapt_delta=1.5)
    with pytest.raises(InputError, match="chains must be an integer >= 1, got 2.5"):
        normal.nuts(chains=2.5)


# ---------------------------------------------------------------------- progress and Ctrl-C

PROGRESS_LINE = re.compile(r"chain (\d): iteration (\d+)/(\d+) \((warmup|sampling)\)")


def test_progress_lines_are_throttled_and_leave_the_draws_unchanged(compiled, monkeypatch):
    model = compiled("eight_schools")
    quick: list[str] = []
    model.nuts(chains=2, warmup=100, draws=100, seed=2, progress=quick.append)
    assert len(quick) == 2  # a run shorter than PROGRESS_INTERVAL_S: start and end only

    monkeypatch.setattr(stanlogz.stan.nuts, "PROGRESS_INTERVAL_S", 0.1)
    lines: list[tuple[float, str]] = []
    fit = model.nuts(chains=2, warmup=20000, draws=20000, seed=2,
                     progress=lambda s: lines.append((time.perf_counter(), s)))
    assert lines[0][1] == "sampling eight_schools: 2 chains x (20000 warmup + 20000 draws)"
    assert lines[-1][1].startswith("sampled eight_schools in ")
    middle = lines[1:-1]
    assert middle, "no iteration progress for a run of several tenths of a second"
    last = {1: 0, 2: 0}
    for _, full in middle:
        line, _, eta = full.partition(" \N{EM DASH} ")
        # the time left is the rate so far, once a twentieth of all iterations is done
        assert eta == "" or re.fullmatch(r"about \d+(\.\d)? (s|min|h) left", eta), full
        parts = line.split("; ")
        assert 1 <= len(parts) <= 2
        for part in parts:
            m = PROGRESS_LINE.fullmatch(part)
            assert m, line
            chain, it, total = int(m[1]), int(m[2]), int(m[3])
            assert total == 40000 and it // 4000 > last[chain] // 4000  # a new tenth each time
            assert m[4] == ("warmup" if it <= 20000 else "sampling")
            last[chain] = it
    times = [t for t, _ in middle]
    assert all(b - a >= 0.1 for a, b in zip(times, times[1:], strict=False))

    again = model.nuts(chains=2, warmup=20000, draws=20000, seed=2)
    np.testing.assert_array_equal(fit.constrained, again.constrained)
    np.testing.assert_array_equal(fit.sampler["lp__"], again.sampler["lp__"])
    np.testing.assert_array_equal(fit.inv_metric, again.inv_metric)


# Stopping tests run ``slow`` (each iteration ~10 ms on an idle 2-core machine, so the runs below
# would take 15+ minutes) and allow STOP_BOUND_S for a stop that takes ~0.1 s idle: the bound is
# ~100x the idle stop time and ~1/20 of the shortest run it must tell apart, so neither a loaded
# machine nor a fast one can make the tests pass or fail by timing alone.
STOP_BOUND_S = 45.0
SLOW_RUN = {"chains": 2, "warmup": 100_000, "draws": 10, "seed": 1}


def test_keyboard_interrupt_stops_all_chains_promptly(compiled):
    model = compiled("slow")
    watchdog_fired = threading.Event()

    def watchdog() -> None:  # only if the first interrupt were lost: ends the run, fails the test
        watchdog_fired.set()
        _thread.interrupt_main()

    timer = threading.Timer(0.3, _thread.interrupt_main)
    guard = threading.Timer(STOP_BOUND_S, watchdog)
    start = time.perf_counter()
    timer.start()
    guard.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            model.nuts(**SLOW_RUN)
    finally:
        guard.cancel()
        timer.cancel()
    assert not watchdog_fired.is_set(), "Ctrl-C did not stop NUTS"
    assert time.perf_counter() - start < STOP_BOUND_S
    fit = model.nuts(chains=2, warmup=20, draws=20, seed=1)  # the library still works
    assert fit.constrained.shape[:2] == (2, 20)


def test_ctrl_c_while_the_sampler_thread_starts_stops_it(compiled, monkeypatch):
    # Ctrl-C landing in Thread.start() (its wait for the new thread, seconds on a loaded
    # machine) escaped before the stop flag was set: the sampler ran on in the background.
    model = compiled("slow")
    real_start = threading.Thread.start

    def start_then_interrupt(self):
        real_start(self)
        if self.name.startswith("stanlogz-nuts"):
            raise KeyboardInterrupt

    monkeypatch.setattr(threading.Thread, "start", start_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        model.nuts(**SLOW_RUN)
    monkeypatch.undo()
    # the sampler thread has ended (it would take 15+ minutes to finish on its own)
    assert not [t for t in threading.enumerate() if t.name.startswith("stanlogz-nuts")]


def test_failing_progress_callback_stops_the_sampler(compiled, monkeypatch):
    model = compiled("slow")
    monkeypatch.setattr(stanlogz.stan.nuts, "PROGRESS_INTERVAL_S", 0.0)
    # Report every poll (a tenth of this run would take minutes to come).
    monkeypatch.setattr(stanlogz.stan.nuts._NutsProgress, "poll",
                        lambda self, it: self.progress(f"chain 1: iteration {int(it[0])}"))

    def progress(line: str) -> None:
        if line.startswith("chain"):
            raise RuntimeError("progress sink closed")

    start = time.perf_counter()
    with pytest.raises(RuntimeError, match="progress sink closed"):
        model.nuts(**SLOW_RUN, progress=progress)
    assert time.perf_counter() - start < STOP_BOUND_S


def test_cli_sample_shows_progress_and_exits_130_on_sigint(compiled):
    compiled("slow")  # the subprocess finds the library in the same cache
    cmd = [sys.executable, "-c", "import sys; from stanlogz.cli import main; sys.exit(main())",
           "sample", str(MODELS / "slow.stan"), "--data", str(MODELS / "slow.json"),
           "--chains", "2", "--warmup", str(SLOW_RUN["warmup"]), "--draws", "10", "--seed", "1"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        seen: list[str] = []
        for line in proc.stderr:  # progress lines, up to the start of sampling
            seen.append(line)
            if "sampling slow" in line or len(seen) > 20:
                break
        assert "sampling slow: 2 chains x (100000 warmup + 10 draws)" in seen[-1], seen
        time.sleep(0.5)
        sent = time.perf_counter()
        proc.send_signal(signal.SIGINT)
        _, rest = proc.communicate(timeout=STOP_BOUND_S)
        assert time.perf_counter() - sent < STOP_BOUND_S
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130
    assert rest.strip().endswith("stanlogz: interrupted")


def test_nuts_over_the_time_budget_stops_with_what_fits(compiled):
    # SLOW_RUN takes 15+ minutes: under a 5 s budget the watch stops it (early, at the rate
    # of its first iterations, or once the budget is spent) and the error names the budget the
    # whole run needs; the arithmetic of each decision is in tests/util/test_deadline.py.
    from stanlogz import OverBudget, time_budget

    model = compiled("slow")
    start = time.perf_counter()
    with time_budget(5), pytest.raises(OverBudget) as info:
        model.nuts(**SLOW_RUN)
    assert time.perf_counter() - start < 5 + STOP_BOUND_S
    assert re.fullmatch(r"sampling slow would take about .+ here \(2 chains x 100010 "
                        r"iterations; \d+ of 200020 done in .+\), more than the time budget "
                        r"of 5 s allows; run with .*stanlogz\.time_budget\('\d+[mh]'\) for "
                        r"the whole run", str(info.value))  # the Python caller's budget, not a flag
    assert info.value.routes[-1].options["time_budget"][-1] in "mh"
    assert not [t for t in threading.enumerate() if t.name.startswith("stanlogz-nuts")]


def test_nuts_past_warmup_under_a_short_budget_keeps_the_draws_so_far(compiled):
    # slow.stan with K = 1000: about 8,000 iterations a second, so 400,000 draws per chain
    # take about a minute; under a 3 s budget the chains stop at the reserve (0.3 s before
    # the end) and the draws so far come back, the same number per chain
    from stanlogz import time_budget

    model = compiled("slow", data={"K": 1000})
    start = time.perf_counter()
    with time_budget(3):
        out = model.nuts(chains=2, warmup=200, draws=400_000, seed=1)
    # the chains stop at the reserve; handing the draws back on a loaded machine (two test
    # suites at once on 2 cores) has taken up to 0.24 s past the budget: a second of margin
    assert time.perf_counter() - start < 3.0 + 1.0
    kept, asked = out.budget_stop
    assert asked == 400_000 and 500 < kept < asked
    assert out.constrained.shape == (2, kept, 1) and out.unconstrained.shape == (2, kept, 1)
    assert np.all(out.sampler["lp__"] != 0.0)  # every row kept was written by the sampler
    # mu ~ N(0, 1): the draws are posterior draws (5 se of the mean at an ESS of at least
    # 500, and of the variance; a failure probability below 1e-6 each)
    mu = out.constrained[:, :, 0]
    assert abs(mu.mean()) < 5 / np.sqrt(500) and abs(mu.var() - 1.0) < 5 * np.sqrt(2 / 500)
    # the adapted step size from the draws' column; the metric estimated from the draws
    assert np.array_equal(out.step_size, out.sampler["stepsize__"][:, -1])
    assert np.allclose(out.inv_metric[:, 0], 1.0, atol=5 * np.sqrt(2 / 500))
    assert not [t for t in threading.enumerate() if t.name.startswith("stanlogz-nuts")]


def test_sample_under_a_short_budget_says_the_budget_ended_it(compiled):
    from stanlogz import sample, time_budget

    with time_budget(2):
        d = sample(compiled("slow", data={"K": 1000}), chains=2, warmup=200, draws=400_000,
                   seed=2)
    kept, asked = d.budget_stop
    assert d.n_draws == kept < asked
    summary = d.summary()
    assert summary.diagnostics["budget_stop"] == {"draws_kept": kept, "draws_asked": asked}
    assert (f"the time budget ended sampling after {kept} of 400000 draws per chain; ESS and "
            "mcse count only these") in summary.warnings


def test_a_run_within_its_time_budget_is_bit_identical(normal):
    # the budget's checks only read the clock
    from stanlogz import time_budget

    plain = normal.nuts(chains=2, warmup=200, draws=200, seed=5)
    with time_budget("1h"):
        budgeted = normal.nuts(chains=2, warmup=200, draws=200, seed=5)
    assert np.array_equal(plain.constrained, budgeted.constrained)


def test_cli_time_budget_refuses_in_one_line_with_json(compiled):
    compiled("slow")  # the subprocess finds the library in the same cache
    cmd = [sys.executable, "-m", "stanlogz", "--json", "--time-budget", "5", "sample",
           str(MODELS / "slow.stan"), "--data", str(MODELS / "slow.json"), "--chains", "2",
           "--warmup", str(SLOW_RUN["warmup"]), "--draws", "10", "--seed", "1"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=5 + 2 * STOP_BOUND_S)
    assert proc.returncode == 2
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("stanlogz: error: sampling slow would take about ")
    assert "Traceback" not in proc.stderr
    out = json.loads(proc.stdout)
    assert out["kind"] == "error" and out["error"] == last.removeprefix("stanlogz: error: ")


# A real log of Stan's NUTS on an improper posterior (4 chains), as the library returns it.
IMPROPER_LOG = " | ".join(
    ["chain 1 stopped early: Exception initializing step size.",
     "Posterior is improper. Please check your model."]
    + ["Exception initializing step size.", "Posterior is improper. Please check your model."] * 3
    + ["Gradient evaluation took 4e-06 seconds",
       "1000 transitions using 10 leapfrog steps per transition would take 0.04 seconds.",
       "Adjust your expectations accordingly!"] * 4)


def test_stan_failure_cause_is_the_first_cause_once():
    line = stanlogz.stan.messages.stan_failure_cause(IMPROPER_LOG)
    assert line.startswith("Posterior is improper. Please check your model.")
    assert line.count("Posterior is improper") == 1 and line.count("step size") == 1
    assert "Gradient evaluation" not in line and "\n" not in line


def test_improper_posterior_error_is_one_line_with_log_on_verbose(compiled, capsys):
    from stanlogz.cli import main
    from stanlogz.errors import StanlogzError

    model = compiled("improper")
    with pytest.raises(StanlogzError, match="Posterior is improper") as e:
        model.nuts(chains=2, warmup=50, draws=50, seed=1)
    assert "Gradient evaluation took" in e.value.log  # the whole log stays on the exception
    args = ["sample", str(MODELS / "improper.stan"), "--chains", "2", "--warmup", "50",
            "--draws", "50", "--seed", "1", "--quiet"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.count("Posterior is improper") == 1, err
    assert main(["--verbose", *args]) == 2
    err = capsys.readouterr().err
    assert "Gradient evaluation took" in err and err.startswith("stanlogz: error: NUTS failed")
